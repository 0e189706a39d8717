"""What `cdcnorm apply` reports and indexes: the summary it returns and `LAKE/current/_tables.json`."""

from __future__ import annotations

import datetime as dt
from typing import Any

import orjson
from pyspark.sql import SparkSession

from cdcnorm.lake.store import Lake
from cdcnorm.state.paths import CURRENT, INDEX, relative_path
from cdcnorm.state.plan import TablePlan
from cdcnorm.state.types import widens


def build_summary(lake: str, plans: list[TablePlan], stats: dict[str, dict]) -> dict[str, Any]:
    tables = [_entry(p) for p in plans]
    ignored: dict[str, int] = {}
    for st in stats.values():
        for o, n in (st.get("ignored_ops") or {}).items():
            ignored[o] = ignored.get(o, 0) + n
    return {
        "lake": lake,
        "applied_at": dt.datetime.now(dt.UTC).isoformat(),
        "tables": tables,
        "totals": {
            "tables": len(tables),
            "rows": sum(t["rows"] for t in tables),
            "orphan_updates_ignored": sum(t["orphan_updates_ignored"] for t in tables),
            "unkeyable_rows_ignored": sum(t["unkeyable_rows_ignored"] for t in tables),
            "ignored_ops": dict(sorted(ignored.items())),
        },
    }


def _entry(p: TablePlan) -> dict[str, Any]:
    st = p.stats
    ts = st.get("last_source_ts")
    return {
        **p.tid._asdict(),
        "path": relative_path(p.tid),
        "rows": p.rows,
        "columns": [{"name": c.name, "type": c.type, "from": c.source, **({"note": c.note} if c.note else {})}
                    for c in p.columns],
        "schema_version": p.schema_version,
        "schema_source": p.schema_source,
        "key_mode": p.key_mode,
        "key_columns": p.key_columns,
        "changes_applied": st.get("row_changes", 0),
        "truncates": st.get("truncates", 0),
        "truncated_at": p.truncated_at.hex() if p.truncated_at else None,
        "last_sort_key": st["last_sort_key"].hex() if st.get("last_sort_key") else None,
        "last_position": st.get("last_position"),
        "last_source_ts": ts.isoformat() if ts else None,
        "orphan_updates_ignored": st.get("orphan_updates_ignored", 0),
        "unkeyable_rows_ignored": st.get("unkeyable", 0) if p.key_mode == "derived" else 0,
        "keyless_updates_without_before": st.get("updates_without_before", 0) if p.key_mode == "keyless" else 0,
        "ignored_ops": st.get("ignored_ops", {}),
        "apply": p.applied,
    }


def write_index(lk: Lake, summary: dict[str, Any], replace_all: bool) -> None:
    """`LAKE/current/_tables.json`; a filtered run keeps the other tables' entries."""
    path = f"{lk.path}/{CURRENT}/{INDEX}"
    entries = {e["path"]: e for e in summary["tables"]}
    old = orjson.loads(lk.fs.read_text(path)).get("tables", []) if lk.fs.exists(path) else []
    note_type_changes(summary["tables"], {e["path"]: e for e in old})
    if not replace_all:
        entries = {**{e["path"]: e for e in old}, **entries}
    doc = {"index_format": 1, "applied_at": summary["applied_at"], "tables": [entries[k] for k in sorted(entries)]}
    lk.fs.write_text(path, orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode())


def note_type_changes(entries: list[dict[str, Any]], previous: dict[str, dict[str, Any]]) -> None:
    """`type_changes` of each entry: columns whose type differs from the previous apply's (a widening, such as
    int -> bigint, a wider decimal, date -> timestamp, anything -> string, or another `change`)."""
    for e in entries:
        before = {c["name"]: c["type"] for c in previous.get(e["path"], {}).get("columns", [])}
        e["type_changes"] = [{"column": c["name"], "from": before[c["name"]], "to": c["type"],
                              "kind": "widening" if widens(before[c["name"]], c["type"]) else "change"}
                             for c in e["columns"] if c["name"] in before and before[c["name"]] != c["type"]]


def read_index(spark: SparkSession, lake: str, lk: Lake | None = None) -> list[dict[str, Any]]:
    """Entries of `LAKE/current/_tables.json` (empty before the first apply). `lk`: the lake, when open already
    (opening one loads and checks the log of each of its tables)."""
    lk = lk or Lake(spark, lake)
    path = f"{lk.path}/{CURRENT}/{INDEX}"
    return orjson.loads(lk.fs.read_text(path))["tables"] if lk.fs.exists(path) else []
