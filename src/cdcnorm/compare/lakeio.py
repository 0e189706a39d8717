"""Writing derived canonical streams (a cut-over's stitched stream, a scenario's vendors) into a lake.

Why: a derived stream must be an ordinary committed run (staged, moved, report last) with schema versions, so
`apply`, `compare` and every reader treat it like a normalized vendor stream; re-running adds nothing because
rows already in the lake (same event id) are skipped.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

import cdcnorm
from cdcnorm.canonical.schema import COLUMN_NAMES, SCHEMA_VERSION_COLUMNS
from cdcnorm.lake import Lake, new_run_id

IDENT = ("vendor", "stream", "database", "schema", "table")


def hashed_id(*parts: Column) -> Column:
    """A deterministic 128-bit hex id (SHA-256, truncated) of the given parts, null-safe and unambiguous."""
    text = F.to_json(F.array(*[p.cast("string") for p in parts]))
    return F.substring(F.sha2(text.cast("binary"), 256), 1, 32)


def version_id() -> Column:
    """The schema version id exactly as `normalize` computes it."""
    ident = F.concat_ws("\u0001", *[F.coalesce(F.col(c), F.lit("")) for c in (*IDENT, "schema_version")])
    return F.sha2(ident, 256)


def canonical(df: DataFrame) -> DataFrame:
    return df.select(*[F.col(f"`{n}`") for n in COLUMN_NAMES])


def write_run(spark: SparkSession, lake: str, changes: DataFrame, schemas: DataFrame | None,
              report: dict[str, Any]) -> dict[str, Any]:
    """Commit `changes` (canonical columns) and `schemas` as one run of `lake`; returns the run report."""
    started = dt.datetime.now(dt.UTC)
    lk = Lake(spark, lake, create=True)
    lk.cleanup_uncommitted()
    run_id = new_run_id()
    existing = lk.changes().select("event_id")
    candidates = canonical(changes)
    new_rows = candidates.join(existing, "event_id", "left_anti").select(*[F.col(f"`{n}`") for n in COLUMN_NAMES])
    new_rows.write.partitionBy("vendor").parquet(lk.staging(run_id, "changes"))
    staged = _read_staged(spark, lk.staging(run_id, "changes"))
    ident = ["vendor", "stream", "database", "schema", "table"]
    rows_by = [r.asDict() for r in staged.groupBy(*ident, "op").count().withColumnRenamed("count", "rows")
               .orderBy(*ident, "op").collect()] if staged is not None else []
    written = sum(r["rows"] for r in rows_by)
    n_versions = 0
    if schemas is not None:
        names = [c.name for c in SCHEMA_VERSION_COLUMNS]
        sv = schemas.withColumn("version_id", version_id()).select(*[F.col(f"`{n}`") for n in names])
        sv = sv.dropDuplicates(["version_id"]).join(lk.schemas().select("version_id"), "version_id", "left_anti")
        sv.select(*[F.col(f"`{n}`") for n in names]).write.parquet(lk.staging(run_id, "schemas"))
        n_versions = spark.read.parquet(lk.staging(run_id, "schemas")).count()
    filtered = int(report.pop("_filtered", 0))
    considered = int(report.pop("_considered", written + filtered))
    full = {
        "run_id": run_id, "cdcnorm_version": cdcnorm.__version__, "started_at": started.isoformat(),
        "input_kind": "derived", "files": 0, "skipped_objects": {},
        "records_read": considered,
        "outcomes": {"emitted": written, "merged": 0, "metadata": 0, "filtered": filtered,
                     "duplicate": considered - written - filtered, "quarantined": 0},
        "reconciled": True, "rows_written": written, "rows_by_table_op": rows_by, "quarantine_by_reason": {},
        "filters_by_rule": {}, "metadata_by_kind": {}, "duplicates_by_table": [], "flags": {}, "heartbeats": [],
        "quarantine_new": 0, "schema_versions_new": n_versions,
        **report,
    }
    full["finished_at"] = dt.datetime.now(dt.UTC).isoformat()
    lk.commit(run_id, full)
    return full


def _read_staged(spark: SparkSession, path: str) -> DataFrame | None:
    try:
        return spark.read.parquet(path)
    except Exception as exc:  # no rows written: Spark cannot infer a schema from an empty folder
        if "UNABLE_TO_INFER_SCHEMA" in str(exc) or "PATH_NOT_FOUND" in str(exc):
            return None
        raise
