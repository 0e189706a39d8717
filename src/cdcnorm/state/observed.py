"""A rebuild's table statistics in two parts: what the plan needs before the merge, and the rest observed by the
merge's own scan.

Why: :func:`cdcnorm.state.plan.table_stats` costs a full aggregate over every change (a second one over the
UPDATE rows for their images) before a rebuild reads the same changes again; at 1 M changes its head aggregate
is about 1.2 executor CPU s, most of it the `max_by` of the latest position, time and key columns, and each
of the two jobs costs its planning and code generation on top. A rebuild needs only a few figures before its
merge: which tables have changes, whether every applied row has `key_bytes` (the key mode), the last TRUNCATE,
the DELETE count and the key sample (:mod:`cdcnorm.state.ranges`). :func:`lean_stats` aggregates those alone;
the other figures are aggregates of the table's changes that the merge's scan computes on the way
(`DataFrame.observe`, :func:`observe`) and :func:`fill` writes into the plan before its commit. The figures are
those of :func:`cdcnorm.state.plan.table_stats` (tests/test_apply.py compares them). A table the lean aggregate
cannot plan (a row without `key_bytes`, a table without a schema version: its columns are inferred from the
images) makes :func:`lean_stats` return None and the rebuild takes the full statistics as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdcnorm.state.plan import APPLIED_OPS, IDENT, IGNORED_OPS, ROW_OPS, _finish, of_table, table_hash
from cdcnorm.state.ranges import key_sample_aggs, with_key_sample

if TYPE_CHECKING:
    from cdcnorm.state.plan import TablePlan

OBSERVED = "_observed"
"""Key of a lean statistics entry whose figures the merge observes (removed by :func:`fill`)."""


def lean_stats(changes: DataFrame, with_schema: set[str]) -> dict[str, dict[str, Any]] | None:
    """Per table, the figures a rebuild plans from (one aggregate that reads no image, no position, time or key
    columns list), or None when some table needs the full statistics (:func:`cdcnorm.state.plan.table_stats`)."""
    op, kb, sk = F.col("op"), F.col("key_bytes"), F.col("sort_key")
    row = op.isin(*ROW_OPS)
    rows = with_key_sample(changes, row & (op != "UPDATE"), kb).groupBy(*IDENT).agg(
        F.max(F.when(op == "TRUNCATE", sk)).alias("truncated_at"),
        F.count_if(op == "TRUNCATE").alias("truncates"),
        F.count_if(op == "DELETE").alias("deletes"),
        *[F.count_if(op == o).alias(f"ignored_{o}") for o in IGNORED_OPS],
        F.count_if(row).alias("_row_ops"),  # orphan UPDATEs included: the observed `row_changes` leaves them out
        F.count_if(row & kb.isNull()).alias("_no_key"),
        *key_sample_aggs()).withColumn("_tid", table_hash()).collect()
    out = {}
    for r in rows:
        d = r.asDict(recursive=True)
        if d["_no_key"] or (d["_tid"] not in with_schema and d["_row_ops"]):
            return None  # a derived or keyless key, or inferred columns: the images decide (full statistics)
        sample = {"n": d.pop("_ksn"), "q": d.pop("_ksq")}
        d.update({"row_changes": d.pop("_row_ops"), "unkeyed": d.pop("_no_key"), "unkeyable": 0, "inferred": "VOID",
                  "event_keys": None, "min_key": None, "max_key": None, "last_sort_key": None,
                  "orphan_updates_ignored": 0, "updates_without_before": 0, "last_position": None,
                  "last_source_ts": None, OBSERVED: True})
        _finish(d)
        d["key_sample"] = sample
        out[d["_tid"]] = d
    return out


def _aggs() -> list[Column]:
    """The figures :func:`lean_stats` leaves out, as aggregates of one table's changes (every op)."""
    op, kb, sk = F.col("op"), F.col("key_bytes"), F.col("sort_key")
    orphan = (op == "UPDATE") & F.col("after").isNull()
    applied = op.isin(*ROW_OPS) & ~orphan
    data = op.isin(*APPLIED_OPS)
    return [
        F.count_if(applied).alias("row_changes"),
        F.min(F.when(applied, kb)).alias("min_key"), F.max(F.when(applied, kb)).alias("max_key"),
        F.count_if(orphan).alias("orphan_updates_ignored"),
        F.count_if((op == "UPDATE") & F.col("before").isNull() & F.col("after").isNotNull()).alias("updates_without_before"),
        F.max_by("primary_keys", F.when(F.col("primary_keys").isNotNull(), sk)).alias("event_keys"),
        F.max(F.when(data, sk)).alias("last_sort_key"),
        F.max_by("position", F.when(data, sk)).alias("last_position"),
        F.unix_micros(F.max_by("source_ts", F.when(data, sk))).alias("last_source_us"),  # as `collect` converts it
    ]


def observe(changes: DataFrame, plan: TablePlan, extra: list[Column] | None = None) -> tuple[DataFrame, Observation | None]:
    """`changes` of the plan's table, observed for the figures :func:`fill` completes (when its statistics are
    lean) and `extra` ones, and the observation (None: nothing to observe). The merge's scan computes them: no
    job of its own."""
    if not plan.stats.get(OBSERVED):
        return changes, None
    seen = Observation()
    return changes.where(of_table(plan.tid)).observe(seen, *_aggs(), *(extra or [])), seen


def fill(plan: TablePlan, seen: Observation | None) -> None:
    """Complete a lean plan's statistics from the observation of its merge (after the merge's first action), and
    its event key columns from the latest change's `primary_keys` (as :func:`cdcnorm.state.plan.plan_tables`)."""
    if seen is None:
        return
    got = seen.get
    st = plan.stats
    for k in ("row_changes", "orphan_updates_ignored", "updates_without_before"):
        st[k] = int(got[k] or 0)
    for k in ("min_key", "max_key", "last_sort_key"):
        st[k] = bytes(got[k]) if got[k] is not None else None
    st["event_keys"] = list(got["event_keys"]) if got["event_keys"] is not None else None
    st["last_position"] = got["last_position"]
    st["last_source_ts"] = T.TimestampType().fromInternal(got["last_source_us"])
    del st[OBSERVED]
    if plan.key_mode == "event" and st["event_keys"]:
        plan.key_columns = st["event_keys"]
