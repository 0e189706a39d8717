"""Maxwell encoder: the JSON messages Maxwell's daemon writes to a Kafka topic, every table as a MySQL table.

Written from docs/reference (maxwell.md), never from the decoder. The producer runs its default configuration
(`output_nulls` set to false, `output_ddl=true`, `producer_partition_by=database`: one database, one
partition, binlog order): row messages carry `database`, `table`, `type`, `ts` (binlog seconds), `xid` and
`commit: true` on a transaction's last row; no position, no primary key. Values as Maxwell writes MySQL's: a
DECIMAL as a JSON number with its scale, BOOLEAN (TINYINT(1)) as 0 / 1, DATETIME(6) as `YYYY-MM-DD
hh:mm:ss.ffffff`, BLOB as Base64; a NULL column is left out (`output_nulls=false`), so an update to NULL shows
the column in `old` only. The initial state is a bootstrap (`bootstrap-start`, `bootstrap-insert` rows,
`bootstrap-complete`, `ts` the wall-clock time of the bootstrap); the midway ADD COLUMN a `table-alter` event
(`ts` in milliseconds, `def` / `old`); a TRUNCATE writes nothing (Maxwell emits no event for it). The MySQL
server restarts after 100 transactions: its `xid` numbers start again.

Quirks: `duplicates` (a message sent again later, and the first bootstrap interrupted halfway then re-run from
scratch), `connector_restart` (Maxwell restarts every 80 rows and re-sends its last 3 transactions),
`late_redelivery` (the lane's late copies). Order inside the partition is never shuffled (Kafka keeps it).
"""

from __future__ import annotations

import base64
import datetime as dt
from collections import deque
from pathlib import Path
from typing import Any

from cdcnorm.simulate.delivery import Lane, LinesFile, Rotator, lane_rng
from cdcnorm.simulate.encoders import COMMON_KINDS, SimFormat
from cdcnorm.simulate.history import Col, Event, TableDef
from cdcnorm.simulate.jsonx import Raw, dumps, plain

DATABASE, TOPIC, STREAM = "shop", "maxwell", "maxwell"
XID_START, SERVER_RESTART_TX = 5000, 100
"""InnoDB transaction ids of the simulated server; it restarts after 100 transactions and they start again."""
RESTART_EVERY, RESTART_TXS = 80, 3
"""connector_restart: after about every 80 rows Maxwell restarts and re-sends its last 3 transactions."""
BOOTSTRAP_DELAY_US = 30_000_000
"""The bootstrap runs 30 s of wall-clock time after the snapshot point (its `ts`); a re-run 60 s later."""
MYSQL_TYPES = {"int": "int", "bigint": "bigint", "double": "double", "boolean": "tinyint", "string": "varchar",
               "date": "date", "timestamp": "datetime", "binary": "blob"}


def mysql_type(col: Col) -> str:
    """The column's MySQL type as Maxwell's DDL `def` names it (`decimal(12,2)` keeps its parameters)."""
    return col.type if col.base == "decimal" else MYSQL_TYPES[col.base]


def _value(col: Col, v: Any) -> Any:
    """A column value as Maxwell writes it (None: the caller leaves the column out)."""
    base = col.base
    if base == "decimal":
        return Raw(plain(v))  # the history keeps each decimal at its column scale
    if base == "boolean":
        return 1 if v else 0
    if base == "date":
        return v.isoformat()
    if base == "timestamp":  # DATETIME(6): the UTC wall clock, six fractional digits, no zone
        return v.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    if base == "binary":
        return base64.b64encode(v).decode("ascii")
    return v


def _def(t: TableDef, version: int) -> dict[str, Any]:
    """Maxwell's table definition (`def` / `old` of a DDL event)."""
    cols = []
    for c in t.columns_at(version):
        d: dict[str, Any] = {"type": mysql_type(c).split("(")[0], "name": c.name}
        if c.base == "decimal":
            d["precision"], d["scale"] = c.precision_scale
        elif c.base in ("int", "bigint"):
            d["signed"] = True
        elif c.base == "timestamp":
            d["column-length"] = 6
        elif c.base == "string":
            d["charset"] = "utf8mb4"
        cols.append(d)
    return {"database": DATABASE, "charset": "utf8mb4", "table": t.name, "columns": cols,
            "primary-key": list(t.primary_key)}


class MaxwellEncoder:
    """Writes `OUT/maxwell/json/maxwell/partition=0/maxwell+0+<first offset>.jsonl` (a Kafka sink's files)."""

    def __init__(self, out: Path, defs: tuple[TableDef, ...], seed: int, quirks: frozenset[str], rotate: int,
                 fmt: str):
        self.fmt, self.vf = fmt, f"maxwell-{fmt}"
        self.root = out / "maxwell" / fmt / TOPIC / "partition=0"
        self.defs, self.quirks = defs, quirks
        self.counts: dict[str, int] = {"records": 0, "files": 0, "restarts": 0, "bootstrap_reruns": 0}
        self.version = {t.index: 1 for t in defs}
        self.offset = 0
        self.rot = Rotator(rotate, self._open)
        lane_quirks = quirks & {"duplicates", "late_redelivery"}  # one partition: never reordered
        self.lane = Lane(lambda item, redelivered: self._write(item), lane_rng(seed, self.vf, TOPIC, 0), lane_quirks)
        self.snapshot: list[tuple[TableDef, list[dict[str, Any]], int]] = []
        self.tx_rows: list[bytes] = []
        self.recent: deque[list[bytes]] = deque(maxlen=RESTART_TXS)
        self.since_restart = 0

    def identity(self, t: TableDef) -> dict[str, Any]:
        return {"vendor": "maxwell", "stream": STREAM, "source_db": "mysql", "database": DATABASE, "schema": None,
                "table": t.name}

    # -- files ---------------------------------------------------------------------------------------------
    def _open(self, n: int, first: Any) -> LinesFile:
        self.counts["files"] += 1
        return LinesFile(self.root / f"{TOPIC}+0+{self.offset:010d}.jsonl")

    def _write(self, line: bytes) -> None:
        self.rot.write(line)
        self.offset += 1
        self.counts["records"] += 1

    # -- bootstrap -------------------------------------------------------------------------------------------
    def backfill(self, t: TableDef, rows: list[dict[str, Any]], ts_us: int, at_seq: int) -> None:
        self.snapshot.append((t, rows, ts_us))
        if t.index == len(self.defs) - 1:
            self._bootstrap()

    def _bootstrap(self) -> None:
        """One bootstrap per table; `duplicates`: the first is interrupted halfway and re-run from scratch."""
        taken, self.snapshot = self.snapshot, []
        for t, rows, ts_us in taken:
            wall = (ts_us + BOOTSTRAP_DELAY_US) // 1_000_000
            if "duplicates" in self.quirks and t.index == 0 and rows:
                self._marker(t, "bootstrap-start", wall)
                for row in rows[: len(rows) // 2]:
                    self._row(t, "bootstrap-insert", wall, row)
                wall += 60  # the crash; the bootstrap starts again
                self.counts["bootstrap_reruns"] += 1
            self._marker(t, "bootstrap-start", wall)
            for row in rows:
                self._row(t, "bootstrap-insert", wall, row)
            self._marker(t, "bootstrap-complete", wall)

    def _marker(self, t: TableDef, kind: str, ts: int) -> None:
        self.lane.put(dumps({"database": DATABASE, "table": t.name, "type": kind, "ts": ts, "data": {}}))

    def _row(self, t: TableDef, kind: str, ts: int, data: dict[str, Any], old: dict[str, Any] | None = None,
             xid: int | None = None, commit: bool = False) -> None:
        msg: dict[str, Any] = {"database": DATABASE, "table": t.name, "type": kind, "ts": ts}
        if xid is not None:
            msg["xid"] = xid
            if commit:
                msg["commit"] = True
        msg["data"] = self._image(t, data)
        if old:
            msg["old"] = self._image(t, old)
        line = dumps(msg)
        self.lane.put(line)
        if xid is not None:
            self.tx_rows.append(line)

    def _image(self, t: TableDef, row: dict[str, Any]) -> dict[str, Any]:
        cols = t.columns_at(self.version[t.index])
        return {c.name: _value(c, row[c.name]) for c in cols if row.get(c.name) is not None}

    # -- changes ---------------------------------------------------------------------------------------------
    def change(self, ev: Event) -> None:
        t = self.defs[ev.table]
        if self.snapshot:
            self._bootstrap()
        ts = ev.ts_us // 1_000_000
        if ev.kind == "DDL":
            old, self.version[t.index] = self.version[t.index], ev.version
            self.lane.put(dumps({"type": "table-alter", "database": DATABASE, "table": t.name, "old": _def(t, old),
                                 "def": _def(t, ev.version), "ts": ev.ts_us // 1000, "sql": ev.ddl}))
            return
        if ev.kind == "TRUNCATE":
            return  # Maxwell emits no event for a TRUNCATE
        xid = self._xid(ev)
        last = ev.tx_last
        if ev.kind == "INSERT":
            self._row(t, "insert", ts, ev.after or {}, xid=xid, commit=last)
        elif ev.kind == "DELETE":
            self._row(t, "delete", ts, ev.before or {}, xid=xid, commit=last)
        else:
            before, after = ev.before or {}, ev.after or {}
            old = {c.name: before.get(c.name) for c in t.columns_at(self.version[t.index])
                   if before.get(c.name) != after.get(c.name)}
            self._row(t, "update", ts, after, old=old, xid=xid, commit=last)
        if last:
            self._commit()

    @staticmethod
    def _xid(ev: Event) -> int:
        """`xid` of the event's transaction: the server restarts after SERVER_RESTART_TX transactions and its
        InnoDB transaction ids start from XID_START again (so an xid alone names two transactions)."""
        return XID_START + (ev.tx if ev.tx < SERVER_RESTART_TX else ev.tx - SERVER_RESTART_TX)

    def _commit(self) -> None:
        self.recent.append(self.tx_rows)
        self.since_restart += len(self.tx_rows)
        self.tx_rows = []
        if "connector_restart" in self.quirks and self.since_restart >= RESTART_EVERY:
            self.since_restart = 0
            self.counts["restarts"] += 1
            for rows in list(self.recent):
                for line in rows:
                    self.lane.put(line)
            self.recent.clear()

    def close(self) -> None:
        if self.snapshot:
            self._bootstrap()
        self.lane.close()
        self.rot.close()


# -- what the format carries (the truth projection; docs/simulate.md states it rule by rule) ------------------
def truth_kind(flavour: str, col: Col) -> str:
    """Every table is MySQL: exact decimals, BOOLEAN as the integer 0 / 1, DATETIME(6) without a zone, dates,
    bytes (Base64 typed back through the declared column types)."""
    if col.base == "timestamp":
        return "timestamp_ntz"
    if col.base == "boolean":
        return "int_bool"
    return {"decimal": "decimal", "date": "date", "binary": "bytes"}.get(col.base) or COMMON_KINDS[col.base]


def vendor_type(t: TableDef, col: Col) -> str:
    return mysql_type(col) + ("(1)" if col.base == "boolean" else "")


def user_options(out: Path, info: dict[str, Any]) -> dict[str, Any]:
    """Maxwell's messages carry neither types nor (by default) keys: a user declares both per `db.table`."""
    keys, types = {}, {}
    for name, t in info["tables"].items():
        coll = f"{t['database']}.{name}"
        if t["primary_key"]:
            keys[coll] = list(t["primary_key"])
        types[coll] = {c["name"]: c["vendor_type"] for c in t["columns"]}
    return {"keys": keys, "column_types": types}


FORMATS = (
    SimFormat("maxwell", "json", MaxwellEncoder, truth_kind, vendor_type, carries_truncate=False,
              user_options=user_options, time_unit_us=1_000_000),
)
"""The Maxwell format the simulator writes (a truncate is not carried; the added column is; source times are
whole seconds)."""
