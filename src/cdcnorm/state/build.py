"""`cdcnorm.apply`: the current state of every source table, rebuilt from the canonical lake.

Full recomputation in one shuffle (:mod:`cdcnorm.state.merge`) after a metadata-only plan per table
(:mod:`cdcnorm.state.plan`); the state is staged once, partitioned by table, then each table is typed from its
latest schema version and written to `LAKE/current/<vendor>/<stream>/<database>/<schema>/<table>/`
(:mod:`cdcnorm.state.write`, path rule in :mod:`cdcnorm.state.paths`). `LAKE/current/_tables.json` indexes what
was written (:mod:`cdcnorm.state.index`). Semantics: docs/apply.md.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cdcnorm.canonical.inferred import widen_over_tables
from cdcnorm.errors import UsageError
from cdcnorm.lake import Lake
from cdcnorm.session import use_portable_parquet
from cdcnorm.state.hints import apply_hints, parse_hints
from cdcnorm.state.index import build_summary, write_index
from cdcnorm.state.merge import live_state
from cdcnorm.state.paths import TableId
from cdcnorm.state.plan import latest_schemas, name_filter, plan_tables, table_hash, table_stats
from cdcnorm.state.write import state_views, write_tables


class ApplyResult(dict):
    """`{TableId: DataFrame}` of current-state tables, plus `summary` (what was written and counted)."""

    def __init__(self, frames: dict[TableId, DataFrame], summary: dict[str, Any], cached: DataFrame | None = None):
        super().__init__(frames)
        self.summary = summary
        self._cached = cached

    def unpersist(self) -> None:
        """Free the persisted state behind `write=False` views (they recompute if used afterwards)."""
        if self._cached is not None:
            self._cached.unpersist()


def without_superseded(changes: DataFrame) -> DataFrame:
    """Drop orphan halves a later paired row replaces (`supersedes`): one change is never applied twice."""
    replaced = changes.where(F.col("supersedes").isNotNull()).select(F.col("supersedes").alias("event_id"))
    return changes.join(F.broadcast(replaced.distinct()), "event_id", "left_anti")


def apply(spark: SparkSession, lake: str, tables: list[str] | None = None, write: bool = True,
          column_types: dict[str, str] | None = None) -> ApplyResult:
    """Current state of every source table in `lake` (or those named in `tables`) as typed DataFrames.

    With `write`, each table is written (overwrite) under `LAKE/current/` and the returned DataFrames read
    the written files; without it, the state is computed once, persisted, and the DataFrames are views of it.
    `column_types` (`{"db.table.column": "TYPE"}`, see cdcnorm.state.hints) overrides declared and inferred types.
    """
    use_portable_parquet(spark)
    lk = Lake(spark, lake)
    hints = parse_hints([f"{k}={v}" for k, v in (column_types or {}).items()])
    with lk.writer("apply") if write else nullcontext():  # one writer per lake (cdcnorm.lake_lock)
        return _apply(spark, lk, lake, tables, write, hints)


def _apply(spark: SparkSession, lk: Lake, lake: str, tables: list[str] | None, write: bool,
           hints: dict[str, str]) -> ApplyResult:
    selected = name_filter(tables)
    # An event id is applied once, even if a redelivery older than the dedup window reached the lake twice.
    changes = without_superseded(lk.changes().dropDuplicates(["event_id"])).withColumn("_tid", table_hash())
    schemas = widen_over_tables(lk.schemas())  # inferred types hold the values of every version (canonical.inferred)
    if selected is not None:
        changes, schemas = changes.where(selected), schemas.where(selected)
    latest = latest_schemas(schemas)
    stats = table_stats(changes, set(latest))
    plans = plan_tables(stats, latest)
    apply_hints(plans, hints, require_all=not tables)
    if tables and not plans:
        raise UsageError(f"No table in {lake} matches {', '.join(tables)} (give table, schema.table or db.schema.table).")
    frames: dict[TableId, DataFrame] = {}
    cached = None
    if plans:
        state = live_state(changes, plans)
        if write:
            frames = write_tables(lk, state, plans)
        else:
            cached = state.persist(StorageLevel.MEMORY_AND_DISK)
            frames = state_views(cached, plans)
    summary = build_summary(lake, plans, stats)
    if write:
        write_index(lk, summary, replace_all=not tables)
    return ApplyResult(frames, summary, cached)
