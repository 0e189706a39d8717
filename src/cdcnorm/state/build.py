"""`cdcnorm.apply`: the current state of every source table as Delta tables, maintained from new changes.

Each target remembers (its bookmark, :mod:`cdcnorm.state.target`) the `changes` version it was applied at; an
apply reads only the data files committed since (:mod:`cdcnorm.state.batch`), plans each table from the batch's
aggregate plus the bookmark (:mod:`cdcnorm.state.bookmark`), and rewrites only the files whose key ranges the
batch touches (:mod:`cdcnorm.state.keyed`). A table that has no target yet, changes columns or key, is keyless,
or whose log range cannot be read exactly is rebuilt from all of its changes through the same merge; `full=True`
rebuilds everything. Semantics: docs/apply.md.
"""

from __future__ import annotations

from contextlib import nullcontext

from pyspark import StorageLevel
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from cdcnorm.errors import UsageError
from cdcnorm.lake import Lake
from cdcnorm.session import use_portable_parquet
from cdcnorm.state import run
from cdcnorm.state.index import build_summary, write_index
from cdcnorm.state.plan import latest_schemas, name_filter, plan_tables, table_hash, table_stats
from cdcnorm.state.run import ApplyResult


def apply(spark: SparkSession, lake: str, tables: list[str] | None = None, write: bool = True,
          full: bool = False, history: bool = False, track_columns: list[str] | None = None) -> ApplyResult:
    """Current state of every source table in `lake` (or those named in `tables`) as typed DataFrames.

    With `write`, each table's Delta table under `LAKE/current/` is brought up to date with the changes
    committed since its last apply (`full`: rebuilt from all changes), and the returned DataFrames read it.
    `history` also maintains the SCD type 2 tables under `LAKE/history/` (`track_columns`: only changes of these
    columns open a new version). Without `write`, the state is computed from all changes, persisted, and
    nothing is written.
    """
    use_portable_parquet(spark)
    lk = Lake(spark, lake)
    with lk.writer("apply") if write else nullcontext():  # one writer per lake (cdcnorm.lake_lock)
        if not write:
            return _compute(spark, lk, lake, tables)
        return run.apply_lake(lk, tables, full=full, history=history, track_columns=track_columns)


def _compute(spark: SparkSession, lk: Lake, lake: str, tables: list[str] | None) -> ApplyResult:
    """write=False: every selected table from all of its changes, persisted, nothing written."""
    selected = name_filter(tables)
    changes = run.prepared(lk.changes())
    schemas = lk.schemas()
    if selected is not None:
        changes, schemas = changes.where(selected), schemas.where(selected)
    latest = latest_schemas(schemas)
    stats = table_stats(changes, set(latest))
    plans = plan_tables(stats, latest)
    if tables and not plans:
        raise UsageError(f"No table in {lake} matches {', '.join(tables)} (give table, schema.table or db.schema.table).")
    frames, cached = {}, []
    for plan in plans:
        df = run.table_state(changes.where(F.col("_tid") == plan.hid), plan).persist(StorageLevel.MEMORY_AND_DISK)
        plan.rows = df.count()
        cached.append(df)
        frames[plan.tid] = df
    return ApplyResult(frames, build_summary(lake, plans, stats), cached)


__all__ = ["ApplyResult", "apply", "table_hash", "write_index"]
