"""Derived streams (a cut-over's stitched stream, a scenario's vendors) committed as runs of a lake.

A derived stream is an ordinary committed run (same commit protocol) with schema versions, so `apply`,
`compare` and every reader treat it like a normalized vendor stream; re-running adds nothing because rows
already in the lake (same event id) are skipped.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from cdcnorm.canonical.schema import COLUMNS, SCHEMA_VERSION_COLUMNS
from cdcnorm.lake.commit import open_lake, stage_and_commit, staged_rows
from cdcnorm.lake.dedup import dedup_scope, mark_duplicates, with_source_day
from cdcnorm.lake.store import IDENT, new_run_id


def hashed_id(*parts: Column) -> Column:
    """A deterministic 128-bit hex id (SHA-256, truncated) of the given parts, null-safe and unambiguous."""
    text = F.to_json(F.array(*[p.cast("string") for p in parts]))
    return F.substring(F.sha2(text.cast("binary"), 256), 1, 32)


def version_id() -> Column:
    """The schema version id exactly as `normalize` computes it."""
    ident = F.concat_ws("\u0001", *[F.coalesce(F.col(c), F.lit("")) for c in (*IDENT, "schema_version")])
    return F.sha2(ident, 256)


def canonical(df: DataFrame) -> DataFrame:
    """Only the canonical columns, in canonical order (a derived column the frame lacks is null)."""
    have = set(df.columns)
    return df.select(*[F.col(f"`{c.name}`") if c.name in have else F.lit(None).cast(c.type).alias(c.name)
                       for c in COLUMNS])


def write_run(spark: SparkSession, lake: str, changes: DataFrame, schemas: DataFrame | None,
              report: dict[str, Any]) -> dict[str, Any]:
    """Commit `changes` (canonical columns) and `schemas` as one run of `lake`; returns the run report."""
    run_id = new_run_id()
    started = dt.datetime.now(dt.UTC)
    lk = open_lake(spark, lake)
    rows = with_source_day(canonical(changes))
    scope = dedup_scope(lk, rows)
    marked = mark_duplicates(rows, scope.existing).withColumn("_unchecked", scope.unchecked)
    groups = [r.asDict() for r in marked.groupBy(*IDENT, "op", "_dup").agg(
        F.count(F.lit(1)).alias("rows"), F.sum(F.col("_unchecked").cast("long")).alias("unchecked")).collect()]
    sv = None
    if schemas is not None:
        names = [c.name for c in SCHEMA_VERSION_COLUMNS]
        sv = schemas.withColumn("version_id", version_id()).select(*[F.col(f"`{n}`") for n in names])
        sv = sv.dropDuplicates(["version_id"]).join(lk.schemas(latest=True).select("version_id"), "version_id",
                                                    "left_anti").select(*names)
    filtered = int(report.pop("_filtered", 0))
    considered = report.pop("_considered", None)
    kept = [g for g in groups if not g["_dup"]]
    written = sum(int(g["rows"]) for g in kept)
    dups = sum(int(g["rows"]) for g in groups if g["_dup"])
    total = int(considered) if considered is not None else written + filtered + dups
    rows_by = sorted(({**{k: g[k] for k in IDENT}, "op": g["op"], "rows": int(g["rows"])} for g in kept),
                     key=lambda d: tuple(str(d[k] or "") for k in (*IDENT, "op")))
    dup_by: dict[tuple, int] = {}
    for g in groups:
        if g["_dup"]:
            key = tuple(g[k] for k in IDENT)
            dup_by[key] = dup_by.get(key, 0) + int(g["rows"])

    def make_report(adds) -> dict[str, Any]:
        return {
            "run_id": run_id, "started_at": started.isoformat(), "input_kind": "derived", "files": 0,
            "skipped_objects": {}, "records_read": total,
            "outcomes": {"emitted": written, "merged": 0, "metadata": 0, "filtered": filtered,
                         "duplicate": total - written - filtered, "quarantined": 0},
            "reconciled": True, "rows_written": written, "rows_by_table_op": rows_by,
            "quarantine_by_reason": {}, "filters_by_rule": {}, "metadata_by_kind": {},
            "duplicates_by_table": [{**dict(zip(IDENT, k, strict=True)), "duplicates": n}
                                    for k, n in sorted(dup_by.items(), key=lambda kv: tuple(str(x or "") for x in kv[0]))],
            "dedup_unchecked": sum(int(g["unchecked"] or 0) for g in kept),
            "flags": {}, "heartbeats": [], "quarantine_new": 0, "schema_versions_new": staged_rows(adds, "schemas"),
            **report,
        }

    return stage_and_commit(lk, run_id, scope, {"changes": marked.where(~F.col("_dup")), "schemas": sv}, make_report)
