"""The duplicate check of a run against the lake.

Dedup per lake: a batch is checked against the changes already in the lake in the partitions it touches
(vendor, source day) within the dedup window, never against the whole lake. Concurrent writers do not lock:
every changes commit also carries `cdcnorm-changes` (the next serial number), so of two writers committing at the
same time one gets a conflict; it re-checks its rows against the files the other added (only those), drops
what the other already delivered, and commits again (:mod:`cdcnorm.lake.commit`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from cdcnorm.lake.delta.read import read_files
from cdcnorm.lake.store import Lake
from cdcnorm.lake.tables import SOURCE_DAY, source_day

DEFAULT_WINDOW_DAYS = 7

@dataclass
class DedupScope:
    """What a batch is checked against: the event ids of the lake's changes in the partitions it touches."""

    existing: DataFrame | None
    read_version: int
    unchecked: Column
    window_days: int


def dedup_scope(lk: Lake, rows: DataFrame | list[tuple[str, str | None]],
                window_days: int | None = None) -> DedupScope:
    """The lake's event ids a batch (`rows`, with `source_day`, or already its distinct (vendor, source day)
    pairs) must be checked against.

    Per vendor, the horizon is the batch's newest source day minus the window: rows of older days are not
    checked (they are written and counted as `dedup_unchecked`); rows of newer days are checked against the
    lake's files of the same vendor and day, plus the files without a day (rows without a source time, lakes
    upgraded from format 1). The cost is bounded by the window, not by the lake's size.
    """
    window = DEFAULT_WINDOW_DAYS if window_days is None else int(window_days)
    table = lk.table("changes")
    handle = table.fresh()
    version = handle.version()
    if isinstance(rows, DataFrame):
        rows = [(r["vendor"], r[SOURCE_DAY]) for r in rows.select("vendor", SOURCE_DAY).distinct().collect()]
    parts = rows
    horizon: dict[str, str] = {}
    for vendor, day in parts:
        if day is not None:
            newest = max(day, horizon.get(vendor, day))
            horizon[vendor] = newest
    horizon = {v: (dt.date.fromisoformat(d) - dt.timedelta(days=window)).isoformat() for v, d in horizon.items()}
    checked = {(v, d) for v, d in parts if d is None or d >= horizon[v]}
    files = [f["uri"] for f in table.live(handle=handle) if may_hold(f, checked)]
    existing = read_files(lk.spark, table, files, ["event_id"]) if files else None
    unchecked = F.lit(False)
    for vendor, limit in horizon.items():
        unchecked = unchecked | ((F.col("vendor") == vendor) & F.col(SOURCE_DAY).isNotNull()
                                 & (F.col(SOURCE_DAY) < F.lit(limit)))
    return DedupScope(existing, version, unchecked, window)


def may_hold(file: dict[str, Any], parts: set[tuple[str, str | None]]) -> bool:
    """Whether a live changes file may hold event ids of rows in the (vendor, source_day) `parts`: a file of the
    same vendor and day, or of the same vendor without a day (rows without a source time, upgraded lakes)."""
    vendor, day = file["partition"]["vendor"], file["partition"][SOURCE_DAY]
    return any(v == vendor for v, _ in parts) and (day is None or (vendor, day) in parts)


def with_source_day(rows: DataFrame) -> DataFrame:
    return rows.withColumn(SOURCE_DAY, source_day())


MARK_BY_IDS_ROWS = (20_000, 4_000_000)
"""Change rows of a run for which :func:`mark_duplicates` shuffles ids only (below: a window over a few rows costs
less than the extra job and scan; above: the suspects it broadcasts, at worst one id hash per row, grow too big)."""


def mark_duplicates(changes: DataFrame, existing: DataFrame | None, by_ids: bool = False) -> DataFrame:
    """Flag `_dup` on every row whose event id is already in the lake or earlier in this batch.

    With `by_ids`, only a 64-bit hash of each id is shuffled to find the suspects (a hash seen twice in the batch
    or among the lake's ids, normally none), which are broadcast; only the suspects' rows go through the exact
    check, every other row is marked where it is. The plain check shuffles and sorts the full rows, twice a run
    (report and write): at 1 M changes the hashes' way costs about a tenth less CPU (docs/benchmarks.md, "Marking
    duplicates by id hashes")."""
    if not by_ids:
        return _marked_exactly(changes, existing)
    hashed = changes.withColumn("_h", F.xxhash64("event_id"))
    ids = hashed.select("_h")
    suspects = ids.groupBy("_h").count().where(F.col("count") > 1).select("_h")
    if existing is not None:
        known = existing.select(F.xxhash64("event_id").alias("_h"))
        suspects = suspects.unionByName(ids.join(known, "_h", "left_semi")).distinct()
        existing = existing.join(F.broadcast(suspects), F.xxhash64("event_id") == F.col("_h"), "left_semi")
    clear = hashed.join(F.broadcast(suspects), "_h", "left_anti").withColumn("_dup", F.lit(False))
    doubtful = _marked_exactly(hashed.join(F.broadcast(suspects), "_h", "left_semi"), existing)
    return clear.unionByName(doubtful).drop("_h")


def _marked_exactly(changes: DataFrame, existing: DataFrame | None) -> DataFrame:
    """The exact check: each event id's rows ordered by origin, all but the first (and all of an id the lake
    holds) duplicates."""
    df = changes
    if existing is not None:
        df = df.join(existing.distinct().withColumn("_existing", F.lit(True)), "event_id", "left")
    else:
        df = df.withColumn("_existing", F.lit(None).cast("boolean"))
    order = Window.partitionBy("event_id").orderBy(
        F.col("origin.uri").asc_nulls_last(), F.col("origin.partition").asc_nulls_last(),
        F.col("origin.index").asc_nulls_last(), F.col("origin.offset").asc_nulls_last(),
    )
    df = df.withColumn("_rn", F.row_number().over(order))
    dup = F.coalesce(F.col("_existing"), F.lit(False)) | (F.col("_rn") > 1)
    return df.withColumn("_dup", dup).drop("_existing", "_rn")


