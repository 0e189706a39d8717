"""Canal encoder: canal-json flat messages, as Canal's Kafka producer writes them with `flatMessage=true`.

Written from docs/reference (canal.md), never from the decoder. Every table is presented as a MySQL table of
database `shop` (DATETIME(6) for timestamps, TINYINT(1) for booleans, VARBINARY for bytes). Canal's default
topic has one partition: the messages are JSON lines under `OUT/canal/json/sim_canal/partition=0/`.

What a real Canal does, and so this encoder:

- every value is a string (or null); `mysqlType` / `sqlType` name the columns; `es` is the binlog time in whole
  seconds, `ts` the time the message was built; `gtid` names the transaction; `id` is the batch id, shared by
  the messages of one batch (here: one transaction or one DDL);
- a multi-row statement is one message with N rows: consecutive changes of one table, one kind and one
  transaction are one message (up to MULTI_ROW rows, no key twice);
- an UPDATE's `old` holds the changed columns' previous values, aligned with `data` by index;
- DDL (`ALTER`, `TRUNCATE`) are `isDdl` messages with the statement in `sql`;
- the `mysqlType` case flips between batches (`INT` vs `int(11)`), as in Canal's table-meta output;
- no snapshot: the initial rows come as `INIT` messages (a Huawei DRS / Flink-style full sync before Canal).

Quirks: `duplicates` resends a message later as Canal resends a batch after a restart (a new batch `id`, a
rebuilt `ts`), while a `late_redelivery` copy is the message as it was (a consumer re-reading the topic from
an old offset); the opt-in `canal_null_old` leaves NULL -> value changes out of `old` (alibaba/canal#4574).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

from cdcnorm.simulate.delivery import LATE, Lane, LinesFile, Rotator, lane_rng
from cdcnorm.simulate.encoders import COMMON_KINDS, SimFormat
from cdcnorm.simulate.history import Col, Event, TableDef
from cdcnorm.simulate.jsonx import dumps, plain

DATABASE, TOPIC, STREAM = "shop", "sim_canal", "canal"
GTID_UUID = "5b4c2f6e-0d1a-11ef-9a3c-0242ac120002"
MULTI_ROW = 8
"""At most this many rows in one message (a multi-row statement)."""
INIT_ROWS = 50
"""Rows per INIT message of the full sync."""
RESEND_BASE = 500_000
"""Batch ids of resent batches (Canal renumbers a batch it sends again)."""
NULL_OLD = "canal_null_old"

_TYPES = {"int": ("int(11)", "INT", 4), "bigint": ("bigint(20)", "BIGINT", -5), "double": ("double", "DOUBLE", 8),
          "boolean": ("tinyint(1)", "TINYINT(1)", -6), "string": ("varchar(255)", "VARCHAR(255)", 12),
          "date": ("date", "DATE", 91), "timestamp": ("datetime(6)", "DATETIME(6)", 93),
          "binary": ("varbinary(255)", "VARBINARY(255)", -3)}


def mysql_type(col: Col, upper: bool = False) -> str:
    """The column's `mysqlType` text (lower case as Canal's table meta normalises it, or as written in DDL)."""
    if col.base == "decimal":
        p, s = col.precision_scale
        return f"{'DECIMAL' if upper else 'decimal'}({p},{s})"
    return _TYPES[col.base][1 if upper else 0]


def sql_type(col: Col) -> int:
    return 3 if col.base == "decimal" else _TYPES[col.base][2]


def java_double(v: float) -> str:
    """Java's `Double.toString`: plain between 1e-3 and 1e7 (at least one decimal), else `d.dddE±n`."""
    if v == 0:
        return "-0.0" if str(v).startswith("-") else "0.0"
    d = Decimal(repr(v))
    if 1e-3 <= abs(v) < 1e7:
        text = format(d, "f")
        return text if "." in text else text + ".0"
    sign, digits, exp = d.as_tuple()
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    e = exp + len(digits) - 1
    return f"{'-' if sign else ''}{ds[0]}.{ds[1:] or '0'}E{e}"


def value_text(col: Col, v: Any) -> str | None:
    """A source value as the string Canal sends."""
    if v is None:
        return None
    b = col.base
    if b == "decimal":
        return plain(v)
    if b == "double":
        return java_double(v)
    if b == "boolean":
        return "1" if v else "0"
    if b == "date":
        return v.isoformat()
    if b == "timestamp":
        return v.astimezone(dt.UTC).replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")
    if b == "binary":
        return v.decode("latin-1")
    return str(v) if b in ("int", "bigint") else v


def _es(ts_us: int) -> int:
    return ts_us // 1_000_000 * 1000


class CanalEncoder:
    """Writes `OUT/canal/json/sim_canal/partition=0/part-<n>.jsonl`, one flat message per line."""

    def __init__(self, out: Path, defs: tuple[TableDef, ...], seed: int, quirks: frozenset[str], rotate: int,
                 fmt: str):
        self.vf, self.defs, self.rotate = f"canal-{fmt}", defs, rotate
        self.root = out / "canal" / fmt / TOPIC / "partition=0"
        self.null_old = NULL_OLD in quirks
        self.version = {t.index: 1 for t in defs}
        self.batch = 100
        self.open: dict[str, Any] | None = None
        """the message being filled: consecutive rows of one table, kind and transaction"""
        self.open_keys: set[tuple] = set()
        self.tx: int | None = None
        self.resent = 0
        self.counts: dict[str, int] = {"records": 0, "files": 0, "resent": 0, "multi_row": 0, "null_old": 0}
        self.lane = Lane(self._write, lane_rng(seed, self.vf, 0), quirks - {"out_of_order"})  # in order per partition
        self.rotator = Rotator(rotate, lambda n, first: self._open_file(n))

    def identity(self, t: TableDef) -> dict[str, Any]:
        return {"vendor": "canal", "stream": STREAM, "source_db": "mysql", "database": DATABASE, "schema": None,
                "table": t.name}

    # -- messages ------------------------------------------------------------------------------------------
    def _types(self, t: TableDef) -> tuple[dict[str, str], dict[str, int]]:
        upper = self.batch % 2 == 1  # Canal's table meta spells the types either way, message by message
        cols = t.columns_at(self.version[t.index])
        return {c.name: mysql_type(c, upper) for c in cols}, {c.name: sql_type(c) for c in cols}

    def _row(self, t: TableDef, row: dict[str, Any]) -> dict[str, str | None]:
        return {c.name: value_text(c, row.get(c.name)) for c in t.columns_at(self.version[t.index])}

    def _message(self, t: TableDef, kind: str, ts_us: int, tx: int | None) -> dict[str, Any]:
        mt, st = self._types(t)
        return {"data": [], "database": DATABASE, "es": _es(ts_us), "gtid": f"{GTID_UUID}:{1000 + tx}" if tx else "",
                "id": self.batch, "isDdl": False, "mysqlType": mt, "old": [] if kind == "UPDATE" else None,
                "pkNames": list(t.primary_key), "sql": "", "sqlType": st, "table": t.name,
                "ts": _es(ts_us) + 150 + ts_us % 700, "type": kind}

    def backfill(self, t: TableDef, rows: list[dict[str, Any]], ts_us: int, at_seq: int) -> None:
        """The full sync before Canal starts: the table's rows as INIT messages."""
        for i in range(0, len(rows), INIT_ROWS):
            msg = self._message(t, "INIT", ts_us, None)
            msg["data"] = [self._row(t, r) for r in rows[i:i + INIT_ROWS]]
            self.lane.put(msg)
        self.batch += 1

    def change(self, ev: Event) -> None:
        t = self.defs[ev.table]
        if ev.tx != self.tx:
            self._flush()
            self.tx = ev.tx
            self.batch += 1
        if ev.kind in ("DDL", "TRUNCATE"):
            self._flush()
            if ev.kind == "DDL":
                self.version[t.index] = ev.version
            self.lane.put({"data": None, "database": DATABASE, "es": _es(ev.ts_us),
                           "gtid": f"{GTID_UUID}:{1000 + ev.tx}" if ev.tx else "", "id": self.batch, "isDdl": True,
                           "mysqlType": None, "old": None, "pkNames": None, "sql": ev.ddl, "sqlType": None,
                           "table": t.name, "ts": _es(ev.ts_us) + 90 + ev.ts_us % 500,
                           "type": "ALTER" if ev.kind == "DDL" else "TRUNCATE"})
            return
        row = ev.before if ev.kind == "DELETE" else ev.after
        key = (t.key_of(row) if t.primary_key else None)
        same = (self.open is not None and self.open["table"] == t.name and self.open["type"] == ev.kind
                and len(self.open["data"]) < MULTI_ROW and (key is None or key not in self.open_keys))
        if not same:
            self._flush()
            self.open = self._message(t, ev.kind, ev.ts_us, ev.tx)
            self.open_keys = set()
        msg = self.open
        msg["data"].append(self._row(t, row))
        if key is not None:
            self.open_keys.add(key)
        if ev.kind == "UPDATE":
            msg["old"].append(self._old(t, ev))
        if ev.tx_last:
            self._flush()

    def _old(self, t: TableDef, ev: Event) -> dict[str, str | None]:
        """The previous values of the changed columns (with `canal_null_old`, a NULL -> value change is left
        out, as Canal 1.1.6 does)."""
        before, after = ev.before or {}, ev.after or {}
        old = {}
        for c in t.columns_at(self.version[t.index]):
            if before.get(c.name) == after.get(c.name):
                continue
            if self.null_old and before.get(c.name) is None:
                self.counts["null_old"] += 1
                continue
            old[c.name] = value_text(c, before.get(c.name))
        return old

    def _flush(self) -> None:
        if self.open is not None:
            if len(self.open["data"]) > 1:
                self.counts["multi_row"] += 1
            self.lane.put(self.open)
            self.open = None

    # -- delivery --------------------------------------------------------------------------------------------
    def _write(self, msg: dict[str, Any], redelivered: bool) -> None:
        if redelivered and redelivered != LATE:  # Canal resends the batch: renumbered, its ts rebuilt
            self.resent += 1
            self.counts["resent"] += 1
            msg = {**msg, "id": RESEND_BASE + self.resent, "ts": msg["ts"] + 30_000 + self.resent}
        self.rotator.write(dumps(msg))
        self.counts["records"] += 1

    def _open_file(self, n: int) -> LinesFile:
        self.counts["files"] += 1
        return LinesFile(self.root / f"part-{n:05d}.jsonl")

    def close(self) -> None:
        self._flush()
        self.lane.close()
        self.rotator.close()


# -- what the format carries (the truth projection; docs/simulate.md states it) ---------------------------------
def truth_kind(flavour: str, col: Col) -> str:
    """Every table is MySQL: exact decimals, dates, DATETIME(6) wall clocks (no zone), TINYINT(1) booleans as
    integers, VARBINARY bytes."""
    return {"decimal": "decimal", "date": "date", "binary": "bytes", "timestamp": "timestamp_ntz",
            "boolean": "int_bool"}.get(col.base) or COMMON_KINDS[col.base]


FORMATS = (
    SimFormat("canal", "json", CanalEncoder, truth_kind, lambda t, c: mysql_type(c), carries_truncate=True),
)
"""The Canal format the simulator writes (truncates and the added column are carried)."""
