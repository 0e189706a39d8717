"""Kafka topics on disk, as a Kafka consumer dumps them: records serialized by a Kafka Connect converter and
written per topic-partition, with offsets, as `kcat -J` lines or as the Avro rows of Spark's Kafka source.

Why apart from the connectors that fill it: what a record holds (envelope, transaction, heartbeat) is the
connector's; how a record becomes bytes, files and offsets is the converter's and the dump's, the same for
every topic.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from cdcnorm.simulate.delivery import AvroFile, Lane, LinesFile, Rotator, lane_rng
from cdcnorm.simulate.encoders.kafka_connect import Registry, json_schema, json_value
from cdcnorm.simulate.jsonx import Raw, dumps

KAFKA_RECORD_SCHEMA = {
    "type": "record", "name": "topLevelRecord", "fields": [
        {"name": "key", "type": ["bytes", "null"]}, {"name": "value", "type": ["bytes", "null"]},
        {"name": "topic", "type": ["string", "null"]}, {"name": "partition", "type": ["int", "null"]},
        {"name": "offset", "type": ["long", "null"]},
        {"name": "timestamp", "type": [{"type": "long", "logicalType": "timestamp-micros"}, "null"]},
        {"name": "timestampType", "type": ["int", "null"]},
        {"name": "headers", "type": [{"type": "array", "items": {
            "type": "record", "name": "headers", "namespace": "topLevelRecord", "fields": [
                {"name": "key", "type": ["string", "null"]}, {"name": "value", "type": ["bytes", "null"]}]}},
            "null"]},
    ],
}
"""A Kafka record as Spark's Kafka source reads it (with `includeHeaders`), written by Spark's Avro writer."""


class TopicFiles:
    """Writes `<root>/<topic>/partition=<p>/<topic>+<p>+<first offset>.<jsonl|avro>` for one converter.

    - json, json-noschema: `kcat -J` lines (`topic`, `partition`, `offset`, `tstype`, `ts`, `broker`,
      `headers` as a flat name/value list when present, `key` and `payload` as the converter's text, null for a
      null key or a tombstone). json: JsonConverter with schemas; json-noschema: without.
    - avro: Avro container files of Kafka records as Spark's Kafka source reads them (`key`, `value`, `topic`,
      `partition`, `offset`, `timestamp`, `timestampType`, `headers`); keys and values are Confluent-framed
      Avro whose schemas the registry keeps (:meth:`close` exports them).

    Each topic-partition is a delivery lane (the run's quirks: duplicates, late copies) and a file rotator;
    `counts` receives `records` and `files`.
    """

    def __init__(self, root: Path, vf: str, fmt: str, seed: int, quirks: frozenset[str], rotate: int,
                 counts: dict[str, int]):
        self.root, self.vf, self.fmt = root, vf, fmt
        self.seed, self.quirks, self.rotate, self.counts = seed, quirks, rotate, counts
        self.registry = Registry() if fmt == "avro" else None
        self.lanes: dict[tuple[str, int], Lane] = {}
        self.rotators: dict[tuple[str, int], Rotator] = {}
        self.offsets: dict[tuple[str, int], int] = {}
        self.schema_text: dict[int, Any] = {}

    def send(self, topic: str, partition: int, key_schema: dict[str, Any] | None, key: dict[str, Any] | None,
             value_schema: dict[str, Any] | None, value: dict[str, Any] | None, headers: list[tuple[str, bytes]],
             ms: int, barrier: bool = False) -> None:
        """Serialize a record (a None key or value stays null: a tombstone) and deliver it on its lane."""
        k = None if key is None else self._serialize(topic, "key", key_schema, key)
        body = None if value is None else self._serialize(topic, "value", value_schema, value)
        self._lane(topic, partition).put((topic, partition, k, body, headers, ms), barrier=barrier)

    def _serialize(self, topic: str, part: str, s: dict[str, Any] | None, v: dict[str, Any]) -> bytes:
        assert s is not None
        if self.registry is not None:
            return self.registry.encode(f"{topic}-{part}", s, v)
        if self.fmt == "json-noschema":
            return dumps(json_value(s, v))
        text = self.schema_text.get(id(s))
        if text is None:
            text = self.schema_text[id(s)] = Raw(dumps(json_schema(s)).decode())
        return dumps({"schema": text, "payload": json_value(s, v)})

    def _lane(self, topic: str, partition: int) -> Lane:
        key = (topic, partition)
        lane = self.lanes.get(key)
        if lane is None:
            rng = lane_rng(self.seed, self.vf, topic, partition)
            lane = Lane(lambda item, redelivered, key=key: self._write(key, item), rng, self.quirks,
                        dup_delay=self.rotate * 2)
            self.lanes[key] = lane
        return lane

    def _write(self, key: tuple[str, int], item: tuple) -> None:
        rot = self.rotators.get(key)
        if rot is None:
            rot = Rotator(self.rotate, lambda n, first, key=key: self._open(key))
            self.rotators[key] = rot
        topic, partition, k, v, headers, ms = item
        offset = self.offsets.get(key, 0)
        if self.fmt == "avro":
            rot.write({"key": k, "value": v, "topic": topic, "partition": partition, "offset": offset,
                       "timestamp": ms * 1000, "timestampType": 0,
                       "headers": [{"key": n, "value": b} for n, b in headers]})
        else:
            line: dict[str, Any] = {"topic": topic, "partition": partition, "offset": offset, "tstype": "create",
                                    "ts": ms, "broker": 1}
            if headers:
                line["headers"] = [x for n, b in headers for x in (n, b.decode())]
            line["key"] = None if k is None else k.decode()
            line["payload"] = None if v is None else v.decode()
            rot.write(dumps(line))
        self.offsets[key] = offset + 1
        self.counts["records"] += 1

    def _open(self, key: tuple[str, int]) -> Any:
        topic, p = key
        self.counts["files"] += 1
        first = self.offsets.get(key, 0)
        folder = self.root / topic / f"partition={p}"
        if self.fmt == "avro":
            marker = hashlib.md5(f"{self.vf}:{topic}:{p}:{first}".encode()).digest()
            return AvroFile(folder / f"{topic}+{p}+{first:010d}.avro", KAFKA_RECORD_SCHEMA, sync_marker=marker)
        return LinesFile(folder / f"{topic}+{p}+{first:010d}.jsonl")

    def close(self, registry_export: Path) -> None:
        """Flush every lane and file; the Avro converter's schemas go to `registry_export`."""
        for lane in self.lanes.values():
            lane.close()
        for rot in self.rotators.values():
            rot.close()
        if self.registry is not None:
            self.registry.export(registry_export)
