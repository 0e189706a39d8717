"""What one Debezium message is: its shape (JSON with / without schemas, Avro), and its kind (a data event, a
tombstone, a heartbeat, a transaction boundary, a schema change, or not Debezium at all).

Detection rule (reference §1): unwrap `payload` when the object is `{schema, payload}` or `{payload}`; a data
event has `op` in c, r, u, d, t, m and a `source` object with `connector` and `version`. A JSON message's
`schema` is cut out of the raw bytes without parsing it when the text allows (compact JsonConverter output):
every message of a table repeats the same schema text, so it is parsed once per distinct text (`columns.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from cdcnorm.adapters.debezium.positions import connector_of
from cdcnorm.containers import loads_exact
from cdcnorm.errors import DecodeError

DATA_OPS = frozenset("crudtm")
FLAT_MARKERS = ("__deleted", "__op", "__table", "__lsn", "__source_ts_ms", "__source_ts_us", "__db")
HEARTBEAT_SCHEMA = "io.debezium.connector.common.Heartbeat"
HEARTBEAT_TOPIC = "__debezium-heartbeat"

_SCHEMA_HEAD = b'{"schema":'
_PAYLOAD_SEP = b',"payload":'


@dataclass(slots=True)
class Message:
    """One decoded message value.

    `kind`: `data`, `tombstone`, `heartbeat`, `transaction`, `schema_change` or `notification`. `schema` is the
    value's Kafka Connect schema (JSON converter) and `schema_key` the bytes that identify it (None without);
    `avro` is the writer schema of an Avro value.
    """

    kind: str
    payload: dict[str, Any] | None
    schema: dict[str, Any] | None = None
    schema_key: bytes | None = None
    avro: Any = None


def parse_json(value: bytes) -> tuple[Any, dict[str, Any] | None, bytes | None, bool]:
    """(payload, schema, schema key, wrapped) of a JSON value; the schema text is parsed only when it is new.

    `wrapped`: the value was `{schema, payload}` / `{payload}` (a payload of null is then a tombstone).
    """
    text = value.strip()
    if text.startswith(b"\xef\xbb\xbf"):
        text = text[3:].lstrip()
    if text.startswith(_SCHEMA_HEAD) and text.endswith(b"}"):
        cut = text.find(_PAYLOAD_SEP)
        if cut > 0:
            key = text[len(_SCHEMA_HEAD):cut]
            try:
                payload = loads_exact(text[cut + len(_PAYLOAD_SEP):-1])
                return payload, _schema_of(key), key, True
            except (orjson.JSONDecodeError, ValueError):
                pass  # not the compact shape after all: parse it whole
    try:
        doc = loads_exact(text)
    except (orjson.JSONDecodeError, ValueError) as exc:
        raise DecodeError("bad_json", f"a Debezium message value is one JSON object ({exc})") from None
    return unwrap(doc)


_SCHEMAS: dict[bytes, dict[str, Any] | None] = {}


def _schema_of(key: bytes) -> dict[str, Any] | None:
    """The parsed schema of a schema text (remembered: every message of a table repeats it)."""
    try:
        return _SCHEMAS[key]
    except KeyError:
        pass
    doc = orjson.loads(key)
    if doc is not None and not isinstance(doc, dict):
        raise ValueError("the schema is not an object")
    if len(_SCHEMAS) > 4096:
        _SCHEMAS.clear()
    _SCHEMAS[key] = doc
    return doc


def unwrap(doc: Any) -> tuple[Any, dict[str, Any] | None, bytes | None, bool]:
    """(payload, schema, schema key, wrapped) of a parsed JSON value."""
    if isinstance(doc, dict) and "payload" in doc and set(doc) <= {"schema", "payload"}:
        schema = doc.get("schema")
        if schema is not None and not isinstance(schema, dict):
            raise DecodeError("bad_schema", "the message's `schema` is neither an object nor null")
        key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS) if schema else None
        return doc["payload"], schema, key, True
    return doc, None, None, False


_AVRO_TYPES = frozenset({"string", "long", "int", "boolean", "double", "float", "bytes"})


def _wrapped(v: Any) -> bool:
    return type(v) is dict and len(v) == 1 and next(iter(v)) in _AVRO_TYPES


def _avro_json(payload: dict[str, Any]) -> bool:
    """Whether an envelope is Avro-JSON text: union values as `{"long": 1}`, row images as `{"<ns>.Value": {...}}`."""
    if _wrapped(payload.get("ts_ms")) or any(_wrapped(v) for v in payload["source"].values()):
        return True
    for name in ("before", "after"):
        image = payload.get(name)
        if type(image) is dict and len(image) == 1:
            k, v = next(iter(image.items()))
            if type(v) is dict and (k.endswith(".Value") or "." in k):
                return True
    return False


def classify(payload: Any, schema: dict[str, Any] | None, topic: str | None) -> str:
    """The kind of a message payload; raises DecodeError for what is not a Debezium event."""
    if payload is None:
        return "tombstone"
    if not isinstance(payload, dict):
        raise DecodeError("unknown_format", "a Debezium message value is a JSON object (the change event envelope)")
    name = (schema or {}).get("name") or ""
    source = payload.get("source")
    if "op" in payload and isinstance(source, dict):
        if "tsMs" in source or "serverId" in source or "tsMs" in payload:
            raise DecodeError(
                "unsupported_format",
                "ProtobufConverter output printed as JSON (camelCase `tsMs` / `serverId`, 64-bit numbers as text, "
                "\"\" for null) is not a dump cdcnorm reads: use the JSON or Avro converter",
            )
        if connector_of(source) is None or source.get("version") is None:
            raise DecodeError("bad_event", "the event's `source` block names no `connector` and `version`: "
                                           "not a Debezium change event")
        if _avro_json(payload):
            raise DecodeError(
                "unsupported_format",
                "Avro rendered as JSON (kafka-avro-console-consumer: union values wrapped as {\"string\": ...}, "
                "rows wrapped in their record name) is a console view, not a dump cdcnorm reads: keep the Avro "
                "bytes (Confluent wire format with a registry export, or a sink's Avro files)",
            )
        return "data"
    if "ddl" in payload and ("tableChanges" in payload or "databaseName" in payload):
        return "schema_change"
    if payload.get("status") in ("BEGIN", "END") and "id" in payload:
        return "transaction"
    if name == HEARTBEAT_SCHEMA or (set(payload) == {"ts_ms"} and (topic or "").startswith(HEARTBEAT_TOPIC)):
        return "heartbeat"
    if name.endswith(".Notification") or {"aggregate_type", "type", "additional_data"} <= set(payload):
        return "notification"
    if any(k in payload for k in FLAT_MARKERS) or (name.endswith(".Value") and "op" not in payload):
        raise DecodeError(
            "unsupported_format",
            "a flattened row (ExtractNewRecordState output: `__op` / `__deleted` / `__table` columns) is not a "
            "Debezium change event: its before image, position and transaction are gone. Read the topic before "
            "the transform (the raw envelope), or load these rows as plain data",
        )
    if "op" in payload:
        raise DecodeError("bad_event", "an event with `op` but no `source` block: not a Debezium change event")
    raise DecodeError(
        "unknown_format",
        "not a Debezium message: expected a change event {before, after, source, op, ts_ms}, a heartbeat, "
        "a transaction BEGIN/END or a schema change {ddl, tableChanges}",
    )


def parse_message(value: bytes | None, topic: str | None) -> Message:
    """One JSON message value (bytes) -> its kind, payload and schema."""
    if value is None or not value.strip():
        return Message("tombstone", None)
    payload, schema, key, _ = parse_json(value)
    return Message(classify(payload, schema, topic), payload, schema, key)


def message_of_doc(doc: Any, topic: str | None) -> Message:
    """One parsed JSON value (a dump line's value) -> its kind, payload and schema."""
    payload, schema, key, _ = unwrap(doc)
    return Message(classify(payload, schema, topic), payload, schema, key)
