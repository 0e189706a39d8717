"""AWS DMS output -> canonical change rows.

Inputs: S3 target files (`<schema>/<table>/LOAD########.csv|.parquet` and time-named CDC files; CSV or
Parquet; `--vendor dms` is required: a file without an envelope cannot be recognised), and the Kinesis /
Kafka target's JSON messages, as raw messages (`decode_message`) or files of them (multi-line `json` or
single-line `json-unformatted`).
"""

from __future__ import annotations

import datetime as dt
import io
from typing import IO, Any, ClassVar

import orjson

from cdcnorm import containers
from cdcnorm.adapters.base import Adapter, AdapterOptions, FirstPass, MessageMeta
from cdcnorm.adapters.dms.files import csv_rows, object_size, parquet_rows
from cdcnorm.adapters.dms.messages import INTERNAL_RULE, MessageDecoder, is_message, learnt_def, stored_def
from cdcnorm.adapters.dms.options import DmsOptions
from cdcnorm.adapters.dms.paths import S3File, s3_file
from cdcnorm.adapters.dms.rows import Layout, RowDecoder, layout
from cdcnorm.adapters.dms.spec import SPEC
from cdcnorm.canonical.emit import BatchBuilder
from cdcnorm.errors import DecodeError

VENDOR = SPEC.name
CREATE_TABLE = b'"create-table"'
FMT_CSV, FMT_PARQUET, FMT_JSON = SPEC.formats
PARQUET_TYPES = {"int8": "tinyint", "int16": "smallint", "int32": "int", "int64": "bigint"}
"""Parquet integer widths: their values are read as these types."""
PARQUET_NAMES = {"double": "double", "float": "float", "bool": "boolean", "string": "string",
                 "large_string": "string", "binary": "binary", "large_binary": "binary", "date32[day]": "date"}
"""Other Parquet types, named for the schema version only (their values arrive typed)."""


class DmsAdapter(Adapter):
    """AWS Database Migration Service: S3 target CSV / Parquet files and Kinesis / Kafka JSON messages."""

    name: ClassVar[str] = VENDOR
    formats: ClassVar[tuple[str, ...]] = SPEC.formats
    flags: ClassVar[tuple[str, ...]] = SPEC.flags
    Options: ClassVar[type[AdapterOptions]] = DmsOptions

    def __init__(self, options: dict[str, Any] | AdapterOptions | None = None):
        super().__init__(options)
        self._messages = MessageDecoder(self.options, VENDOR, FMT_JSON)

    # -- detection -------------------------------------------------------------------------------------------
    @classmethod
    def sniff(cls, path: str | None, head: bytes) -> bool:
        """Stream messages only (hyphenated `record-type` + `operation` in a `metadata` object); S3 files
        have no envelope and need `--vendor dms`."""
        text = head[:16384]
        return (b'"metadata"' in text and b'"record-type"' in text and b'"operation"' in text
                and (b'"table-name"' in text or b'"schema-name"' in text))

    # -- the first pass: every create-table record, wherever it sits -----------------------------------------
    uses_stored_schemas: ClassVar[bool] = True

    def needs_first_pass(self) -> bool:
        return self.options.learn_tables

    def first_pass_file(self, path: str, fh: IO[bytes]) -> list[dict[str, Any]]:
        """The `create-table` definitions of a message file (S3 data files have none)."""
        src = containers.open_source(fh)
        if containers.container_of(src) != "json":
            return []
        data = src.read()
        if CREATE_TABLE not in data:
            return []
        records = containers.JsonRecords(containers.open_source(io.BytesIO(data)), containers.loads_exact)
        return [d for rec in records if isinstance(rec, containers.Record)
                and (d := learnt_def(rec.value)) is not None]

    def first_pass_message(self, value: bytes | None) -> list[dict[str, Any]]:
        if not value or CREATE_TABLE not in value:
            return []
        try:
            found = learnt_def(containers.loads_exact(value))
        except ValueError:
            return []
        return [found] if found is not None else []

    def prepare(self, first: FirstPass) -> DmsAdapter:
        """Decode with every table definition the input and the lake hold (input last: the newest wins).

        Only the lake's versions of this run's stream count, oldest first: another task (an S3 task with its
        declared types, or a second Kinesis task) may hold the same table with other types.
        """
        stream = self.stream_name(None, VENDOR)
        own = sorted((r for r in first.stored_schemas if r.get("stream") == stream), key=_stored_order)
        stored = [d for d in map(stored_def, own) if d is not None]
        found = sorted(first.items, key=lambda d: (str(d.get("schema")), d["table"], orjson.dumps(d)))
        defs = [*self.options.table_defs, *stored, *found]
        return type(self)(self.options.model_copy(update={"table_defs": defs, "learn_tables": False}))

    # -- files -----------------------------------------------------------------------------------------------
    def read_file(self, path: str, fh: IO[bytes], out: BatchBuilder):
        out.set_context(VENDOR, FMT_CSV)
        src = containers.open_source(fh)
        kind = containers.container_of(src)
        if kind == "empty":
            return
        if kind == "json":
            out.set_context(VENDOR, FMT_JSON)
            records = containers.JsonRecords(src, containers.loads_exact)
            yield from containers.each_record(path, records, out, lambda rec: self._message(rec.value, out))
            return
        try:
            f = s3_file(path, object_size(fh), self.options.table)
        except DecodeError as exc:
            out.begin_record(path, 0, raw=src.read(containers.RAW_CAP))
            out.quarantine(exc.error_class, exc.message)
            yield
            return
        if kind == "parquet":
            out.set_context(VENDOR, FMT_PARQUET)
            yield from self._rows(path, f, FMT_PARQUET, parquet_rows(src), out)
        else:
            yield from self._rows(path, f, FMT_CSV, ((r, None) for r in csv_rows(src, self.options, f.full_load)), out)

    def _rows(self, path: str, f: S3File, fmt: str, rows, out: BatchBuilder):
        state: list[RowDecoder | DecodeError | None] = [None]
        sent = [False]
        delimiter = self.options.csv_delimiter

        def decoder_for(values: list[Any], header: list[str] | None, schema: Any) -> RowDecoder:
            if state[0] is None:
                try:
                    lay: Layout = layout(self.options, f, header, len(values), _parquet_types(schema))
                    state[0] = RowDecoder(self.options, f, lay, fmt, VENDOR, self.stream_name(None, VENDOR))
                except DecodeError as exc:
                    state[0] = exc
            if isinstance(state[0], DecodeError):
                raise state[0]
            return state[0]

        for (item, values, header), schema in rows:
            if isinstance(item, containers.Damage):
                out.begin_record(path, item.index, offset=str(item.offset), raw=item.raw)
                out.quarantine(item.error_class, f"{path}: {item.message}")
                yield
                continue
            raw = item.raw if item.raw is not None else _raw_of(values, delimiter)
            out.begin_record(path, item.index, offset=str(item.offset), raw=raw)
            try:
                rows = decoder_for(values, header, schema)
                changes = rows.changes(values, item.index)
                if not sent[0]:
                    sent[0] = True
                    version = rows.version(changes[0].source_ts or changes[0].capture_ts)
                    if version is not None:
                        out.schema(version)
                for change in changes:
                    out.change(change)
            except DecodeError as exc:
                out.quarantine(exc.error_class, f"{path}: {exc.message}")
            yield

    # -- raw messages ----------------------------------------------------------------------------------------
    def decode_message(self, value: bytes | None, meta: MessageMeta, out: BatchBuilder) -> None:
        out.set_context(VENDOR, FMT_JSON)
        if value is None or not value.strip():
            out.quarantine("empty_message", "the message has no value")
            return
        try:
            obj = containers.loads_exact(value)
        except ValueError as exc:
            out.quarantine("bad_json", f"a DMS message is one JSON object ({exc})")
            return
        try:
            self._message(obj, out)
        except DecodeError as exc:
            out.quarantine(exc.error_class, exc.message)

    def _message(self, obj: Any, out: BatchBuilder) -> None:
        if not is_message(obj):
            raise DecodeError("bad_event", "not a DMS message: expected {data, metadata: {record-type, operation, "
                                           "schema-name, table-name, ...}}")
        outcome, changes, versions = self._messages.decode(obj, self.stream_name(None, VENDOR))
        if outcome == "filtered":
            out.filtered(INTERNAL_RULE)
            return
        for v in versions:
            out.schema(v)
        for c in changes:
            out.change(c)


def _parquet_types(schema: Any) -> dict[str, str] | None:
    """The canonical types a Parquet schema states (values arrive typed already; integer widths and the
    types of the schema version come from here)."""
    if schema is None:
        return None
    found = {}
    for f in schema:
        t = str(f.type)
        if t in PARQUET_TYPES:
            found[f.name] = PARQUET_TYPES[t]
        elif t.startswith("decimal"):
            found[f.name] = "decimal(" + t[t.index("(") + 1:].replace(" ", "")
        elif t.startswith("timestamp"):
            found[f.name] = "timestamp" if "tz=" in t else "timestamp_ntz"
        elif t in PARQUET_NAMES:
            found[f.name] = PARQUET_NAMES[t]
    return found


def _raw_of(values: list[Any] | None, delimiter: str):
    """A row's bytes for the quarantine, made only when it is quarantined."""
    return lambda: delimiter.join("" if v is None else str(v) for v in values or ()).encode("utf-8",
                                                                                         "surrogateescape")


def _stored_order(row: dict[str, Any]) -> tuple[float, str]:
    """A stored schema version's place: first seen (undated first), then its id."""
    seen = row.get("first_seen")
    when = (seen if seen.tzinfo else seen.replace(tzinfo=dt.UTC)).timestamp() if seen is not None else float("-inf")
    return when, str(row.get("schema_version") or "")
