"""Alibaba DataWorks Data Integration output in DataHub: BLOB topic JSON messages and TUPLE topic rows.

A BLOB message is one JSON object (`schema`, `payload`, `version`) per change or event of a whole database
(:mod:`~cdcnorm.adapters.datahub.blob`); the same envelope is DataWorks' "aliyun-json" Kafka / DataHub shape,
whose UPDATE may also be ONE `UPDATE_AFTER` message carrying both images. A TUPLE topic holds one table with
DataWorks meta columns (see :mod:`cdcnorm.adapters.datahub.tuple_topic`). An UPDATE arrives as two halves
sharing a sequence id (`UPDATE_BEFOR` + `UPDATE_AFTER`, or two `U` rows), possibly far apart and in different
files, so each half is decoded as its own row (a one-message UPDATE as both halves) and
:meth:`DataHubAdapter.post_process` pairs them in Spark (:func:`~cdcnorm.adapters.datahub.pairing.pair_updates`).
Full-load records (sequenceId `-1`) become SNAPSHOT rows with unknown times. This module reads files and
messages and dispatches each record; the rows' sort/id recipe is in :mod:`~cdcnorm.adapters.datahub.changes`.
"""

from __future__ import annotations

import datetime as dt
import io
import json
from collections.abc import Callable, Iterator, Mapping
from decimal import Decimal
from typing import IO, Any, ClassVar

import orjson
from pyspark.sql import Column, DataFrame

from cdcnorm import containers
from cdcnorm.adapters.base import Adapter, AdapterOptions, MessageMeta
from cdcnorm.adapters.datahub import tuple_topic as tup
from cdcnorm.adapters.datahub.blob import decode_blob
from cdcnorm.adapters.datahub.changes import Base, SchemaVersions, dml_change
from cdcnorm.adapters.datahub.files import (
    container_of,
    format_of,
    looks_like_csv,
    looks_like_record,
    parquet_fields,
    sniff_head,
)
from cdcnorm.adapters.datahub.options import DataHubOptions, Where, path_hints
from cdcnorm.adapters.datahub.pairing import pair_updates, paired_ids
from cdcnorm.adapters.datahub.scalars import text_or_none
from cdcnorm.adapters.datahub.spec import SPEC
from cdcnorm.adapters.datahub.vocabulary import (
    FMT_BLOB,
    FMT_TUPLE,
    MYSQL_FAMILY,
    TUPLE_OPS,
    VENDOR,
    source_db_of,
)
from cdcnorm.canonical.emit import BatchBuilder
from cdcnorm.canonical.record import SchemaVersion
from cdcnorm.errors import DecodeError


class DataHubAdapter(Adapter):
    """DataWorks → DataHub BLOB JSON messages and TUPLE rows (CSV, JSON lines, Parquet)."""

    name = SPEC.name
    formats = SPEC.formats
    flags = SPEC.flags
    Options = DataHubOptions
    options: DataHubOptions

    def __init__(self, options: dict[str, Any] | AdapterOptions | None = None):
        super().__init__(options)
        self._versions = SchemaVersions()
        self._field_plans: dict[int, tuple[tuple, tuple]] = {}

    # -- detection ------------------------------------------------------------------------------------------
    @classmethod
    def sniff(cls, path: str | None, head: bytes) -> bool:
        """Blob JSON (`"payload"` with `"op"`), TUPLE JSON or CSV naming `_operation_type_`."""
        return sniff_head(head)

    # -- files ----------------------------------------------------------------------------------------------
    def read_file(self, path: str, fh: IO[bytes], out: BatchBuilder) -> Iterator[None]:
        """Decode one file: JSON objects (Blob or TUPLE rows), TUPLE CSV or TUPLE Parquet (any of them gzipped)."""
        where = self._where(path, None, None)
        src = containers.open_source(fh)
        kind = container_of(path, src, self.options.input_format)
        if kind == "parquet":
            yield from self._read_parquet(path, src, where, out)
        elif kind == "csv":
            yield from self._read_csv(path, src, where, out)
        else:
            yield from self._read_json(path, src, where, out)

    def _read_json(self, path: str, src: containers.Source, where: Where, out: BatchBuilder) -> Iterator[None]:
        reader = containers.JsonRecords(src, containers.loads_wide_ints, looks_like_record,
                                        self.options.max_object_bytes)

        def with_context() -> Iterator[containers.Record | containers.Damage]:
            for item in reader:
                out.set_context(VENDOR, format_of(item.value) if isinstance(item, containers.Record) else FMT_BLOB)
                yield item

        yield from containers.each_record(
            path, with_context(), out, lambda rec: self._guarded(out, lambda: self._decode_object(rec.value, rec.raw, where)))

    def _read_csv(self, path: str, fh: IO[bytes], where: Where, out: BatchBuilder) -> Iterator[None]:
        out.set_context(VENDOR, FMT_TUPLE)
        fields = self._tuple_fields(self.options.table, where.table, where.topic)
        names = [f.name for f in fields] if fields else None
        for index, row in enumerate(tup.iter_csv(fh, names, self.options.csv_header)):
            out.begin_record(path, index, offset=f"line {row.line}", raw=row.raw)
            if row.error is not None:
                out.quarantine(row.error.error_class, row.error.message)
            else:
                self._guarded(out, lambda r=row.values: self._csv_row(r, fields, where))
            yield

    def _csv_row(self, values: dict[str, str], fields: tuple | None, where: Where) -> list:
        fields = fields or self._tuple_fields(values.get(tup.TABLE_COLUMN))
        if fields is None:
            raise DecodeError(
                "missing_schema",
                "TUPLE CSV carries no column types and no topic schema was "
                "given: pass the topic's RecordSchema as option tuple_schema (or tuple_schemas "
                "keyed by table/topic name)",
            )
        return self._tuple(values, where, fields, [])

    def _read_parquet(self, path: str, src: containers.Source, where: Where, out: BatchBuilder) -> Iterator[None]:
        out.set_context(VENDOR, FMT_TUPLE)
        rows = containers.ParquetRows(src)
        named = self._tuple_fields(self.options.table, where.table, where.topic)
        fields: list[tuple | None] = [named]

        def decode(rec: containers.Record) -> None:
            if fields[0] is None:
                fields[0] = parquet_fields(rows.schema_arrow)
            self._guarded(out, lambda: self._tuple(rec.value, where, fields[0], []),
                          raw=lambda: orjson.dumps(rec.value, default=str))

        yield from containers.each_record(path, rows, out, decode)

    # -- raw messages ---------------------------------------------------------------------------------------
    def decode_message(self, value: bytes | None, meta: MessageMeta, out: BatchBuilder) -> None:
        """One DataHub record's bytes (a Blob JSON object, or a TUPLE row as JSON)."""
        out.set_context(VENDOR, FMT_BLOB)
        if not value:
            out.quarantine("empty_message", "the message has no value (null or empty blob)")
            return
        where = self._where(meta.uri, meta.topic, meta.timestamp)
        if looks_like_csv(bytes(value)):
            self._decode_csv_message(bytes(value), where, out)
            return
        try:
            obj = containers.loads_wide_ints(bytes(value))
        except ValueError as exc:
            out.quarantine("bad_json", f"the message is not UTF-8 JSON ({exc})")
            return
        out.set_context(VENDOR, format_of(obj))
        self._guarded(out, lambda: self._decode_object(obj, bytes(value), where))

    def _decode_csv_message(self, value: bytes, where: Where, out: BatchBuilder) -> None:
        """A TUPLE CSV record as quarantined from a file (header line + record), e.g. on quarantine retry."""
        out.set_context(VENDOR, FMT_TUPLE)
        fields = self._tuple_fields(self.options.table, where.table, where.topic)
        rows = list(
            tup.iter_csv(
                io.BytesIO(value), [f.name for f in fields] if fields else None, self.options.csv_header
            )
        )
        if len(rows) != 1:
            out.quarantine("bad_csv", f"expected one CSV record in the message, found {len(rows)}")
        elif rows[0].error is not None:
            out.quarantine(rows[0].error.error_class, rows[0].error.message)
        else:
            self._guarded(out, lambda: self._csv_row(rows[0].values, fields, where))

    # -- dispatch -------------------------------------------------------------------------------------------
    def _guarded(
        self, out: BatchBuilder, decode: Callable[[], list], raw: Callable[[], bytes] | None = None
    ) -> None:
        """Run a decoder and emit its rows; any failure quarantines the record instead of stopping the run."""
        try:
            for item in decode():
                if isinstance(item, SchemaVersion):
                    out.schema(item)
                else:
                    out.change(item)
        except DecodeError as exc:
            out.quarantine(exc.error_class, exc.message, raw=raw() if raw else None)
        except Exception as exc:  # noqa: BLE001 - bad input must never stop the run
            out.quarantine(
                "decode_failed",
                f"unexpected {type(exc).__name__}: {exc} (an input cdcnorm does not "
                "handle yet: please report it with this record)",
                raw=raw() if raw else None,
            )

    def _decode_object(self, obj: Any, raw: bytes, where: Where) -> list:
        if isinstance(obj, dict) and "payload" in obj:
            return decode_blob(obj, where, self._stream, self._versions)
        if isinstance(obj, dict) and tup.OP_COLUMN in obj:
            exact = json.loads(raw.decode("utf-8"), parse_float=Decimal)  # DECIMAL values stay exact
            table = text_or_none(exact.get(tup.TABLE_COLUMN))
            fields = self._tuple_fields(table, self.options.table, where.table, where.topic)
            return self._tuple(exact, where, fields, [] if fields else ["no_schema"])
        raise DecodeError(
            "bad_message",
            "JSON object is neither a DataWorks Blob message (no 'payload') nor a "
            "TUPLE row (no '_operation_type_'); is this DataHub output?",
        )

    def _where(self, uri: str | None, topic: str | None, capture_ts: dt.datetime | None) -> Where:
        hints = path_hints(uri)
        o = self.options
        return Where(
            uri,
            o.project or hints.get("project"),
            o.topic or topic or hints.get("topic"),
            hints.get("table"),
            hints.get("database"),
            hints.get("schema"),
            capture_ts,
        )

    def _stream(self, where: Where, fallback: str | None) -> str:
        topic = f"{where.project}/{where.topic}" if where.project and where.topic else where.topic
        return self.stream_name(topic, fallback or VENDOR)

    def _tuple_fields(self, *names: str | None) -> tuple | None:
        by_name = self.options.tuple_schemas or {}
        for n in names:
            if n and n in by_name:
                return by_name[n]
        return self.options.tuple_schema

    def _tuple_keys(self, *names: str | None) -> list[str] | None:
        keys = self.options.primary_keys
        if not isinstance(keys, dict):
            return keys
        return next((keys[n] for n in names if n and n in keys), None)

    # -- TUPLE ----------------------------------------------------------------------------------------------
    def _fields_plan(self, fields: tuple) -> tuple:
        """(type by name, data field names, (name, type) columns) of a topic schema: once per schema, not per
        row (the schema is the same object for every row of a file)."""
        hit = self._field_plans.get(id(fields))
        if hit is not None and hit[0] is fields:
            return hit[1]
        types = {f.name: f.type for f in fields}
        data_fields = [f.name for f in fields if f.name not in tup.META_COLUMNS]
        plan = (types, data_fields, [(n, types[n]) for n in data_fields])
        if len(self._field_plans) >= 256:
            self._field_plans.clear()
        self._field_plans[id(fields)] = (fields, plan)
        return plan

    def _tuple(self, row: Mapping[str, Any], where: Where, fields: tuple | None, flags: list[str]) -> list:
        types, data_fields, columns = self._fields_plan(fields) if fields else (None, None, None)
        ev = tup.decode_row(row, types, data_fields)
        o = self.options
        table = ev.table or o.table or where.table
        if table is None:
            raise DecodeError(
                "missing_table",
                "TUPLE row without a table name: no _source_table_ column, no "
                "table=<name> folder in the path and no `table` option; re-run with option table=...",
            )
        source_db = source_db_of(o.source_db)
        database = o.database or where.database
        b = Base(
            FMT_TUPLE,
            self._stream(where, database or table),
            source_db,
            database,
            None if source_db in MYSQL_FAMILY else (o.db_schema or where.schema),
            table,
            ev.seq,
            ev.seq_raw,
            ev.op_letter,
            ev.source_ts,
            where.capture_ts,
            self._tuple_keys(table, where.topic),
            flags=[*flags, *ev.flags],
            full_load=ev.seq is None,
        )
        if types is not None and any(k not in types for k in ev.image) and "no_schema" not in b.flags:
            b.flags.append("no_schema")
        out: list = []
        if columns is not None:
            out.extend(self._versions.version(b, columns, tup.TUPLE_TYPES))
        out.append(dml_change(b, TUPLE_OPS[ev.op_letter], ev.role, ev.image, ev.missing))
        return out


    # -- Spark ----------------------------------------------------------------------------------------------
    waiting_roles: ClassVar[tuple[str, ...]] = ("before", "after")

    def post_process(self, changes: DataFrame) -> DataFrame:
        """Pair UPDATE halves over the whole input (see :func:`pair_updates`)."""
        return pair_updates(changes)

    def paired_event_ids(self, pair: Column) -> Column:
        """A pair's UPDATE has the pair id as its event id; a key change's DELETE and INSERT ids derive from it."""
        return paired_ids(pair)

