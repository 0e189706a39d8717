"""Qlik Replicate encoder: JSON envelopes, Avro envelopes, and Event Hubs Capture files of them.

Written from docs/reference (replicate.md) and the vendor's documented message definitions, never from the
decoder. One topic per table: a metadata message (MD) per table version, then REFRESH rows (full load) and
INSERT/UPDATE/DELETE data messages (DT) with change and column masks. Replicate's Kafka-family targets have
no truncate operation: a truncate is not delivered. The added column arrives as a new MD (tableVersion 2).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import zlib
from pathlib import Path
from typing import Any

from fastavro import parse_schema, schemaless_writer

from cdcnorm.simulate.delivery import LATE, AvroFile, Lane, LinesFile, Rotator, current_log, lane_rng
from cdcnorm.simulate.encoders import COMMON_KINDS, SimFormat
from cdcnorm.simulate.history import EPOCH, Col, Event, TableDef
from cdcnorm.simulate.jsonx import dumps, plain

SERVER, TASK, SCHEMA = "sim-replicate-01", "sim-task", "shop"
NAMESPACE, PARTITIONS = "sim-ns", 2

# A deliberate copy of the documented envelope (reference replicate.md §2), not imported from the adapter: the
# encoders are the ground truth the decoders are tested against, so they never share code with them.
ENVELOPE_SCHEMA = {
    "type": "record", "name": "MessageEnvelope", "fields": [
        {"name": "magic", "type": {"type": "fixed", "name": "Magic", "size": 5}},
        {"name": "type", "type": "string"},
        {"name": "headers", "type": ["null", {"type": "map", "values": "string"}]},
        {"name": "messageSchemaId", "type": ["null", "string"]},
        {"name": "messageSchema", "type": ["null", "string"]},
        {"name": "message", "type": "bytes"},
    ],
}
EVENT_DATA_SCHEMA = {
    "type": "record", "name": "EventData", "namespace": "Microsoft.ServiceBus.Messaging", "fields": [
        {"name": "SequenceNumber", "type": "long"}, {"name": "Offset", "type": "string"},
        {"name": "EnqueuedTimeUtc", "type": "string"},
        {"name": "SystemProperties", "type": {"type": "map", "values": ["long", "double", "string", "bytes"]}},
        {"name": "Properties", "type": {"type": "map", "values": ["long", "double", "string", "bytes", "null"]}},
        {"name": "Body", "type": ["null", "bytes"]},
    ],
}
_HEADERS_FIELDS = [
    {"name": "operation", "type": {"type": "enum", "name": "operation", "symbols": ["INSERT", "UPDATE", "DELETE", "REFRESH"]}},
    {"name": "changeSequence", "type": "string"}, {"name": "timestamp", "type": "string"},
    {"name": "streamPosition", "type": "string"}, {"name": "transactionId", "type": "string"},
    {"name": "changeMask", "type": ["null", "bytes"]}, {"name": "columnMask", "type": ["null", "bytes"]},
    {"name": "transactionEventCounter", "type": ["null", "long"]},
    {"name": "transactionLastEvent", "type": ["null", "boolean"]},
]
_COLUMN_FIELDS = [
    {"name": "ordinal", "type": "int"}, {"name": "type", "type": "string"}, {"name": "length", "type": "int"},
    {"name": "precision", "type": "int"}, {"name": "scale", "type": "int"},
    {"name": "primaryKeyPosition", "type": "int"}, {"name": "nullable", "type": "boolean"},
]


def replicate_type(col: Col) -> tuple[str, int, int, int]:
    """(Replicate data type, length, precision, scale) of a source column."""
    base = col.base
    if base == "decimal":
        p, s = col.precision_scale
        return "NUMERIC", 0, p, s
    return {
        "int": ("INT4", 10, 0, 0), "bigint": ("INT8", 19, 0, 0), "double": ("REAL8", 0, 0, 0),
        "boolean": ("BOOLEAN", 0, 0, 0), "string": ("WSTRING", 255, 0, 0), "date": ("DATE", 0, 0, 0),
        "timestamp": ("DATETIME", 0, 0, 6), "binary": ("BYTES", 16, 0, 0),
    }[base]


def vendor_type(t: TableDef, col: Col) -> str:
    rtype, _, p, s = replicate_type(col)
    return f"NUMERIC({p},{s})" if rtype == "NUMERIC" else rtype


def _avro_field(col: Col, logical: bool) -> Any:
    rtype, _, p, s = replicate_type(col)
    if logical:
        if rtype == "NUMERIC":
            return {"type": "bytes", "logicalType": "decimal", "precision": p, "scale": s}
        if rtype == "DATE":
            return {"type": "int", "logicalType": "date"}
        if rtype == "DATETIME":
            return {"type": "long", "logicalType": "timestamp-micros"}
    return {"INT4": "int", "INT8": "long", "REAL8": "double", "BOOLEAN": "boolean", "BYTES": "bytes"}.get(rtype, "string")


def _json_value(col: Col, v: Any) -> Any:
    """JSON value types per the vendor's Kafka data-type table: NUMERIC/DATE/DATETIME strings, BYTES hex."""
    if v is None:
        return None
    base = col.base
    if base == "decimal":
        return plain(v)
    if base == "date":
        return v.isoformat()
    if base == "timestamp":  # DATETIME: UTC wall clock, space separator, 6 fractional digits
        return v.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    if base == "binary":
        return v.hex().upper()
    return v


def _avro_value(col: Col, v: Any) -> Any:
    if v is None or col.base != "timestamp":
        return v
    return (v - EPOCH) // dt.timedelta(microseconds=1)


def mask(ordinals: list[int], ncols: int) -> bytes:
    """Big-endian bit mask, bit k (LSB = 0) = ordinal k+1, ceil((ncols+1)/8) bytes wide."""
    value = 0
    for o in ordinals:
        value |= 1 << (o - 1)
    return value.to_bytes((ncols + 8) // 8, "big")


class _Version:
    """One table version: its metadata message and data-record schema."""

    def __init__(self, t: TableDef, version: int, logical: bool, ts: str):
        self.t, self.version = t, version
        self.columns = t.columns_at(version)
        self.ordinal = {c.name: i + 1 for i, c in enumerate(self.columns)}
        data_fields = [{"name": c.name, "type": ["null", _avro_field(c, logical)]} for c in self.columns]
        self.data_schema = {
            "type": "record", "name": "DataRecord", "fields": [
                {"name": "data", "type": {"type": "record", "name": "Data", "fields": data_fields}},
                {"name": "beforeData", "type": ["null", "Data"]},
                {"name": "headers", "type": {"type": "record", "name": "Headers", "fields": _HEADERS_FIELDS}},
            ],
        }
        data_schema_text = json.dumps(self.data_schema, separators=(",", ":"))
        self.schema_id = hashlib.md5(f"{t.name}:{version}:{data_schema_text}".encode()).hexdigest().upper()
        self.parsed_data = parse_schema(json.loads(data_schema_text))
        columns, col_fields = {}, []
        for i, c in enumerate(self.columns):
            rtype, length, p, s = replicate_type(c)
            pk = t.primary_key.index(c.name) + 1 if c.name in t.primary_key else 0
            columns[c.name] = {"ordinal": i + 1, "type": rtype, "length": length, "precision": p, "scale": s,
                               "primaryKeyPosition": pk, "nullable": c.nullable}
            col_fields.append({"name": c.name, "type": {"type": "record", "name": f"col_{c.name}", "fields": _COLUMN_FIELDS}})
        self.md_schema = {
            "type": "record", "name": "MetadataMessage", "fields": [
                {"name": "schemaId", "type": "string"},
                {"name": "lineage", "type": {"type": "record", "name": "Lineage", "fields": [
                    {"name": "server", "type": "string"}, {"name": "task", "type": "string"},
                    {"name": "schema", "type": "string"}, {"name": "table", "type": "string"},
                    {"name": "tableVersion", "type": "long"}, {"name": "timestamp", "type": "string"}]}},
                {"name": "tableStructure", "type": {"type": "record", "name": "TableStructure", "fields": [
                    {"name": "tableColumns", "type": {"type": "record", "name": "TableColumns", "fields": col_fields}}]}},
                {"name": "dataSchema", "type": "string"},
            ],
        }
        self.md_schema_text = json.dumps(self.md_schema, separators=(",", ":"))
        self.md_message = {
            "schemaId": self.schema_id,
            "lineage": {"server": SERVER, "task": TASK, "schema": SCHEMA, "table": t.name, "tableVersion": version,
                        "timestamp": ts},
            "tableStructure": {"tableColumns": columns},
            "dataSchema": data_schema_text,
        }


def _ts_header(ts_us: int) -> str:
    when = EPOCH + dt.timedelta(microseconds=ts_us)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}"


def change_sequence(ts_us: int, seq: int) -> str:
    """`YYYYMMDDHHmmSShh` + a 19-digit change number: 35 characters that sort as a string."""
    when = EPOCH + dt.timedelta(microseconds=ts_us)
    return when.strftime("%Y%m%d%H%M%S") + f"{when.microsecond // 10_000:02d}" + f"{seq:019d}"


def _enqueued(ms: int) -> str:
    """Event Hubs Capture's US-style `M/d/yyyy h:mm:ss AM` string."""
    w = EPOCH + dt.timedelta(milliseconds=ms)
    hour = w.hour % 12 or 12
    return f"{w.month}/{w.day}/{w.year} {hour}:{w.minute:02d}:{w.second:02d} {'AM' if w.hour < 12 else 'PM'}"


class ReplicateEncoder:
    """Writes, one topic / Event Hub per table, as three real deliveries lay files out:

    - json: a Kafka Connect storage sink, `OUT/replicate/json/topics/<topic>/partition=0/<topic>+0+<offset>.json`
      with the topic `shop.<table>` (JSON lines; the stream is the topic);
    - avro: a plain consumer's rotated dumps, `OUT/replicate/avro/<table>/part-N.avro` (an Avro container of
      MessageEnvelope records; no topic in the path, so the stream is the MD lineage's task);
    - capture: Event Hubs Capture, `OUT/replicate/capture/<ns>/<table>/<partition>/yyyy/mm/dd/hh/mm/ss.avro`
      (the stream is the Event Hub).

    Redeliveries (the `duplicates` quirk) land in later files of the same topic partition.
    """

    def __init__(self, out: Path, defs: tuple[TableDef, ...], seed: int, quirks: frozenset[str], rotate: int,
                 fmt: str):
        self.fmt, self.vf = fmt, f"replicate-{fmt}"
        self.root = out / "replicate" / fmt
        self.defs, self.seed, self.quirks, self.rotate = defs, seed, quirks, rotate
        self.logical = fmt == "avro"
        self.parsed_md: dict[str, Any] = {}
        self.current: dict[int, _Version] = {}
        self.lanes: dict[tuple[int, int], Lane] = {}
        self.rotators: dict[tuple[int, int], Rotator] = {}
        self.last_capture_s: dict[tuple[int, int], int] = {}
        self.capture_seq: dict[tuple[int, int], int] = {}
        self.offsets: dict[tuple[int, int], int] = {}
        self.counts: dict[str, int] = {"records": 0, "files": 0}

    def identity(self, t: TableDef) -> dict[str, Any]:
        """The table's lake identity when normalized without a `stream` option: the topic / Event Hub, or the
        task when the files do not name one."""
        stream = {"json": topic_of(t), "avro": TASK}.get(self.fmt, t.name)
        return {"vendor": "replicate", "stream": stream, "source_db": None, "database": None, "schema": SCHEMA,
                "table": t.name}

    # -- history -> messages -------------------------------------------------------------------------------
    def backfill(self, t: TableDef, rows: list[dict[str, Any]], ts_us: int, at_seq: int) -> None:
        self._metadata(t, 1, ts_us)
        v = self.current[t.index]
        hdr = {"operation": "REFRESH", "changeSequence": "", "timestamp": "", "streamPosition": "",
               "transactionId": "", "changeMask": None, "columnMask": None, "transactionEventCounter": None,
               "transactionLastEvent": None}
        for row in rows:
            self._data(t, v, row, None, hdr, ts_us, self._partition(t, row))

    def change(self, ev: Event) -> None:
        t = self.defs[ev.table]
        if ev.kind == "TRUNCATE":
            return  # no TRUNCATE operation on Kafka-family targets
        if ev.kind == "DDL":
            self._metadata(t, ev.version, ev.ts_us)
            return
        v = self.current[t.index]
        n = len(v.columns)
        everything = mask(list(range(1, n + 1)), n)
        if ev.kind == "INSERT":
            op, data, before, changed = "INSERT", ev.after, None, everything
        elif ev.kind == "DELETE":
            op, data, before = "DELETE", ev.before, None
            changed = mask([v.ordinal[k] for k in t.primary_key], n)
        else:
            op, data, before = "UPDATE", ev.after, ev.before
            changed = mask([v.ordinal[c] for c in ev.changed or ()], n)
        hdr = {
            "operation": op, "changeSequence": change_sequence(ev.ts_us, ev.seq), "timestamp": _ts_header(ev.ts_us),
            "streamPosition": f"mysql-bin.{1 + ev.seq // 50_000:06d}:{4 + (ev.seq % 50_000) * 173}",
            "transactionId": f"{ev.tx:032X}", "changeMask": changed, "columnMask": everything,
            "transactionEventCounter": ev.tx_seq, "transactionLastEvent": ev.tx_last,
        }
        self._data(t, v, data, before, hdr, ev.ts_us, self._partition(t, data))

    def _partition(self, t: TableDef, row: dict[str, Any]) -> int:
        if self.fmt != "capture" or not t.primary_key:
            return 0
        return zlib.crc32(repr(t.key_of(row)).encode()) % PARTITIONS

    def _metadata(self, t: TableDef, version: int, ts_us: int) -> None:
        v = _Version(t, version, self.logical, _ts_header(ts_us))
        self.current[t.index] = v
        if self.logical:
            parsed = parse_schema(json.loads(v.md_schema_text))
            msg = self._envelope("MD", v.schema_id, v.md_schema_text, _avro(parsed, v.md_message))
        else:
            msg = dumps({"magic": "atMSG", "type": "MD", "headers": None, "messageSchemaId": v.schema_id,
                         "messageSchema": v.md_schema_text, "message": v.md_message})
        hold = 3 if "dt_before_md" in self.quirks and t.index % 2 == 0 else 0
        partitions = range(PARTITIONS) if self.fmt == "capture" else (0,)
        for p in partitions:  # every partition's reader needs the table's metadata
            self._lane(t, p).put((ts_us // 1000, msg), hold=hold, barrier=True)

    def _data(self, t: TableDef, v: _Version, data: dict, before: dict | None, hdr: dict, ts_us: int,
              partition: int) -> None:
        if self.logical:
            record = {"data": {c.name: _avro_value(c, data.get(c.name)) for c in v.columns},
                      "beforeData": None if before is None else
                      {c.name: _avro_value(c, before.get(c.name)) for c in v.columns},
                      "headers": hdr}
            msg = self._envelope("DT", v.schema_id, None, _avro(v.parsed_data, record))
        else:
            jh = dict(hdr)
            for k in ("changeMask", "columnMask"):
                jh[k] = None if hdr[k] is None else hdr[k].hex().upper()
            record = {"data": {c.name: _json_value(c, data.get(c.name)) for c in v.columns},
                      "beforeData": None if before is None else
                      {c.name: _json_value(c, before.get(c.name)) for c in v.columns},
                      "headers": jh}
            msg = dumps({"magic": "atMSG", "type": "DT", "headers": None, "messageSchemaId": v.schema_id,
                         "messageSchema": None, "message": record})
        self._lane(t, partition).put((ts_us // 1000 + 800, msg))

    def _envelope(self, kind: str, schema_id: str, schema_text: str | None, message: bytes) -> dict[str, Any]:
        return {"magic": b"atMSG", "type": kind, "headers": None, "messageSchemaId": schema_id,
                "messageSchema": schema_text, "message": message}

    # -- delivery ------------------------------------------------------------------------------------------
    def _lane(self, t: TableDef, partition: int) -> Lane:
        key = (t.index, partition)
        lane = self.lanes.get(key)
        if lane is None:
            rng = lane_rng(self.seed, self.vf, t.name, partition)
            lane = Lane(lambda item, redelivered, key=key: self._write(key, item, redelivered), rng, self.quirks,
                        dup_delay=self.rotate * 2)
            self.lanes[key] = lane
        return lane

    def _write(self, key: tuple[int, int], item: tuple, redelivered: bool) -> None:
        rot = self.rotators.get(key)
        if rot is None:
            rot = Rotator(self.rotate, lambda n, first, key=key: self._open(key, n, first))
            self.rotators[key] = rot
        ms, msg = item
        if self.fmt == "capture":
            seq = self.capture_seq.get(key, 0)
            self.capture_seq[key] = seq + 1
            enq = ms + (30_000 if redelivered else 0)
            log = current_log()
            if redelivered == LATE and log is not None:  # enqueued again late: at the delivery's time
                enq = max(enq, log.clock_us // 1000)
            msg = {"SequenceNumber": seq, "Offset": str(seq * 1024), "EnqueuedTimeUtc": _enqueued(enq),
                   "SystemProperties": {"x-opt-sequence-number": seq, "x-opt-offset": str(seq * 1024),
                                        "x-opt-enqueued-time": enq},
                   "Properties": {}, "Body": msg}
        rot.write(msg)
        self.offsets[key] = self.offsets.get(key, 0) + 1
        self.counts["records"] += 1

    def _open(self, key: tuple[int, int], n: int, first: Any) -> Any:
        t = self.defs[key[0]]
        self.counts["files"] += 1
        if self.fmt == "json":  # Kafka Connect: named after the topic, partition and the file's first offset
            topic, p, offset = topic_of(t), key[1], self.offsets.get(key, 0)
            return LinesFile(self.root / "topics" / topic / f"partition={p}" / f"{topic}+{p}+{offset:010d}.json")
        marker = hashlib.md5(f"{self.vf}:{t.name}:{key[1]}:{n}".encode()).digest()
        if self.fmt == "avro":
            return AvroFile(self.root / t.name / f"part-{n:05d}.avro", ENVELOPE_SCHEMA, sync_marker=marker)
        enq = first["SystemProperties"]["x-opt-enqueued-time"] // 1000
        log = current_log()
        if log is not None and log.period_us:  # time-rotated files: the capture window is the history's clock
            enq = max(enq, log.clock_us // 1_000_000)
        second = max(enq, self.last_capture_s.get(key, -1) + 1)  # one capture file per second per partition
        self.last_capture_s[key] = second
        when = EPOCH + dt.timedelta(seconds=second)
        path = self.root / NAMESPACE / t.name / str(key[1]) / when.strftime("%Y/%m/%d/%H/%M/%S.avro")
        return AvroFile(path, EVENT_DATA_SCHEMA, sync_marker=marker)

    def close(self) -> None:
        for lane in self.lanes.values():
            lane.close()
        for rot in self.rotators.values():
            rot.close()


def topic_of(t: TableDef) -> str:
    """The Kafka topic of a table (Replicate's "separate topic for each table")."""
    return f"{SCHEMA}.{t.name}"


def _avro(parsed: Any, record: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    schemaless_writer(buf, parsed, record)
    return buf.getvalue()


# -- what the format carries (the truth projection; docs/simulate.md states it rule by rule) -------------------
def truth_kind(flavour: str, col: Col) -> str:
    """The kind of value a faithful decoder of any Replicate format yields for a source column."""
    base = col.base
    if base == "timestamp":
        return "timestamp_ntz"  # DATETIME has no zone; Avro's timestamp-micros only carries its wall clock
    return {"decimal": "decimal", "date": "date", "binary": "bytes"}.get(base) or COMMON_KINDS[base]


FORMATS = tuple(SimFormat("replicate", fmt, ReplicateEncoder, truth_kind, vendor_type)
                for fmt in ("json", "avro", "capture"))
"""The Replicate formats the simulator writes (a truncate is not carried; the added column is)."""
