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

sort_key recipe (`sort_parts`, then the emitter appends the event id):
    backfill rows: (0, source_ts, (key values...))
    CDC rows:      (1, <position parts>, source_ts, rank) with rank 0 for UPDATE-DELETE, 1 otherwise
    position parts: MySQL (binlog file numeric suffix, log_position) - also binlog_file/binlog_position in GTID
    mode; Oracle (scn, rs_id hex parts as ints, ssn); PostgreSQL LSN hi/lo as (hi << 32) | lo; SQL Server lsn
    'vlf:block:slot' hex parts as ints; MongoDB (sort_keys seconds, nanos); Spanner (commit ns,
    record_sequence, mod_index); Salesforce none (source_ts orders it).
    BigQuery append-only rows: (1, source_ts, change_sequence_number as int if numeric, rank); merge-mode rows
    are current state: (0, source_ts, (key values...)).

event_id recipe (`id_parts`, hashed with vendor, stream, database, schema, table) - never `uuid`, which is
shared by every event of a PostgreSQL backfill file, nor file names or read times:
    CDC rows:      (change_type, readable position, (key values...)) + payload hash when the table has no key
    backfill rows: (change_type, (key values...), Oracle row_id or None, payload hash)
    payload hash:  BLAKE2b-128 of the payload as sorted-key JSON (Decimal as text, bytes as hex).
The same change read from an Avro and a JSON copy therefore gets one id (CDC rows); identical rows of a
keyless table read by one backfill share an id (the source gives nothing to tell them apart).

Values (see :mod:`cdcnorm.adapters.datastream.types`): Avro payloads are typed from the writer schema. JSON
payloads carry no types: numbers become int or exact Decimal (see :func:`loads_exact`) and strings, including
timestamps, stay strings (only the envelope's read/source timestamps are parsed, in every observed form). MySQL
binary columns are hex strings in both formats, indistinguishable from text: the `binary_columns` option names
the ones to turn into bytes. Records that are not Datastream events are quarantined with a reason:
`bad_event` (which field), `unknown_op`, `bad_hex`, `bad_value`, `gcs_notification` (a Cloud Storage
notification, not data), `unknown_format`, and the container damage of :mod:`cdcnorm.containers` (`bad_json`,
`truncated_avro`/`corrupt_avro` per damaged block, `truncated_gzip`/`corrupt_gzip`, `corrupt_parquet`).
Documentation and code files next to the data (`.md`, `.py`, ...) are not read: the pipeline counts them as
skipped objects (`not_data_file`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import IO, Any

import orjson
from pydantic import Field
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from cdcnorm import containers
from cdcnorm.adapters.base import Adapter, AdapterOptions, MessageMeta
from cdcnorm.adapters.datastream import SPEC
from cdcnorm.adapters.datastream import types as dtypes
from cdcnorm.canonical.emit import BatchBuilder
from cdcnorm.canonical.emit import Bookkeeping as B
from cdcnorm.canonical.record import Change, SchemaColumn, SchemaVersion
from cdcnorm.containers import Damage, Record, loads_exact
from cdcnorm.errors import DecodeError

VENDOR = SPEC.name
FMT_JSON, FMT_AVRO, FMT_BIGQUERY = SPEC.formats

SOURCE_DBS = {
    "mysql": "mysql", "oracle": "oracle", "oracle_dump": "oracle", "postgresql": "postgresql",
    "postgres": "postgresql", "sqlserver": "sqlserver", "salesforce": "salesforce", "mongodb": "mongodb",
    "mongo": "mongodb", "spanner": "spanner", "backfill": "mongodb", "cdc": "mongodb",
}
"""read_method prefix (before the first '-') -> source engine; MongoDB's read methods are bare backfill/cdc."""

UNVERIFIED_SOURCES = frozenset({"sqlserver", "salesforce", "mongodb", "spanner"})
"""Sources whose Datastream output was never seen in real files: their rows carry `unverified_source`."""

OPS = {
    "INSERT": "INSERT", "CREATE": "INSERT", "READ": "INSERT", "UPDATE": "UPDATE", "UPDATE-INSERT": "UPDATE",
    "DELETE": "DELETE", "UPDATE-DELETE": "DELETE",
}
"""Datastream change_type -> canonical op (backfill rows become SNAPSHOT before this is consulted)."""

_RANK = {"UPDATE-DELETE": 0}
_BIN_SUFFIX = re.compile(r"(\d+)\s*$")


class DatastreamOptions(AdapterOptions):
    """Options of the Datastream adapter."""

    binary_columns: list[str] = Field(default_factory=list)
    """MySQL binary columns ('db.table.col' or 'table.col'): their hex strings become bytes."""
    bigquery_table: str | None = None
    """BigQuery exports: the table identity ('db.table' or 'db.schema.table'); default: the parent folder."""
    primary_keys: list[str] | None = None
    """BigQuery exports: the table's primary-key columns (the rows do not name them)."""


# -- per-source declarations ----------------------------------------------------------------------------------
def _s(v: Any) -> str | None:
    return None if v is None or v == "" else str(v)


_IDENT: dict[str, Callable[[dict], tuple[str | None, str | None, str | None]]] = {
    "mysql": lambda sm: (_s(sm.get("database")), None, _s(sm.get("table"))),
    "postgresql": lambda sm: (None, _s(sm.get("schema")), _s(sm.get("table"))),
    "mongodb": lambda sm: (_s(sm.get("database")), None, _s(sm.get("collection") or sm.get("table"))),
    "salesforce": lambda sm: (_s(sm.get("domain")), None, _s(sm.get("object_name") or sm.get("table"))),
    "spanner": lambda sm: (_s(sm.get("database_id") or sm.get("database")), None, _s(sm.get("table"))),
}
"""(database, schema, table) per source; Oracle, SQL Server and unknown sources use all three fields."""


def _ident_default(sm: dict) -> tuple[str | None, str | None, str | None]:
    return _s(sm.get("database")), _s(sm.get("schema")), _s(sm.get("table"))


def _int(v: Any) -> int | None:
    if v is None or v == "":
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _mysql_pos(sm: dict, _sk: list) -> tuple[tuple, str | None]:
    file = sm.get("log_file") if sm.get("log_file") is not None else sm.get("binlog_file")
    pos = sm.get("log_position") if sm.get("log_position") is not None else sm.get("binlog_position")
    if not file and not pos:
        return (None, None), None
    m = _BIN_SUFFIX.search(file or "")
    return (int(m.group(1)) if m else None, _int(pos)), f"{file}:{pos}"


def _oracle_pos(sm: dict, _sk: list) -> tuple[tuple, str | None]:
    scn, ssn = _int(sm.get("scn")), _int(sm.get("ssn"))
    rs = (sm.get("rs_id") or "").strip()
    try:
        rs_parts = tuple(int(p, 16) for p in rs.removeprefix("0x").split(".")) if rs else ()
    except ValueError:
        rs_parts = ()
    if scn is None and not rs:
        return (None, (), None), None
    return (scn, rs_parts, ssn), f"scn={scn},rs_id={rs},ssn={ssn}"


def _pg_pos(sm: dict, _sk: list) -> tuple[tuple, str | None]:
    lsn = (sm.get("lsn") or "").strip()
    hi, sep, lo = lsn.partition("/")
    try:
        return ((int(hi, 16) << 32) | int(lo, 16),) if sep else (None,), lsn or None
    except ValueError:
        return (None,), lsn or None


def _sqlserver_pos(sm: dict, _sk: list) -> tuple[tuple, str | None]:
    lsn = str(sm.get("lsn") or "").strip()
    try:
        return (tuple(int(p, 16) for p in lsn.split(":")) if lsn else (),), lsn or None
    except ValueError:
        return ((),), lsn or None


def _mongo_pos(_sm: dict, sk: list) -> tuple[tuple, str | None]:
    secs, nanos = (_int(sk[0]), _int(sk[1])) if len(sk) >= 2 else (None, None)
    if secs is None:
        return (None, None), None
    return (secs, nanos), f"{secs}.{(nanos or 0):09d}"


def _spanner_pos(sm: dict, _sk: list) -> tuple[tuple, str | None]:
    commit = sm.get("commit_timestamp")
    seq, mod = sm.get("record_sequence"), _int(sm.get("mod_index"))
    seq_key = _int(seq) if _int(seq) is not None else _s(seq)
    try:
        ns = dtypes.parse_ns(commit)
    except ValueError:
        ns = None
    if ns is None:
        return (None, None, None), None
    return (ns, seq_key, mod), f"{commit},{seq},{mod}"


_POSITION: dict[str, Callable[[dict, list], tuple[tuple, str | None]]] = {
    "mysql": _mysql_pos, "oracle": _oracle_pos, "postgresql": _pg_pos, "sqlserver": _sqlserver_pos,
    "mongodb": _mongo_pos, "spanner": _spanner_pos,
}
"""Position parts (compared numerically) and a readable position string, per source."""


def _primary_keys(sm: dict, source_db: str) -> list[str] | None:
    for name in ("primary_keys", "replication_index", "primary_key"):
        pks = sm.get(name)
        if pks is not None:
            return [str(k) for k in (pks if isinstance(pks, list) else [pks])]
    return ["_id"] if source_db == "mongodb" else None


def _source_db(read_method: str, sm: dict) -> str:
    prefix = read_method.strip().lower().split("-", 1)[0]
    if "collection" in sm and prefix not in SOURCE_DBS:
        return "mongodb"
    return SOURCE_DBS.get(prefix, prefix or "unknown")


def _is_backfill(read_method: str, change_type: str, sm: dict) -> bool:
    rm = read_method.lower()
    return "backfill" in rm or "dump" in rm or change_type == "READ" or sm.get("snapshot") is True


# -- value helpers --------------------------------------------------------------------------------------------
def _json_default(v: Any) -> Any:
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, bytes | bytearray | memoryview):
        return "0x" + bytes(v).hex()
    return str(v)


def _dumps(v: Any) -> bytes:
    return orjson.dumps(v, default=_json_default, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)


def payload_hash(payload: Any) -> str:
    """BLAKE2b-128 of the payload as sorted-key JSON: identifies a row image without a position."""
    return hashlib.blake2b(_dumps(payload), digest_size=16).hexdigest()


def _keyable(v: Any) -> Any:
    """Key values must be tuple-encodable: a MongoDB {'$oid': x} id becomes x, other objects their JSON text."""
    if isinstance(v, dict):
        if len(v) == 1 and "$oid" in v:
            return str(v["$oid"])
        return _dumps(v).decode()
    if isinstance(v, list):
        return _dumps(v).decode()
    return v


def _key_of(payload: dict, pks: list[str] | None) -> dict | None:
    """Key object; a key column absent from the payload is matched case-insensitively (SQL Server samples)."""
    if not pks:
        return None
    lower = None
    key = {}
    for k in pks:
        if k in payload:
            key[k] = _keyable(payload[k])
            continue
        lower = lower or {c.lower(): c for c in payload}
        col = lower.get(k.lower())
        key[k] = _keyable(payload[col]) if col is not None else None
    return key


# -- per-file state -------------------------------------------------------------------------------------------
@dataclass
class _FileState:
    """What the adapter remembers while decoding one file (or one message partition)."""

    path: str | None
    fmt: str = FMT_JSON
    seen_schemas: set = field(default_factory=set)
    avro_fields: list[tuple[str, dtypes.FieldType]] | None = None
    avro_schema_id: str | None = None


# -- the adapter ----------------------------------------------------------------------------------------------
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
            state = _FileState(path, fmt=FMT_BIGQUERY)
            yield from containers.each_record(
                path, containers.parquet_rows(src), out,
                lambda rec: self._decode_obj(rec.value, f"row {rec.index} of {path}", state, out, None),
                origin=lambda item: {"index": item.index, "raw": item.raw if isinstance(item, Damage) else None})
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
        state = _FileState(path)
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

    def decode_message(self, value: bytes | None, meta: MessageMeta, out: BatchBuilder) -> None:
        """One JSON event (or BigQuery row) per Pub/Sub or Kafka message."""
        out.set_context(VENDOR, FMT_JSON)
        state = self.__dict__.setdefault("_message_state", _FileState(None))
        where = f"message {meta.topic or ''}[{meta.partition or ''}]@{meta.offset or ''}"
        try:
            if not value or not value.strip():
                raise DecodeError("bad_event", f"{where} is empty; a Datastream message holds one JSON event")
            self._decode_json(bytes(value), where, state, out)
        except DecodeError as exc:  # the per-record decoders raise; a message is one record
            out.quarantine(exc.error_class, exc.message, raw=exc.raw)

    def _decode_json(self, data: bytes, where: str, state: _FileState, out: BatchBuilder) -> None:
        try:
            obj = loads_exact(data)
        except ValueError as exc:
            raise DecodeError("bad_json", f"{where} is not valid JSON ({exc}); fix or drop it and re-run") from None
        self._decode_obj(obj, where, state, out, data)

    def _decode_obj(self, obj: Any, where: str, state: _FileState, out: BatchBuilder, raw: bytes | None) -> None:
        if not isinstance(obj, dict):
            raise DecodeError("bad_event", f"{where} is a JSON {type(obj).__name__}, not an event object", raw=raw)
        if obj.get("kind") == "storage#object":
            raise DecodeError(
                "gcs_notification",
                f"{where} is a Cloud Storage object notification for gs://{obj.get('bucket')}/{obj.get('name')} "
                f"(size {obj.get('size')}), not a Datastream event: normalize the object it names instead "
                "(zero-byte folder objects hold nothing)", raw=raw)
        meta_key = next((k for k in obj if k.lower() == "datastream_metadata"), None)
        if meta_key is not None and "source_metadata" not in obj:
            state.fmt = FMT_BIGQUERY
            self._bigquery_row(obj, meta_key, where, state, out, raw)
            return
        state.fmt = FMT_JSON if state.avro_fields is None else FMT_AVRO
        self._event(obj, where, state, out, raw)

    # -- Avro ---------------------------------------------------------------------------------------------------
    def _read_avro(self, path: str, src: containers.Source, out: BatchBuilder) -> Iterator[None]:
        avro = containers.AvroFile(src, prepare_schema=dtypes.strip_logical_types)
        try:
            avro.read_header()
        except containers.AvroHeaderError as exc:
            yield from containers.each_record(path, [avro.header_damage(exc)], out, _never)
            return
        state = _FileState(path, fmt=FMT_AVRO)
        converters = self._avro_converters(avro.writer_schema, state)
        if converters is None:
            out.begin_record(path, 0, offset="0")
            out.quarantine("not_datastream_avro", f"{path} is an Avro file without Datastream's source_metadata/"
                           "payload (or a BigQuery datastream_metadata) fields; it is not Datastream output")
            yield
            return
        yield from containers.each_record(
            path, avro.records(), out,
            lambda rec: self._avro_record(rec.value, path, rec.index, converters, state, out),
            origin=lambda item: {"index": item.index, "offset": str(item.offset),
                                 "raw": item.raw if isinstance(item, Damage) else None})

    def _avro_converters(self, writer: dict, state: _FileState) -> dict | None:
        """Per top-level field: its converter; payload fields also keep their FieldType for schema versions."""
        fields = {f["name"]: f for f in writer.get("fields", [])}
        types = dtypes.AvroTypes()
        convs: dict[str, Any] = {}
        if "datastream_metadata" in {n.lower() for n in fields}:
            state.fmt = FMT_BIGQUERY
            cols = [(n, types.field(f["type"])) for n, f in fields.items() if n.lower() != "datastream_metadata"]
            state.avro_fields = cols
            convs["__row__"] = [(n, ft.conv) for n, ft in cols]
            return convs
        if "payload" not in fields or "source_metadata" not in fields:
            return None
        for name in ("read_timestamp", "source_timestamp"):
            if name in fields:
                ft = types.field(fields[name]["type"])
                convs[name] = ft.conv or (lambda v, _fl: v)  # a plain long is epoch millis
        payload_type = fields["payload"]["type"]
        payload_type = next((b for b in payload_type if b != "null"), {}) if isinstance(payload_type, list) else payload_type
        cols = [(f["name"], types.field(f["type"])) for f in payload_type.get("fields", [])]
        state.avro_fields = cols
        state.avro_schema_id = "avro-" + hashlib.sha1(_dumps(writer)).hexdigest()[:16]
        convs["payload"] = [(n, ft.conv) for n, ft in cols]
        return convs

    def _avro_record(self, rec: dict, path: str, index: int, convs: dict, state: _FileState,
                     out: BatchBuilder) -> None:
        flags: list[str] = []
        where = f"record {index} of {path}"
        try:
            if "__row__" in convs:
                row = {n: (c(rec.get(n), flags) if c and rec.get(n) is not None else rec.get(n))
                       for n, c in convs["__row__"]}
                meta_key = next(k for k in rec if k.lower() == "datastream_metadata")
                row[meta_key] = rec[meta_key]
                self._bigquery_row(row, meta_key, where, state, out, None, flags)
                return
            ev = dict(rec)
            for name in ("read_timestamp", "source_timestamp"):
                if name in convs and ev.get(name) is not None and isinstance(ev[name], int):
                    value = convs[name](ev[name], flags)
                    ev[name] = dtypes.millis_to_ts(value) if isinstance(value, int) else value
            payload = rec.get("payload")
            if isinstance(payload, dict):
                ev["payload"] = {n: (c(payload.get(n), flags) if c and payload.get(n) is not None
                                     else payload.get(n)) for n, c in convs["payload"]}
        except Exception as exc:  # noqa: BLE001 - a value the type mapping cannot convert
            raise DecodeError("bad_value", f"{where}: a payload value cannot be converted ({type(exc).__name__}: "
                              f"{exc}); raw holds the record as JSON", raw=_dumps(rec)) from None
        self._event(ev, where, state, out, None, flags)

    # -- events ---------------------------------------------------------------------------------------------
    def _event(self, ev: dict, where: str, state: _FileState, out: BatchBuilder, raw: bytes | None,
               flags: list[str] | None = None) -> None:
        """One Datastream event -> one canonical change (or a quarantine saying which field is wrong)."""
        flags = flags if flags is not None else []
        problem = _missing_field(ev)
        if problem:
            raise DecodeError("bad_event", f"{where}: {problem}; not a usable Datastream event",
                              raw=raw if raw is not None else _dumps(ev))
        sm, payload, read_method = ev["source_metadata"], ev["payload"], str(ev["read_method"])
        try:
            source_ts = dtypes.parse_ts(ev.get("source_timestamp"))
            capture_ts = dtypes.parse_ts(ev.get("read_timestamp"))
        except (ValueError, TypeError) as exc:
            raise DecodeError("bad_event", f"{where}: source_timestamp/read_timestamp cannot be parsed ({exc})",
                              raw=raw if raw is not None else _dumps(ev)) from None
        source_db = _source_db(read_method, sm)
        database, schema, table = _IDENT.get(source_db, _ident_default)(sm)
        table = table or _s(ev.get("object"))
        raw_ct = sm.get("change_type") if sm.get("change_type") is not None else sm.get("mod_type")  # Spanner
        change_type = "" if raw_ct is None else str(raw_ct)
        ct = change_type.strip().upper()
        backfill = _is_backfill(read_method, ct, sm)
        if ct in ("DELETE", "UPDATE-DELETE"):
            op = "DELETE"
        elif backfill:
            op = "SNAPSHOT"
        elif ct == "":
            op = "DELETE" if sm.get("is_deleted") is True else "INSERT"
            if op == "DELETE":
                flags.append("delete_by_is_deleted")
        elif ct in OPS:
            op = OPS[ct]
        else:
            raise DecodeError("unknown_op", f"{where}: change_type {change_type!r} is not a Datastream change type "
                              f"({', '.join(OPS)}); report it", raw=raw if raw is not None else _dumps(ev))
        try:
            payload = self._binary_columns(payload, database, schema, table)
        except ValueError as exc:
            raise DecodeError("bad_hex", f"{where}: {exc}; fix the binary_columns option",
                              raw=raw if raw is not None else _dumps(ev)) from None
        if source_db in UNVERIFIED_SOURCES:
            flags.append("unverified_source")
        if ct == "UPDATE-DELETE":
            flags.append("key_change")
        pks = _primary_keys(sm, source_db)
        key = _key_of(payload, pks)
        key_values = tuple(key.values()) if key else ()
        sort_keys = ev.get("sort_keys") or []
        position_parts, position = ((), None) if backfill else _POSITION.get(source_db, lambda *_: ((), None))(
            sm, sort_keys if isinstance(sort_keys, list) else [])
        if backfill:
            sort_parts: tuple = (0, source_ts, key_values)
            id_parts: tuple = (ct, key_values, _s(sm.get("row_id")), payload_hash(payload))
        else:
            sort_parts = (1, *position_parts, source_ts, _RANK.get(ct, 1))
            id_parts = (ct, position if position is not None else source_ts, key_values)
            if not key:
                id_parts = (*id_parts, payload_hash(payload))
        stream = self.stream_name(_s(ev.get("stream_name")), VENDOR)
        schema_version = _s(ev.get("schema_key")) or state.avro_schema_id or _json_schema_id(payload)
        pair = None
        if ct in ("UPDATE-DELETE", "UPDATE-INSERT") and position is not None:
            pair = "\x1f".join((stream, database or "", schema or "", table or "", position))
        self._schema_version(state, out, stream, source_db, database, schema, table, schema_version, payload,
                             pks, source_ts)
        out.change(Change(
            vendor=VENDOR, format=state.fmt, stream=stream, op=op, sort_parts=sort_parts, id_parts=id_parts,
            source_db=source_db, database=database, schema=schema, table=table,
            vendor_op=change_type if raw_ct is not None else None, flags=flags,
            primary_keys=pks, key=key, before=payload if op == "DELETE" else None,
            after=None if op == "DELETE" else payload, changed_columns=None, missing_columns=[],
            schema_version=schema_version, source_ts=source_ts, capture_ts=capture_ts,
            tx_id=_s(sm.get("tx_id") if sm.get("tx_id") is not None else sm.get("server_transaction_id")),
            position=position, pair=pair,
            pair_role={"UPDATE-DELETE": "delete", "UPDATE-INSERT": "insert"}.get(ct) if pair else None,
        ))

    def _binary_columns(self, payload: dict, database: str | None, schema: str | None,
                        table: str | None) -> dict:
        """Turn the hex strings of the columns named in `binary_columns` into bytes."""
        wanted = self._binary_set(database, schema, table)
        if not wanted:
            return payload
        out = dict(payload)
        for col in wanted & payload.keys():
            value = payload[col]
            if value is None or isinstance(value, bytes):
                continue
            try:
                out[col] = dtypes.hex_to_bytes(value)
            except ValueError:
                raise ValueError(f"column {col} is listed in binary_columns but holds non-hex text") from None
        return out

    def _binary_set(self, database: str | None, schema: str | None, table: str | None) -> set[str]:
        """Columns of this table named in `binary_columns` ('table.col', 'db.table.col', 'db.schema.table.col')."""
        if not self.options.binary_columns or not table:
            return set()
        quals = {table, f"{database}.{table}", f"{schema}.{table}", f"{database}.{schema}.{table}"}
        return {s.rsplit(".", 1)[1] for s in self.options.binary_columns
                if "." in s and s.rsplit(".", 1)[0] in quals}

    def _schema_version(self, state: _FileState, out: BatchBuilder, stream: str, source_db: str | None,
                        database: str | None, schema: str | None, table: str | None, version: str,
                        payload: dict, pks: list[str] | None, first_seen: Any) -> None:
        """Record each (table, schema version) once per file: Avro types from the header, JSON types inferred."""
        ident = (stream, database, schema, table, version)
        if ident in state.seen_schemas:
            return
        state.seen_schemas.add(ident)
        binary = self._binary_set(database, schema, table)
        pk_pos = {k.lower(): i + 1 for i, k in enumerate(pks or [])}
        if state.avro_fields is not None:
            columns = [SchemaColumn(n, ft.vendor, "binary" if n in binary else ft.canonical, i + 1,
                                    pk_pos.get(n.lower()), ft.nullable) for i, (n, ft) in enumerate(state.avro_fields)]
        else:
            columns = [SchemaColumn(n, None, "binary" if n in binary else dtypes.infer_canonical(v), i + 1,
                                    pk_pos.get(n.lower()), None) for i, (n, v) in enumerate(payload.items())]
        out.schema(SchemaVersion(vendor=VENDOR, stream=stream, schema_version=version, columns=columns,
                                 source_db=source_db, database=database, schema=schema, table=table,
                                 first_seen=first_seen))

    # -- BigQuery export rows ------------------------------------------------------------------------------
    def _bigquery_row(self, row: dict, meta_key: str, where: str, state: _FileState, out: BatchBuilder,
                      raw: bytes | None, flags: list[str] | None = None) -> None:
        """A row of a Datastream-managed BigQuery table (merge or append-only mode); unverified format."""
        flags = [*(flags or []), "unverified_source"]
        md = {str(k).lower(): v for k, v in (row.get(meta_key) or {}).items()}
        payload = {k: v for k, v in row.items() if k != meta_key}
        try:
            source_ts = dtypes.parse_ts(md.get("source_timestamp"))
        except (ValueError, TypeError) as exc:
            raise DecodeError("bad_event",
                              f"{where}: datastream_metadata.source_timestamp cannot be parsed ({exc})",
                              raw=raw if raw is not None else _dumps(row)) from None
        database, schema, table = self._bigquery_table(state.path)
        pks = list(self.options.primary_keys) if self.options.primary_keys else None
        key = _key_of(payload, pks)
        key_values = tuple(key.values()) if key else ()
        ct = str(md.get("change_type") or "").strip().upper()
        csn = md.get("change_sequence_number")
        csn_key = _int(csn) if _int(csn) is not None else _s(csn)
        sort_keys = md.get("sort_keys") or []
        position = ":".join(str(x) for x in sort_keys[1:]) if len(sort_keys) > 1 else _s(csn)
        stream = self.stream_name(None, "bigquery")
        if "change_type" not in md:  # merge mode: current-state rows
            op = "DELETE" if md.get("is_deleted") is True else "SNAPSHOT"
            if op == "DELETE":
                flags.append("delete_by_is_deleted")
            sort_parts: tuple = (0, source_ts, key_values)
            id_parts: tuple = ("merge", key_values, payload_hash(payload))
            position = None
        elif ct in OPS:
            op = OPS[ct]
            if ct == "UPDATE-DELETE":
                flags.append("key_change")
            sort_parts = (1, source_ts, csn_key, _RANK.get(ct, 1))
            id_parts = (ct, source_ts, csn_key, key_values) + (() if key else (payload_hash(payload),))
        else:
            raise DecodeError("unknown_op", f"{where}: change_type {md.get('change_type')!r} is not a Datastream "
                              "change type", raw=raw if raw is not None else _dumps(row))
        version = "bigquery-" + hashlib.sha1("\x1f".join(payload).encode()).hexdigest()[:16]
        self._schema_version(state, out, stream, None, database, schema, table, version, payload, pks, source_ts)
        pair = None
        if ct in ("UPDATE-DELETE", "UPDATE-INSERT") and position is not None:
            pair = "\x1f".join((stream, database or "", schema or "", table or "", position))
        out.change(Change(
            vendor=VENDOR, format=FMT_BIGQUERY, stream=stream, op=op, sort_parts=sort_parts, id_parts=id_parts,
            database=database, schema=schema, table=table, vendor_op=md.get("change_type"), flags=flags,
            primary_keys=pks, key=key, before=payload if op == "DELETE" else None,
            after=None if op == "DELETE" else payload, missing_columns=[], schema_version=version,
            source_ts=source_ts, position=position, pair=pair,
            pair_role={"UPDATE-DELETE": "delete", "UPDATE-INSERT": "insert"}.get(ct) if pair else None,
        ))

    def _bigquery_table(self, path: str | None) -> tuple[str | None, str | None, str | None]:
        name = self.options.bigquery_table
        if not name and path:
            parts = path.rstrip("/").split("/")
            name = parts[-2] if len(parts) >= 2 else None
        if not name:
            return None, None, None
        bits = name.split(".")
        if len(bits) == 1:
            return None, None, bits[0]
        if len(bits) == 2:
            return bits[0], None, bits[1]
        return bits[0], ".".join(bits[1:-1]), bits[-1]

    # -- multi-record step ------------------------------------------------------------------------------------
    def post_process(self, changes: DataFrame) -> DataFrame:
        """An UPDATE-INSERT whose UPDATE-DELETE partner (same `_pair`) exists becomes an INSERT flagged key_change."""
        deletes = (changes.where(F.col(B.PAIR_ROLE) == "delete").select(F.col(B.PAIR).alias("_kc_pair"))
                   .distinct().withColumn("_kc", F.lit(True)))
        joined = changes.join(deletes, F.col(B.PAIR) == F.col("_kc_pair"), "left")
        is_insert_half = (F.col(B.PAIR_ROLE) == "insert") & F.col("_kc").isNotNull()
        flags = F.array_union(F.coalesce(F.col("flags"), F.array().cast("array<string>")), F.array(F.lit("key_change")))
        return (joined.withColumn("op", F.when(is_insert_half, F.lit("INSERT")).otherwise(F.col("op")))
                .withColumn("flags", F.when(is_insert_half, flags).otherwise(F.col("flags")))
                .drop("_kc_pair", "_kc"))


def _missing_field(ev: dict) -> str | None:
    """Which required envelope field is missing or of the wrong type, if any."""
    if not isinstance(ev.get("read_method"), str) or not ev["read_method"]:
        return "field read_method is missing or not a string"
    if not isinstance(ev.get("source_metadata"), dict):
        return "field source_metadata is missing or not an object"
    if not isinstance(ev.get("payload"), dict):
        return "field payload is missing or not an object"
    return None


def _json_schema_id(payload: dict) -> str:
    """A schema version for events without schema_key: derived from the column names."""
    return "json-" + hashlib.sha1("\x1f".join(payload).encode()).hexdigest()[:16]


def _looks_like_event(value: Any) -> bool:
    """A Datastream event or BigQuery row (used to resynchronise after a broken object)."""
    return isinstance(value, dict) and ("source_metadata" in value or "read_method" in value
                                        or any(str(k).lower() == "datastream_metadata" for k in value))


def _never(_rec: Record) -> None:  # pragma: no cover - only damage goes through this loop
    raise AssertionError("no record to decode")
