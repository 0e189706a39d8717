"""Oracle GoldenGate encoder: the JSON formatter (operation- and row-modeled) and the Avro op formatter.

Written from docs/reference (goldengate.md), never from the decoder. Each simulated table is replicated by one
Replicat whose Kafka handler (`mode=op`, `includePrimaryKeys=true`, topic = the table) writes one record per
operation; the topic's messages are dumped as JSON lines. What GoldenGate writes and what it loses:

- `pos`: trail sequence (10 digits) + RBA (10 digits); the initial load comes from its own trail with the dashed
  sequence `-1` form (`00000000-1` + RBA), before every change. It arrives as ordinary `I` records.
- `op_ts`: the commit time, UTC, `YYYY-MM-DD HH:MM:SS.ffffff` (the simulated trail has milliseconds), fixed
  on replay; `current_ts`: when the
  formatter ran (`T` form), later for a redelivered copy.
- values: NUMBER as JSON numbers (scale kept), doubles as their shortest text, dates and timestamps as naive
  UTC text (TIMESTAMP with nine fraction digits), binary as base64, booleans as `1` / `0` (MySQL and Oracle
  flavours) or `true` / `false` (PostgreSQL).
- no DDL record: the added column appears in later images; a truncate is `op_type` `T`.
- quirk `compressed_updates`: an update carries the key and the changed columns only (`COMPRESSUPDATES`);
  quirk `empty_before`: every third update has `"before": {}` (no before image captured). A key-changing update
  is written with full images in both (the simulated Extract logs every column of a key update), so the truth
  needs no adjustment: `apply` keeps the columns a compressed image lacks.
- Avro op formatter (`avro_op`, File Writer handler: Avro container files, one schema per table version, as
  `generateSchema` writes it): every column has a `<col>_isMissing` companion; `enableDecimalLogicalType` and
  `enableTimestampLogicalType` on (decimals exact, timestamps `timestamp-micros`), dates as `YYYY-MM-DD` text.
  A compressed update marks the other columns missing; an empty before image is a before record whose every
  column is missing.
- row-modeled output has no before image: its Replicat sets `pkUpdateHandling=delete-insert`, so a key change is
  a `D` of the old row and an `I` of the new one, both at the update's `pos`.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
from pathlib import Path
from typing import Any

from cdcnorm.simulate.delivery import AvroFile, Lane, LinesFile, Rotator, lane_rng
from cdcnorm.simulate.encoders import COMMON_KINDS, SimFormat
from cdcnorm.simulate.history import EPOCH, Col, Event, TableDef
from cdcnorm.simulate.jsonx import Raw, dumps, plain

SCHEMA = {"mysql": "shop", "postgresql": "public", "oracle": "app"}
"""The `table` prefix per source flavour (MySQL's database stands in for the schema)."""
STREAM = "goldengate"
EMPTY_BEFORE_EVERY = 3
"""empty_before: updates whose sequence number is a multiple of this have `"before": {}`."""
RBA_STEP = 1_377
"""Bytes between two operations in the simulated trail."""
TRAIL_OPS = 5_000
"""Operations per simulated trail file (then the sequence number grows and the RBA restarts)."""


def full_name(t: TableDef) -> str:
    return f"{SCHEMA[t.flavour]}.{t.name}"


def declared_type(t: TableDef, col: Col) -> str:
    """The canonical type a user declares for the column (`column_types`): the JSON cannot type it alone."""
    base = col.base
    if base == "timestamp":
        return "timestamp_ntz"
    return {"decimal": col.type, "binary": "binary", "date": "date"}.get(base, base)


def _ts(us: int) -> dt.datetime:
    return (EPOCH + dt.timedelta(microseconds=us)).replace(tzinfo=None)


def op_ts_text(us: int) -> str:
    """The commit time as the simulated trail holds it: milliseconds, written with six digits."""
    return _ts(us - us % 1000).strftime("%Y-%m-%d %H:%M:%S.%f")


def current_ts_text(us: int) -> str:
    return _ts(us).strftime("%Y-%m-%dT%H:%M:%S.%f")


def value(flavour: str, col: Col, v: Any) -> Any:
    """A source value as the JSON formatter writes it."""
    if v is None:
        return None
    base = col.base
    if base == "decimal":
        return Raw(plain(v))
    if base == "double":
        return Raw(repr(v))
    if base == "boolean":
        return v if flavour == "postgresql" else int(v)
    if base == "date":
        return f"{v.isoformat()} 00:00:00" if flavour == "oracle" else v.isoformat()
    if base == "timestamp":
        return v.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f") + "000"
    if base == "binary":
        return base64.b64encode(v).decode("ascii")
    return v


_AVRO = {"int": "long", "bigint": "long", "double": "double", "boolean": "boolean", "string": "string",
         "date": "string", "binary": "bytes"}
_TS_MICROS = {"type": "long", "logicalType": "timestamp-micros"}


def avro_column_type(col: Col) -> Any:
    if col.base == "decimal":
        p, sc = col.precision_scale
        return {"type": "bytes", "logicalType": "decimal", "precision": p, "scale": sc}
    if col.base == "timestamp":
        return dict(_TS_MICROS)
    return _AVRO[col.base]


def avro_schema(t: TableDef, version: int) -> dict[str, Any]:
    """The op formatter's schema of one table version (`<SCHEMA>.<TABLE>.avsc`)."""
    fields: list[dict[str, Any]] = []
    for c in t.columns_at(version):
        fields.append({"name": c.name, "type": ["null", avro_column_type(c)], "default": None})
        fields.append({"name": f"{c.name}_isMissing", "type": "boolean"})
    return {"type": "record", "name": t.name, "namespace": SCHEMA[t.flavour], "fields": [
        {"name": "table", "type": "string"}, {"name": "op_type", "type": "string"},
        {"name": "op_ts", "type": "string"}, {"name": "current_ts", "type": "string"},
        {"name": "pos", "type": "string"}, {"name": "primary_keys", "type": {"type": "array", "items": "string"}},
        {"name": "tokens", "type": {"type": "map", "values": "string"}, "default": {}},
        {"name": "before", "type": ["null", {"type": "record", "name": "columns", "fields": fields}],
         "default": None},
        {"name": "after", "type": ["null", "columns"], "default": None}]}


def avro_value(col: Col, v: Any) -> Any:
    if v is None:
        return None
    if col.base == "date":
        return v.isoformat()
    return v


class GoldenGateEncoder:
    """Writes `OUT/goldengate/<json|json_row>/<schema>.<table>/<schema>.<table>_<n>.jsonl` and
    `OUT/goldengate/avro_op/<schema>.<table>/<schema>.<table>_<n>_v<version>.avro`."""

    def __init__(self, out: Path, defs: tuple[TableDef, ...], seed: int, quirks: frozenset[str], rotate: int,
                 fmt: str):
        self.fmt, self.vf = fmt, f"goldengate-{fmt}"
        self.root = out / "goldengate" / fmt
        self.defs, self.seed, self.quirks, self.rotate = defs, seed, quirks, rotate
        self.lanes: dict[int, Lane] = {}
        self.rotators: dict[int, Rotator] = {}
        self.load_rba = 0
        self.file_numbers: dict[int, int] = {}
        self.counts: dict[str, int] = {"records": 0, "files": 0, "compressed": 0, "empty_before": 0}

    def identity(self, t: TableDef) -> dict[str, Any]:
        return {"vendor": "goldengate", "stream": STREAM, "source_db": None, "database": None,
                "schema": SCHEMA[t.flavour], "table": t.name}

    # -- history -> records --------------------------------------------------------------------------------
    def backfill(self, t: TableDef, rows: list[dict[str, Any]], ts_us: int, at_seq: int) -> None:
        for row in rows:
            self.load_rba += RBA_STEP
            pos = "-1".rjust(10, "0") + f"{self.load_rba:010d}"
            self._put(t, "I", ts_us, pos, None, self._image(t, 1, row), 1)

    def change(self, ev: Event) -> None:
        if ev.kind == "DDL":
            return  # no DDL record: the new column shows up in later images
        t = self.defs[ev.table]
        seqno, n = divmod(ev.seq, TRAIL_OPS)
        pos = f"{seqno + 1:010d}{(n + 1) * RBA_STEP:010d}"
        v = ev.version
        if ev.kind == "TRUNCATE":
            self._put(t, "T", ev.ts_us, pos, None, None, v)
        elif ev.kind == "INSERT":
            self._put(t, "I", ev.ts_us, pos, None, self._image(t, v, ev.after), v)
        elif ev.kind == "DELETE":
            self._put(t, "D", ev.ts_us, pos, self._image(t, v, ev.before), None, v)
        else:
            before: dict[str, Any] | None = self._image(t, v, ev.before)
            after = self._image(t, v, ev.after)
            if not ev.key_change and "compressed_updates" in self.quirks:
                kept = set(t.primary_key) | set(ev.changed or ())
                before = {k: x for k, x in before.items() if k in kept}
                after = {k: x for k, x in after.items() if k in kept}
                self.counts["compressed"] += 1
            if not ev.key_change and "empty_before" in self.quirks and ev.seq % EMPTY_BEFORE_EVERY == 0:
                before = {}
                self.counts["empty_before"] += 1
            if ev.key_change and self.fmt == "json_row":  # pkUpdateHandling=delete-insert, at the update's pos
                self._put(t, "D", ev.ts_us, pos, before, None, v)
                self._put(t, "I", ev.ts_us, pos, None, after, v)
                return
            self._put(t, "U", ev.ts_us, pos, before, after, v)

    def _image(self, t: TableDef, version: int, row: dict[str, Any] | None) -> dict[str, Any]:
        if self.fmt == "avro_op":
            return {c.name: avro_value(c, (row or {}).get(c.name)) for c in t.columns_at(version)}
        return {c.name: value(t.flavour, c, (row or {}).get(c.name)) for c in t.columns_at(version)}

    def _put(self, t: TableDef, op: str, ts_us: int, pos: str, before: dict[str, Any] | None,
             after: dict[str, Any] | None, version: int) -> None:
        meta = {"table": full_name(t), "op_type": op, "op_ts": op_ts_text(ts_us), "current_ts": None, "pos": pos}
        if t.primary_key:
            meta["primary_keys"] = list(t.primary_key)
        if self.fmt == "avro_op":
            cols = t.columns_at(version)
            rec = {**meta, "primary_keys": list(t.primary_key), "tokens": {},
                   "before": _missing_marked(cols, before), "after": _missing_marked(cols, after)}
        elif self.fmt == "json":
            rec = {**meta, "before": before, "after": after}
        else:  # row-modeled: the one image beside the metadata (a delete's before image; a truncate none)
            rec = {**meta, **((before if op == "D" else after) or {})}
        self._lane(t).put((ts_us, rec, version))

    # -- delivery --------------------------------------------------------------------------------------------
    def _lane(self, t: TableDef) -> Lane:
        lane = self.lanes.get(t.index)
        if lane is None:
            rng = lane_rng(self.seed, self.vf, t.name)
            lane = Lane(lambda item, redelivered, t=t: self._write(t, item, redelivered), rng, self.quirks,
                        dup_delay=self.rotate * 2)
            self.lanes[t.index] = lane
        return lane

    def _write(self, t: TableDef, item: tuple, redelivered: bool) -> None:
        ts_us, rec, version = item
        # the formatter's processing time: later on a redelivery (a replay of the trail), never the same record
        rec = {**rec, "current_ts": current_ts_text(ts_us + 1_250_000 + (41_000_000 if redelivered else 0))}
        avro = self.fmt == "avro_op"
        key = (t.index, version if avro else 0)
        rot = self.rotators.get(key)
        if rot is None:
            rot = Rotator(self.rotate, lambda n, first, t=t, v=key[1]: self._open(t, v, n))
            self.rotators[key] = rot
        rot.write(rec if avro else dumps(rec))
        self.counts["records"] += 1

    def _open(self, t: TableDef, version: int, n: int) -> LinesFile | AvroFile:
        self.counts["files"] += 1
        if self.fmt == "avro_op":  # one numbering per table over its versions: names sort in delivery order
            n = self.file_numbers[t.index] = self.file_numbers.get(t.index, -1) + 1
            path = self.root / full_name(t) / f"{full_name(t)}_{n:04d}_v{version}.avro"
            marker = hashlib.sha1(path.relative_to(self.root).as_posix().encode()).digest()[:16]
            return AvroFile(path, avro_schema(t, version), sync_marker=marker)
        return LinesFile(self.root / full_name(t) / f"{full_name(t)}_{n:04d}.jsonl")

    def close(self) -> None:
        for lane in self.lanes.values():
            lane.close()
        for rot in self.rotators.values():
            rot.close()


def _missing_marked(cols: tuple[Col, ...], image: dict[str, Any] | None) -> dict[str, Any] | None:
    """An Avro image record: a column the image lacks is null with `<col>_isMissing` true."""
    if image is None:
        return None
    out: dict[str, Any] = {}
    for c in cols:
        out[c.name] = image.get(c.name)
        out[f"{c.name}_isMissing"] = c.name not in image
    return out


# -- what the formats carry (the truth projection; docs/simulate.md states it rule by rule) -------------------
def truth_kind(flavour: str, col: Col) -> str:
    """With the declared column types: exact decimals, dates, naive UTC timestamps, bytes, booleans."""
    base = col.base
    if base == "timestamp":
        return "timestamp_ntz"
    return {"decimal": "decimal", "date": "date", "binary": "bytes"}.get(base) or COMMON_KINDS[base]


def user_options(out: Path, info: dict[str, Any]) -> dict[str, Any]:
    """The JSON cannot type dates, timestamps, decimals or bytes: a user declares every column's type."""
    types = {f"{t['schema']}.{name}": {c["name"]: c["vendor_type"] for c in t["columns"]}
             for name, t in info["tables"].items()}
    return {"column_types": types}


def avro_truth_kind(flavour: str, col: Col) -> str:
    """Typed by the schema (timestamps as instants); dates through the declared `date` type."""
    if col.base == "timestamp":
        return "timestamp"
    return truth_kind(flavour, col)


def avro_vendor_type(t: TableDef, col: Col) -> str:
    return "date" if col.base == "date" else json.dumps(avro_column_type(col), separators=(",", ":"))


def avro_options(out: Path, info: dict[str, Any]) -> dict[str, Any]:
    """Avro types every column but dates (text): a user declares those."""
    types = {f"{t['schema']}.{name}": {c["name"]: "date" for c in t["columns"] if c["source_type"] == "date"}
             for name, t in info["tables"].items()}
    return {"column_types": {k: v for k, v in types.items() if v}}


FORMATS = (
    SimFormat("goldengate", "json", GoldenGateEncoder, truth_kind, declared_type, carries_truncate=True,
              user_options=user_options),
    SimFormat("goldengate", "json_row", GoldenGateEncoder, truth_kind, declared_type, carries_truncate=True,
              user_options=user_options),
    SimFormat("goldengate", "avro_op", GoldenGateEncoder, avro_truth_kind, avro_vendor_type, carries_truncate=True,
              user_options=avro_options),
)
"""The GoldenGate formats the simulator writes (truncates and the added column are carried)."""
