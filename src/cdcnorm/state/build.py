"""`cdcnorm.apply`: the current state of every source table as Delta tables, maintained from new changes.

Each target remembers (its bookmark, :mod:`cdcnorm.state.target`) the `changes` version it was applied at; an
apply reads only the data files committed since (:mod:`cdcnorm.state.batch`), plans each table from the batch's
aggregate plus the bookmark (:mod:`cdcnorm.state.bookmark`), and rewrites only the files whose key ranges the
batch touches (:mod:`cdcnorm.state.keyed`). A table that has no target yet, changes columns or key, is keyless,
or whose log range cannot be read exactly is rebuilt from all of its changes through the same merge; `full=True`
rebuilds everything. Semantics: docs/apply.md.
"""

from __future__ import annotations

import datetime as dt
from contextlib import nullcontext

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from cdcnorm.canonical.inferred import widen_over_tables
from cdcnorm.errors import UsageError
from cdcnorm.lake.store import Lake
from cdcnorm.runtime.session import use_portable_parquet
from cdcnorm.runtime.small_runs import interpreted_run_limit, planned_for
from cdcnorm.state import run
from cdcnorm.state.hints import apply_hints, parse_hints
from cdcnorm.state.index import build_summary, write_index
from cdcnorm.state.plan import latest_schemas, name_filter, plan_tables, table_hash, table_stats
from cdcnorm.state.run import ApplyResult


def apply(spark: SparkSession, lake: str, tables: list[str] | None = None, write: bool = True,
          full: bool = False, history: bool = False, track_columns: list[str] | None = None,
          as_of: str | bytes | dt.datetime | None = None, column_types: dict[str, str] | None = None) -> ApplyResult:
    """Current state of every source table in `lake` (or those named in `tables`) as typed DataFrames.

    With `write`, each table's Delta table under `LAKE/current/` is brought up to date with the changes
    committed since its last apply (`full`: rebuilt from all changes), and the returned DataFrames read it.
    `history` also maintains the SCD type 2 tables under `LAKE/history/` (`track_columns`: only changes of these
    columns open a new version). Without `write`, the state is computed from all changes, persisted, and
    nothing is written. `as_of` (a source time, or a canonical position: the hex `sort_key`) computes the state
    from the changes up to it instead (nothing is written; the command line writes it under `LAKE/as_of/`).
    `column_types` (`{"db.table.column": "TYPE"}`, see cdcnorm.state.hints) overrides declared and inferred types
    on every path; a table whose types a hint changes is rebuilt.
    """
    use_portable_parquet(spark)
    lk = Lake(spark, lake)
    hints = parse_hints([f"{k}={v}" for k, v in (column_types or {}).items()])
    with planned_for(spark, small_apply_bytes(lk)):
        if as_of is not None:
            return _compute(spark, lk, lake, tables, hints, as_of_filter(as_of))
        with lk.writer("apply") if write else nullcontext():  # one writer per lake (cdcnorm.lake.lock)
            if not write:
                return _compute(spark, lk, lake, tables, hints)
            return run.apply_lake(lk, tables, full=full, history=history, track_columns=track_columns, hints=hints)


def small_apply_bytes(lk: Lake) -> int | None:
    """The size of the lake's live changes files when it is at most the interpreted-run limit, else None.

    Why: an apply reads at most the lake's changes, and writes state no larger than them, so a lake this small
    is applied as a small run (cdcnorm.runtime.small_runs: no AQE, interpreted expressions): nearly all of a small
    apply's cost is fixed, compiling each table's plans and the jobs AQE adds. A larger lake keeps the session's settings,
    even for a small increment, since an increment may rewrite large target files. The interpreted-run limit,
    not the small-run one: the lake holds compressed Parquet, several times denser than a normalize's input,
    so the same bytes are several times the rows."""
    table = lk.table("changes")
    if not table.exists():
        return None
    size = sum(f["size"] or 0 for f in table.live())
    return size if size <= interpreted_run_limit() else None


def as_of_filter(as_of: str | bytes | dt.datetime) -> Column | dt.datetime:
    """The changes up to a point: `sort_key <= P` for a position (bytes, `sk:HEX`, or a hex string longer than
    eight digits); for an ISO-8601 time (a time without a zone is UTC), the time itself (see :func:`_up_to`)."""
    if isinstance(as_of, bytes | bytearray):
        return F.col("sort_key") <= F.lit(bytes(as_of))
    if isinstance(as_of, dt.datetime):
        return as_of if as_of.tzinfo else as_of.replace(tzinfo=dt.UTC)
    text = as_of.strip()
    if text.lower().startswith("sk:") or (len(text) > 8 and all(c in "0123456789abcdefABCDEF" for c in text)):
        return as_of_filter(bytes.fromhex(text[3:] if text.lower().startswith("sk:") else text))
    try:
        return as_of_filter(dt.datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        raise UsageError(f"--as-of {as_of!r} is neither an ISO-8601 time nor a hex sort_key (sk:HEX)") from None


def _up_to(changes: DataFrame, where: Column | dt.datetime | None) -> DataFrame:
    """The changes up to a point. A time T is the position of each table's last change with `source_ts <= T`:
    canonical order, not source times, decides (snapshot rows, whose source time may be missing or the time of
    the backfill, come before every log change, as everywhere in apply). One row per table reaches a join."""
    if where is None:
        return changes
    if isinstance(where, Column):
        return changes.where(where)
    last = (changes.where(F.col("source_ts") <= F.lit(where)).groupBy("_tid")
            .agg(F.max("sort_key").alias("_upto")))
    return changes.join(F.broadcast(last), "_tid").where(F.col("sort_key") <= F.col("_upto")).drop("_upto")


def _compute(spark: SparkSession, lk: Lake, lake: str, tables: list[str] | None, hints: dict[str, str],
             where: Column | dt.datetime | None = None) -> ApplyResult:
    """write=False / as_of: every selected table from all of its changes (up to `where`), persisted, nothing
    written."""
    selected = name_filter(tables)
    changes = _up_to(run.prepared(lk.changes()), where)
    schemas = widen_over_tables(lk.schemas())  # inferred types hold the values of every version (canonical.inferred)
    if selected is not None:
        changes, schemas = changes.where(selected), schemas.where(selected)
    latest = latest_schemas(schemas)
    stats = table_stats(changes, set(latest))
    plans = plan_tables(stats, latest)
    apply_hints(plans, hints, require_all=not tables and where is None)  # as of a point, a table may not exist yet
    if tables and not plans and where is None:
        raise UsageError(f"No table in {lake} matches {', '.join(tables)} (give table, schema.table or db.schema.table).")
    frames, cached = {}, []
    for plan in plans:
        df = run.table_state(changes, plan).persist(StorageLevel.MEMORY_AND_DISK)
        plan.rows = df.count()
        cached.append(df)
        frames[plan.tid] = df
    return ApplyResult(frames, build_summary(lake, plans, stats), cached)


__all__ = ["ApplyResult", "apply", "table_hash", "write_index"]
