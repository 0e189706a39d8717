"""The dump shapes a Debezium topic is kept in, read through the shared container tier.

Supported: JSON lines (or pretty-printed / concatenated objects, or an array) of message values, with or
without schemas; `kcat -J` lines (`{"topic", "partition", "offset", "key", "payload", "headers", ...}`, the
value as text); Kafka Connect S3 / GCS sink output (JSON lines, or Avro container files of envelope records),
whose `topics/<topic>/partition=<p>/<topic>+<p>+<offset>` path names the topic, with its optional key files;
Avro files of Kafka records as Spark's Kafka source reads them; one Confluent-framed Avro message per file
(`0x00` + schema id). Anything else is refused with the reason (`unknown_format`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from cdcnorm import containers
from cdcnorm.adapters.debezium.envelope import parse_json
from cdcnorm.canonical.emit import BatchBuilder
from cdcnorm.errors import DecodeError

KCAT_FIELDS = frozenset({"topic", "partition", "offset", "payload"})
SIDE_FILES = (".keys.", ".headers.")
"""What a sink stores next to a value file `<topic>+<p>+<offset>.<ext>` (`store.kafka.keys` / `.headers`):
`<topic>+<p>+<offset>.keys.<ext>`, read with its value file, never as values."""


def is_side_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return any(marker in name for marker in SIDE_FILES)


_SINK_NAME = re.compile(r"^(?P<stem>.+\+\d+\+\d+)(?P<ext>\.[^/]+)$")


def keys_path(path: str) -> str | None:
    """The sink's key file of a value file (`….json` -> `….keys.json`, `.json.gz` -> `.keys.json.gz`)."""
    folder, _, name = path.rpartition("/")
    m = _SINK_NAME.match(name)
    if m is None:
        return None
    other = f"{m['stem']}.keys{m['ext']}"
    return f"{folder}/{other}" if folder else other


def sink_keys(path: str) -> list[Any] | None:
    """The keys a sink stored for a value file, in record order (JSON lines or Avro records); None without."""
    from cdcnorm.runtime.fs import open_input

    other = keys_path(path)
    if other is None:
        return None
    try:
        fh = open_input(other)
    except (OSError, ValueError):
        return None
    with fh:
        src = containers.open_source(fh)
        if containers.container_of(src) == "avro":
            avro = containers.AvroFile(src)
            try:
                avro.read_header()
            except containers.AvroHeaderError:
                return None
            return [item.value if isinstance(item, containers.Record) else None for item in avro.records()]
        return [None if v.strip() in (b"", b"null") else v for v in src.read().splitlines()]


@dataclass(slots=True)
class Line:
    """One JSON record of a dump: the parsed value (payload, schema, schema key) or a `kcat -J` line."""

    payload: Any
    schema: dict[str, Any] | None
    schema_key: bytes | None
    kcat: dict[str, Any] | None = None


def parse_line(raw: bytes) -> Line:
    """Parse one record (ValueError when it is not JSON: the container tier quarantines it as `bad_json`)."""
    try:
        payload, schema, key, wrapped = parse_json(raw)
    except DecodeError as exc:
        raise ValueError(exc.message) from None
    if not wrapped and isinstance(payload, dict) and payload.keys() >= KCAT_FIELDS and "source" not in payload:
        return Line(None, None, None, payload)
    return Line(payload, schema, key)


def kcat_headers(value: Any) -> list[tuple[str, bytes | None]] | None:
    """kcat's headers: a flat list `[name, value, name, value, ...]` (or a list of pairs / an object)."""
    if isinstance(value, dict):
        return [(str(k), None if v is None else str(v).encode()) for k, v in value.items()]
    if not isinstance(value, list):
        return None
    if value and all(isinstance(h, list | tuple) and len(h) == 2 for h in value):
        return [(str(k), None if v is None else str(v).encode()) for k, v in value]
    return [(str(value[i]), None if value[i + 1] is None else str(value[i + 1]).encode())
            for i in range(0, len(value) - 1, 2)]


def kcat_value(doc: dict[str, Any]) -> bytes | None:
    v = doc.get("payload")
    if v is None:
        return None
    return v.encode() if isinstance(v, str) else orjson.dumps(v)


def read_json(path: str, src: containers.Source, out: BatchBuilder, decode: Callable[[Line, int], None],
              partition: str | None) -> Iterator[None]:
    """Each JSON record of a dump, decoded; a kcat line's origin is its Kafka partition and offset."""
    reader = containers.JsonRecords(src, parse_line)

    def origin(item: containers.Record | containers.Damage) -> dict[str, Any]:
        index = reader.line_of(item) if reader.lines_mode else item.index
        line = item.value if isinstance(item, containers.Record) else None
        if isinstance(line, Line) and line.kcat is not None:
            return {"index": index, "partition": str(line.kcat.get("partition")),
                    "offset": str(line.kcat.get("offset")), "raw": item.raw}
        return {"index": index, "partition": partition, "raw": item.raw}

    yield from containers.each_record(path, reader, out, lambda rec: decode(rec.value, rec.index), origin)


KAFKA_RECORD_FIELDS = frozenset({"key", "value", "topic"})


def is_kafka_records(schema: Any) -> bool:
    """An Avro file of Kafka records as Spark's Kafka source reads them (`key`, `value`, `topic`, `partition`,
    `offset`, `headers`): each record's value is one raw message."""
    names = {f.get("name") for f in (schema or {}).get("fields") or () if isinstance(f, dict)}
    return names >= KAFKA_RECORD_FIELDS


def read_avro(path: str, src: containers.Source, out: BatchBuilder,
              decode: Callable[[Any, Any, bytes, int], None], partition: str | None,
              message: Callable[[dict[str, Any]], None]) -> Iterator[None]:
    """Each record of an Avro container file: an envelope (a Kafka Connect sink's Avro output), or a Kafka record
    whose value is a raw message (`message`; the origin keeps its partition and offset)."""
    avro = containers.AvroFile(src)
    try:
        avro.read_header()
    except containers.AvroHeaderError as exc:
        out.begin_record(path, 0, partition=partition, raw=None)
        damage = avro.header_damage(exc)
        out.quarantine(damage.error_class, f"{path}: {damage.message}", raw=damage.raw)
        yield
        return
    schema = avro.writer_schema
    kafka = is_kafka_records(schema)
    key = b"avro:" + orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)

    def origin(item: containers.Record | containers.Damage) -> dict[str, Any]:
        rec = item.value if isinstance(item, containers.Record) else None
        if kafka and isinstance(rec, dict):
            raw = rec.get("value")
            return {"index": item.index, "partition": None if rec.get("partition") is None else str(rec["partition"]),
                    "offset": None if rec.get("offset") is None else str(rec["offset"]),
                    "raw": raw if isinstance(raw, bytes) else item.raw}
        return {"index": item.index, "partition": partition, "raw": item.raw}

    if kafka:
        yield from containers.each_record(path, avro.records(), out, lambda rec: message(rec.value), origin)
    else:
        yield from containers.each_record(path, avro.records(), out,
                                          lambda rec: decode(rec.value, schema, key, rec.index), origin)
