"""A full rebuild's lean statistics without their Spark job: presumed from the run reports and the targets, and
checked against what the merge observes before anything is committed.

Why: the lean statistics (:func:`cdcnorm.state.observed.lean_stats`) are one aggregate over every change before
the merge reads them all again; at 1 M changes about 0.5 executor CPU s, plus the planning, code generation
and JIT of a job of its own, and a second or so of wall time while the driver waits. A rebuild needs from them
only which tables have changes, their op counts (the DELETE count decides whether the merge is kept for a
count), that no TRUNCATE and no row without `key_bytes` is there, and key range bounds. Every committed run's
report already counts its rows per table and op (`rows_by_table_op`), and a table applied before has its own
key ranges in its target's file statistics. So when the reports account for every row of the `changes` table at
the cut (their total is the log's row count), every table with row changes has a schema version and a target
applied with event keys, and no report counts a TRUNCATE, :func:`presumed_stats` gives the same figures as the
lean aggregate without reading a change, and :func:`target_bounds` the partition bounds.

A presumption is never trusted: the merge's scan observes each table's count per op, its row count and its
rows without `key_bytes` (:func:`checks`, with the figures :mod:`cdcnorm.state.observed` completes), and
:func:`confirmed` compares them with the presumed ones after the write and before the commit. When they differ
(a report that does not match its rows), the rebuild deletes what it wrote and plans again from the lean
aggregate (`cdcnorm.state.run`). Bounds only decide which file holds which key range, never a value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
from pyspark.sql import Column, Observation
from pyspark.sql import functions as F

from cdcnorm.canonical.schema import OPS
from cdcnorm.lake.store import reported_files
from cdcnorm.state.observed import OBSERVED
from cdcnorm.state.plan import IDENT, IGNORED_OPS, ROW_OPS, _finish
from cdcnorm.state.target import FILE_ROWS

if TYPE_CHECKING:
    from cdcnorm.lake.store import Lake
    from cdcnorm.state.paths import TableId

PRESUMED = "_presumed"
"""Key of a presumed statistics entry: `{op: rows}` as the reports count them (removed by :func:`confirmed`)."""


def presumed_stats(lk: Lake, version: int, runs: list[dict[str, Any]], latest: dict[str, dict[str, Any]],
                   bookmarks: dict[TableId, dict[str, Any]]) -> dict[str, dict[str, Any]] | None:
    """Per table, the figures :func:`cdcnorm.state.observed.lean_stats` would give (without `key_sample`), from
    the committed `runs`' reports, or None when they cannot stand for the changes at `version` of `changes`."""
    counts: dict[tuple, dict[str, int]] = {}
    for r in runs:
        for row in _report(r).get("rows_by_table_op") or []:
            ops = counts.setdefault(tuple(row.get(c) for c in IDENT), {})
            ops[row["op"]] = ops.get(row["op"], 0) + int(row["rows"])
    if sum(n for ops in counts.values() for n in ops.values()) != _log_rows(lk, version, {r["run_id"] for r in runs}):
        return None  # rows no report counts (or counted rows gone): only the changes themselves can tell
    hids = {tuple(sv[c] for c in IDENT): h for h, sv in latest.items()}
    marks = {tuple(t): bm for t, bm in bookmarks.items()}
    out = {}
    for ident, ops in counts.items():
        rows = sum(ops.get(o, 0) for o in ROW_OPS)
        if ops.get("TRUNCATE") or any(o not in OPS for o in ops):
            return None  # a truncate's position is not in a report
        hid = hids.get(ident)
        bm = marks.get(ident)
        if rows and (hid is None or bm is None or bm["hid"] != hid or bm["plan"]["key_mode"] != "event"
                     or rows - int(bm["stats"].get("row_changes") or 0) > rows / max(1, -(-rows // FILE_ROWS))):
            return None  # inferred columns, no target, other keys, or more new changes than a file range holds
        if hid is None:
            hid = (bm or {}).get("hid")
            if hid is None:
                return None  # a table that has only ignored ops and no id on the driver: the aggregate names it
        d = {**dict(zip(IDENT, ident, strict=True)), "_tid": hid, "truncated_at": None, "truncates": 0,
             "deletes": ops.get("DELETE", 0), **{f"ignored_{o}": ops.get(o, 0) for o in IGNORED_OPS},
             "row_changes": rows, "unkeyed": 0, "unkeyable": 0, "inferred": "VOID", "event_keys": None,
             "min_key": None, "max_key": None, "last_sort_key": None, "orphan_updates_ignored": 0,
             "updates_without_before": 0, "last_position": None, "last_source_ts": None, OBSERVED: True,
             PRESUMED: dict(ops)}
        _finish(d)
        d["key_sample"] = None
        out[hid] = d
    return out


def _report(run: dict[str, Any]) -> dict[str, Any]:
    return orjson.loads(run["report"]) if run.get("report") else {}


def _log_rows(lk: Lake, version: int, committed: set[str]) -> int:
    """Rows of the `changes` files read at the cut, from the log's statistics (-1: a file without a count)."""
    if version < 0:
        return 0
    table = lk.table("changes")
    acts = table.add_actions(version)
    keep = reported_files(committed)
    n = [k for p, k in zip(acts.column("path").to_pylist(), acts.column("num_records").to_pylist(), strict=True)
         if keep(p)]
    return -1 if any(k is None for k in n) else sum(n)


def checks() -> list[Column]:
    """Aggregates of one table's changes that :func:`confirmed` compares with the presumed figures."""
    op = F.col("op")
    return [F.count(F.lit(1)).alias("_all"), F.count_if(op.isin(*ROW_OPS) & F.col("key_bytes").isNull()).alias("_no_key"),
            *[F.count_if(op == o).alias(f"_op_{o}") for o in OPS]]


def confirmed(stats: dict[str, Any], seen: Observation) -> bool:
    """Whether the merge's observation (:func:`checks`) holds the presumed figures of a table (then dropped)."""
    ops = stats.pop(PRESUMED)
    got = seen.get
    return (int(got["_no_key"] or 0) == 0 and int(got["_all"] or 0) == sum(ops.values())
            and all(int(got[f"_op_{o}"] or 0) == ops.get(o, 0) for o in OPS))


def target_bounds(ranges: list[dict[str, Any]], parts: int) -> list[bytes] | None:
    """`parts - 1` ascending lower bounds (key bytes) for a rebuild from the target's own files (their `_cdc_key`
    minimum and row count, :func:`cdcnorm.state.target.file_ranges`): each bound is the lowest key of the file
    where the running row count passes the next `1 / parts` of the rows. None when they cannot place them."""
    if parts <= 1 or not ranges or any(f["low"] is None for f in ranges):
        return None
    total = sum(f["rows"] for f in ranges)
    bounds, before, j = [], 0, 1
    for f in ranges:
        while j < parts and before >= j * total / parts:
            bounds.append(f["low"])
            j += 1
        before += f["rows"]
    try:
        out = sorted({bytes.fromhex(b) for b in bounds})
    except ValueError:
        return None  # not the hex of event keys
    return out if out and 2 * len(out) >= parts - 1 else None
