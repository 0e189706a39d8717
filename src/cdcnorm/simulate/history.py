"""The deterministic source history: tables, their initial rows, then a stream of changes.

The history is a function of (tables, rows, changes, seed) only. Vendors and delivery quirks never feed back
into it, so the same seed delivered through two vendors is the same history. It is a generator: memory is
bounded by the live rows of the keyed tables (kept near `rows` per table), never by the number of changes.
"""

from __future__ import annotations

import bisect
import datetime as dt
import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property
from typing import Any

UTC = dt.UTC
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
START_US = int((dt.datetime(2024, 5, 1, 10, 0, 0, tzinfo=UTC) - EPOCH).total_seconds()) * 1_000_000
"""Source clock at the backfill; the first change follows one second later."""
DAY_US = 86_400_000_000

TYPES = ("int", "bigint", "decimal", "double", "boolean", "string", "date", "timestamp", "binary")

WORDS = (
    "Zoë", "Łukasz", "José", "Ærøskøbing", "北京", "東京タワー", "naïve café", "Straße", "Ñandú", "Gödel",
    "مرحبا", "שלום", "Привет", "😀 grin", "e\u0301 combining", "tab\there", 'quote "q"', "comma, inside",
    "line\nbreak", "back\\slash", "plain",
)


@dataclass(frozen=True)
class Col:
    """A source column. `type` is one of TYPES, decimals spelled `decimal(p,s)`."""

    name: str
    type: str
    nullable: bool = True
    added: bool = False
    """True for the column the midway DDL adds (absent before it)."""
    base: str = field(init=False, compare=False)
    precision_scale: tuple[int, int] = field(init=False, compare=False)

    def __post_init__(self) -> None:  # parsed once: these are read for every value of every change
        object.__setattr__(self, "base", self.type.split("(")[0])
        ps = (0, 0)
        if "(" in self.type:
            p, s = self.type[self.type.index("(") + 1 : -1].split(",")
            ps = (int(p), int(s))
        object.__setattr__(self, "precision_scale", ps)


@dataclass(frozen=True)
class TableDef:
    """A simulated source table and how each vendor's source engine is flavoured for it."""

    index: int
    name: str
    template: str
    columns: tuple[Col, ...]
    primary_key: tuple[str, ...]
    flavour: str
    """Datastream source flavour: `postgresql`, `mysql` or `oracle`."""
    ddl: bool = False
    truncate: bool = False

    @property
    def insert_only(self) -> bool:
        return not self.primary_key

    @cached_property
    def _v1_columns(self) -> tuple[Col, ...]:
        return tuple(c for c in self.columns if not c.added)

    def columns_at(self, version: int) -> tuple[Col, ...]:
        """Columns of schema version 1 (before the DDL) or 2 (after it)."""
        return self.columns if version >= 2 else self._v1_columns

    def col(self, name: str) -> Col:
        return next(c for c in self.columns if c.name == name)

    def key_of(self, row: dict[str, Any]) -> tuple:
        return tuple(row[k] for k in self.primary_key)


_TEMPLATES: dict[str, tuple[tuple[Col, ...], tuple[str, ...]]] = {
    "customers": (
        (
            Col("id", "bigint", False), Col("name", "string", False), Col("email", "string"),
            Col("balance", "decimal(12,2)", False), Col("score", "double"), Col("active", "boolean", False),
            Col("birth_date", "date"), Col("created_at", "timestamp", False), Col("avatar", "binary"),
        ),
        ("id",),
    ),
    "order_lines": (
        (
            Col("order_id", "bigint", False), Col("line_no", "int", False), Col("sku", "string", False),
            Col("qty", "int", False), Col("unit_price", "decimal(10,4)", False), Col("big_amount", "decimal(60,20)"),
            Col("discount", "double"), Col("gift", "boolean", False), Col("ship_date", "date"),
            Col("updated_at", "timestamp", False), Col("note", "string"),
        ),
        ("order_id", "line_no"),
    ),
    "events": (
        (
            Col("seq_no", "bigint", False), Col("event_ts", "timestamp", False), Col("kind", "string", False),
            Col("amount", "decimal(18,6)"), Col("detail", "string"),
        ),
        (),
    ),
}
_TEMPLATE_ORDER = ("customers", "order_lines", "events")
FLAVOURS = ("postgresql", "mysql", "oracle")
ADDED_COLUMN = Col("tier", "string", True, added=True)
_DATE0 = dt.date(1950, 1, 1).toordinal()


def build_tables(n: int) -> tuple[TableDef, ...]:
    """The N simulated tables: templates cycle customers, order_lines, events; flavours shift every cycle.

    Table 0 gets the midway ADD COLUMN; the first keyed table after it (table 1 when it exists) gets the
    truncate, so each special event touches one well-known table.
    """
    if n < 1:
        raise ValueError("tables must be >= 1")
    out = []
    for i in range(n):
        template = _TEMPLATE_ORDER[i % 3]
        cols, pk = _TEMPLATES[template]
        name = template if i < 3 else f"{template}_{i // 3 + 1}"
        flavour = FLAVOURS[(i + i // 3) % 3]
        if i == 0:
            cols = (*cols, ADDED_COLUMN)
        truncate = i == (1 if n >= 2 else 0)
        out.append(TableDef(i, name, template, cols, pk, flavour, ddl=i == 0, truncate=truncate))
    return tuple(out)


@dataclass(slots=True)
class Event:
    """One source event. Rows hold typed values (int, Decimal, float, bool, str, date, aware datetime, bytes).

    `kind` is SNAPSHOT (initial row), INSERT, UPDATE, DELETE, DDL or TRUNCATE. `seq` is the global commit
    order (0 for SNAPSHOT rows); a key-changing UPDATE is one event with `key_change` set.
    """

    kind: str
    table: int
    seq: int
    ts_us: int
    tx: int = 0
    tx_seq: int = 0
    tx_size: int = 0
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    changed: tuple[str, ...] | None = None
    key_change: bool = False
    version: int = 1
    ddl: str | None = None

    @property
    def tx_last(self) -> bool:
        return self.tx_seq == self.tx_size


class _Live:
    """Live rows of a keyed table with O(1) random pick and removal."""

    __slots__ = ("keys", "pos", "rows")

    def __init__(self) -> None:
        self.keys: list[tuple] = []
        self.pos: dict[tuple, int] = {}
        self.rows: dict[tuple, dict[str, Any]] = {}

    def __len__(self) -> int:
        return len(self.keys)

    def put(self, key: tuple, row: dict[str, Any]) -> None:
        if key not in self.rows:
            self.pos[key] = len(self.keys)
            self.keys.append(key)
        self.rows[key] = row

    def remove(self, key: tuple) -> dict[str, Any]:
        i = self.pos.pop(key)
        last = self.keys.pop()
        if i < len(self.keys):
            self.keys[i] = last
            self.pos[last] = i
        return self.rows.pop(key)

    def pick(self, rng: random.Random) -> tuple:
        return self.keys[int(rng.random() * len(self.keys))]


class _Values:
    """Random typed values of each source type (the only place values are invented)."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def value(self, col: Col, counter: int = 0) -> Any:
        r = self.rng
        if col.nullable and r.random() < 0.15:
            return None
        base = col.base
        if base == "int":
            return 1 + int(r.random() * 999) if col.name == "qty" else r.getrandbits(32) - 2**31
        if base == "bigint":
            return r.getrandbits(63) - 2**62
        if base == "decimal":
            return self.decimal(*col.precision_scale)
        if base == "double":
            x = round(r.random() * 2e6 - 1e6, int(r.random() * 7))
            return 0.0 if x == 0 else x
        if base == "boolean":
            return r.random() < 0.5
        if base == "string":
            if col.name == "email":
                return f"user{int(r.random() * 1e6)}@example.com"
            return f"{WORDS[int(r.random() * len(WORDS))]} {int(r.random() * 1e6)}"
        if base == "date":
            return dt.date.fromordinal(_DATE0 + int(r.random() * 30_000))
        if base == "timestamp":
            us = 1_577_836_800_000_000 + int(r.random() * 315_619_200_000_000)  # 2020 .. 2030
            return EPOCH + dt.timedelta(microseconds=us)
        if base == "binary":
            return r.randbytes(1 + int(r.random() * 16))
        raise ValueError(f"unknown type {col.type}")

    def decimal(self, p: int, s: int) -> Decimal:
        r = self.rng
        digits = 1 + int(r.random() * p)
        low = 10 ** (digits - 1)
        unscaled = low + (int(r.random() * 9 * low) if digits <= 15 else r.randrange(9 * low))
        if r.random() < 0.5:
            unscaled = -unscaled
        return Decimal(f"{unscaled}E-{s}")  # from a string: exact, never rounded by the context


class History:
    """Iterate the source history: SNAPSHOT rows for every table, then the changes in commit order."""

    def __init__(self, tables: int = 3, rows: int = 100, changes: int = 500, seed: int = 1, gap_days: float = 0,
                 days: float = 0):
        if days < 0 or gap_days < 0:
            raise ValueError("days and gap_days must be >= 0")
        self.defs = build_tables(tables)
        self.rows, self.changes, self.seed = rows, changes, seed
        self.ddl_at = max(1, changes // 2)
        self.truncate_at = max(1, (2 * changes) // 3)
        # gap_days: the source pauses this long after 40 % of the changes (no random draw: the rows and their
        # order stay those of the same seed without a gap); the feeder's "two days late" file needs it
        self.gap_us, self.gap_at = int(gap_days * DAY_US), (2 * changes) // 5
        # days: the changes spread over this many days of source time, each change `days / changes` later than
        # the one before on top of its own step (no random draw either: only the timestamps move)
        self.span_us = int(days * DAY_US)
        self.gap_end_us: int | None = None
        """The source time the pause ended at (set while iterating; None without a pause)."""

    def __iter__(self) -> Iterator[Event]:
        rng = random.Random(f"cdcnorm-simulate:{self.seed}")
        vals = _Values(rng)
        live = [_Live() for _ in self.defs]
        counters = [0] * len(self.defs)
        versions = [1] * len(self.defs)
        for t in self.defs:
            for _ in range(self.rows):
                row = self._new_row(t, vals, counters, versions[t.index])
                if t.primary_key:
                    live[t.index].put(t.key_of(row), row)
                yield Event("SNAPSHOT", t.index, 0, START_US, after=row)
        yield from self._changes(rng, vals, live, counters, versions)

    def _changes(self, rng, vals, live, counters, versions) -> Iterator[Event]:
        cumulative = list(itertools.accumulate(1 if t.insert_only else 4 for t in self.defs))
        total = cumulative[-1]
        ts = START_US + 1_000_000
        seq = tx = done = 0
        ddl_done = truncate_done = False
        gap_left, gap_total = self.gap_us, 0
        while done < self.changes:
            ts += 1_000 + int(rng.random() * 1_499_000)
            if self.span_us:
                ts = max(ts, START_US + 1_000_000 + self.span_us * done // self.changes + gap_total)
            if gap_left and done >= self.gap_at:
                ts, gap_total, gap_left = ts + gap_left, gap_left, 0
                self.gap_end_us = ts
            if not ddl_done and done >= self.ddl_at:
                ddl_done = True
                t = next(t for t in self.defs if t.ddl)
                versions[t.index] = 2
                rows = live[t.index].rows
                for key in rows:  # new dicts: rows already handed out in earlier events stay as they were
                    rows[key] = {**rows[key], ADDED_COLUMN.name: None}
                seq, tx = seq + 1, tx + 1
                yield Event("DDL", t.index, seq, ts, tx, 1, 1, version=2,
                            ddl=f"ALTER TABLE {t.name} ADD COLUMN {ADDED_COLUMN.name} VARCHAR(32)")
                continue
            if not truncate_done and done >= self.truncate_at:
                truncate_done = True
                t = next(t for t in self.defs if t.truncate)
                for key in list(live[t.index].keys):
                    live[t.index].remove(key)
                seq, tx = seq + 1, tx + 1
                yield Event("TRUNCATE", t.index, seq, ts, tx, 1, 1, version=versions[t.index],
                            ddl=f"TRUNCATE TABLE {t.name}")
                continue
            size = 1 if rng.random() < 0.6 else 2 + int(rng.random() * 3)
            size = min(size, self.changes - done)
            tx += 1
            for i in range(1, size + 1):
                seq += 1
                ts += int(rng.random() * 2_000)
                t = self.defs[bisect.bisect_right(cumulative, rng.random() * total)]
                ev = self._one(t, rng, vals, live[t.index], counters, versions[t.index])
                ev.seq, ev.ts_us, ev.tx, ev.tx_seq, ev.tx_size = seq, ts, tx, i, size
                yield ev
            done += size

    def _new_row(self, t: TableDef, vals: _Values, counters: list[int], version: int) -> dict[str, Any]:
        k = counters[t.index]
        counters[t.index] += 1
        row = {c.name: vals.value(c) for c in t.columns_at(version)}
        row.update(self._key_values(t, k))
        return row

    @staticmethod
    def _key_values(t: TableDef, k: int) -> dict[str, Any]:
        """Keys come from a per-table counter and are never reused, so no two rows ever share a key."""
        if t.template == "customers":
            return {"id": k + 1}
        if t.template == "order_lines":
            return {"order_id": 1000 + k // 3, "line_no": k % 3 + 1}
        return {"seq_no": k + 1}

    def _one(self, t: TableDef, rng, vals, lv: _Live, counters, version) -> Event:
        if t.insert_only:
            return Event("INSERT", t.index, 0, 0, after=self._new_row(t, vals, counters, version), version=version)
        n, target = len(lv), self.rows
        p_ins, p_del = (0.5, 0.05) if n < target * 0.5 else (0.05, 0.4) if n > target * 1.5 else (0.25, 0.2)
        r = rng.random()
        if n == 0 or r < p_ins:
            row = self._new_row(t, vals, counters, version)
            lv.put(t.key_of(row), row)
            return Event("INSERT", t.index, 0, 0, after=row, version=version)
        key = lv.pick(rng)
        if r < p_ins + p_del:
            return Event("DELETE", t.index, 0, 0, before=lv.remove(key), version=version)
        return self._update(t, rng, vals, lv, key, counters, version)

    def _update(self, t: TableDef, rng, vals, lv: _Live, key: tuple, counters, version) -> Event:
        before = lv.rows[key]
        after = dict(before)
        non_key = [c for c in t.columns_at(version) if c.name not in t.primary_key]
        r = rng.random()
        key_change = r < 0.08
        if key_change:
            k = counters[t.index]
            counters[t.index] += 1
            after.update(self._key_values(t, k))
            touched = [non_key[int(rng.random() * len(non_key))]]
        elif r < 0.68:
            touched = rng.sample(non_key, 1 + int(rng.random() * 2))
        else:
            touched = non_key
        for c in touched:
            after[c.name] = self._different(c, before[c.name], vals)
        changed = tuple(c.name for c in t.columns_at(version) if after[c.name] != before[c.name])
        if key_change:
            lv.remove(key)
        lv.put(t.key_of(after), after)
        return Event("UPDATE", t.index, 0, 0, before=before, after=after, changed=changed,
                     key_change=key_change, version=version)

    @staticmethod
    def _different(col: Col, old: Any, vals: _Values) -> Any:
        if col.base == "boolean":
            return not old if old is not None else True
        for _ in range(8):
            new = vals.value(col)
            if new != old:
                return new
        return None if old is not None and col.nullable else vals.value(Col(col.name, col.type, False))
