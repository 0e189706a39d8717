"""Google Cloud Datastream encoder: Cloud Storage layout, JSON Lines (plain or gzip) and Avro files.

Written from docs/reference (datastream.md) and the real files it describes, never from the decoder. Each
simulated table is read by a stream of one source flavour (PostgreSQL, MySQL or Oracle) and carries that
flavour's source_metadata, sort_keys, read_method values and payload type mapping. Datastream has no
before images and no truncate or DDL events: the added column shows up as a new schema_key in new files.
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import hashlib
import json
import re
import zlib
from pathlib import Path
from typing import Any

from cdcnorm.simulate.delivery import LATE, AvroFile, Lane, LinesFile, Rotator, current_log, lane_rng
from cdcnorm.simulate.encoders import COMMON_KINDS, SimFormat
from cdcnorm.simulate.history import EPOCH, Col, Event, TableDef
from cdcnorm.simulate.jsonx import Raw, dumps, iso_us, plain

PROJECT = "projects/123456789012/locations/us-central1/streams"
SOURCES: dict[str, dict[str, Any]] = {
    "mysql": {"cdc": "mysql-cdc-binlog", "backfill": "mysql-backfill-fulldump", "database": "shop", "schema": None},
    "postgresql": {"cdc": "postgresql-cdc", "backfill": "postgresql-backfill", "database": None, "schema": "public"},
    "oracle": {"cdc": "oracle-cdc-logminer", "backfill": "oracle-backfill", "database": "XE", "schema": "APP"},
}

_TS_MICROS = {"type": "long", "logicalType": "timestamp-micros"}
_TS_MILLIS = {"type": "long", "logicalType": "timestamp-millis"}
_SORT_KEYS = {"type": "array", "items": ["string", "long"]}
_NULL_STR, _NULL_LONG, _NULL_BOOL = ["null", "string"], ["null", "long"], ["null", "boolean"]

_SOURCE_METADATA: dict[str, list[dict[str, Any]]] = {
    "mysql": [
        {"name": "table", "type": "string"}, {"name": "database", "type": "string"},
        {"name": "primary_keys", "type": {"type": "array", "items": "string"}},
        {"name": "log_file", "type": _NULL_STR}, {"name": "log_position", "type": _NULL_LONG},
        {"name": "change_type", "type": _NULL_STR}, {"name": "is_deleted", "type": _NULL_BOOL},
    ],
    "postgresql": [
        {"name": "schema", "type": "string"}, {"name": "table", "type": "string"},
        {"name": "is_deleted", "type": _NULL_BOOL}, {"name": "change_type", "type": _NULL_STR},
        {"name": "tx_id", "type": _NULL_LONG}, {"name": "lsn", "type": _NULL_STR},
        {"name": "primary_keys", "type": ["null", {"type": "array", "items": "string"}]},
    ],
    "oracle": [
        {"name": "schema", "type": "string"}, {"name": "table", "type": "string"}, {"name": "database", "type": "string"},
        {"name": "row_id", "type": _NULL_STR}, {"name": "scn", "type": _NULL_LONG},
        {"name": "is_deleted", "type": _NULL_BOOL}, {"name": "change_type", "type": _NULL_STR},
        {"name": "ssn", "type": _NULL_LONG}, {"name": "rs_id", "type": _NULL_STR}, {"name": "tx_id", "type": _NULL_STR},
        {"name": "log_file", "type": _NULL_STR},
        {"name": "primary_keys", "type": ["null", {"type": "array", "items": "string"}]},
    ],
}


def stream_name(flavour: str) -> str:
    return f"{PROJECT}/sim-{flavour}"


def object_name(t: TableDef) -> str:
    """`<schema>_<table>`; MySQL has no schema level, so its database name stands in."""
    src = SOURCES[t.flavour]
    return f"{src['schema'] or src['database']}_{t.name}"


def avro_type(flavour: str, col: Col) -> Any:
    """The payload field type Datastream writes for a source column of this flavour."""
    base = col.base
    if base == "decimal":
        p, s = col.precision_scale
        if flavour == "oracle" and p > 38:  # unconstrained NUMBER: Datastream's custom `number` type
            return {"type": "string", "logicalType": "number"}
        return {"type": "bytes", "logicalType": "decimal", "precision": p, "scale": s}
    if base == "date":
        return {"type": "int", "logicalType": "date"} if flavour == "postgresql" else dict(_TS_MICROS)
    if base == "timestamp":
        return dict(_TS_MICROS)
    if base == "binary":
        return "bytes" if flavour == "postgresql" else "string"
    if base == "boolean":
        return {"postgresql": "boolean", "mysql": "int", "oracle": "long"}[flavour]
    if base == "string" and flavour == "oracle":
        return {"type": "string", "logicalType": "varchar", "length": 4000}
    if base == "int":
        return "long" if flavour == "oracle" else "int"
    return {"bigint": "long", "double": "double", "string": "string"}[base]


def vendor_type(t: TableDef, col: Col) -> str:
    return json.dumps(avro_type(t.flavour, col), separators=(",", ":"))


def _us(ts: dt.datetime) -> int:
    return (ts - EPOCH) // dt.timedelta(microseconds=1)


def _avro_value(flavour: str, col: Col, v: Any) -> Any:
    if v is None:
        return None
    base = col.base
    if base == "decimal":
        return plain(v) if flavour == "oracle" and col.precision_scale[0] > 38 else v
    if base == "date":
        return v if flavour == "postgresql" else _us(dt.datetime(v.year, v.month, v.day, tzinfo=dt.UTC))
    if base == "timestamp":
        return _us(v)
    if base == "binary":
        return v if flavour == "postgresql" else v.hex()
    if base == "boolean":
        return v if flavour == "postgresql" else int(v)
    return v


def _json_value(flavour: str, col: Col, v: Any) -> Any:
    if v is None:
        return None
    base = col.base
    if base == "decimal":  # a JSON number with every digit; Oracle's `number` type is a string
        return plain(v) if flavour == "oracle" and col.precision_scale[0] > 38 else Raw(plain(v))
    if base == "date":
        if flavour == "postgresql":
            return v.isoformat()
        return iso_us(dt.datetime(v.year, v.month, v.day, tzinfo=dt.UTC))
    if base == "timestamp":
        return iso_us(v)
    if base == "binary":
        return base64.b64encode(v).decode("ascii") if flavour == "postgresql" else v.hex()
    if base == "boolean":
        return v if flavour == "postgresql" else int(v)
    if base == "double":  # written as Python's repr so the text is exactly what the truth parses
        return Raw(repr(v))
    return v


def _rowid_for(key: tuple) -> str:
    return "AAAE5S" + base64.b64encode(hashlib.sha1(repr(key).encode()).digest()[:9]).decode()


def _ms_iso(ms: int) -> str:
    return (EPOCH + dt.timedelta(milliseconds=ms)).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


class _Version:
    """One Avro/JSON schema version of a table: payload fields, full record schema and schema_key."""

    def __init__(self, t: TableDef, version: int):
        fl = t.flavour
        self.columns = t.columns_at(version)
        fields = []
        for c in self.columns:
            f: dict[str, Any] = {"name": c.name, "type": ["null", avro_type(fl, c)]}
            if fl == "mysql":
                f["default"] = None
            fields.append(f)
        obj = object_name(t)
        self.schema_key = hashlib.sha1(f"{obj}:{json.dumps(fields, sort_keys=True)}".encode()).hexdigest()
        self.schema = {
            "type": "record", "name": re.sub(r"[^A-Za-z0-9_]", "_", obj), "fields": [
                {"name": "uuid", "type": "string"}, {"name": "read_timestamp", "type": dict(_TS_MILLIS)},
                {"name": "source_timestamp", "type": dict(_TS_MILLIS)}, {"name": "object", "type": "string"},
                {"name": "read_method", "type": "string"}, {"name": "stream_name", "type": "string"},
                {"name": "schema_key", "type": "string"}, {"name": "sort_keys", "type": dict(_SORT_KEYS)},
                {"name": "source_metadata", "type": {"type": "record", "name": "source_metadata",
                                                     "fields": copy.deepcopy(_SOURCE_METADATA[fl])}},
                {"name": "payload", "type": {"type": "record", "name": "payload", "fields": fields}},
            ],
        }


class DatastreamEncoder:
    """Writes `OUT/datastream/<json|avro>/<object>/yyyy/mm/dd/hh/mm/<schema_key>_<read_method>_..._<n>.<ext>`."""

    def __init__(self, out: Path, defs: tuple[TableDef, ...], seed: int, quirks: frozenset[str], rotate: int,
                 fmt: str):
        self.fmt, self.vf = fmt, f"datastream-{fmt}"
        self.root = out / "datastream" / fmt
        self.defs, self.seed, self.quirks, self.rotate = defs, seed, quirks, rotate
        self.versions = {(t.index, v): _Version(t, v) for t in defs for v in (1, 2)}
        self.lanes: dict[tuple[int, str], Lane] = {}
        self.rotators: dict[tuple[int, str, str], Rotator] = {}
        self.counts: dict[str, int] = {"records": 0, "files": 0}
        self.row_ids: dict[tuple, str] = {}
        self._moving: str | None = None
        self.last_minute: dict[int, int] = {}

    # -- identity ------------------------------------------------------------------------------------------
    def identity(self, t: TableDef) -> dict[str, Any]:
        src = SOURCES[t.flavour]
        return {"vendor": "datastream", "stream": stream_name(t.flavour), "source_db": t.flavour,
                "database": src["database"], "schema": src["schema"], "table": t.name}

    # -- history -> events ---------------------------------------------------------------------------------
    def backfill(self, t: TableDef, rows: list[dict[str, Any]], ts_us: int, at_seq: int) -> None:
        lane = self._lane(t, "backfill")
        ms = ts_us // 1000
        for row in rows:
            meta = self._metadata(t, "INSERT", False, at_seq, None, row, backfill=True)
            lane.put(self._event(t, 1, ms, "backfill", meta, row))
        # the backfill is over: its lane takes nothing more, so flushing it now writes the same bytes as at the
        # end, and its files are complete before the CDC (the feeder delivers them first)
        lane.close()

    def change(self, ev: Event) -> None:
        if ev.kind in ("DDL", "TRUNCATE"):
            return  # not expressible: no event; DDL surfaces as a new schema_key on later files
        t = self.defs[ev.table]
        lane, ms = self._lane(t, "cdc"), ev.ts_us // 1000
        if ev.kind == "INSERT":
            parts = [("INSERT", False, ev.after)]
        elif ev.kind == "DELETE":
            parts = [("DELETE", True, ev.before)]
        elif ev.key_change:  # old row then new row, same source position
            parts = [("UPDATE-DELETE", t.flavour != "oracle", ev.before), ("UPDATE-INSERT", False, ev.after)]
        else:
            parts = [("UPDATE-INSERT" if t.flavour == "mysql" else "UPDATE", False, ev.after)]
        for change_type, deleted, row in parts:
            meta = self._metadata(t, change_type, deleted, ev.seq, ev.tx, row)
            lane.put(self._event(t, ev.version, ms, "cdc", meta, row))

    def _event(self, t: TableDef, version: int, ms: int, phase: str, meta: dict[str, Any],
               row: dict[str, Any]) -> tuple:
        v = self.versions[(t.index, version)]
        read_method = SOURCES[t.flavour][phase]
        sort_keys = self._sort_keys(t.flavour, ms, meta)
        if self.fmt == "avro":
            payload = {c.name: _avro_value(t.flavour, c, row.get(c.name)) for c in v.columns}
        else:
            payload = {c.name: _json_value(t.flavour, c, row.get(c.name)) for c in v.columns}
        return (version, phase, ms, read_method, sort_keys, meta, payload)

    def _metadata(self, t: TableDef, change_type: str, deleted: bool, seq: int, tx: int | None,
                  row: dict[str, Any], backfill: bool = False) -> dict[str, Any]:
        src, pks = SOURCES[t.flavour], list(t.primary_key)
        if t.flavour == "mysql":
            log_file = "" if backfill else f"mysql-bin.{1 + seq // 50_000:06d}"
            pos = 0 if backfill else 4 + (seq % 50_000) * 173
            return {"table": t.name, "database": src["database"], "primary_keys": pks, "log_file": log_file,
                    "log_position": pos, "change_type": change_type, "is_deleted": deleted}
        if t.flavour == "postgresql":
            lsn = ""
            if not backfill:
                v = (0x16 << 32) + 0x0B000000 + seq * 0x38
                lsn = f"{v >> 32:X}/{v & 0xFFFFFFFF:X}"
            return {"schema": src["schema"], "table": t.name, "is_deleted": deleted, "change_type": change_type,
                    "tx_id": None if backfill else 360_000 + tx, "lsn": lsn, "primary_keys": pks}
        scn = 5_000_000 + seq * 2
        rs_id = "" if backfill else f" 0x{seq >> 16:06x}.{seq & 0xFFFF:08x}.0010 "
        row_id = self._row_id(t, row, change_type)
        return {"schema": src["schema"], "table": t.name, "database": src["database"], "row_id": row_id,
                "scn": scn, "is_deleted": deleted, "change_type": change_type, "ssn": 0, "rs_id": rs_id,
                "tx_id": None if backfill else base64.b64encode(tx.to_bytes(8, "big")).decode(),
                "log_file": "" if backfill else f"/u01/app/oracle/fast_recovery_area/XE/archivelog/"
                                                 f"2024_05_01/o1_mf_1_{1 + seq // 50_000}_sim_.arc",
                "primary_keys": pks}

    def _row_id(self, t: TableDef, row: dict[str, Any], change_type: str) -> str:
        """Oracle ROWID: the physical row's address, so it survives a key change (kept per live key)."""
        key = (t.index, t.key_of(row) if t.primary_key else (row["seq_no"],))
        if change_type == "UPDATE-DELETE":
            self._moving = self.row_ids.pop(key, None) or _rowid_for(key)
            return self._moving
        if change_type == "UPDATE-INSERT" and self._moving is not None:
            rid, self._moving = self._moving, None
            self.row_ids[key] = rid
            return rid
        if change_type == "DELETE":
            return self.row_ids.pop(key, None) or _rowid_for(key)
        if not t.primary_key:
            return _rowid_for(key)
        return self.row_ids.setdefault(key, _rowid_for(key))

    @staticmethod
    def _sort_keys(flavour: str, ms: int, meta: dict[str, Any]) -> list[Any]:
        if flavour == "mysql":
            return [ms, meta["log_file"], meta["log_position"]]
        if flavour == "postgresql":
            return [ms, meta["lsn"]]
        return [ms, meta["scn"], meta["rs_id"], meta["ssn"]]

    # -- delivery ------------------------------------------------------------------------------------------
    def _lane(self, t: TableDef, phase: str) -> Lane:
        lane = self.lanes.get((t.index, phase))
        if lane is None:
            rng = lane_rng(self.seed, self.vf, t.name, phase)
            lane = Lane(lambda item, redelivered, t=t: self._write(t, item, redelivered), rng, self.quirks,
                        dup_delay=self.rotate * 2)
            self.lanes[(t.index, phase)] = lane
        return lane

    @property
    def clock_ms(self) -> int:
        log = current_log()
        return log.clock_us // 1000 if log is not None else 0

    def _write(self, t: TableDef, item: tuple, redelivered: bool) -> None:
        version, phase, ms, read_method, sort_keys, meta, payload = item
        key = (t.index, phase, self.versions[(t.index, version)].schema_key)
        rot = self.rotators.get(key)
        if rot is None:
            rot = Rotator(self.rotate, lambda n, first, t=t, version=version, phase=phase:
                          self._open(t, version, phase, n, first))
            self.rotators[key] = rot
        rot.write((ms, read_method, sort_keys, meta, payload, redelivered))
        self.counts["records"] += 1

    def close(self) -> None:
        """Flush every lane (held, shuffled and duplicate items), then close every file."""
        for lane in self.lanes.values():
            lane.close()
        for rot in self.rotators.values():
            rot.close()

    def _open(self, t: TableDef, version: int, phase: str, n: int, first: tuple) -> _File:
        v = self.versions[(t.index, version)]
        ms, read_method = first[0], first[1]
        when = EPOCH + dt.timedelta(milliseconds=ms)
        log = current_log()
        if log is not None and log.period_us:
            # time-rotated files: the folder is the minute the file was opened on the history's clock, one per
            # file of an object, so an object's paths sort in delivery order and a file sits in its day's folder
            minute = max(ms // 60_000, log.clock_us // 60_000_000, self.last_minute.get(t.index, -1) + 1)
            self.last_minute[t.index] = minute
            when = EPOCH + dt.timedelta(minutes=minute)
        folder = self.root / object_name(t) / when.strftime("%Y/%m/%d/%H/%M")
        stream_hash = zlib.crc32(stream_name(t.flavour).encode()) - (1 << 31)
        gz = self.fmt == "json" and t.flavour == "postgresql"
        ext = "avro" if self.fmt == "avro" else ("jsonl.gz" if gz else "jsonl")
        path = folder / f"{v.schema_key}_{read_method}_{stream_hash}_{t.index}_{n}.{ext}"
        self.counts["files"] += 1
        return _File(self, t, v, path, gz, shared_uuid=phase == "backfill" and t.flavour == "postgresql")


class _File:
    """One output file; assigns the delivery-time fields (uuid, read_timestamp) as events are written."""

    def __init__(self, enc: DatastreamEncoder, t: TableDef, v: _Version, path: Path, gz: bool, shared_uuid: bool):
        self.enc, self.t, self.v, self.path = enc, t, v, path
        digest = hashlib.sha1(str(path.relative_to(enc.root)).encode()).hexdigest()
        self.prefix = f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:24]}"
        self.shared_uuid, self.n = shared_uuid, 0
        if enc.fmt == "avro":
            self.out: Any = AvroFile(path, v.schema, sync_marker=bytes.fromhex(digest[:32]))
        else:
            self.out = LinesFile(path, gz=gz, trailing_newline=False)

    def write(self, item: tuple) -> None:
        ms, read_method, sort_keys, meta, payload, redelivered = item
        # uuid: per-file prefix + a counter in binary digits (PostgreSQL backfill files share one uuid)
        counter = 0 if self.shared_uuid else self.n
        uuid = self.prefix + format(counter % 256, "08b")
        self.n += 1
        read_ms = ms + 1_234 + (45_000 if redelivered else 0)
        if redelivered == LATE:  # read again late: the read time is the delivery's
            read_ms = max(read_ms, self.enc.clock_ms + 1_234)
        common = {"uuid": uuid}
        rest = {"object": object_name(self.t), "read_method": read_method, "stream_name": stream_name(self.t.flavour),
                "schema_key": self.v.schema_key, "sort_keys": sort_keys, "source_metadata": meta,
                "payload": payload}
        if self.enc.fmt == "avro":
            self.out.write({**common, "read_timestamp": read_ms, "source_timestamp": ms, **rest})
        else:
            self.out.write(dumps({**common, "read_timestamp": _ms_iso(read_ms), "source_timestamp": _ms_iso(ms),
                                  **rest}))

    def close(self) -> None:
        self.out.close()


# -- what the format carries (the truth projection; docs/simulate.md states it rule by rule) -------------------
def truth_kind(is_json: bool, flavour: str, col: Col) -> str:
    """The kind of value a faithful decoder of Datastream JSON / Avro yields for a source column."""
    base, pg = col.base, flavour == "postgresql"
    if base == "decimal":  # Oracle p > 38 is the `number` type: a string, typed back to Decimal from Avro
        return "str_decimal" if is_json and flavour == "oracle" and col.precision_scale[0] > 38 else "decimal"
    if base == "boolean":
        return "bool" if pg else "int_bool"
    if base == "double":
        return "decimal_repr" if is_json else "float"
    if base == "date":  # JSON: ISO text typed by inference (cdcnorm.canonical.inferred), as Avro's logical types
        return "date" if pg else "ts_midnight"
    if base == "timestamp":
        return "timestamp"
    if base == "binary":
        if pg:
            return "str_base64" if is_json else "bytes"
        return "str_hex"
    return COMMON_KINDS[base]


FORMATS = (
    SimFormat("datastream", "json", DatastreamEncoder, lambda flavour, col: truth_kind(True, flavour, col),
              vendor_type),
    SimFormat("datastream", "avro", DatastreamEncoder, lambda flavour, col: truth_kind(False, flavour, col),
              vendor_type),
)
"""The Datastream formats the simulator writes (a truncate is not carried; the added column is)."""
