"""Replicate files: JSON / JSON-lines files and Avro container files (Event Hubs Capture `EventData`, or
`MessageEnvelope` records), read through the shared container tier as the raw messages they hold.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Callable, Iterator
from typing import IO, Any

import orjson

from cdcnorm import containers
from cdcnorm.adapters.replicate.envelope import (
    FMT_AVRO,
    MAGIC,
    decoded_envelope,
    envelope_bytes,
    extract_metadata,
    json_md_entries,
    might_be_metadata,
)
from cdcnorm.adapters.replicate.naming import VENDOR, Context, delivery_location
from cdcnorm.adapters.replicate.positions import instant
from cdcnorm.canonical.emit import BatchBuilder
from cdcnorm.errors import DecodeError

DecodeValue = Callable[..., None]
"""(value, context, out[, envelope]): decode one message; `envelope` is its already decoded envelope, if any."""
"""The adapter's decoder of one raw message (bytes) from where it came from."""
DecodeDoc = Callable[[Any, Context, BatchBuilder], None]
"""The adapter's decoder of one parsed JSON message."""


_US_TIME = re.compile(r"(\d{1,2})/(\d{1,2})/(\d{4}) (\d{1,2}):(\d{2}):(\d{2})(?:\.(\d{1,7}))? ?([AP]M)", re.I)


def enqueued_time(text: Any) -> dt.datetime | None:
    """Event Hubs Capture `EnqueuedTimeUtc`: a US-style string `11/16/2016 4:44:11 PM` (UTC)."""
    m = _US_TIME.fullmatch(str(text).strip()) if text is not None else None
    if not m:
        return instant(text)
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
            tzinfo=dt.UTC,
        )
    except ValueError:
        return None


def looks_like_message(value: Any) -> bool:
    """A Replicate JSON message (envelope, data or metadata): used to resynchronise after a broken object."""
    return isinstance(value, dict) and bool({"magic", "data", "headers", "lineage", "message"} & value.keys())


def _container_kind(writer_schema: Any) -> str | None:
    """What an Avro container file holds: `capture` (EventData), `envelope` (MessageEnvelope) or None."""
    names = {f.get("name") for f in (writer_schema or {}).get("fields", []) if isinstance(f, dict)}
    if "Body" in names:
        return "capture"
    if {"magic", "type", "message"} <= names:
        return "envelope"
    return None


def container_messages(
    src: containers.Source, md_only: bool = False, lazy_raw: bool = False
) -> Iterator[tuple[containers.Record | containers.Damage, bytes | None]]:
    """An Avro container's records as the message each holds: Event Hubs Capture `EventData` (Body is the
    message) or `MessageEnvelope` records (what a Kafka-to-storage sink with the Avro format writes); the
    header's damage or an unknown record shape is one Damage / DecodeError item. `md_only`: envelopes that
    are not MD are not re-encoded (the metadata scan). `lazy_raw` (the decoder): an envelope whose decoded
    form is used as is (:func:`decoded_envelope`) and whose re-encoding cannot fail gets, as raw, a function
    that re-encodes it (called only for a quarantine) and None as its message bytes."""
    avro = containers.AvroFile(src, keep_raw=False)
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
        elif lazy_raw and (env := decoded_envelope(item.value)) is not None and _encodable(item.value):
            item.raw, item.value = _LazyEnvelope(item.value), ("envelope", None, None, env)  # type: ignore[assignment]
            yield item, None
        else:
            try:
                item.raw, item.value = envelope_bytes(item.value), ("envelope", None, None,
                                                                     decoded_envelope(item.value))
            except DecodeError as exc:
                item.raw, item.value = orjson.dumps(item.value, default=repr), exc
            yield item, item.raw if not isinstance(item.value, DecodeError) else None


def _encodable(rec: dict[str, Any]) -> bool:
    """`envelope_bytes(rec)` cannot fail: with `decoded_envelope(rec)` not None, only `headers` is left to check
    (null or a map of strings)."""
    headers = rec.get("headers")
    return headers is None or (type(headers) is dict and all(
        type(k) is str and type(v) is str for k, v in headers.items()))


class _LazyEnvelope:
    """A container record's Kafka message bytes, re-encoded when called (only a quarantined record's raw)."""

    __slots__ = ("_rec",)

    def __init__(self, rec: dict[str, Any]):
        self._rec = rec

    def __call__(self) -> bytes:
        try:
            return envelope_bytes(self._rec)
        except DecodeError:  # pragma: no cover - `_encodable` rules it out; the eager path's raw then
            return orjson.dumps(self._rec, default=repr)


_enqueued_time_of_text = functools.lru_cache(maxsize=4096)(enqueued_time)
"""A Capture file's messages share a few enqueued times: each text is parsed once."""


def metadata_in_file(fh: IO[bytes]) -> list[dict[str, Any]]:
    """MD catalog entries in one file (the pipeline's first pass over file inputs), streamed."""
    src = containers.open_source(fh)
    head = src.peek(8)
    if head[:4] == containers.AVRO_MAGIC:
        return [e for _, body in container_messages(src, md_only=True) if might_be_metadata(body)
                for e in extract_metadata(body)]
    if head[:5] == MAGIC:
        return extract_metadata(src.read())
    found: list[dict[str, Any]] = []
    for item in containers.JsonRecords(src, containers.loads_wide_ints, looks_like_message):
        if isinstance(item, containers.Record) and item.raw is not None and might_be_metadata(item.raw):
            found += json_md_entries(item.value)
    return found


def read_container(path: str, src: containers.Source, out: BatchBuilder, decode_value: DecodeValue,
                   base: Context) -> Iterator[None]:
    """Decode each message of an Avro container file; its origin names the partition (Capture or Kafka Connect
    path) and the Capture sequence number. `base`: what the path says (topic, legacy stream)."""
    partition = delivery_location(path)[1]

    def origin(item: containers.Record | containers.Damage) -> dict[str, Any]:
        if isinstance(item, containers.Damage):
            return {"index": item.index, "partition": partition, "offset": str(item.offset), "raw": item.raw}
        if isinstance(item.value, tuple) and item.value[0] == "capture":
            seq = item.value[1]
            return {"index": item.index, "partition": partition, "offset": None if seq is None else str(seq),
                    "raw": item.raw}
        return {"index": item.index, "partition": partition, "raw": item.raw}

    def decode(rec: containers.Record) -> None:
        if isinstance(rec.value, DecodeError):
            out.set_context(VENDOR, FMT_AVRO)
            raise rec.value
        text = rec.value[2]
        at = None if text is None else _enqueued_time_of_text(text) if type(text) is str else enqueued_time(text)
        ctx = Context(base.topic, base.file_stream, at)
        if len(rec.value) > 3 and rec.value[3] is not None:
            decode_value(rec.raw, ctx, out, rec.value[3])
        else:
            decode_value(rec.raw, ctx, out)

    yield from containers.each_record(path, (item for item, _ in container_messages(src, lazy_raw=True)), out, decode,
                                      origin)


def read_json(path: str, src: containers.Source, out: BatchBuilder, decode_doc: DecodeDoc,
              ctx: Context) -> Iterator[None]:
    """JSON lines, pretty-printed or concatenated objects, or an array of messages (streamed); `ctx`: what the
    path says (topic, legacy stream); the origin names a Kafka Connect path's partition."""
    reader = containers.JsonRecords(src, containers.loads_wide_ints, looks_like_message)
    partition = delivery_location(path)[1]

    def origin(item: containers.Record | containers.Damage) -> dict[str, Any]:
        index = reader.line_of(item) if reader.lines_mode else item.index
        return {"index": index, "partition": partition, "raw": item.raw}

    yield from containers.each_record(path, reader, out, lambda rec: decode_doc(rec.value, ctx, out),
                                      origin)
