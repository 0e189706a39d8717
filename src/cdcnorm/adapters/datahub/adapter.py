"""Alibaba DataWorks Data Integration output in DataHub: BLOB topic JSON messages and TUPLE topic rows.

A BLOB message is one JSON object (`schema`, `payload`, `version`) per change or event of a whole database; a
TUPLE topic holds one table with DataWorks meta columns (see :mod:`cdcnorm.adapters.datahub.tuple_topic`). An UPDATE arrives as two
halves sharing a sequence id (`UPDATE_BEFOR` + `UPDATE_AFTER`, or two `U` rows), possibly far apart and in
different files, so each half is decoded as its own row and :meth:`DataHubAdapter.post_process` pairs them
in Spark (:func:`pair_updates`).

Identity and order (all rows): `sort_parts = (1, sequenceId as an integer, image (before 0, after 1),
eventTime)`; `id_parts = (sequenceId, canonical op, image)` for data rows, plus the vendor op (and, with no
sequenceId, eventTime and DDL text) for the others. A paired UPDATE's event id is the pair id computed by both
halves at decode time, so a redelivered pair gets the same id.

Until :func:`pair_updates` runs, an UPDATE half carries `_pair` (the pair's event id), `_pair_role` and, in
`changed_columns`, one `<16 hex digest><column>` entry per column: Spark compares those strings, never the
VARIANT images. Other decisions: GTID, XACOMMIT and XAROLLBACK become CONTROL rows (XA outcomes are not the
transaction boundaries TX_BEGIN/TX_COMMIT describe); control, heartbeat and transaction rows keep the rest of
the payload (e.g. `timestamp`) in `after`; a DDL row keeps `ddlMeta` verbatim, undecoded, as the Base64 string
`after.ddlMeta` (it is a Java-serialized FastSQL object only a JVM can read).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import functools
import hashlib
import io
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import IO, Any, Literal

import orjson
from pydantic import Field, field_validator
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from cdcnorm import containers
from cdcnorm.adapters.base import Adapter, AdapterOptions, MessageMeta
from cdcnorm.adapters.datahub import SPEC
from cdcnorm.adapters.datahub import tuple_topic as tup
from cdcnorm.adapters.datahub.ddl import apply_changes, parse_ddl
from cdcnorm.canonical import tuple_codec
from cdcnorm.canonical.emit import KIND_CHANGE, BatchBuilder, decoded_schema, event_id_of
from cdcnorm.canonical.emit import Bookkeeping as B
from cdcnorm.canonical.record import Change, SchemaColumn, SchemaVersion
from cdcnorm.errors import DecodeError

VENDOR = SPEC.name
FMT_BLOB, FMT_TUPLE = SPEC.formats

BLOB_TYPES: dict[str, str] = {
    "LONG": "bigint",
    "DOUBLE": "double",
    "BOOLEAN": "boolean",
    "STRING": "string",
    "DATE": "timestamp",
    "BYTES": "binary",
}
"""DataWorks Blob field type -> canonical type (DATE: epoch milliseconds; BYTES: standard Base64)."""

DML_OPS: dict[str, tuple[str, str]] = {
    "INSERT": ("INSERT", "after"),
    "DELETE": ("DELETE", "before"),
    "UPDATE_BEFOR": ("UPDATE", "before"),  # sic: DataWorks' spelling
    "UPDATE_BEFORE": ("UPDATE", "before"),
    "UPDATE_AFTER": ("UPDATE", "after"),
}
"""Blob DML op -> (canonical op, image the message carries)."""

DDL_OPS: dict[str, str] = {
    "CREATE": "DDL",
    "ALTER": "DDL",
    "ERASE": "DDL",  # DROP TABLE
    "QUERY": "DDL",  # other statements (CREATE/DROP DATABASE, ...)
    "RENAME": "DDL",
    "CINDEX": "DDL",
    "DINDEX": "DDL",
    "TRUNCATE": "TRUNCATE",
}

CONTROL_OPS: dict[str, str] = {
    "TRANSACTION_BEGIN": "TX_BEGIN",
    "TRANSACTION_END": "TX_COMMIT",
    "GTID": "CONTROL",
    "XACOMMIT": "CONTROL",
    "XAROLLBACK": "CONTROL",
    "MHEARTBEAT": "HEARTBEAT",
}

TUPLE_OPS: dict[str, str] = {"I": "INSERT", "U": "UPDATE", "D": "DELETE"}

SOURCE_DBS: dict[str, str] = {
    "mysql": "mysql",
    "oracle": "oracle",
    "postgresql": "postgresql",
    "postgres": "postgresql",
    "sqlserver": "sqlserver",
    "mssql": "sqlserver",
    "polardb": "polardb",
    "polardbmysql": "polardb",
    "polardbx": "polardbx",
    "drds": "drds",
    "mariadb": "mariadb",
}
MYSQL_FAMILY = frozenset({"mysql", "polardb", "polardbx", "drds", "mariadb"})
"""Engines without a schema level: the database name goes to `database`, `schema` stays null."""

_ROLE_ORDER = {"before": 0, "after": 1}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_PATH_KEYS = {
    "project": "project",
    "topic": "topic",
    "table": "table",
    "database": "database",
    "db": "database",
    "schema": "schema",
}
_PARQUET_TYPES = (
    ("int8", "TINYINT"),
    ("int16", "SMALLINT"),
    ("int32", "INTEGER"),
    ("int64", "BIGINT"),
    ("uint", "BIGINT"),
    ("float", "FLOAT"),
    ("halffloat", "FLOAT"),
    ("double", "DOUBLE"),
    ("decimal", "DECIMAL"),
    ("string", "STRING"),
    ("large_string", "STRING"),
    ("bool", "BOOLEAN"),
    ("timestamp", "TIMESTAMP"),
)
_SNIFF_BLOB = re.compile(rb'"payload"\s*:\s*\{')
_SNIFF_OP = re.compile(rb'"op"\s*:\s*"')
_SNIFF_TUPLE = re.compile(rb'"_operation_type_"\s*:')
DIGEST_HEX = 16
"""Length of the value digest that prefixes each entry of an UPDATE half's column digests."""


class DataHubOptions(AdapterOptions):
    """Options of the DataHub adapter (everything is optional)."""

    input_format: Literal["auto", "json", "csv", "parquet"] = "auto"
    """File container: JSON objects (lines, array or back to back), TUPLE CSV, or TUPLE Parquet."""
    project: str | None = None
    """DataHub project, for the stream name (else a `project=<name>` folder)."""
    topic: str | None = None
    """DataHub topic, for the stream name (else the message's topic or a `topic=<name>` folder)."""
    source_db: str | None = None
    """TUPLE: source engine (mysql, oracle, postgresql, sqlserver); TUPLE rows do not say."""
    database: str | None = None
    """TUPLE: source database name (else a `database=<name>` folder)."""
    db_schema: str | None = None
    """TUPLE: source schema name (else a `schema=<name>` folder); ignored for MySQL-family sources."""
    table: str | None = None
    """TUPLE: table name for rows without `_source_table_` (else a `table=<name>` folder)."""
    primary_keys: list[str] | dict[str, list[str]] | None = None
    """TUPLE: primary-key columns (TUPLE topics do not carry them); a dict gives them by table or topic name,
    like `tuple_schemas`, for runs over several topics."""
    tuple_schema: Any = None
    """TUPLE: the topic's RecordSchema (JSON text, GetTopic response, list of {name, type} or "name:TYPE")."""
    tuple_schemas: dict[str, Any] | None = None
    """TUPLE: RecordSchemas by table or topic name, for runs over several topics."""
    csv_header: Literal["auto", "yes", "no"] = "auto"
    """TUPLE CSV: does the first line name the fields (auto: when it names DataWorks meta columns)."""
    max_object_bytes: int = Field(16 << 20, ge=1024)
    """Largest JSON object accepted; a longer one is quarantined as broken (bounds memory)."""

    @field_validator("tuple_schema")
    @classmethod
    def _one_schema(cls, v: Any) -> Any:
        return None if v is None else tup.parse_tuple_schema(v)

    @field_validator("tuple_schemas")
    @classmethod
    def _many_schemas(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if v is None else {k: tup.parse_tuple_schema(s) for k, s in v.items()}


@dataclass(frozen=True, slots=True)
class _Where:
    """Where a record came from: stream and table hints from options, folder layout or message meta."""

    uri: str | None = None
    project: str | None = None
    topic: str | None = None
    table: str | None = None
    database: str | None = None
    schema: str | None = None
    capture_ts: dt.datetime | None = None


@dataclass(slots=True)
class _Base:
    """Fields every row of one record shares."""

    fmt: str
    stream: str
    source_db: str | None
    database: str | None
    schema: str | None
    table: str | None
    seq: Any
    seq_raw: str | None
    vendor_op: str
    source_ts: dt.datetime | None
    capture_ts: dt.datetime | None = None
    pks: list[str] | None = None
    schema_version: str | None = None
    flags: list[str] = field(default_factory=list)


def path_hints(path: str | None) -> dict[str, str]:
    """Hive-style folder hints in a path: project=, topic=, table=, database= (or db=), schema=."""
    hints: dict[str, str] = {}
    for seg in re.split(r"[/\\]", path or ""):
        key, sep, value = seg.partition("=")
        if sep and value and key.lower() in _PATH_KEYS:
            hints[_PATH_KEYS[key.lower()]] = value
    return hints


def source_db_of(db_type: Any) -> str | None:
    """Canonical lower-case engine name from DataWorks' dbType (MySQL, Oracle, PostgreSQL, SQLServer, ...)."""
    if not isinstance(db_type, str) or not db_type.strip():
        return None
    return _source_db(db_type)


@functools.lru_cache(maxsize=256)
def _source_db(db_type: str) -> str:
    flat = re.sub(r"[\s_-]", "", db_type.lower())
    return SOURCE_DBS.get(flat, flat)


def millis_to_datetime(value: Any, what: str) -> dt.datetime | None:
    """Epoch milliseconds (JSON number or digit string) -> aware UTC datetime."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, bool):
            raise ValueError
        ms = int(value) if not isinstance(value, float) or value.is_integer() else None
        if ms is None:
            raise ValueError
        return _EPOCH + dt.timedelta(milliseconds=ms)
    except (TypeError, ValueError, OverflowError):
        raise DecodeError("bad_value", f"{what}: {value!r} is not epoch milliseconds") from None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    s = str(value).strip()
    return s or None


def _object(value: Any, what: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise DecodeError("bad_message", f"{what} is {type(value).__name__}, expected a JSON object")
    return value


# -- Blob values -------------------------------------------------------------------------------------------


def _blob_long(value: Any, column: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
        return int(value)
    raise DecodeError("bad_value", f"column {column!r}: {value!r} is not a LONG (64-bit integer)")


def _blob_bytes(value: Any, column: str) -> bytes:
    """Standard Base64 as Java's Base64.getEncoder() writes it; padding may be missing, nothing else may."""
    if not isinstance(value, str):
        raise DecodeError("bad_base64", f"column {column!r}: BYTES value {value!r} is not a Base64 string")
    s = value.strip()
    try:
        return base64.b64decode(s + "=" * (-len(s) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise DecodeError(
            "bad_base64",
            f"column {column!r}: {value[:80]!r} is not valid standard Base64 "
            "(BYTES values must be Base64 of the raw bytes)",
        ) from None


def blob_value(value: Any, vtype: str | None, column: str) -> Any:
    """A Blob `dataColumn` value as the typed Python value of its DataWorks type; unknown types stay raw."""
    if value is None:
        return None
    t = (vtype or "").upper()
    if t == "LONG":
        return _blob_long(value, column)
    if t == "DOUBLE":
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise DecodeError("bad_value", f"column {column!r}: {value!r} is not a DOUBLE")
        try:
            return float(value)
        except ValueError:
            raise DecodeError("bad_value", f"column {column!r}: {value!r} is not a DOUBLE") from None
    if t == "BOOLEAN":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise DecodeError("bad_value", f"column {column!r}: {value!r} is not a BOOLEAN")
    if t == "DATE":
        return millis_to_datetime(value, f"column {column!r} (DATE)")
    if t == "BYTES":
        return _blob_bytes(value, column)
    return value


def value_digest(value: Any) -> str:
    """Short stable digest of a typed value, to compare update halves' columns in Spark (equal values,
    equal digests: Decimal 1.5 and 1.50 compare equal, as in SQL)."""
    try:
        data = tuple_codec.encode((value,))
    except (TypeError, ValueError, OverflowError):
        data = b"j" + orjson.dumps(value, default=str, option=orjson.OPT_SORT_KEYS)
    return hashlib.blake2b(data, digest_size=DIGEST_HEX // 2).hexdigest()


def column_digests(image: Mapping[str, Any]) -> list[str]:
    """`<digest><column name>` per column, in image order: what an UPDATE half carries for pairing."""
    return [value_digest(v) + k for k, v in image.items()]


def _version_id(columns: list[tuple[str, str | None]], pks: list[str] | None) -> str:
    return _version_hash(tuple(columns), tuple(pks or ()))


@functools.lru_cache(maxsize=4096)
def _version_hash(columns: tuple, pks: tuple) -> str:
    """Schema version id: a hash of the column (name, type) list and the primary key."""
    data = orjson.dumps([[list(c) for c in columns], list(pks)])
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def looks_like_record(value: Any) -> bool:
    """A Blob message (payload with op) or a TUPLE row (with _operation_type_): used to resynchronise."""
    if not isinstance(value, dict):
        return False
    payload = value.get("payload")
    return (isinstance(payload, dict) and "op" in payload) or tup.OP_COLUMN in value


def _looks_like_csv(value: bytes) -> bool:
    """Text that is not JSON and has a comma: a TUPLE CSV record (JSON and binary go the JSON way)."""
    head = value.lstrip(b"\xef\xbb\xbf \t\r\n")
    if head[:1] in (b"{", b"[") or b"," not in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _format_of(value: Any) -> str:
    return FMT_TUPLE if isinstance(value, dict) and tup.OP_COLUMN in value else FMT_BLOB


class DataHubAdapter(Adapter):
    """DataWorks → DataHub BLOB JSON messages and TUPLE rows (CSV, JSON lines, Parquet)."""

    name = SPEC.name
    formats = SPEC.formats
    flags = SPEC.flags
    Options = DataHubOptions
    options: DataHubOptions

    def __init__(self, options: dict[str, Any] | AdapterOptions | None = None):
        super().__init__(options)
        self._versions_seen: set[tuple] = set()

    # -- detection ------------------------------------------------------------------------------------------
    @classmethod
    def sniff(cls, path: str | None, head: bytes) -> bool:
        """Blob JSON (`"payload"` with `"op"`), TUPLE JSON or CSV naming `_operation_type_`."""
        window = head[:65536]
        start = window.lstrip(b"\xef\xbb\xbf \t\r\n[")
        if start.startswith(b"{"):
            blob = _SNIFF_BLOB.search(window) and _SNIFF_OP.search(window)
            return bool(blob or _SNIFF_TUPLE.search(window))
        first_line = window.split(b"\n", 1)[0]
        return b"_operation_type_" in first_line and b"," in first_line

    # -- files ----------------------------------------------------------------------------------------------
    def read_file(self, path: str, fh: IO[bytes], out: BatchBuilder) -> Iterator[None]:
        """Decode one file: JSON objects (Blob or TUPLE rows), TUPLE CSV or TUPLE Parquet (any of them gzipped)."""
        where = self._where(path, None, None)
        src = containers.open_source(fh)
        kind = self._container(path, src)
        if kind == "parquet":
            yield from self._read_parquet(path, src, where, out)
        elif kind == "csv":
            yield from self._read_csv(path, src, where, out)
        else:
            yield from self._read_json(path, src, where, out)

    def _container(self, path: str, src: containers.Source) -> str:
        fmt = self.options.input_format
        if fmt != "auto":
            return fmt
        head = src.peek(4096)
        name = path.lower().removesuffix(".gz")
        stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
        if head.startswith(containers.PARQUET_MAGIC) or name.endswith(".parquet"):
            return "parquet"
        if name.endswith((".json", ".jsonl", ".ndjson")):
            return "json"
        if name.endswith(".csv") or (stripped and stripped[:1] not in (b"{", b"[")):
            return "csv"
        return "json"

    def _read_json(self, path: str, src: containers.Source, where: _Where, out: BatchBuilder) -> Iterator[None]:
        reader = containers.JsonRecords(src, containers.loads_wide_ints, looks_like_record,
                                        self.options.max_object_bytes)

        def with_context() -> Iterator[containers.Record | containers.Damage]:
            for item in reader:
                out.set_context(VENDOR, _format_of(item.value) if isinstance(item, containers.Record) else FMT_BLOB)
                yield item

        yield from containers.each_record(
            path, with_context(), out, lambda rec: self._guarded(out, lambda: self._decode_object(rec.value, rec.raw, where)))

    def _read_csv(self, path: str, fh: IO[bytes], where: _Where, out: BatchBuilder) -> Iterator[None]:
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

    def _csv_row(self, values: dict[str, str], fields: tuple | None, where: _Where) -> list:
        fields = fields or self._tuple_fields(values.get(tup.TABLE_COLUMN))
        if fields is None:
            raise DecodeError(
                "missing_schema",
                "TUPLE CSV carries no column types and no topic schema was "
                "given: pass the topic's RecordSchema as option tuple_schema (or tuple_schemas "
                "keyed by table/topic name)",
            )
        return self._tuple(values, where, fields, [])

    def _read_parquet(self, path: str, src: containers.Source, where: _Where, out: BatchBuilder) -> Iterator[None]:
        out.set_context(VENDOR, FMT_TUPLE)
        rows = containers.ParquetRows(src)
        named = self._tuple_fields(self.options.table, where.table, where.topic)
        fields: list[tuple | None] = [named]

        def decode(rec: containers.Record) -> None:
            if fields[0] is None:
                fields[0] = self._parquet_fields(rows.schema_arrow)
            self._guarded(out, lambda: self._tuple(rec.value, where, fields[0], []),
                          raw=lambda: orjson.dumps(rec.value, default=str))

        yield from containers.each_record(path, rows, out, decode)

    @staticmethod
    def _parquet_fields(schema: Any) -> tuple[tup.TupleField, ...]:
        fields = []
        for f in schema:
            t = str(f.type)
            vtype = next((v for prefix, v in _PARQUET_TYPES if t.startswith(prefix)), "ARROW:" + t)
            fields.append(tup.TupleField(f.name, vtype))
        return tuple(fields)

    # -- raw messages ---------------------------------------------------------------------------------------
    def decode_message(self, value: bytes | None, meta: MessageMeta, out: BatchBuilder) -> None:
        """One DataHub record's bytes (a Blob JSON object, or a TUPLE row as JSON)."""
        out.set_context(VENDOR, FMT_BLOB)
        if not value:
            out.quarantine("empty_message", "the message has no value (null or empty blob)")
            return
        where = self._where(meta.uri, meta.topic, meta.timestamp)
        if _looks_like_csv(bytes(value)):
            self._decode_csv_message(bytes(value), where, out)
            return
        try:
            obj = containers.loads_wide_ints(bytes(value))
        except ValueError as exc:
            out.quarantine("bad_json", f"the message is not UTF-8 JSON ({exc})")
            return
        out.set_context(VENDOR, _format_of(obj))
        self._guarded(out, lambda: self._decode_object(obj, bytes(value), where))

    def _decode_csv_message(self, value: bytes, where: _Where, out: BatchBuilder) -> None:
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

    def _decode_object(self, obj: Any, raw: bytes, where: _Where) -> list:
        if isinstance(obj, dict) and "payload" in obj:
            return self._blob(obj, where)
        if isinstance(obj, dict) and tup.OP_COLUMN in obj:
            exact = json.loads(raw.decode("utf-8"), parse_float=Decimal)  # DECIMAL values stay exact
            table = _text(exact.get(tup.TABLE_COLUMN))
            fields = self._tuple_fields(table, self.options.table, where.table, where.topic)
            return self._tuple(exact, where, fields, [] if fields else ["no_schema"])
        raise DecodeError(
            "bad_message",
            "JSON object is neither a DataWorks Blob message (no 'payload') nor a "
            "TUPLE row (no '_operation_type_'); is this DataHub output?",
        )

    def _where(self, uri: str | None, topic: str | None, capture_ts: dt.datetime | None) -> _Where:
        hints = path_hints(uri)
        o = self.options
        return _Where(
            uri,
            o.project or hints.get("project"),
            o.topic or topic or hints.get("topic"),
            hints.get("table"),
            hints.get("database"),
            hints.get("schema"),
            capture_ts,
        )

    def _stream(self, where: _Where, fallback: str | None) -> str:
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

    # -- Blob -----------------------------------------------------------------------------------------------
    def _blob(self, msg: dict, where: _Where) -> list:
        schema = _object(msg.get("schema"), "schema")
        payload = _object(msg.get("payload"), "payload")
        op = payload.get("op")
        if not isinstance(op, str) or op not in (*DML_OPS, *DDL_OPS, *CONTROL_OPS):
            raise DecodeError(
                "unknown_op",
                f"unknown DataWorks op {op!r} (ops are case-sensitive: INSERT, "
                "UPDATE_BEFOR, UPDATE_AFTER, DELETE, DDL ops, TRANSACTION_BEGIN/END, MHEARTBEAT, ...)",
            )
        b = self._blob_base(schema, payload, op, where)
        columns = self._blob_columns(schema)
        if op in DML_OPS:
            return self._blob_dml(b, payload, columns)
        if op in DDL_OPS:
            return self._blob_ddl(b, payload, columns)
        content = {k: v for k, v in payload.items() if k not in ("op", "sequenceId")} or None
        return [self._event_change(b, CONTROL_OPS[op], content=content)]

    def _blob_base(self, schema: dict, payload: dict, op: str, where: _Where) -> _Base:
        source = _object(schema.get("source"), "schema.source")
        source_db = source_db_of(source.get("dbType"))
        database = _text(source.get("dbName"))
        ts = _object(payload.get("timestamp"), "payload.timestamp")
        seq_raw = _text(payload.get("sequenceId"))
        pks = schema.get("primaryKey")
        if pks is not None and not (isinstance(pks, list) and all(isinstance(k, str) for k in pks)):
            raise DecodeError("bad_message", f"schema.primaryKey {pks!r} is not a list of column names")
        return _Base(
            FMT_BLOB,
            self._stream(where, database),
            source_db,
            database,
            None if source_db in MYSQL_FAMILY else _text(source.get("schemaName")),
            _text(source.get("tableName")),
            int(seq_raw) if seq_raw and seq_raw.isdigit() else seq_raw,
            seq_raw,
            op,
            millis_to_datetime(ts.get("eventTime"), "payload.timestamp.eventTime"),
            millis_to_datetime(ts.get("systemTime"), "payload.timestamp.systemTime") or where.capture_ts,
            pks,
        )

    @staticmethod
    def _blob_columns(schema: dict) -> list[tuple[str, str | None]] | None:
        cols = schema.get("dataColumn")
        if cols is None:
            return None
        if not isinstance(cols, list) or not all(
            isinstance(c, dict) and isinstance(c.get("name"), str) for c in cols
        ):
            raise DecodeError("bad_message", "schema.dataColumn must be an array of {name, type} objects")
        return [(c["name"], _text(c.get("type"))) for c in cols]

    def _blob_dml(self, b: _Base, payload: dict, columns: list | None) -> list:
        canon, role = DML_OPS[b.vendor_op]
        side = payload.get(role)
        data = side.get("dataColumn") if isinstance(side, dict) else None
        if not isinstance(data, dict):
            raise DecodeError(
                "bad_message", f"{b.vendor_op} message without payload.{role}.dataColumn object"
            )
        if b.table is None:
            raise DecodeError("missing_field", f"{b.vendor_op} message without schema.source.tableName")
        types = dict(columns or [])
        image = {k: blob_value(v, types.get(k), k) for k, v in data.items()}
        missing = [n for n, _ in columns if n not in image] if columns is not None else None
        out: list = []
        if columns is not None:
            out.extend(self._version(b, columns, BLOB_TYPES))
        out.append(self._dml_change(b, canon, role, image, missing))
        return out

    def _blob_ddl(self, b: _Base, payload: dict, columns: list | None) -> list:
        ddl = _object(payload.get("ddl"), "payload.ddl")
        text = ddl.get("text") if isinstance(ddl.get("text"), str) else None
        info = parse_ddl(text, b.source_db)
        out: list = []
        if info.changes:
            base = columns if columns is not None else info.columns
            if base is not None:
                b.pks = b.pks or info.primary_key
                out.extend(self._version(b, apply_changes(base, info.changes), BLOB_TYPES))
        content = {"ddlMeta": ddl["ddlMeta"]} if ddl.get("ddlMeta") is not None else None
        out.append(
            self._event_change(b, DDL_OPS[b.vendor_op], ddl=text, ddl_changes=info.changes, content=content)
        )
        return out

    # -- TUPLE ----------------------------------------------------------------------------------------------
    def _tuple(self, row: Mapping[str, Any], where: _Where, fields: tuple | None, flags: list[str]) -> list:
        types = {f.name: f.type for f in fields} if fields else None
        data_fields = [f.name for f in fields if f.name not in tup.META_COLUMNS] if fields else None
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
        b = _Base(
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
        )
        if types is not None and any(k not in types for k in ev.image) and "no_schema" not in b.flags:
            b.flags.append("no_schema")
        out: list = []
        if data_fields is not None:
            out.extend(self._version(b, [(n, types[n]) for n in data_fields], tup.TUPLE_TYPES))
        out.append(self._dml_change(b, TUPLE_OPS[ev.op_letter], ev.role, ev.image, ev.missing))
        return out

    # -- rows -----------------------------------------------------------------------------------------------
    def _version(self, b: _Base, columns: list[tuple[str, str | None]], canon: dict[str, str]) -> list:
        """The table's schema version (set on the rows); returned for emission once per task."""
        vid = _version_id(columns, b.pks)
        b.schema_version = vid
        seen_key = (b.stream, b.database, b.schema, b.table, vid)
        if seen_key in self._versions_seen:
            return []
        if len(self._versions_seen) > 100_000:
            self._versions_seen.clear()
        self._versions_seen.add(seen_key)
        pk_pos = {k: i + 1 for i, k in enumerate(b.pks or [])}
        cols = [
            SchemaColumn(n, t, canon.get((t or "").upper()), i + 1, pk_pos.get(n))
            for i, (n, t) in enumerate(columns)
        ]
        return [
            SchemaVersion(
                VENDOR,
                b.stream,
                vid,
                cols,
                b.source_db,
                b.database,
                b.schema,
                b.table,
                first_seen=b.source_ts,
            )
        ]

    def _dml_change(self, b: _Base, op: str, role: str, image: dict, missing: list[str] | None) -> Change:
        """INSERT/DELETE, or one UPDATE half carrying the pair id and its column digests for Spark pairing."""
        c = Change(
            vendor=VENDOR,
            format=b.fmt,
            stream=b.stream,
            op=op,
            sort_parts=(1, b.seq, _ROLE_ORDER[role], b.source_ts),
            id_parts=(b.seq, op, role),
            source_db=b.source_db,
            database=b.database,
            schema=b.schema,
            table=b.table,
            vendor_op=b.vendor_op,
            flags=list(b.flags),
            primary_keys=b.pks,
            before=image if role == "before" else None,
            after=image if role == "after" else None,
            missing_columns=missing,
            schema_version=b.schema_version,
            source_ts=b.source_ts,
            capture_ts=b.capture_ts,
            position=b.seq_raw,
        )
        if op == "UPDATE":
            if b.seq is None:
                raise DecodeError("missing_field", "UPDATE half without a sequence id: it cannot be paired")
            c.pair = pair_id(b.stream, b.database, b.schema, b.table, b.seq)
            c.pair_role = role
            c.changed_columns = column_digests(image)
        return c

    def _event_change(self, b: _Base, op: str, **extra: Any) -> Change:
        """DDL, TRUNCATE, heartbeat, transaction and control rows."""
        ident = (b.seq, op, b.vendor_op)
        if b.seq is None:
            ident += (b.source_ts, extra.get("ddl"))
        return Change(
            vendor=VENDOR,
            format=b.fmt,
            stream=b.stream,
            op=op,
            sort_parts=(1, b.seq, 0, b.source_ts),
            id_parts=ident,
            source_db=b.source_db,
            database=b.database,
            schema=b.schema,
            table=b.table,
            vendor_op=b.vendor_op,
            flags=list(b.flags),
            primary_keys=b.pks,
            source_ts=b.source_ts,
            capture_ts=b.capture_ts,
            position=b.seq_raw,
            schema_version=b.schema_version,
            **extra,
        )

    # -- Spark ----------------------------------------------------------------------------------------------
    def post_process(self, changes: DataFrame) -> DataFrame:
        """Pair UPDATE halves over the whole input (see :func:`pair_updates`)."""
        return pair_updates(changes)


def pair_id(stream: str, database: str | None, schema: str | None, table: str | None, seq: Any) -> str:
    """Event id of a paired UPDATE: what both halves compute, so pairing needs no hashing in Spark."""
    return event_id_of(VENDOR, stream, (database, schema, table), (seq, "UPDATE"))


# -- pairing (Spark) ---------------------------------------------------------------------------------------

_NAMES = [f.name for f in decoded_schema().fields]


def _empty() -> Column:
    return F.array().cast("array<string>")


def _changed(b: Column, a: Column) -> Column:
    """Columns present in both images whose value digests differ, in the after image's column order."""
    bd, ad = b["changed_columns"], a["changed_columns"]
    bnames = F.transform(bd, lambda x: F.substring(x, DIGEST_HEX + 1, 1 << 20))
    keep = F.filter(
        ad,
        lambda x: (
            F.array_contains(bnames, F.substring(x, DIGEST_HEX + 1, 1 << 20)) & ~F.array_contains(bd, x)
        ),
    )
    return F.transform(keep, lambda x: F.substring(x, DIGEST_HEX + 1, 1 << 20))


def _counts(n: Column) -> dict[str, Column]:
    """Conservation: a row standing for n half records keeps `_records` 1 and moves the rest to `_merged`."""
    return {B.RECORDS: F.least(n, F.lit(1)).cast("int"), B.MERGED: (n - F.least(n, F.lit(1))).cast("int")}


def _row(src: Column, **over: Column) -> Column:
    """A decoded-schema struct taking each column from `src` unless overridden."""
    bookkeeping = {
        B.PAIR: None,
        B.PAIR_ROLE: None,
        B.RULE: None,
        B.MESSAGE: None,
        B.RAW: None,
        B.SCHEMA: None,
    }
    cols = []
    for name in _NAMES:
        if name in over:
            cols.append(over[name].alias(name))
        elif name in bookkeeping:
            cols.append(F.lit(None).cast(decoded_schema()[name].dataType).alias(name))
        else:
            cols.append(src[name].alias(name))
    return F.struct(*cols)


def pair_updates(df: DataFrame) -> DataFrame:
    """Combine UPDATE halves (rows with `_pair`) into canonical UPDATE rows, in Spark, over the whole input.

    Per pair id: the before half's image becomes `before`, the after half's `after`, `changed_columns` are the
    columns whose value digests differ. Halves with different keys follow the key-change rule (DELETE of
    the old key with the before half's id/sort key + INSERT of the new key with the after half's, ids
    re-derived from the pair id, both flagged key_change). A half without partner stays an UPDATE with the
    other image null, its own event id, flag orphan_before/orphan_after. Redelivered halves fold into the
    same row; `_records` + `_merged` totals are conserved.
    """
    is_half = (F.col(B.KIND) == KIND_CHANGE) & F.col(B.PAIR).isNotNull()
    rest = df.filter(~is_half)
    halves = df.filter(is_half)
    role = F.col(B.PAIR_ROLE)
    whole = F.struct(*[F.col(n) for n in _NAMES])
    n = F.col(B.RECORDS) + F.col(B.MERGED)
    g = halves.groupBy(B.PAIR).agg(
        F.min_by(whole, F.when(role == "before", F.col("sort_key"))).alias("b"),
        F.min_by(whole, F.when(role == "after", F.col("sort_key"))).alias("a"),
        F.sum(F.when(role == "before", n).otherwise(0)).alias("nb"),
        F.sum(F.when(role == "after", n).otherwise(0)).alias("na"),
    )
    b, a, pair, nb, na = F.col("b"), F.col("a"), F.col(B.PAIR), F.col("nb"), F.col("na")
    both = b.isNotNull() & a.isNotNull()
    key_change = both & (b["key_bytes"] != a["key_bytes"])
    rows = (
        F.when(
            key_change,
            F.array(_key_change_delete(b, pair, _counts(nb)), _key_change_insert(b, a, pair, _counts(na))),
        )
        .when(both, F.array(_paired(b, a, pair, _counts(nb + na))))
        .when(b.isNotNull(), F.array(_orphan(b, "orphan_before", _counts(nb))))
        .otherwise(F.array(_orphan(a, "orphan_after", _counts(na))))
    )
    paired = g.select(F.explode(rows).alias("r")).select("r.*")
    return rest.unionByName(paired)


def _paired(b: Column, a: Column, pair: Column, counts: dict[str, Column]) -> Column:
    vendor_op = F.when(b["vendor_op"] == a["vendor_op"], a["vendor_op"]).otherwise(
        F.concat_ws("+", b["vendor_op"], a["vendor_op"])
    )
    missing = F.when(b["missing_columns"].isNull() | a["missing_columns"].isNull(), F.lit(None)).otherwise(
        F.array_union(a["missing_columns"], b["missing_columns"])
    )
    return _row(
        a,
        op=F.lit("UPDATE"),
        vendor_op=vendor_op,
        before=b["before"],
        after=a["after"],
        flags=F.array_distinct(F.concat(F.coalesce(b["flags"], _empty()), F.coalesce(a["flags"], _empty()))),
        changed_columns=_changed(b, a),
        missing_columns=missing,
        sort_key=b["sort_key"],
        event_id=pair,
        position=F.coalesce(b["position"], a["position"]),
        origin=b["origin"],
        **counts,
    )


def _orphan(h: Column, flag: str, counts: dict[str, Column]) -> Column:
    flags = F.array_distinct(F.concat(F.coalesce(h["flags"], _empty()), F.array(F.lit(flag))))
    return _row(h, flags=flags, changed_columns=F.lit(None).cast("array<string>"), **counts)


def _key_change_id(pair: Column, which: str) -> Column:
    return F.substring(F.sha2(F.concat(pair, F.lit("|" + which)), 256), 1, 32)


def _key_change_delete(b: Column, pair: Column, counts: dict[str, Column]) -> Column:
    flags = F.array_distinct(F.concat(F.coalesce(b["flags"], _empty()), F.array(F.lit("key_change"))))
    return _row(
        b,
        op=F.lit("DELETE"),
        flags=flags,
        after=F.lit(None).cast("variant"),
        changed_columns=F.lit(None).cast("array<string>"),
        event_id=_key_change_id(pair, "key_change_delete"),
        **counts,
    )


def _key_change_insert(b: Column, a: Column, pair: Column, counts: dict[str, Column]) -> Column:
    flags = F.array_distinct(F.concat(F.coalesce(a["flags"], _empty()), F.array(F.lit("key_change"))))
    return _row(
        a,
        op=F.lit("INSERT"),
        flags=flags,
        before=F.lit(None).cast("variant"),
        changed_columns=_changed(b, a),
        event_id=_key_change_id(pair, "key_change_insert"),
        **counts,
    )
