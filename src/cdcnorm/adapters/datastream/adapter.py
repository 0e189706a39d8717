"""Google Cloud Datastream: Cloud Storage Avro/JSON files, Pub/Sub or Kafka-fed JSON events, BigQuery exports.

Formats: `datastream.avro` (Avro container files, one writer schema per file), `datastream.json` (JSON Lines,
`.jsonl.gz`, or a `.json` array) and `datastream.bigquery` (rows exported from Datastream-managed BigQuery
tables with a `datastream_metadata` struct, as JSON lines, Parquet or Avro; documented but unverified).

Ops: `change_type` decides deletes (DELETE and UPDATE-DELETE; Oracle's UPDATE-DELETE has is_deleted=false);
backfill read methods (`*backfill*`, `*dump*`, MongoDB `READ`) give SNAPSHOT; an empty change type in a CDC
read is an INSERT, or a DELETE flagged `delete_by_is_deleted` when `is_deleted` is true. A primary-key change is
an UPDATE-DELETE (old row) + UPDATE-INSERT (new row) at one source position, possibly in different files: the
UPDATE-DELETE becomes a DELETE flagged `key_change`, and :meth:`DatastreamAdapter.post_process` turns an
UPDATE-INSERT into an INSERT flagged `key_change` when an UPDATE-DELETE shares its `_pair` (stream, table,
position); a lone UPDATE-INSERT is an UPDATE with the after image only. Spanner's `mod_type` stands in for a
missing `change_type`.

Order and identity: :func:`cdcnorm.adapters.datastream.events.to_change` (events) and
:func:`cdcnorm.adapters.datastream.bigquery.to_change` (BigQuery rows) hold the `sort_parts` / `id_parts`
recipes; per-source positions and keys are read by :mod:`cdcnorm.adapters.datastream.source_metadata`.

Values (see :mod:`cdcnorm.adapters.datastream.types`): Avro payloads are typed from the writer schema. JSON
payloads carry no types: numbers become int or exact Decimal (see :func:`loads_exact`) and strings, including
timestamps, stay strings (only the envelope's read/source timestamps are parsed, in every observed form); the
file's schema version records what the values looked like, from which apply types the columns
(cdcnorm.canonical.inferred). MySQL
binary columns are hex strings in both formats, indistinguishable from text: the `binary_columns` option names
the ones to turn into bytes. Records that are not Datastream events are quarantined with a reason:
`bad_event` (which field), `unknown_op`, `bad_hex`, `bad_value`, `gcs_notification` (a Cloud Storage
notification, not data), `unknown_format`, and the container damage of :mod:`cdcnorm.containers` (`bad_json`,
`truncated_avro`/`corrupt_avro` per damaged block, `truncated_gzip`/`corrupt_gzip`, `corrupt_parquet`).
Documentation and code files next to the data (`.md`, `.py`, ...) are not read: the pipeline counts them as
skipped objects (`not_data_file`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any, ClassVar

from pydantic import Field
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from cdcnorm import containers
from cdcnorm.adapters.base import Adapter, AdapterOptions, JvmDecode, LineObservation, MessageMeta
from cdcnorm.adapters.datastream import avro, bigquery, events, source_metadata
from cdcnorm.adapters.datastream import types as dtypes
from cdcnorm.adapters.datastream.payload import binary_set
from cdcnorm.adapters.datastream.schemas import (
    FMT_AVRO,
    FMT_BIGQUERY,
    FMT_JSON,
    FileState,
    flush_inferred,
    record_once,
)
from cdcnorm.adapters.datastream.spec import SPEC
from cdcnorm.canonical.emit import BatchBuilder
from cdcnorm.canonical.emit import Bookkeeping as B
from cdcnorm.canonical.record import Change
from cdcnorm.containers import Damage, Record, loads_exact
from cdcnorm.containers.json_lines import line_records
from cdcnorm.errors import DecodeError

VENDOR = SPEC.name


class DatastreamOptions(AdapterOptions):
    """Options of the Datastream adapter."""

    binary_columns: list[str] = Field(default_factory=list)
    """MySQL binary columns ('db.table.col' or 'table.col'): their hex strings become bytes."""
    bigquery_table: str | None = None
    """BigQuery exports: the table identity ('db.table' or 'db.schema.table'); default: the parent folder."""
    primary_keys: list[str] | None = None
    """BigQuery exports: the table's primary-key columns (the rows do not name them)."""


class DatastreamAdapter(Adapter):
    """Google Cloud Datastream output (see the module docstring for the op, order and id recipes)."""

    name = VENDOR
    formats = SPEC.formats
    flags = SPEC.flags
    Options = DatastreamOptions
    options: DatastreamOptions

    # -- detection ---------------------------------------------------------------------------------------------
    @classmethod
    def sniff(cls, path: str | None, head: bytes) -> bool:
        """Avro whose header schema names source_metadata/read_method/stream_name, or a JSON Datastream event."""
        inflated = containers.inflated_head(head)
        if inflated is None:
            return False
        head = inflated
        if head[:4] == containers.AVRO_MAGIC:
            return (b"source_metadata" in head and (b"read_method" in head or b"stream_name" in head)) or (
                b"datastream_metadata" in head
            )
        text = head.lstrip()
        if text[:1] == b"{":
            first = text.split(b"\n", 1)[0] if text[:2] != b"{\n" else text
        elif text[:1] == b"[":
            first = text
        else:
            return False
        return (b'"read_method"' in first and b'"source_metadata"' in first) or b'"datastream_metadata"' in first

    # -- files ------------------------------------------------------------------------------------------------
    def read_file(self, path: str, fh: IO[bytes], out: BatchBuilder) -> Iterator[None]:
        """Decode one file: Avro, Parquet (BigQuery export), JSON Lines or a JSON array (any of them gzipped)."""
        src = containers.open_source(fh)
        kind = containers.container_of(src)
        if kind == "avro":
            out.set_context(VENDOR, FMT_AVRO)
            yield from self._read_avro(path, src, out)
            return
        if kind == "parquet":
            out.set_context(VENDOR, FMT_BIGQUERY)
            state = FileState(path, fmt=FMT_BIGQUERY)
            yield from containers.each_record(
                path, containers.parquet_rows(src), out,
                lambda rec: self._decode_obj(rec.value, f"row {rec.index} of {path}", state, out, None),
                origin=lambda item: {"index": item.index, "raw": item.raw if isinstance(item, Damage) else None})
            flush_inferred(state, out)
            return
        out.set_context(VENDOR, FMT_JSON)
        if kind == "json":
            yield from self._read_json(path, src, out)
        elif kind == "other":
            d = containers.unknown_format(src, "")
            out.begin_record(path, 0, offset="0")
            out.quarantine(
                "unknown_format",
                f"{path} is neither Avro, Parquet nor JSON (starts with {d.raw[:16]!r}); it is not Datastream output "
                "- remove it from the input" + (" (raw holds its first 16 MiB)" if d.message else ""),
                raw=d.raw,
            )
            yield

    # -- JSON ---------------------------------------------------------------------------------------------------
    def _read_json(self, path: str, src: containers.Source, out: BatchBuilder) -> Iterator[None]:
        """JSON lines (a line is a record) or a JSON array (an element is a record), streamed, exact decimals."""
        state = FileState(path)
        reader = containers.JsonRecords(src, containers.loads_exact, accept=_looks_like_event)

        def origin(item: Record | Damage) -> dict:
            if reader.array:
                return {"index": item.index, "raw": item.raw}
            index = reader.line_of(item) if reader.lines_mode else item.index
            return {"index": index, "offset": str(item.offset), "raw": item.raw}

        def decode(rec: Record) -> None:
            where = (f"line {reader.line_of(rec) + 1} of {path}" if reader.lines_mode
                     else f"element {rec.index} of {path}" if reader.array else f"object {rec.index} of {path}")
            self._decode_obj(rec.value, where, state, out, rec.raw)

        yield from containers.each_record(path, reader, out, decode, origin)
        flush_inferred(state, out)

    def jvm_decode(self) -> JvmDecode | None:
        """JSON lines by Spark expressions (cdcnorm.adapters.datastream.jvm), unless the Python decoder is asked
        for or binary columns are declared (their hex text becomes bytes in Python only)."""
        if self.options.decode_path != "jvm" or self.options.binary_columns:
            return None
        from cdcnorm.adapters.datastream.jvm import DatastreamJvm

        return DatastreamJvm(self)

    def decode_line(self, path: str, raw: bytes, offset: int, line_number: int,
                    out: BatchBuilder) -> list[LineObservation]:
        """One line of a JSON-lines file, exactly as `read_file` decodes it inside the file; what it observed for
        the file's schema versions is returned, not emitted (the caller folds it with the file's other lines)."""
        state = FileState(path)
        state.observed = seen = _Images()
        items = line_records(raw, offset, line_number, containers.loads_exact, accept=_looks_like_event)
        line_of = {id(item): line for line, item in items}

        def origin(item: Record | Damage) -> dict:
            return {"index": line_of[id(item)], "offset": str(item.offset), "raw": item.raw}

        def decode(rec: Record) -> None:
            self._decode_obj(rec.value, f"line {line_of[id(rec)] + 1} of {path}", state, out, rec.raw)

        for _ in containers.each_record(path, [item for _, item in items], out, decode, origin):
            pass
        return [LineObservation(ident, change.source_db, change.primary_keys, change.source_ts, seen.images[ident])
                for ident, (change, _binary) in state.pending.items()]

    def decode_message(self, value: bytes | None, meta: MessageMeta, out: BatchBuilder) -> None:
        """One JSON event (or BigQuery row) per Pub/Sub or Kafka message."""
        out.set_context(VENDOR, FMT_JSON)
        state = self.__dict__.setdefault("_message_state", FileState(None))
        where = f"message {meta.topic or ''}[{meta.partition or ''}]@{meta.offset or ''}"
        try:
            if not value or not value.strip():
                raise DecodeError("bad_event", f"{where} is empty; a Datastream message holds one JSON event")
            self._decode_json(bytes(value), where, state, out)
        except DecodeError as exc:  # the per-record decoders raise; a message is one record
            out.quarantine(exc.error_class, exc.message, raw=exc.raw)

    def end_messages(self, out: BatchBuilder) -> None:
        """The partition's untyped schema versions, with the summary of every value its messages held."""
        state = self.__dict__.get("_message_state")
        if state is not None:
            flush_inferred(state, out)

    def _decode_json(self, data: bytes, where: str, state: FileState, out: BatchBuilder) -> None:
        try:
            obj = loads_exact(data)
        except ValueError as exc:
            raise DecodeError("bad_json", f"{where} is not valid JSON ({exc}); fix or drop it and re-run") from None
        self._decode_obj(obj, where, state, out, data)

    def _decode_obj(self, obj: Any, where: str, state: FileState, out: BatchBuilder, raw: bytes | None) -> None:
        if not isinstance(obj, dict):
            raise DecodeError("bad_event", f"{where} is a JSON {type(obj).__name__}, not an event object", raw=raw)
        if obj.get("kind") == "storage#object":
            raise DecodeError(
                "gcs_notification",
                f"{where} is a Cloud Storage object notification for gs://{obj.get('bucket')}/{obj.get('name')} "
                f"(size {obj.get('size')}), not a Datastream event: normalize the object it names instead "
                "(zero-byte folder objects hold nothing)", raw=raw)
        if "source_metadata" not in obj and bigquery.meta_key_of(obj) is not None:
            state.fmt = FMT_BIGQUERY
            self._bigquery_row(obj, where, state, out, raw)
            return
        state.fmt = FMT_JSON if state.avro_fields is None else FMT_AVRO
        self._event(obj, where, state, out, raw)

    # -- Avro ---------------------------------------------------------------------------------------------------
    def _read_avro(self, path: str, src: containers.Source, out: BatchBuilder) -> Iterator[None]:
        file = containers.AvroFile(src, prepare_schema=dtypes.strip_logical_types, keep_raw=False)
        try:
            file.read_header()
        except containers.AvroHeaderError as exc:
            yield from containers.each_record(path, [file.header_damage(exc)], out, _never)
            return
        state = FileState(path, fmt=FMT_AVRO)
        converters = avro.converters(file.writer_schema, state)
        if converters is None:
            out.begin_record(path, 0, offset="0")
            out.quarantine("not_datastream_avro", f"{path} is an Avro file without Datastream's source_metadata/"
                           "payload (or a BigQuery datastream_metadata) fields; it is not Datastream output")
            yield
            return
        yield from containers.each_record(
            path, file.records(), out,
            lambda rec: self._avro_record(rec.value, f"record {rec.index} of {path}", converters, state, out),
            origin=lambda item: {"index": item.index, "offset": str(item.offset),
                                 "raw": item.raw if isinstance(item, Damage) else None})
        flush_inferred(state, out)  # BigQuery rows in Avro files are untyped payloads too

    def _avro_record(self, rec: dict, where: str, convs: dict, state: FileState, out: BatchBuilder) -> None:
        flags: list[str] = []
        try:
            value = avro.convert_record(rec, convs, flags)
            if avro.ROW in convs:  # a BigQuery Avro row: any failure, conversion or decode, is a bad_value
                self._bigquery_row(value, where, state, out, None, flags)
                return
        except Exception as exc:  # noqa: BLE001 - a value the type mapping cannot convert
            raise avro.bad_value(where, rec, exc) from None
        self._event(value, where, state, out, None, flags)

    # -- one record -> one change -------------------------------------------------------------------------
    def _event(self, ev: dict, where: str, state: FileState, out: BatchBuilder, raw: bytes | None,
               flags: list[str] | None = None) -> None:
        """One Datastream event -> one canonical change (or a quarantine saying which field is wrong)."""
        stream = self.stream_name(source_metadata.text(ev.get("stream_name")), VENDOR)
        change = events.to_change(ev, where, state.fmt, stream, self.options.binary_columns, state.avro_schema_id,
                                  raw, flags if flags is not None else [])
        self._emit(change, state, out)

    def _bigquery_row(self, row: dict, where: str, state: FileState, out: BatchBuilder, raw: bytes | None,
                      flags: list[str] | None = None) -> None:
        """A row of a Datastream-managed BigQuery table (merge or append-only mode); unverified format."""
        meta_key = bigquery.meta_key_of(row)
        table = bigquery.table_of(self.options.bigquery_table, state.path)
        change = bigquery.to_change(row, meta_key, where, self.stream_name(None, "bigquery"), table,
                                    self.options.primary_keys, raw, flags or [])
        self._emit(change, state, out)

    def _emit(self, change: Change, state: FileState, out: BatchBuilder) -> None:
        """The change's schema version (once per file), then the change."""
        record_once(state, out, change, binary_set(self.options.binary_columns, change.database, change.schema,
                                                   change.table))
        out.change(change)

    # -- multi-record step ------------------------------------------------------------------------------------
    waiting_roles: ClassVar[tuple[str, ...]] = ("delete",)
    """An UPDATE-INSERT alone is Datastream's ordinary update: only an UPDATE-DELETE waits for its partner."""

    def emitted_half_pair(self) -> Column:
        """The pair id (:func:`events.pair_of`) of a lake row read from an UPDATE-INSERT (its `vendor_op`, at a known
        position): an UPDATE-DELETE arriving after it was emitted has no partner left to wait for."""
        ct = F.upper(F.trim(F.col("vendor_op")))
        parts = [F.col("stream"), *(F.coalesce(F.col(c), F.lit("")) for c in ("database", "schema", "table")),
                 F.col("position")]
        return F.when((ct == "UPDATE-INSERT") & F.col("position").isNotNull(), F.concat_ws(events.PAIR_SEP, *parts))

    def post_process(self, changes: DataFrame) -> DataFrame:
        """An UPDATE-INSERT whose UPDATE-DELETE partner (same `_pair`) exists becomes an INSERT flagged key_change;
        an UPDATE-DELETE without its partner stays a DELETE of the old key, flagged `orphan_half`."""
        roles = (changes.where(F.col(B.PAIR).isNotNull()).groupBy(F.col(B.PAIR).alias("_kc_pair"))
                 .agg(F.max(F.col(B.PAIR_ROLE) == "delete").alias("_kc"),
                      # both roles seen (min and max differ): a plain aggregation, where collect_set needs an
                      # object one
                      (F.min(B.PAIR_ROLE) != F.max(B.PAIR_ROLE)).alias("_kc_both")))
        joined = changes.join(roles, F.col(B.PAIR) == F.col("_kc_pair"), "left")
        is_insert_half = (F.col(B.PAIR_ROLE) == "insert") & F.coalesce(F.col("_kc"), F.lit(False))
        lone = (F.col(B.PAIR_ROLE) == "delete") & ~F.coalesce(F.col("_kc_both"), F.lit(False))
        flags = F.coalesce(F.col("flags"), F.array().cast("array<string>"))
        return (joined.withColumn("op", F.when(is_insert_half, F.lit("INSERT")).otherwise(F.col("op")))
                .withColumn("flags", F.when(is_insert_half, F.array_union(flags, F.array(F.lit("key_change"))))
                            .when(lone, F.array_union(flags, F.array(F.lit("orphan_half"))))
                            .otherwise(F.col("flags")))
                .drop("_kc_pair", "_kc", "_kc_both"))


class _Images:
    """Stands in for a file's `TypeObserver` while one line is decoded: keeps the images it is shown, per version."""

    def __init__(self) -> None:
        self.images: dict[Any, list[dict]] = {}

    def observe(self, ident: Any, *images: dict | None) -> None:
        self.images.setdefault(ident, []).extend(i for i in images if i)


def _looks_like_event(value: Any) -> bool:
    """A Datastream event or BigQuery row (used to resynchronise after a broken object)."""
    return isinstance(value, dict) and ("source_metadata" in value or "read_method" in value
                                        or bigquery.meta_key_of(value) is not None)


def _never(_rec: Record) -> None:  # pragma: no cover - only damage goes through this loop
    raise AssertionError("no record to decode")
