"""`quarantine retry`: re-process quarantined records after a fix or once missing metadata has arrived.

Quarantined records keep their raw bytes and origin, so they are fed back to their adapter as raw messages
(with their original origin). Records that now decode become canonical rows; their quarantine ids are marked
resolved. Records that fail again stay quarantined (with their new reason if it changed). Event ids are
deterministic, so a record that already made it into the lake another way is counted as a duplicate.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cdcnorm.ingest.pipeline import NormalizeResult, normalize
from cdcnorm.lake.store import Lake


def retry_quarantine(spark: SparkSession, lake: str, vendor: str | None = None,
                     options: dict[str, Any] | None = None) -> dict[str, dict[str, int]]:
    """Retry every unresolved quarantined record of the lake (of one vendor, if given)."""
    lk = Lake(spark, lake)
    with lk.writer("quarantine retry"):  # the lock spans reading the pending records and every vendor's run
        return _retry(spark, lk, lake, vendor, options)


def _retry(spark: SparkSession, lk: Lake, lake: str, vendor: str | None,
           options: dict[str, Any] | None) -> dict[str, dict[str, int]]:
    pending = lk.quarantine().where(F.col("raw").isNotNull() & F.col("vendor").isNotNull())
    if vendor:
        pending = pending.where(F.col("vendor") == vendor)
    vendors = [r["vendor"] for r in pending.select("vendor").distinct().collect()]
    summary: dict[str, dict[str, int]] = {}
    for v in sorted(vendors):
        batch = retry_batch(lk, v).cache()
        retried = batch.count()
        result = renormalize(batch, v, spark, lake, options)
        still = result.report["outcomes"]["quarantined"]
        summary[v] = {"retried": retried, "resolved": result.report.get("quarantine_resolved", 0),
                      "still_quarantined": still}
        batch.unpersist()
    return summary


def retry_batch(lk: Lake, vendor: str, error_class: str | None = None) -> DataFrame:
    """A vendor's unresolved quarantined records (of one error class, if given) as raw messages with their
    original origin and quarantine id (`_qid`)."""
    pending = lk.quarantine().where((F.col("vendor") == vendor) & F.col("raw").isNotNull())
    if error_class:
        pending = pending.where(F.col("error_class") == error_class)
    return pending.select(F.col("raw").alias("value"), "origin", F.col("quarantine_id").alias("_qid"))


def renormalize(batch: DataFrame, vendor: str, spark: SparkSession, lake: str, options: dict[str, Any] | None,
                **normalize_options: Any) -> NormalizeResult:
    """Normalize a :func:`retry_batch` again; the ids of the records that now decode are marked resolved."""
    return normalize(batch.drop("_qid"), vendor, spark=spark, options=options, lake=lake,
                     resolves=batch.select(F.col("_qid").alias("quarantine_id")), **normalize_options)
