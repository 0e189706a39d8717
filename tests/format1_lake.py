"""A format-1 lake (cdcnorm <= 0.1: Parquet folders, JSON reports) written the way the old code wrote it
(`git show e166385:src/cdcnorm/lake.py`): staged folders moved into `area/run_id=R/`, report last. Used as the
input of `cdcnorm lake upgrade` in the tests; it also reads the lake back the old way.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

import orjson
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cdcnorm.canonical.schema import COLUMN_NAMES, SCHEMA_VERSION_COLUMNS
from cdcnorm.ingest.pipeline import normalize
from cdcnorm.lake.store import new_run_id
from cdcnorm.runtime.fs import HadoopFS

AREAS = ("quarantine", "quarantine_resolved", "schemas")


def create(path: str) -> None:
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "_cdcnorm.json"), "w") as fh:
        fh.write(orjson.dumps({"lake_format": 1, "canonical_version": "1"}).decode())


def committed_runs(path: str) -> list[str]:
    runs = os.path.join(path, "runs")
    return sorted(n[:-5] for n in os.listdir(runs) if n.endswith(".json")) if os.path.isdir(runs) else []


@contextmanager
def write_timestamps(spark: SparkSession, kind: str | None):
    """Write Parquet timestamps as `kind` (INT96: what Spark does by default, outside cdcnorm's session)."""
    key = "spark.sql.parquet.outputTimestampType"
    if kind is None:
        yield
        return
    before = spark.conf.get(key)
    spark.conf.set(key, kind)
    try:
        yield
    finally:
        spark.conf.set(key, before)


def normalize_run(spark: SparkSession, path: str, source: str, vendor: str, timestamps: str | None = None) -> dict:
    """One old-style normalize run: new rows only (left anti join on the whole lake), staged, moved, report;
    `timestamps` sets how its Parquet timestamps are written (normalize itself sets the portable micros)."""
    res = normalize(source, vendor, spark=spark)
    with write_timestamps(spark, timestamps):
        return _write_run(spark, path, res)


def _write_run(spark: SparkSession, path: str, res) -> dict:
    existing = changes(spark, path).select("event_id")
    kept = res.changes.join(existing, "event_id", "left_anti").select(*[F.col(f"`{n}`") for n in COLUMN_NAMES])
    schemas = res.schemas.select(*[c.name for c in SCHEMA_VERSION_COLUMNS])
    run_id = res.run_id
    staging = f"{path}/_staging/{run_id}"
    # several small files per run, as cdcnorm 0.1 wrote them (one per task): what `lake maintain` compacts
    kept.repartition(2, "event_id").write.partitionBy("vendor").parquet(f"{staging}/changes")
    res.quarantine.write.parquet(f"{staging}/quarantine")
    schemas.write.parquet(f"{staging}/schemas")
    report = dict(res.report)
    report["rows_written"] = spark.read.parquet(f"{staging}/changes").count() if _has_rows(staging) else 0
    report["quarantine_new"] = spark.read.parquet(f"{staging}/quarantine").count()
    report["schema_versions_new"] = spark.read.parquet(f"{staging}/schemas").count()
    commit(spark, path, run_id, report)
    return report


def resolve_run(spark: SparkSession, path: str, quarantine_ids: list[str]) -> str:
    """An old `quarantine retry` that resolved the given ids (its quarantine_resolved files hold only the id)."""
    run_id = new_run_id()
    spark.createDataFrame([(q,) for q in quarantine_ids], "quarantine_id string").coalesce(1).write.parquet(
        f"{path}/_staging/{run_id}/quarantine_resolved")
    commit(spark, path, run_id, {
        "run_id": run_id, "vendor": "datastream", "input_kind": "retry", "records_read": 0,
        "outcomes": {"emitted": 0, "merged": 0, "metadata": 0, "filtered": 0, "duplicate": 0, "quarantined": 0},
        "rows_written": 0, "quarantine_new": 0, "quarantine_resolved": len(quarantine_ids),
        "finished_at": "2025-02-01T00:00:00+00:00"})
    return run_id


def _has_rows(staging: str) -> bool:
    folder = f"{staging}/changes"
    return os.path.isdir(folder) and any(n.startswith("vendor=") for n in os.listdir(folder))


def commit(spark: SparkSession, path: str, run_id: str, report: dict) -> None:
    """The old commit: move the staged folders into place, then write the report (the commit point)."""
    fs = HadoopFS(spark, path)
    staged = f"{path}/_staging/{run_id}/changes"
    for vendor_dir in fs.list_dir(staged):
        if vendor_dir.startswith("vendor="):
            fs.rename(f"{staged}/{vendor_dir}", f"{path}/changes/{vendor_dir}/run_id={run_id}")
    for area in AREAS:
        src = f"{path}/_staging/{run_id}/{area}"
        if fs.exists(src):
            fs.rename(src, f"{path}/{area}/run_id={run_id}")
    fs.write_text(f"{path}/runs/{run_id}.json", orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())
    fs.delete(f"{path}/_staging/{run_id}")


def _read(spark: SparkSession, path: str, area: str) -> DataFrame | None:
    root = f"{path}/{area}"
    runs = committed_runs(path)
    if not runs or not os.path.isdir(root):
        return None
    return spark.read.option("basePath", root).parquet(root).where(F.col("run_id").cast("string").isin(runs))


def changes(spark: SparkSession, path: str) -> DataFrame:
    """The old reader: canonical rows of committed runs."""
    df = _read(spark, path, "changes")
    if df is None:
        from cdcnorm.canonical.schema import canonical_schema

        return spark.createDataFrame([], canonical_schema())
    return df.select(*[F.col(f"`{n}`") for n in COLUMN_NAMES])


def quarantine_ids(spark: SparkSession, path: str) -> list[str]:
    return sorted(r["quarantine_id"] for r in _read(spark, path, "quarantine").select("quarantine_id").collect())
