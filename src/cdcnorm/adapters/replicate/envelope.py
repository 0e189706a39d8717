"""Replicate message envelopes: which shape one message has (JSON, Avro `atMSG` envelope, Schema Registry wire
format), and the metadata (MD) entries it carries, for the decoder and the first pass alike.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from cdcnorm.adapters.replicate.catalog import entry_from_md, parse_avro_schema
from cdcnorm.adapters.replicate.spec import SPEC
from cdcnorm.containers.avro_datum import NotRead, datum_reader_of
from cdcnorm.errors import DecodeError

FMT_JSON, FMT_AVRO, FMT_REGISTRY = SPEC.formats
MAGIC = b"atMSG"

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


@dataclass(slots=True)
class Envelope:
    """One message's kind (`MD` / `DT`), format and schema id, and its payload (a JSON object or Avro bytes)."""

    kind: str
    fmt: str
    schema_id: str | None
    payload: Any
    message_schema: str | None = None


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


def read_datum(data: bytes, schema: Any, schema_text: Any, what: str) -> Any:
    """:func:`avro_read` of a data message, through the schema's own reader when it has one (same values,
    cdcnorm.containers.avro_datum) and the datum is plainly valid; anything else is read by fastavro."""
    read = datum_reader_of(schema_text) if type(schema_text) is str and type(data) is bytes else None
    if read is not None:
        try:
            return read(data)
        except NotRead:
            pass
    return avro_read(data, schema, what)


def parse_envelope(value: bytes | None) -> Envelope:
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
        return Envelope("DT", FMT_REGISTRY, str(int.from_bytes(value[1:5], "big")), value[5:])
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


def json_envelope(doc: Any) -> Envelope:
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
        return Envelope(kind, FMT_JSON, doc.get("messageSchemaId") or None, msg, doc.get("messageSchema"))
    if "task_name" in doc and "op" in doc and isinstance(doc.get("data"), list):
        raise DecodeError(
            "unsupported_format",
            "legacy Attunity JSON (2016, pre-envelope `task_name/op/data[]`) "
            "is not supported; use a current Replicate message format",
        )
    if "lineage" in doc and "tableStructure" in doc:
        return Envelope("MD", FMT_JSON, doc.get("schemaId") or None, doc)
    if "data" in doc or "headers" in doc or any(k.startswith("headers_") for k in doc):
        return Envelope("DT", FMT_JSON, None, doc)
    raise DecodeError(
        "unknown_format",
        "a JSON object that is neither a Replicate envelope nor a data message {data, beforeData, headers}",
    )


def _avro_envelope(value: bytes) -> Envelope:
    rec = avro_read(value, _envelope_schema(), "the Avro MessageEnvelope")
    kind = rec["type"]
    if kind not in ("MD", "DT"):
        raise DecodeError(
            "unknown_type", f"envelope type {kind!r} is neither 'MD' (metadata) nor 'DT' (data)"
        )
    return Envelope(
        kind, FMT_AVRO, rec.get("messageSchemaId") or None, rec["message"], rec.get("messageSchema")
    )


def decoded_envelope(rec: Any) -> Envelope | None:
    """The envelope of a MessageEnvelope record a container already decoded, when `parse_envelope` of its
    re-encoding (:func:`envelope_bytes`) is sure to give the same one; None otherwise (then parse the bytes).

    Why: reading the datum back from the bytes just written from it parsed every container record twice. With
    these exact value types the write-then-read round trip returns the values unchanged.
    """
    if type(rec) is not dict:
        return None
    magic, kind, message = rec.get("magic"), rec.get("type"), rec.get("message")
    schema_id, schema = rec.get("messageSchemaId"), rec.get("messageSchema")
    if (type(magic) is not bytes or magic != MAGIC or type(kind) is not str or kind not in ("MD", "DT")
            or type(message) is not bytes or (schema_id is not None and type(schema_id) is not str)
            or (schema is not None and type(schema) is not str)):
        return None
    return Envelope(kind, FMT_AVRO, schema_id or None, message, schema)


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


def _md_message(env: Envelope) -> dict[str, Any]:
    if env.fmt == FMT_JSON:
        return env.payload
    if not env.message_schema:
        raise DecodeError("bad_metadata", "an Avro MD envelope without messageSchema cannot be decoded")
    return avro_read(
        env.payload, parse_avro_schema(env.message_schema, "messageSchema"), "the Avro MD message"
    )


def md_entry(env: Envelope) -> dict[str, Any]:
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
    return _md_entries(lambda: parse_envelope(value))


def json_md_entries(doc: Any) -> list[dict[str, Any]]:
    """The MD entry of one parsed JSON message; [] for anything else."""
    return _md_entries(lambda: json_envelope(doc))


def _md_entries(envelope: Callable[[], Envelope]) -> list[dict[str, Any]]:
    """[the catalog entry] of an MD message; [] for a data message or one that does not parse."""
    try:
        env = envelope()
        return [md_entry(env)] if env.kind == "MD" else []
    except DecodeError:
        return []
