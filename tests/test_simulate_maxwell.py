"""The simulator's Maxwell encoder, read back with plain `json` (no cdcnorm adapter).

The reader knows Maxwell's message shape and the producer's configuration the encoder documents (default
output, `output_nulls=false`: a column absent from `data` is NULL), nothing of the encoder's internals:
replaying the messages must give the history's final state (a TRUNCATE is not carried), and single messages
must carry the history's values, times, transactions and quirks.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from cdcnorm.simulate.encoders.maxwell import FORMATS
from cdcnorm.simulate.history import Col, History, TableDef

UTC = dt.UTC
SIZE = {"tables": 3, "rows": 20, "changes": 400, "seed": 7}
ENC = FORMATS[0].encoder


def run(out: Path, history: History, quirks: frozenset[str], rotate: int = 60) -> Any:
    """Feed a history to the encoder the way `simulate()` does: the initial rows, then the changes."""
    enc = ENC(out, history.defs, SIZE["seed"], quirks, rotate, "json")
    initial: list[list[dict]] = [[] for _ in history.defs]
    changes = []
    for ev in history:
        (initial[ev.table].append(ev.after) if ev.kind == "SNAPSHOT" else changes.append(ev))
    for t in history.defs:
        enc.backfill(t, initial[t.index], 1_714_557_600_000_000, 0)
    for ev in changes:
        enc.change(ev)
    enc.close()
    return enc


def messages(out: Path) -> list[dict]:
    files = sorted((out / "maxwell" / "json").rglob("*.jsonl"))
    return [json.loads(ln, parse_float=Decimal) for f in files for ln in f.read_text().splitlines()]


def value(col: Col, v: Any) -> Any:
    """A Maxwell value as the MySQL column's type (BOOLEAN is TINYINT(1): 0 / 1)."""
    if v is None:
        return None
    return {"timestamp": lambda: dt.datetime.strptime(v, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC),
            "date": lambda: dt.date.fromisoformat(v), "binary": lambda: base64.b64decode(v),
            "boolean": lambda: bool(v), "double": lambda: float(v)}.get(col.base, lambda: v)()


@pytest.fixture(scope="module")
def history() -> History:
    return History(**SIZE)


@pytest.fixture(scope="module")
def quirky(tmp_path_factory, history) -> tuple[list[dict], dict]:
    out = tmp_path_factory.mktemp("maxwell_quirks")
    enc = run(out, history, frozenset({"duplicates", "connector_restart", "out_of_order"}))
    return messages(out), enc.counts


@pytest.fixture(scope="module")
def plain(tmp_path_factory, history) -> list[dict]:
    out = tmp_path_factory.mktemp("maxwell_plain")
    run(out, history, frozenset())
    return messages(out)


def _key(t: TableDef, row: dict) -> tuple:
    return t.key_of(row) if t.primary_key else (row["seq_no"],)


def final_state(history: History) -> dict[str, dict[tuple, dict]]:
    """The source's final rows, the truncated ones kept (Maxwell emits nothing for a TRUNCATE)."""
    state: dict[str, dict[tuple, dict]] = defaultdict(dict)
    for ev in history:
        t = history.defs[ev.table]
        if ev.kind == "DDL":
            for r in state[t.name].values():
                r.setdefault("tier", None)
        elif ev.kind != "TRUNCATE":
            if ev.before is not None:
                state[t.name].pop(_key(t, ev.before), None)
            if ev.after is not None:
                state[t.name][_key(t, ev.after)] = dict(ev.after)
    return state


def replay(history: History, msgs: list[dict]) -> dict[str, dict[tuple, dict]]:
    """Apply the row messages in order; a byte-identical redelivery is skipped."""
    defs = {t.name: t for t in history.defs}
    cols: dict[str, list[Col]] = {t.name: list(t.columns_at(1)) for t in history.defs}
    state: dict[str, dict[tuple, dict]] = defaultdict(dict)
    seen: set[str] = set()
    for m in msgs:
        text = json.dumps(m, sort_keys=True, default=str)
        if m["type"] not in ("bootstrap-insert", "insert", "update", "delete", "table-alter") or text in seen:
            continue
        seen.add(text)
        t = defs[m["table"]]
        if m["type"] == "table-alter":
            cols[t.name] = [t.col(c["name"]) for c in m["def"]["columns"]]
            for r in state[t.name].values():
                r.setdefault("tier", None)
            continue
        row = {c.name: value(c, m["data"].get(c.name)) for c in cols[t.name]}
        if m["type"] == "delete":
            state[t.name].pop(_key(t, row), None)
            continue
        if m["type"] == "update":
            old = {**row, **{k: value(t.col(k), v) for k, v in m.get("old", {}).items()}}
            state[t.name].pop(_key(t, old), None)
        state[t.name][_key(t, row)] = row
    return state


def _as_source(history: History, state: dict) -> dict:
    """Each table's rows as comparable text (column order ignored)."""
    return {t.name: sorted(repr(sorted(r.items())) for r in state[t.name].values()) for t in history.defs}


@pytest.mark.parametrize("which", ["plain", "quirky"])
def test_replaying_the_messages_gives_the_final_state(which, plain, quirky, history):
    msgs = plain if which == "plain" else quirky[0]
    assert _as_source(history, replay(history, msgs)) == _as_source(history, final_state(history))


def test_messages_carry_the_history(plain, history):
    rows = [m for m in plain if m["type"] in ("insert", "update", "delete")]
    changes = [ev for ev in history if ev.kind in ("INSERT", "UPDATE", "DELETE")]
    assert len(rows) == len(changes)
    for m, ev in zip(rows, changes, strict=True):
        assert m["type"] == ev.kind.lower() and m["ts"] == ev.ts_us // 1_000_000  # seconds
        assert m.get("commit", False) is ev.tx_last and "xoffset" not in m and "position" not in m
        assert (m["database"], m["table"]) == ("shop", history.defs[ev.table].name)
    # a transaction is one xid; the server restart makes xids start again at later seconds
    by_xid: dict[int, set[int]] = defaultdict(set)
    for m in rows:
        by_xid[m["xid"]].add(m["ts"])
    assert any(max(s) - min(s) > 60 for s in by_xid.values())


def test_nulls_are_left_out_and_an_update_to_null_shows_in_old_only(plain):
    assert not any(v is None for m in plain for part in ("data", "old") for v in m.get(part, {}).values())
    to_null = [m for m in plain if m["type"] == "update" and set(m.get("old", {})) - set(m["data"])]
    assert to_null, "the history sets some column to NULL"


def test_values_are_mysql_shaped(plain):
    first = next(m for m in plain if m["type"] == "bootstrap-insert" and m["table"] == "customers")
    assert first["data"]["active"] in (0, 1)
    assert isinstance(first["data"]["balance"], Decimal) and first["data"]["balance"].as_tuple().exponent == -2
    dt.datetime.strptime(first["data"]["created_at"], "%Y-%m-%d %H:%M:%S.%f")
    ddl = [m for m in plain if m["type"] == "table-alter"]
    assert len(ddl) == 1 and ddl[0]["ts"] > 10**12  # milliseconds
    assert [c["name"] for c in ddl[0]["def"]["columns"]][-1] == "tier"
    assert [c["name"] for c in ddl[0]["old"]["columns"]][-1] != "tier"


def test_bootstrap_markers_and_the_rerun(plain, quirky, history):
    kinds = Counter(m["type"] for m in plain)
    assert kinds["bootstrap-start"] == kinds["bootstrap-complete"] == len(history.defs)
    assert kinds["bootstrap-insert"] == SIZE["rows"] * len(history.defs)
    q = Counter(m["type"] for m in quirky[0])
    assert q["bootstrap-start"] == len(history.defs) + 1 and quirky[1]["bootstrap_reruns"] == 1
    assert q["bootstrap-insert"] >= SIZE["rows"] * len(history.defs) + SIZE["rows"] // 2
    assert all("xid" not in m for m in plain if m["type"].startswith("bootstrap"))


def test_quirks_redeliver_messages_in_order(quirky, plain):
    msgs, counts = quirky
    assert counts["restarts"] >= 1 and len(msgs) > len(plain)
    texts = Counter(json.dumps(m, sort_keys=True, default=str) for m in msgs if m["type"] in ("insert", "update"))
    assert max(texts.values()) >= 2
