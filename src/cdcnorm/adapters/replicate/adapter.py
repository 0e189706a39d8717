"""Qlik Replicate (Attunity) messages from Kafka / Azure Event Hubs targets.

Shapes (reference `replicate.md` §1): the JSON envelope `{"magic":"atMSG","type":"MD"|"DT",...}`, bare
JSON data messages `{data, beforeData, headers}`, the Avro `MessageEnvelope` (bytes start with `atMSG`)
whose `message` is Avro of the metadata or the data record, and the Confluent wire format (`0x00` + 4-byte
schema id + Avro `DataRecord`) with schemas from a local folder/file (`schema_registry`). Containers: JSON
and JSON-lines files, Event Hubs Capture Avro files (`EventData.Body` is the message), Avro container files
of `MessageEnvelope` records (a Kafka-to-storage sink's Avro output), single raw-message
files (`.bin`), and Kafka-shaped DataFrames through :meth:`ReplicateAdapter.decode_message`.

Metadata (MD) messages fill a :class:`~cdcnorm.adapters.replicate.catalog.Catalog`; data (DT) messages are
decoded with the entry their `messageSchemaId` names, else (JSON only) with the newest version of their
table whose columns are exactly the message's fields, else from the data alone (flag `no_schema`). An Avro
DT whose schema is unknown is quarantined as `schema_not_found` and can be re-processed once the MD is known
(the pipeline's first pass collects MD entries before decoding and :meth:`ReplicateAdapter.prepare` takes
them; the `catalog_entries` option passes them in by hand).

Ordering and identity: `changeSequence` (35 digits: `YYYYMMDDHHmmSShh` + a 19-digit counter, monotonic per
task) is a total order of CDC changes, compared as a number. sort_parts: CDC `(1, int(changeSequence),
transactionEventCounter or 0)`; REFRESH `(0, int(changeSequence) or 0, row hash)`; DDL `(1, lineage
timestamp as a changeSequence prefix, -1)`. id_parts: `(int(changeSequence), operation)`; REFRESH without a
changeSequence `("REFRESH", key values, row hash)`; DDL `("DDL", tableVersion, schemaId)` (the emitter adds
vendor, stream and the table).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import PurePath
from typing import IO, Any, ClassVar

import orjson

from cdcnorm import containers
from cdcnorm.adapters.base import Adapter, AdapterOptions, FirstPass, MessageMeta
from cdcnorm.adapters.replicate import SPEC
from cdcnorm.adapters.replicate.catalog import (
    Catalog,
    diff,
    entry_from_data_schema,
    entry_from_md,
    entry_from_schema_row,
    load_registry,
    merge_entries,
    parse_avro_schema,
    type_label,
)
from cdcnorm.adapters.replicate.masks import resolve
from cdcnorm.canonical import tuple_codec
from cdcnorm.canonical.emit import BatchBuilder
from cdcnorm.canonical.record import Change, SchemaColumn, SchemaVersion, split_key_change
from cdcnorm.errors import DecodeError

VENDOR = SPEC.name
FMT_JSON, FMT_AVRO, FMT_REGISTRY = SPEC.formats
MAGIC = b"atMSG"
METADATA_RULE = "replicate_metadata"
CONTROL_PREFIX = "attrep_"
MYSQL_FAMILY = frozenset({"mysql", "mariadb", "aurora-mysql", "tidb"})

OPS: dict[str, str] = {"REFRESH": "SNAPSHOT", "INSERT": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE"}
"""Replicate `headers.operation` -> canonical op."""

ENVELOPE_SCHEMA = {
    "type": "record",
    "name": "MessageEnvelope",
    "fields": [
        {"name": "magic", "type": {"type": "fixed", "name": "Magic", "size": 5}},
        {"name": "type", "type": "string"},
        {"name": "headers", "type": ["null", {"type": "map", "values": "string"}]},
        {"name": "messageSchemaId", "type": ["null", "string"]},
        {"name": "messageSchema", "type": ["null", "string"]},
        {"name": "message", "type": "bytes"},
    ],
}
"""The documented Avro envelope (reference §2), no namespace."""

_UTC = dt.UTC


class _KeepString(Exception):
    """A temporal value whose precision would be lost: keep its text, flag `timestamp_as_string`."""


# -- value converters: JSON strings/numbers or Avro values -> exact Python values ----------------------------
def _int(v: Any) -> int:
    if isinstance(v, bool):
        raise ValueError("a boolean is not an integer")
    if isinstance(v, int):
        return v
    if isinstance(v, Decimal | float) and v == int(v):
        return int(v)
    if isinstance(v, str):
        return int(v.strip())
    raise ValueError(f"not an integer: {v!r}")


def _decimal(v: Any) -> Decimal:
    if isinstance(v, bool):
        raise ValueError("a boolean is not a number")
    d = v if isinstance(v, Decimal) else Decimal(repr(v) if isinstance(v, float) else str(v).strip())
    if not d.is_finite():
        raise ValueError(f"not a finite number: {v!r}")
    return d


def _float(v: Any) -> float:
    if isinstance(v, bool):
        raise ValueError("a boolean is not a number")
    return float(v)


def _bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, int) and v in (0, 1):
        return bool(v)
    if isinstance(v, str) and v.strip().lower() in ("true", "false", "1", "0"):
        return v.strip().lower() in ("true", "1")
    raise ValueError(f"not a boolean: {v!r}")


def _hex_bytes(v: Any) -> bytes:
    if isinstance(v, bytes | bytearray):
        return bytes(v)
    try:
        return bytes.fromhex(v)
    except (TypeError, ValueError):
        raise DecodeError(
            "bad_hex",
            f"BYTES/BLOB value {str(v)[:60]!r} is not a hex string; the message is "
            "damaged — fix it and re-process it",
        ) from None


_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_TIME = r"(\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?"
_TIME_RE = re.compile(_TIME)
_DATETIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[ T]" + _TIME + ")?")


def _micros(frac: str | None) -> int:
    frac = frac or ""
    if len(frac) > 6 and frac[6:].strip("0"):
        raise _KeepString
    return int((frac + "000000")[:6])


def _date(v: Any) -> dt.date:
    if isinstance(v, dt.datetime):
        return v.date()
    if isinstance(v, dt.date):
        return v
    m = _DATE.fullmatch(str(v).strip())
    try:
        return dt.date(int(m[1]), int(m[2]), int(m[3])) if m else _keep()
    except ValueError:
        raise _KeepString from None


def _time(v: Any) -> dt.time:
    if isinstance(v, dt.time):
        return v
    m = _TIME_RE.fullmatch(str(v).strip())
    try:
        return dt.time(int(m[1]), int(m[2]), int(m[3]), _micros(m[4])) if m else _keep()
    except ValueError:
        raise _KeepString from None


def _datetime(v: Any) -> dt.datetime:
    """DATETIME is the source's zone-less value (Avro `timestamp-micros` is read as UTC, so made naive)."""
    if isinstance(v, dt.datetime):
        return v.astimezone(_UTC).replace(tzinfo=None) if v.tzinfo else v
    m = _DATETIME.fullmatch(str(v).strip())
    if not m:
        _keep()
    try:
        return dt.datetime(
            int(m[1]), int(m[2]), int(m[3]), int(m[4] or 0), int(m[5] or 0), int(m[6] or 0), _micros(m[7])
        )
    except ValueError:
        raise _KeepString from None


def _keep() -> Any:
    raise _KeepString


def _same(v: Any) -> Any:
    return v


TYPES: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "BOOLEAN": ("boolean", _bool),
    "BYTES": ("binary", _hex_bytes),
    "BLOB": ("binary", _hex_bytes),
    "DATE": ("date", _date),
    "TIME": ("time", _time),
    "DATETIME": ("timestamp_ntz", _datetime),
    "INT1": ("tinyint", _int),
    "INT2": ("smallint", _int),
    "INT4": ("int", _int),
    "INT8": ("bigint", _int),
    "UINT1": ("smallint", _int),
    "UINT2": ("int", _int),
    "UINT4": ("bigint", _int),
    "UINT8": ("decimal(20,0)", _int),
    "NUMERIC": ("decimal", _decimal),
    "REAL4": ("float", _float),
    "REAL8": ("double", _float),
    "STRING": ("string", _same),
    "WSTRING": ("string", _same),
    "CLOB": ("string", _same),
    "NCLOB": ("string", _same),
}
"""Replicate data type -> (canonical type, converter from the JSON/Avro value to the exact Python value)."""

AVRO_TYPES: dict[str, str] = {
    "boolean": "boolean",
    "int": "int",
    "long": "bigint",
    "float": "float",
    "double": "double",
    "string": "string",
    "bytes": "binary",
    "int:date": "date",
    "int:time-millis": "time",
    "long:time-micros": "time",
    "long:timestamp-micros": "timestamp_ntz",
    "long:timestamp-millis": "timestamp_ntz",
}
"""Avro type of a Schema Registry DataRecord field (no MD available) -> canonical type."""


def canonical_type(col: dict[str, Any]) -> str | None:
    """Canonical type of a catalog column (from its Replicate type, else its Avro type)."""
    t = col.get("type")
    if t is None:
        avro = col.get("avro_type") or ""
        return avro.split(":", 1)[1] if avro.startswith("bytes:decimal") else AVRO_TYPES.get(avro)
    if t == "NUMERIC" and col.get("precision"):
        return f"decimal({col['precision']},{col.get('scale') or 0})"
    return TYPES[t][0] if t in TYPES else None


class ReplicateOptions(AdapterOptions):
    """Options of the Replicate adapter."""

    catalog_entries: list[dict[str, Any]] = []
    """MD catalog entries known before decoding (from the pipeline's first pass and from earlier runs)."""
    topic_tables: dict[str, str] = {}
    """Topic / Event Hub name -> `schema.table` or `table`, for DTs whose metadata is unknown."""
    default_table: str | None = None
    """`schema.table` or `table` for DTs whose table nothing else names (e.g. a JSON dump of one topic)."""
    table_field: str | None = None
    """A data column that carries the table name (added by a Replicate transformation, e.g. `tableName`)."""
    source_db: str | None = None
    """Source engine (`mysql`, `oracle`, `sqlserver`, ...): Replicate messages do not say. For the MySQL
    family the Replicate `schema` goes into `database`."""
    schema_registry: str | None = None
    """Local folder or file of Confluent Schema Registry schemas by id (for the `0x00` wire format)."""
    prescan: bool = True
    """Learn MD messages before decoding: a first Spark pass over the whole input (`prepare`) and, for files
    decoded without it, a scan of each file first. Turn it off when `catalog_entries` is already complete."""


@dataclass(slots=True)
class _Envelope:
    kind: str
    fmt: str
    schema_id: str | None
    payload: Any
    message_schema: str | None = None


@dataclass(frozen=True, slots=True)
class _Ctx:
    """Where a message came from: topic / Event Hub (names table, stream), fallback stream, capture time."""

    topic: str | None
    fallback: str
    capture_ts: dt.datetime | None = None


# -- envelope parsing (pure) ---------------------------------------------------------------------------------
_ENVELOPE_PARSED: Any = None


def _envelope_schema() -> Any:
    global _ENVELOPE_PARSED
    if _ENVELOPE_PARSED is None:
        _ENVELOPE_PARSED = parse_avro_schema(ENVELOPE_SCHEMA, "MessageEnvelope")
    return _ENVELOPE_PARSED


def avro_read(data: bytes, schema: Any, what: str) -> Any:
    """Decode one schemaless Avro datum; short input is `truncated_avro`, other damage `corrupt_avro`."""
    from fastavro import schemaless_reader

    bio = io.BytesIO(data)
    try:
        rec = schemaless_reader(bio, schema, None)
    except (EOFError, StopIteration):
        raise DecodeError(
            "truncated_avro",
            f"{what} ends early ({len(data)} bytes): the message was cut; re-deliver the complete message",
        ) from None
    except Exception as exc:
        raise DecodeError(
            "corrupt_avro",
            f"{what} is not valid Avro for its schema ({type(exc).__name__}: {exc}); "
            "check that the schema matches the producer",
        ) from None
    if bio.tell() != len(data):
        raise DecodeError(
            "corrupt_avro",
            f"{what}: {len(data) - bio.tell()} bytes are left after decoding; the "
            "schema does not match the bytes (wrong schemaId or registry entry?)",
        )
    return rec


def parse_envelope(value: bytes | None) -> _Envelope:
    """Recognise the payload shape of one message (checklist item 1)."""
    if not value:
        raise DecodeError(
            "empty_message",
            "the message has no bytes (a tombstone or an empty event body); there is nothing to decode",
        )
    if value[:5] == MAGIC:
        return _avro_envelope(value)
    if value[0] == 0:
        if len(value) < 5:
            raise DecodeError("truncated_avro", "a Schema Registry message shorter than its 5-byte header")
        return _Envelope("DT", FMT_REGISTRY, str(int.from_bytes(value[1:5], "big")), value[5:])
    text = value.lstrip()
    if text.startswith(b"\xef\xbb\xbf"):
        text = text[3:].lstrip()
    if text[:1] != b"{":
        raise DecodeError(
            "unknown_format",
            "not a Replicate message: neither JSON, an Avro envelope (`atMSG`) "
            "nor the Schema Registry wire format (0x00 + schema id)",
        )
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise DecodeError("bad_json", f"invalid JSON ({exc}); fix the message and re-process it") from None
    return json_envelope(doc)


def json_envelope(doc: Any) -> _Envelope:
    """The envelope of a parsed JSON message: enveloped MD/DT, bare DT or bare MD."""
    if not isinstance(doc, dict):
        raise DecodeError("bad_json", "a Replicate JSON message must be an object")
    if "magic" in doc or ("type" in doc and "message" in doc):
        if doc.get("magic") != "atMSG":
            raise DecodeError("bad_magic", f"envelope magic is {doc.get('magic')!r}, expected 'atMSG'")
        kind, msg = doc.get("type"), doc.get("message")
        if kind not in ("MD", "DT"):
            raise DecodeError(
                "unknown_type", f"envelope type {kind!r} is neither 'MD' (metadata) nor 'DT' (data)"
            )
        if isinstance(msg, str):
            try:
                msg = orjson.loads(msg)
            except orjson.JSONDecodeError:
                raise DecodeError("bad_json", "the envelope's message string is not JSON") from None
        if not isinstance(msg, dict):
            raise DecodeError("bad_message", "the envelope has no message object")
        return _Envelope(kind, FMT_JSON, doc.get("messageSchemaId") or None, msg, doc.get("messageSchema"))
    if "task_name" in doc and "op" in doc and isinstance(doc.get("data"), list):
        raise DecodeError(
            "unsupported_format",
            "legacy Attunity JSON (2016, pre-envelope `task_name/op/data[]`) "
            "is not supported; use a current Replicate message format",
        )
    if "lineage" in doc and "tableStructure" in doc:
        return _Envelope("MD", FMT_JSON, doc.get("schemaId") or None, doc)
    if "data" in doc or "headers" in doc or any(k.startswith("headers_") for k in doc):
        return _Envelope("DT", FMT_JSON, None, doc)
    raise DecodeError(
        "unknown_format",
        "a JSON object that is neither a Replicate envelope nor a data message {data, beforeData, headers}",
    )


def _avro_envelope(value: bytes) -> _Envelope:
    rec = avro_read(value, _envelope_schema(), "the Avro MessageEnvelope")
    kind = rec["type"]
    if kind not in ("MD", "DT"):
        raise DecodeError(
            "unknown_type", f"envelope type {kind!r} is neither 'MD' (metadata) nor 'DT' (data)"
        )
    return _Envelope(
        kind, FMT_AVRO, rec.get("messageSchemaId") or None, rec["message"], rec.get("messageSchema")
    )


def _container_kind(writer_schema: Any) -> str | None:
    """What an Avro container file holds: `capture` (EventData), `envelope` (MessageEnvelope) or None."""
    names = {f.get("name") for f in (writer_schema or {}).get("fields", []) if isinstance(f, dict)}
    if "Body" in names:
        return "capture"
    if {"magic", "type", "message"} <= names:
        return "envelope"
    return None


def envelope_bytes(rec: Any) -> bytes:
    """A MessageEnvelope record read from a container, re-encoded as the Kafka message value it was."""
    from fastavro import schemaless_writer

    bio = io.BytesIO()
    try:
        schemaless_writer(bio, _envelope_schema(), rec)
    except Exception as exc:
        raise DecodeError(
            "bad_envelope",
            f"a container record does not fit the MessageEnvelope schema ({type(exc).__name__}: {exc}); "
            "check that the file holds Replicate Avro envelopes",
        ) from None
    return bio.getvalue()


def _md_message(env: _Envelope) -> dict[str, Any]:
    if env.fmt == FMT_JSON:
        return env.payload
    if not env.message_schema:
        raise DecodeError("bad_metadata", "an Avro MD envelope without messageSchema cannot be decoded")
    return avro_read(
        env.payload, parse_avro_schema(env.message_schema, "messageSchema"), "the Avro MD message"
    )


def _md_entry(env: _Envelope) -> dict[str, Any]:
    entry = entry_from_md(_md_message(env))
    entry["schema_id"] = entry["schema_id"] or env.schema_id
    return entry


def might_be_metadata(value: bytes | None) -> bool:
    """Cheap test before parsing: can this message be an MD message?"""
    return bool(value) and (value[:8] == MAGIC + b"\x04MD" or b'"MD"' in value or b'"lineage"' in value)


def extract_metadata(value: bytes | None) -> list[dict[str, Any]]:
    """MD messages in one raw message as catalog entries (JSON-serialisable dicts); [] for anything else.

    The pipeline's first pass calls this over every message (or :meth:`ReplicateAdapter.metadata_from_file`
    over every file) and passes the union to the adapter as `catalog_entries`.
    """
    if not might_be_metadata(value):
        return []
    try:
        env = parse_envelope(value)
        return [_md_entry(env)] if env.kind == "MD" else []
    except DecodeError:
        return []


# -- small helpers -------------------------------------------------------------------------------------------
def _instant(text: Any) -> dt.datetime | None:
    """Replicate header/lineage timestamps: UTC without a zone suffix (`2023-03-21T21:34:19.511`)."""
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        t = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return t.replace(tzinfo=_UTC) if t.tzinfo is None else t.astimezone(_UTC)


_US_TIME = re.compile(r"(\d{1,2})/(\d{1,2})/(\d{4}) (\d{1,2}):(\d{2}):(\d{2})(?:\.(\d{1,7}))? ?([AP]M)", re.I)


def enqueued_time(text: Any) -> dt.datetime | None:
    """Event Hubs Capture `EnqueuedTimeUtc`: a US-style string `11/16/2016 4:44:11 PM` (UTC)."""
    m = _US_TIME.fullmatch(str(text).strip()) if text is not None else None
    if not m:
        return _instant(text)
    hour = int(m[4]) % 12 + (12 if m[8].upper() == "PM" else 0)
    try:
        return dt.datetime(
            int(m[3]),
            int(m[1]),
            int(m[2]),
            hour,
            int(m[5]),
            int(m[6]),
            int(((m[7] or "") + "000000")[:6]),
            tzinfo=_UTC,
        )
    except ValueError:
        return None


def _lineage_seq(text: Any) -> int:
    """A metadata timestamp as a changeSequence (`YYYYMMDDHHmmSShh` + 19 zero digits), to order DDL rows."""
    t = _instant(text)
    if t is None:
        return 0
    return int(t.strftime("%Y%m%d%H%M%S") + f"{t.microsecond // 10000:02d}") * 10**19


_CAPTURE_PATH = re.compile(r"(?:^|/)([^/]+)/([^/]+)/\d{4}/\d{1,2}/\d{1,2}/\d{1,2}/\d{1,2}/\d{1,2}\.avro$")


def capture_location(path: str) -> tuple[str | None, str | None]:
    """(Event Hub, partition) from the default Capture path `{ns}/{hub}/{partition}/{Y}/{M}/{D}/{h}/...`."""
    m = _CAPTURE_PATH.search(path.replace("\\", "/"))
    return (m[1], m[2]) if m else (None, None)


def _row_hash(row: dict[str, Any] | None) -> bytes:
    items: list[Any] = []
    for k in sorted(row or {}):
        items += [k, row[k]]
    return hashlib.blake2b(tuple_codec.encode(tuple(items)), digest_size=16).digest()


def _split_name(name: str) -> tuple[str | None, str]:
    schema, _, table = name.rpartition(".")
    return schema or None, table


def _is_control(table: str | None, topic: str | None) -> bool:
    return any(n and n.casefold().startswith(CONTROL_PREFIX) for n in (table, topic))


_FILE_SUFFIXES = (".gz", ".json", ".jsonl", ".ndjson", ".txt", ".avro", ".bin", ".msg")


def _stem(path: str | None) -> str:
    """A file name without container suffixes (`orders.jsonl.gz` -> `orders`); dotted topics stay whole."""
    if not path:
        return VENDOR
    name = PurePath(path).name
    while name.lower().endswith(_FILE_SUFFIXES):
        name = name.rsplit(".", 1)[0]
    return name or VENDOR


def _topic_of(meta: MessageMeta) -> str | None:
    """The topic of a raw message; on a quarantine retry only the origin uri is left: the topic itself for
    messages read from Kafka, or the file path (an Event Hubs Capture path still names its hub)."""
    if meta.topic:
        return meta.topic
    uri = meta.uri or ""
    hub, _ = capture_location(uri)
    if hub:
        return hub
    return uri if uri and "/" not in uri and ":" not in uri and _stem(uri) == uri else None


# -- the adapter ---------------------------------------------------------------------------------------------
class ReplicateAdapter(Adapter):
    """Qlik Replicate Kafka / Event Hubs messages -> canonical change rows."""

    name: ClassVar[str] = VENDOR
    formats: ClassVar[tuple[str, ...]] = SPEC.formats
    flags: ClassVar[tuple[str, ...]] = SPEC.flags
    Options: ClassVar[type[AdapterOptions]] = ReplicateOptions

    def __init__(self, options: dict[str, Any] | AdapterOptions | None = None):
        super().__init__(options)
        self.catalog = Catalog(self.options.catalog_entries)
        self._registry = load_registry(self.options.schema_registry) if self.options.schema_registry else {}
        self._registry_schemas_sent: set[tuple[str, str]] = set()

    @property
    def catalog_entries(self) -> list[dict[str, Any]]:
        """The catalog as serialisable entries (options' entries plus MD messages seen so far)."""
        return self.catalog.entries()

    # -- the first pass: MD messages of the whole input and the lake's stored versions, before decoding ------
    uses_stored_schemas: ClassVar[bool] = True

    def needs_first_pass(self) -> bool:
        return self.options.prescan

    def first_pass_file(self, path: str, fh: IO[bytes]) -> list[dict[str, Any]]:
        return self.metadata_from_file(path, fh)

    def first_pass_message(self, value: bytes | None) -> list[dict[str, Any]]:
        return extract_metadata(value)

    def prepare(self, first: FirstPass) -> ReplicateAdapter:
        """Learn every MD message of the input (and the lake's stored versions) before decoding.

        Decoding runs in parallel partitions, so a DT may be decoded in another task than its MD. The returned
        adapter carries the merged catalog to the executors (per-file prescans are then not needed for files).
        """
        stored = [e for e in map(entry_from_schema_row, first.stored_schemas) if e is not None]
        found = merge_entries(stored, list(self.options.catalog_entries), first.items)
        update: dict[str, Any] = {"catalog_entries": found}
        if first.kind == "files":
            update["prescan"] = False
        return type(self)(self.options.model_copy(update=update))

    def add_catalog_entries(self, entries: list[dict[str, Any]]) -> None:
        """Teach the adapter more table versions (e.g. MD entries from a first pass)."""
        for e in entries:
            self.catalog.add(e)

    # -- detection -------------------------------------------------------------------------------------------
    @classmethod
    def sniff(cls, path: str | None, head: bytes) -> bool:
        if head[:5] == MAGIC or (
            head[:4] == b"Obj\x01" and (b"EventData" in head[:4096] or b"MessageEnvelope" in head[:4096])
        ):
            return True
        text = head[:8192]
        return b'"atMSG"' in text or (b'"changeSequence"' in text and b'"operation"' in text)

    # -- files -----------------------------------------------------------------------------------------------
    def read_file(self, path: str, fh: IO[bytes], out: BatchBuilder) -> Iterator[None]:
        """Decode one file (streamed): JSON / JSON lines, an Avro container file, or one raw message (`.bin`)."""
        out.set_context(VENDOR, FMT_JSON)
        if self.options.prescan:  # learn the file's MD messages first: a DT may precede its MD
            fh = containers.rewindable(fh)
            self.add_catalog_entries(self.metadata_from_file(path, fh))
            fh.seek(0)
        src = containers.open_source(fh)
        head = src.peek(8)
        if head[:4] == containers.AVRO_MAGIC:
            yield from self._read_container(path, src, out)
        elif head[:5] == MAGIC or head[:1] == b"\x00":
            raw = src.read()
            out.begin_record(path, 0, raw=raw)
            self._decode_value(raw, _Ctx(None, _stem(path)), out)
            yield
        elif containers.container_of(src) != "empty":
            yield from self._read_json(path, src, out)

    def metadata_from_file(self, path: str, fh: IO[bytes]) -> list[dict[str, Any]]:
        """MD catalog entries in one file (the pipeline's first pass over file inputs), streamed."""
        src = containers.open_source(fh)
        head = src.peek(8)
        if head[:4] == containers.AVRO_MAGIC:
            return [e for _, body in self._container_messages(src, md_only=True) if might_be_metadata(body)
                    for e in extract_metadata(body)]
        if head[:5] == MAGIC:
            return extract_metadata(src.read())
        found: list[dict[str, Any]] = []
        for item in containers.JsonRecords(src, orjson.loads, _looks_like_message):
            if isinstance(item, containers.Record) and item.raw is not None and might_be_metadata(item.raw):
                found += _json_md_entries(item.value)
        return found

    def _container_messages(
        self, src: containers.Source, md_only: bool = False
    ) -> Iterator[tuple[containers.Record | containers.Damage, bytes | None]]:
        """An Avro container's records as the message each holds: Event Hubs Capture `EventData` (Body is the
        message) or `MessageEnvelope` records (what a Kafka-to-storage sink with the Avro format writes); the
        header's damage or an unknown record shape is one Damage / DecodeError item. `md_only`: envelopes that
        are not MD are not re-encoded (the metadata scan)."""
        avro = containers.AvroFile(src)
        try:
            avro.read_header()
        except containers.AvroHeaderError as exc:
            yield avro.header_damage(exc), None
            return
        kind = _container_kind(avro.writer_schema)
        if kind is None:
            rest = bytes(avro.header_bytes) + src.read(containers.RAW_CAP)
            error = DecodeError(
                "unsupported_format",
                "an Avro container file whose records have neither a `Body` field (Event Hubs Capture) "
                "nor the MessageEnvelope fields magic/type/message is not Replicate output",
            )
            yield containers.Record(0, 0, rest[: containers.RAW_CAP], error), None
            return
        for item in avro.records():
            if isinstance(item, containers.Damage):
                yield item, None
            elif kind == "capture":
                rec = item.value
                item.raw = rec.get("Body")
                item.value = ("capture", rec.get("SequenceNumber"), rec.get("EnqueuedTimeUtc"))
                yield item, item.raw
            elif md_only and item.value.get("type") != "MD":
                yield item, None
            else:
                try:
                    item.raw, item.value = envelope_bytes(item.value), ("envelope", None, None)
                except DecodeError as exc:
                    item.raw, item.value = orjson.dumps(item.value, default=repr), exc
                yield item, item.raw if not isinstance(item.value, DecodeError) else None

    def _read_container(self, path: str, src: containers.Source, out: BatchBuilder) -> Iterator[None]:
        topic, partition = capture_location(path)
        fallback = _stem(path)

        def origin(item: containers.Record | containers.Damage) -> dict[str, Any]:
            if isinstance(item, containers.Damage):
                return {"index": item.index, "partition": partition, "offset": str(item.offset), "raw": item.raw}
            if isinstance(item.value, tuple) and item.value[0] == "capture":
                seq = item.value[1]
                return {"index": item.index, "partition": partition, "offset": None if seq is None else str(seq),
                        "raw": item.raw}
            return {"index": item.index, "raw": item.raw}

        def decode(rec: containers.Record) -> None:
            if isinstance(rec.value, DecodeError):
                out.set_context(VENDOR, FMT_AVRO)
                raise rec.value
            ctx = _Ctx(topic, fallback, enqueued_time(rec.value[2]))
            self._decode_value(rec.raw, ctx, out)

        yield from containers.each_record(path, (item for item, _ in self._container_messages(src)), out, decode,
                                          origin)

    def _read_json(self, path: str, src: containers.Source, out: BatchBuilder) -> Iterator[None]:
        """JSON lines, pretty-printed or concatenated objects, or an array of messages (streamed)."""
        ctx = _Ctx(None, _stem(path))
        reader = containers.JsonRecords(src, orjson.loads, _looks_like_message)

        def origin(item: containers.Record | containers.Damage) -> dict[str, Any]:
            return {"index": reader.line_of(item) if reader.lines_mode else item.index, "raw": item.raw}

        yield from containers.each_record(path, reader, out, lambda rec: self._decode_doc(rec.value, ctx, out),
                                          origin)

    # -- raw messages --------------------------------------------------------------------------------------
    def decode_message(self, value: bytes | None, meta: MessageMeta, out: BatchBuilder) -> None:
        ts = meta.timestamp
        if ts is not None and ts.tzinfo is None:
            ts = ts.replace(tzinfo=_UTC)
        self._decode_value(value, _Ctx(_topic_of(meta), _stem(meta.uri), ts), out)

    def _decode_value(self, value: bytes | None, ctx: _Ctx, out: BatchBuilder) -> None:
        out.set_context(VENDOR, FMT_JSON)
        self._guarded(lambda: parse_envelope(value), ctx, out)

    def _decode_doc(self, doc: Any, ctx: _Ctx, out: BatchBuilder) -> None:
        out.set_context(VENDOR, FMT_JSON)
        self._guarded(lambda: json_envelope(doc), ctx, out)

    def _guarded(self, envelope: Callable[[], _Envelope], ctx: _Ctx, out: BatchBuilder) -> None:
        """Decode one message; any failure quarantines it (nothing raises out of the adapter)."""
        try:
            env = envelope()
            out.set_context(VENDOR, env.fmt)
            if env.kind == "MD":
                self._metadata(env, ctx, out)
            else:
                for change in self._data(env, ctx, out):
                    out.change(change)
        except DecodeError as exc:
            out.quarantine(exc.error_class, exc.message)
        except Exception as exc:
            out.quarantine(
                "decode_failed",
                f"unexpected {type(exc).__name__}: {exc}; this is a cdcnorm bug — "
                "report it with the raw message",
            )

    # -- metadata --------------------------------------------------------------------------------------------
    def _metadata(self, env: _Envelope, ctx: _Ctx, out: BatchBuilder) -> None:
        entry = _md_entry(env)
        previous = self.catalog.previous(entry)
        self.catalog.add(entry)
        if _is_control(entry["table"], ctx.topic):
            out.metadata(METADATA_RULE)
            return
        stream = self.stream_name(ctx.topic, ctx.fallback)
        database, schema = self._place(entry.get("schema"))
        if previous is not None:
            out.change(
                Change(
                    vendor=VENDOR,
                    format=env.fmt,
                    stream=stream,
                    op="DDL",
                    vendor_op="MD",
                    sort_parts=(1, _lineage_seq(entry.get("timestamp")), -1),
                    id_parts=("DDL", entry.get("table_version"), entry.get("schema_id")),
                    source_db=self.options.source_db,
                    database=database,
                    schema=schema,
                    table=entry["table"],
                    ddl_changes=diff(previous, entry),
                    schema_version=entry.get("schema_id"),
                    source_ts=_instant(entry.get("timestamp")),
                    capture_ts=ctx.capture_ts,
                    content={
                        "tableVersion": entry.get("table_version"),
                        "previousTableVersion": previous.get("table_version"),
                        "previousSchemaId": previous.get("schema_id"),
                    },
                )
            )
        else:
            out.metadata(METADATA_RULE)
        out.schema(self._schema_version(entry, stream, entry.get("schema"), entry["table"]))

    def _schema_version(
        self, entry: dict[str, Any], stream: str, schema: str | None, table: str | None
    ) -> SchemaVersion:
        database, schema = self._place(schema)
        return SchemaVersion(
            vendor=VENDOR,
            stream=stream,
            schema_version=entry.get("schema_id") or f"v{entry.get('table_version')}",
            columns=[
                SchemaColumn(
                    name=c["name"],
                    vendor_type=type_label(c),
                    canonical_type=canonical_type(c),
                    ordinal=c["ordinal"],
                    pk_position=c.get("pk_position") or None,
                    nullable=c.get("nullable"),
                )
                for c in entry["columns"]
            ],
            source_db=self.options.source_db,
            database=database,
            schema=schema,
            table=table,
            first_seen=_instant(entry.get("timestamp")),
            definition=orjson.dumps(entry, default=str).decode(),
        )

    def _place(self, schema: str | None) -> tuple[str | None, str | None]:
        """(database, schema): a MySQL-family source's Replicate "schema" is its database."""
        if (self.options.source_db or "").lower() in MYSQL_FAMILY:
            return schema, None
        return None, schema

    # -- data ------------------------------------------------------------------------------------------------
    def _entry_for(self, env: _Envelope) -> dict[str, Any] | None:
        if env.fmt != FMT_REGISTRY:
            return self.catalog.get(env.schema_id)
        key = f"registry:{env.schema_id}"
        entry = self.catalog.get(key)
        if entry is None and int(env.schema_id) in self._registry:
            entry = entry_from_data_schema(key, self._registry[int(env.schema_id)])
            self.catalog.add(entry)
        return entry

    def _table_of(
        self, entry: dict[str, Any] | None, data: dict[str, Any], ctx: _Ctx
    ) -> tuple[str | None, str | None]:
        if entry is not None and entry.get("table"):
            return entry.get("schema"), entry["table"]
        field = self.options.table_field
        if field and isinstance(data.get(field), str) and data[field]:
            return _split_name(data[field])
        if ctx.topic and ctx.topic in self.options.topic_tables:
            return _split_name(self.options.topic_tables[ctx.topic])
        if ctx.topic:
            return None, ctx.topic
        if self.options.default_table:
            return _split_name(self.options.default_table)
        return None, None

    def _data(self, env: _Envelope, ctx: _Ctx, out: BatchBuilder) -> list[Change]:
        entry = self._entry_for(env)
        if env.fmt == FMT_JSON:
            record = env.payload
        else:
            if entry is None:
                where = (
                    "registry schema" if env.fmt == FMT_REGISTRY else "metadata message (MD) with schemaId"
                )
                raise DecodeError(
                    "schema_not_found",
                    f"no {where} {env.schema_id} is known, and an Avro data "
                    "message cannot be read without it; ingest the MD / registry schema, then run "
                    "`cdcnorm quarantine retry`",
                )
            record = avro_read(
                env.payload,
                self.catalog.parsed_data_schema(entry),
                f"the data message of schema {env.schema_id}",
            )
        data, before, headers = _sections(record)
        image = data if data is not None else before
        if image is None:
            raise DecodeError("bad_message", "the data message has neither `data` nor `beforeData`")
        schema, table = self._table_of(entry, image, ctx)
        if entry is None:
            entry = self.catalog.match(schema, table, list(image))
            if entry is not None:
                schema, table = entry.get("schema"), entry["table"]
        stream = self.stream_name(ctx.topic, ctx.fallback)
        if (
            entry is not None
            and entry.get("origin") == "registry"
            and (entry["schema_id"], stream) not in self._registry_schemas_sent
        ):
            self._registry_schemas_sent.add((entry["schema_id"], stream))
            out.schema(self._schema_version(entry, stream, schema, table))
        return self._changes(_Row(env, entry, data, before, headers, image, schema, table, stream, ctx))

    def _changes(self, r: _Row) -> list[Change]:
        vendor_op = r.headers.get("operation")
        op = OPS.get(vendor_op.upper()) if isinstance(vendor_op, str) else None
        if op is None:
            raise DecodeError(
                "unknown_op",
                f"headers.operation {vendor_op!r} is not REFRESH, INSERT, UPDATE or "
                "DELETE; the message cannot be applied",
            )
        if op != "DELETE" and r.data is None:
            raise DecodeError("bad_message", f"a {vendor_op} message without `data` has no row to apply")
        flags: list[str] = []
        entry = r.entry
        if entry is None or entry.get("origin") == "registry":
            flags.append("no_schema")
        if entry is not None:
            names = {c["ordinal"]: c["name"] for c in entry["columns"]}
            types = {c["name"]: c.get("type") for c in entry["columns"]}
            pks = [
                c["name"]
                for c in sorted(entry["columns"], key=lambda c: c["pk_position"])
                if c["pk_position"]
            ]
        else:
            names, types, pks = {i + 1: k for i, k in enumerate(r.image)}, {}, []
        data = _typed(r.data, types, flags)
        before = _typed(r.before, types, flags)
        ncols = max(names, default=0)
        changed = resolve(r.headers.get("changeMask"), names, ncols)
        present = resolve(r.headers.get("columnMask"), names, ncols)
        if changed.beyond or present.beyond:
            flags.append("mask_bits_beyond_columns")
        main = data if op != "DELETE" or data is not None else before
        missing = _missing(present.columns, names, main, op, flags)
        cs, pos = _sequence(r.headers.get("changeSequence"), op)
        tx_seq = _opt_int(r.headers.get("transactionEventCounter"))
        if cs is not None:
            sort_parts: tuple = (0 if op == "SNAPSHOT" else 1, cs, tx_seq or 0)
            id_parts: tuple = (cs, vendor_op)
        else:
            row_hash = _row_hash(main)
            sort_parts = (0, 0, row_hash)
            id_parts = (vendor_op, tuple(main.get(k) for k in pks), row_hash.hex())
        database, schema = self._place(r.schema)
        tx_last = r.headers.get("transactionLastEvent")
        change = Change(
            vendor=VENDOR,
            format=r.env.fmt,
            stream=r.stream,
            op=op,
            vendor_op=vendor_op,
            sort_parts=sort_parts,
            id_parts=id_parts,
            source_db=self.options.source_db,
            database=database,
            schema=schema,
            table=r.table,
            flags=flags,
            primary_keys=pks or None,
            schema_version=(entry or {}).get("schema_id") or r.env.schema_id,
            source_ts=_instant(r.headers.get("timestamp")),
            capture_ts=r.ctx.capture_ts,
            tx_id=r.headers.get("transactionId") or None,
            tx_seq=tx_seq,
            tx_last=tx_last if isinstance(tx_last, bool) else None,
            position=r.headers.get("streamPosition") or None,
            missing_columns=missing,
        )
        if _is_control(r.table, r.ctx.topic):
            change.op, change.primary_keys, change.missing_columns = "CONTROL", None, None
            change.id_parts = ("CONTROL", *id_parts)
            change.content = {"data": data, "beforeData": before}
            return [change]
        if op in ("INSERT", "SNAPSHOT"):
            change.after = data
        elif op == "UPDATE":
            change.after, change.before = data, before
        else:
            change.before = main
        if op in ("INSERT", "UPDATE"):
            change.changed_columns = changed.columns
        return split_key_change(change)


@dataclass(slots=True)
class _Row:
    """One data message with its resolved metadata and table, between parsing and building changes."""

    env: _Envelope
    entry: dict[str, Any] | None
    data: dict[str, Any] | None
    before: dict[str, Any] | None
    headers: dict[str, Any]
    image: dict[str, Any]
    schema: str | None
    table: str | None
    stream: str
    ctx: _Ctx


def _sections(record: Any) -> tuple[dict | None, dict | None, dict[str, Any]]:
    """(data, beforeData, headers) of a data record; custom formats may flatten headers to `headers_<x>`."""
    if not isinstance(record, dict):
        raise DecodeError("bad_message", "the data message is not an object")
    data, before, headers = record.get("data"), record.get("beforeData"), record.get("headers")
    for name, part in (("data", data), ("beforeData", before), ("headers", headers)):
        if part is not None and not isinstance(part, dict):
            raise DecodeError("bad_message", f"`{name}` of the data message must be an object")
    flat = {k[len("headers_") :]: v for k, v in record.items() if k.startswith("headers_")}
    return data, before, {**flat, **(headers or {})}


def _typed(
    image: dict[str, Any] | None, types: dict[str, str | None], flags: list[str]
) -> dict[str, Any] | None:
    """Exact Python values from the metadata types (JSON strings -> Decimal/date/bytes/...)."""
    if image is None:
        return None
    return {k: _convert(k, types.get(k), v, flags) for k, v in image.items()}


def _convert(name: str, vendor_type: str | None, value: Any, flags: list[str]) -> Any:
    if value is None:
        return None
    spec = TYPES.get(vendor_type or "")
    if spec is None:
        return _datetime(value) if isinstance(value, dt.datetime) else value
    try:
        return spec[1](value)
    except _KeepString:
        if "timestamp_as_string" not in flags:
            flags.append("timestamp_as_string")
        return str(value)
    except (ValueError, TypeError, ArithmeticError, InvalidOperation):
        raise DecodeError(
            "bad_value",
            f"column {name} ({vendor_type}) has value {str(value)[:60]!r}, which is not "
            f"a valid {vendor_type}; fix the message and re-process it",
        ) from None


def _missing(
    present: list[str] | None, names: dict[int, str], image: dict[str, Any] | None, op: str, flags: list[str]
) -> list[str] | None:
    """Columns not captured: columnMask bit 0 AND a null value (checklist 5). A value under a 0 bit is kept
    and flagged `column_mask_conflict`. Without a column mask: [] for REFRESH (full load reads whole rows),
    else unknown."""
    if present is None:
        return [] if op == "SNAPSHOT" else None
    absent = [n for _, n in sorted(names.items()) if n not in set(present)]
    image = image or {}
    if any(image.get(n) is not None for n in absent):
        flags.append("column_mask_conflict")
    return [n for n in absent if image.get(n) is None]


def _sequence(value: Any, op: str) -> tuple[int | None, str | None]:
    text = "" if value is None else str(value).strip()
    if not text:
        if op != "SNAPSHOT":
            raise DecodeError(
                "missing_change_sequence",
                f"a {op} message without headers.changeSequence cannot be "
                "ordered or identified; check the message format",
            )
        return None, None
    if not text.isdigit():
        raise DecodeError(
            "bad_change_sequence", f"headers.changeSequence {text[:40]!r} is not a decimal number"
        )
    return int(text), text


def _opt_int(v: Any) -> int | None:
    if isinstance(v, bool) or v is None:
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _looks_like_message(value: Any) -> bool:
    """A Replicate JSON message (envelope, data or metadata): used to resynchronise after a broken object."""
    return isinstance(value, dict) and bool({"magic", "data", "headers", "lineage", "message"} & value.keys())


def _json_md_entries(doc: Any) -> list[dict[str, Any]]:
    try:
        env = json_envelope(doc)
        return [_md_entry(env)] if env.kind == "MD" else []
    except DecodeError:
        return []
