"""The duplicate check of a run against the lake.

Every new change is checked against the lake's changes of the same vendor in the `source_day` partitions it
falls in, whatever their age: the cost follows the days the new input touches, not the lake's size. Changes
without a source time (Replicate refreshes, DataHub full loads, ...) sit in the vendor's day-less partition; a
run reads it only when it has day-less changes itself, and then only the files whose `capture_ts` range (from the
Delta log's statistics) overlaps the new day-less changes' (an event redelivered carries the same capture time).
`--dedup-window DAYS` opts into a horizon instead: rows more than DAYS older than the run's newest day are not
checked and are counted as `dedup_unchecked`.

Concurrent writers do not lock: every changes commit also carries `cdcnorm-changes` (the next serial number), so
of two writers committing at the same time one gets a conflict; it re-checks its rows against the files the
other added (only those), drops what the other already delivered, and commits again (:mod:`cdcnorm.lake.commit`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from cdcnorm.lake.delta.read import read_files
from cdcnorm.lake.store import Lake
from cdcnorm.lake.tables import SOURCE_DAY, run_of, source_day

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
Part = tuple[str, str | None]
"""(vendor, source day): a partition of the changes table; None is the vendor's day-less partition."""


@dataclass
class DedupScope:
    """What a batch is checked against: the event ids of the lake's changes in the partitions it touches."""

    existing: DataFrame | None
    read_version: int
    unchecked: Column
    window_days: int | None
    files: list[str] = field(default_factory=list)
    """the changes files read for `existing` (absolute URIs): the lake's rows of the partitions the batch touches"""


@dataclass
class Touched:
    """The partitions a batch's changes fall in, and per vendor the range of its day-less changes' capture
    times in microseconds since the epoch (None when one of them has none: then every day-less file of the
    vendor is read)."""

    parts: set[Part]
    dayless_capture: dict[str, tuple[Any, Any] | None] = field(default_factory=dict)


def dedup_scope(lk: Lake, rows: DataFrame | Touched, window_days: int | None = None) -> DedupScope:
    """The lake's event ids a batch (`rows`, with `source_day` and `capture_ts`; or what it touches) must be
    checked against: see the module doc. With `window_days`, rows of days older than the batch's newest day minus
    the window are not checked (they are written and counted as `dedup_unchecked`)."""
    table = lk.table("changes")
    handle = table.fresh()
    version = handle.version()
    touched = touched_by(rows) if isinstance(rows, DataFrame) else rows
    parts = touched.parts
    unchecked = F.lit(False)
    if window_days is not None:
        newest: dict[str, str] = {}
        for vendor, day in parts:
            if day is not None:
                newest[vendor] = max(day, newest.get(vendor, day))
        horizon = {v: (dt.date.fromisoformat(d) - dt.timedelta(days=int(window_days))).isoformat()
                   for v, d in newest.items()}
        parts = {(v, d) for v, d in parts if d is None or d >= horizon[v]}
        for vendor, limit in horizon.items():
            unchecked = unchecked | ((F.col("vendor") == vendor) & F.col(SOURCE_DAY).isNotNull()
                                     & (F.col(SOURCE_DAY) < F.lit(limit)))
    files = [f["uri"] for f in table.live(handle=handle, stats=True) if may_hold(f, parts, touched.dayless_capture)]
    existing = read_files(lk.spark, table, files, ["event_id"]) if files else None
    return DedupScope(existing, version, unchecked, window_days, files)


def dayless_capture(dayless: Column) -> list[Column]:
    """Aggregates of the rows where `dayless` holds: the lowest and highest capture time (microseconds) and
    whether one has none (`dayless_lo`, `dayless_hi`, `dayless_uncaptured`); read back by :func:`capture_span`."""
    micros = F.when(dayless, F.unix_micros("capture_ts"))
    return [F.min(micros).alias("dayless_lo"), F.max(micros).alias("dayless_hi"),
            F.max(dayless & F.col("capture_ts").isNull()).alias("dayless_uncaptured")]


def capture_span(got) -> tuple[Any, Any] | None:
    """The day-less capture range :func:`dayless_capture` aggregated (a row or a dict); None when unknown."""
    return None if got["dayless_uncaptured"] else (got["dayless_lo"], got["dayless_hi"])


def touched_by(rows: DataFrame) -> Touched:
    """The partitions `rows` fall in and their day-less capture ranges (one small aggregation)."""
    got = rows.groupBy("vendor", SOURCE_DAY).agg(*dayless_capture(F.col(SOURCE_DAY).isNull())).collect()
    return Touched({(r["vendor"], r[SOURCE_DAY]) for r in got},
                   {r["vendor"]: capture_span(r) for r in got if r[SOURCE_DAY] is None})


def may_hold(file: dict[str, Any], parts: set[Part], dayless_capture: dict[str, tuple[Any, Any] | None]) -> bool:
    """Whether a live changes file may hold event ids of rows in `parts`: a file of the same vendor and day; a
    day-less file of the vendor when the batch has day-less rows whose capture range its statistics may overlap;
    any file of the vendor an upgraded lake registered (its folders name no source day)."""
    vendor, day = file["partition"]["vendor"], file["partition"][SOURCE_DAY]
    if day is not None:
        return (vendor, day) in parts
    if not any(v == vendor for v, _ in parts):
        return False
    if (vendor, None) not in parts:
        return _upgraded(file["path"])
    span = dayless_capture.get(vendor)
    lo, hi = _micros(file.get("min", {}).get("capture_ts")), _micros(file.get("max", {}).get("capture_ts"))
    if span is None or lo is None or hi is None or file.get("nulls", {}).get("capture_ts", 1):
        return True
    return not (hi < span[0] or lo > span[1])


def _micros(value: Any) -> int | None:
    """A statistic's timestamp in microseconds since the epoch (a naive one is UTC, as the log writes it)."""
    if not isinstance(value, dt.datetime):
        return None
    aware = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    return (aware - EPOCH) // dt.timedelta(microseconds=1)


def _upgraded(path: str) -> bool:
    """A file a format-1 lake's run wrote (`run_id=R` folders): it may hold rows of any day."""
    return "run_id=" in path and run_of(path) is not None


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
    duplicates by id hashes"). The suspects are computed once (a local checkpoint: a job of their own), not
    again by each of the run's two actions over the marked rows (its figures and its write); not under dynamic
    allocation, which removes executors with the checkpoint's blocks (a lost executor fails the run, which a re-run
    redoes exactly once)."""
    if not by_ids:
        return _marked_exactly(changes, existing)
    hashed = changes.withColumn("_h", F.xxhash64("event_id"))
    ids = hashed.select("_h")
    suspects = ids.groupBy("_h").count().where(F.col("count") > 1).select("_h")
    if existing is not None:
        known = existing.select(F.xxhash64("event_id").alias("_h"))
        suspects = suspects.unionByName(ids.join(known, "_h", "left_semi")).distinct()
    if changes.sparkSession.conf.get("spark.dynamicAllocation.enabled", "false").lower() != "true":
        suspects = suspects.localCheckpoint()
    if existing is not None:
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


