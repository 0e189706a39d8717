"""What a target's commit remembers (its bookmark), and how a batch's plan follows from it.

Why: an incremental apply sees only the new changes, yet each table's counts, truncate position, key mode
and inferred columns describe all of its changes. The bookmark carries them (JSON in the commit's metadata), a
batch's aggregate adds to them, and when the batch would change the table's columns, types or key the table is
rebuilt instead (:func:`needs_rebuild`).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from cdcnorm.state.plan import TablePlan
from cdcnorm.state.types import OutputColumn

_BYTES = ("truncated_at", "last_sort_key")
_SUMS = ("truncates", "row_changes", "deletes", "orphan_updates_ignored", "unkeyed", "unkeyable", "updates_without_before")


def stats_json(st: dict[str, Any]) -> dict[str, Any]:
    out = dict(st)
    for k in _BYTES:
        out[k] = st[k].hex() if st.get(k) is not None else None
    ts = st.get("last_source_ts")
    out["last_source_ts"] = ts.isoformat() if isinstance(ts, dt.datetime) else ts
    for k in ("inferred", "min_key", "max_key", "key_sample"):  # the batch's own (key span: target.covering)
        out.pop(k, None)
    return out


def stats_from_json(d: dict[str, Any]) -> dict[str, Any]:
    out = dict(d)
    for k in _BYTES:
        out[k] = bytes.fromhex(d[k]) if d.get(k) else None
    if d.get("last_source_ts"):
        out["last_source_ts"] = dt.datetime.fromisoformat(d["last_source_ts"])
    return out


def combine(prev: dict[str, Any] | None, new: dict[str, Any] | None) -> dict[str, Any]:
    """Counts of all changes so far: sums, the later truncate / last change, the latest event key columns."""
    if not prev:
        return dict(new or {})
    if not new:
        return {**prev, "inferred": None}
    out = dict(new)
    for k in _SUMS:
        out[k] = (prev.get(k) or 0) + (new.get(k) or 0)
    ops = dict(prev.get("ignored_ops") or {})
    for o, n in (new.get("ignored_ops") or {}).items():
        ops[o] = ops.get(o, 0) + n
    out["ignored_ops"] = ops
    out["truncated_at"] = max((x for x in (prev.get("truncated_at"), new.get("truncated_at")) if x), default=None)
    if prev.get("last_sort_key") and (not new.get("last_sort_key") or prev["last_sort_key"] > new["last_sort_key"]):
        for k in ("last_sort_key", "last_position", "last_source_ts"):
            out[k] = prev.get(k)
    out["event_keys"] = new.get("event_keys") or prev.get("event_keys")
    return out


def plan_json(p: TablePlan) -> dict[str, Any]:
    return {"columns": [[c.name, c.type, c.canonical_type] for c in p.columns], "schema_version": p.schema_version,
            "schema_source": p.schema_source, "key_mode": p.key_mode, "key_columns": p.key_columns}


def merge_inferred(plan: TablePlan, prev: dict[str, Any]) -> bool:
    """For a table without a schema version: the earlier columns plus the batch's new ones (keys first, then by
    name, as a full inference orders them). False when a batch column's type differs (full inference would
    then widen it: the table is rebuilt)."""
    before = {n: OutputColumn(n, t, c) for n, t, c in prev["columns"]}
    merged = dict(before)
    for c in plan.columns:
        old = before.get(c.name)
        if old is None:
            merged[c.name] = c
        elif (c.canonical_type or "").upper() == "VOID":
            continue
        elif (old.canonical_type or "").upper() == "VOID" or old.type != c.type:
            return False
    keys = [merged[k] for k in plan.key_columns if k in merged]
    plan.columns = keys + sorted((c for n, c in merged.items() if n not in plan.key_columns), key=lambda c: c.name)
    return True


def needs_rebuild(plan: TablePlan, prev: dict[str, Any]) -> str | None:
    """Why the table cannot take the batch incrementally (None when it can)."""
    old = prev["plan"]
    if plan.key_mode == "keyless":
        return "keyless tables are recomputed from their changes"
    if plan.schema_source == "inferred" and old["schema_source"] == "inferred" and not merge_inferred(plan, old):
        return "an inferred column changed type"
    if (plan.key_mode, plan.key_columns) != (old["key_mode"], old["key_columns"]):
        return "the key changed"
    if [[c.name, c.type] for c in plan.columns] != [[n, t] for n, t, _ in old["columns"]]:
        return "the columns changed"
    return None
