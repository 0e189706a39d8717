"""AWS DMS Kinesis target encoder: JSON messages (`MessageFormat=json`: multi-line, tab-indented) as a
Kinesis Data Firehose delivery writes them to files.

Written from docs/reference (dms.md §1, §4-§8), never from the decoder. The simulated task: full load and
CDC, `IncludeTransactionDetails=true` (`commit-timestamp`, `stream-position`, `transaction-id`,
`transaction-record-id`, `prev-transaction-id`; the commit time at the source's millisecond precision),
`IncludeTableAlterOperations=true` (an `add-column` control record at the DDL), `BeforeImageSettings`
enabled with `ColumnFilter=pk-only` (`"before-image": {}` on an update that keeps its key, the old key on one
that changes it), `IncludeNullAndEmpty=true`. A `create-table`
control record opens each table (its `table-def` with DMS types and the primary key) and DMS's own
`awsdms_apply_exceptions` table has one too. Values: numbers as JSON numbers (decimals exact), dates and
times as ISO text (UTC, `Z`), binary as `0x` hex. Deletes of a PostgreSQL-flavoured table carry the key only,
the other columns null (default replica identity). One shard per table (`partition-key-type` `schema-table`);
`OUT/dms/kinesis/<table>/part-NNNNN.json`. The delivery quirks `duplicates` / `out_of_order` apply per shard.
A truncate is not delivered (DMS has no operation for it); `dms_no_before_image` drops the before image, so a
key change leaves the old key's row (reported by verify, not projected away).
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import orjson

from cdcnorm.simulate.delivery import Lane, LinesFile, Rotator, lane_rng
from cdcnorm.simulate.encoders import COMMON_KINDS
from cdcnorm.simulate.history import EPOCH, Col, Event, TableDef
from cdcnorm.simulate.jsonx import Raw, plain

SCHEMA = "shop"
NO_BEFORE_IMAGE = "dms_no_before_image"
_INDENT = re.compile(rb"^((?:  )+)", re.M)


def iso(ts_us: int) -> str:
    return (EPOCH + dt.timedelta(microseconds=ts_us)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def dms_type(col: Col) -> dict[str, Any]:
    """A column of a `create-table` record's `table-def`."""
    base = col.base
    if base == "decimal":
        p, s = col.precision_scale
        return {"type": "NUMERIC", "precision": p, "scale": s, "nullable": col.nullable}
    t = {"int": "INT32", "bigint": "INT64", "double": "REAL8", "boolean": "BOOLEAN", "string": "STRING",
         "date": "DATE", "timestamp": "TIMESTAMP", "binary": "BLOB"}[base]
    return {"type": t, "nullable": col.nullable}


def json_value(col: Col, v: Any) -> Any:
    if v is None:
        return None
    base = col.base
    if base == "decimal":
        return Raw(plain(v))
    if base == "date":
        return v.isoformat()
    if base == "timestamp":
        return v.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if base == "binary":
        return "0x" + v.hex().upper()
    return v


def pretty(obj: dict[str, Any]) -> bytes:
    """DMS's `json` message format: one object over several lines, tab-indented."""
    text = orjson.dumps(obj, option=orjson.OPT_INDENT_2)
    return _INDENT.sub(lambda m: b"\t" * (len(m.group(1)) // 2), text)


class DmsKinesisEncoder:
    """One Firehose-style file sequence per table shard."""

    def __init__(self, out: Path, defs: tuple[TableDef, ...], seed: int, quirks: frozenset[str], rotate: int,
                 fmt: str):
        self.fmt, self.vf = fmt, f"dms-{fmt}"
        self.root = out / "dms" / fmt
        self.defs, self.seed, self.quirks, self.rotate = defs, seed, quirks, rotate
        self.before_image = NO_BEFORE_IMAGE not in quirks
        self.version = {t.index: 1 for t in defs}
        self.lanes: dict[int, Lane] = {}
        self.rotators: dict[int, Rotator] = {}
        self.prev: tuple[int, int] | None = None
        self.counts: dict[str, int] = {"records": 0, "files": 0}
        self._internal_sent = False

    def identity(self, t: TableDef) -> dict[str, Any]:
        return {"vendor": "dms", "stream": "dms", "source_db": None, "database": None, "schema": SCHEMA,
                "table": t.name}

    def _meta(self, t: TableDef | None, op: str, ts_us: int, record: str = "data", pk: str = "schema-table",
              table: str | None = None, schema: str = SCHEMA) -> dict[str, Any]:
        return {"timestamp": iso(ts_us), "record-type": record, "operation": op, "partition-key-type": pk,
                "schema-name": schema, "table-name": table or t.name}

    # -- history -> messages -------------------------------------------------------------------------------
    def backfill(self, t: TableDef, rows: list[dict[str, Any]], ts_us: int, at_seq: int) -> None:
        if not self._internal_sent:  # DMS's own table, at task start: filtered by readers
            self._internal_sent = True
            msg = {"data": None, "metadata": self._meta(None, "create-table", ts_us - 2000, "control", "task-id",
                                                        "awsdms_apply_exceptions", ""), "control": {}}
            self._lane(t).put(pretty(msg), barrier=True)
        cols = t.columns_at(1)
        tdef = {"columns": {c.name: dms_type(c) for c in cols}}
        if t.primary_key:
            tdef["primary-key"] = list(t.primary_key)
        self._lane(t).put(pretty({"data": None, "metadata": self._meta(t, "create-table", ts_us - 1000, "control",
                                                                       "task-id"),
                                  "control": {"table-def": tdef}}), barrier=True)
        for i, row in enumerate(rows):
            msg = {"data": {c.name: json_value(c, row.get(c.name)) for c in cols},
                   "metadata": self._meta(t, "load", ts_us + i, pk="primary-key")}
            self._lane(t).put(pretty(msg))

    def change(self, ev: Event) -> None:
        t = self.defs[ev.table]
        if ev.kind == "TRUNCATE":
            return
        if ev.kind == "DDL":
            self.version[t.index] = ev.version
            msg = {"data": None, "metadata": self._meta(t, "add-column", ev.ts_us, "control", "task-id"),
                   "control": {}}
            self._lane(t).put(pretty(msg), barrier=True)
            return
        cols = t.columns_at(self.version[t.index])
        op = {"INSERT": "insert", "UPDATE": "update", "DELETE": "delete"}[ev.kind]
        if ev.kind == "DELETE":
            row = ev.before
            if t.flavour == "postgresql" and t.primary_key:  # default replica identity: the key only
                row = {c.name: (row.get(c.name) if c.name in t.primary_key else None) for c in cols}
        else:
            row = ev.after
        meta = self._meta(t, op, ev.ts_us + 3000)
        meta.update({"transaction-id": ev.tx or ev.seq, "commit-timestamp": iso(ev.ts_us - ev.ts_us % 1000),
                     "stream-position": _position(ev), "transaction-record-id": ev.tx_seq or 1})
        if self.prev is not None:
            meta.update({"prev-transaction-id": self.prev[0], "prev-transaction-record-id": self.prev[1]})
        self.prev = (ev.tx or ev.seq, ev.tx_seq or 1)
        msg: dict[str, Any] = {"data": {c.name: json_value(c, row.get(c.name)) for c in cols}, "metadata": meta}
        if ev.kind == "UPDATE" and self.before_image and t.primary_key:
            moved = ev.key_change or any(ev.before.get(k) != ev.after.get(k) for k in t.primary_key)
            msg["before-image"] = {k: json_value(t.col(k), ev.before.get(k)) for k in t.primary_key} if moved else {}
        self._lane(t).put(pretty(msg))

    # -- delivery ------------------------------------------------------------------------------------------
    def _lane(self, t: TableDef) -> Lane:
        lane = self.lanes.get(t.index)
        if lane is None:
            rng = lane_rng(self.seed, self.vf, t.name)
            lane = Lane(lambda item, redelivered, i=t.index: self._write(i, item), rng, self.quirks,
                        dup_delay=self.rotate * 2)
            self.lanes[t.index] = lane
        return lane

    def _write(self, index: int, msg: bytes) -> None:
        rot = self.rotators.get(index)
        if rot is None:
            t = self.defs[index]
            rot = Rotator(self.rotate, lambda n, first, t=t: self._open(t, n))
            self.rotators[index] = rot
        rot.write(msg)
        self.counts["records"] += 1

    def _open(self, t: TableDef, n: int) -> LinesFile:
        self.counts["files"] += 1
        return LinesFile(self.root / t.name / f"part-{n:05d}.json")

    def close(self) -> None:
        for lane in self.lanes.values():
            lane.close()
        for rot in self.rotators.values():
            rot.close()


def _position(ev: Event) -> str:
    """A PostgreSQL-form stream position (`XXXXXXXX/XXXXXXXX.<record>.XXXXXXXX/XXXXXXXX`)."""
    lsn = 0x2_0000_0000 + ev.seq * 64
    text = f"{lsn >> 32:08X}/{lsn & 0xFFFFFFFF:08X}"
    return f"{text}.{ev.tx_seq or 1}.{text}"


def kinesis_truth_kind(flavour: str, col: Col) -> str:
    """Messages read with their `create-table` types: timestamps (DMS `TIMESTAMP`) as UTC wall clock."""
    base = col.base
    if base == "timestamp":
        return "timestamp_ntz"
    return {"decimal": "decimal", "date": "date", "binary": "bytes"}.get(base) or COMMON_KINDS[base]

