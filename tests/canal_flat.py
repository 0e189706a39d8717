"""A plain-`json` reader of the simulator's Canal files (reference canal.md), shared by the encoder's tests and
the simulator's replay table: nothing of the encoder's or the adapter's internals."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any


def messages(out: Path) -> list[dict]:
    files = sorted((out / "canal" / "json").rglob("*.jsonl"))
    return [json.loads(line) for f in files for line in f.read_text(encoding="utf-8").split("\n") if line]


def value(mysql_type: str, v: str | None) -> Any:
    """A Canal string by its mysqlType, by hand."""
    t = mysql_type.lower()
    if v is None:
        return None
    if t.startswith(("int", "bigint", "tinyint")):
        return int(v)
    if t.startswith("decimal"):
        return Decimal(v)
    if t == "double":
        return float(v)
    if t == "date":
        return dt.date.fromisoformat(v)
    if t.startswith("datetime"):
        return dt.datetime.fromisoformat(v)
    if t.startswith("varbinary"):
        return v.encode("latin-1")
    return v


def replay(msgs: list[dict]) -> tuple[dict[str, dict], int]:
    """Final state per table (keyed tables by key, keyless as a list); also how many resent messages were seen."""
    state: dict[str, Any] = {}
    seen: set[str] = set()
    resent = 0
    for m in msgs:
        identity = json.dumps([m["es"], m["gtid"], m["type"], m["table"], m["data"], m["old"], m["sql"]])
        if identity in seen:
            resent += 1
            continue
        seen.add(identity)
        table = m["table"]
        if m["isDdl"]:
            if m["type"] == "TRUNCATE":
                state[table] = [] if isinstance(state.get(table), list) else {}
            continue
        pks = m["pkNames"]
        rows = [{c: value(m["mysqlType"][c], v) for c, v in r.items()} for r in m["data"]]
        if not pks:
            state.setdefault(table, []).extend(rows)
            continue
        tab = state.setdefault(table, {})
        for i, row in enumerate(rows):
            key = tuple(row[k] for k in pks)
            if m["type"] == "DELETE":  # (backfill_overlap: the INIT rows may already be past it)
                tab.pop(key, None)
            elif m["type"] == "UPDATE":
                old = {c: value(m["mysqlType"][c], v) for c, v in m["old"][i].items()}
                tab.pop(tuple({**row, **old}[k] for k in pks), None)
                tab[key] = row
            else:
                tab[key] = row
    return state, resent


def final_rows(out: Path) -> dict[str, list[dict]]:
    """The replayed final state per table, as lists of rows."""
    state = replay(messages(out))[0]
    return {t: list(rows.values()) if isinstance(rows, dict) else rows for t, rows in state.items()}
