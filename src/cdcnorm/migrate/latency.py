"""Latency and freshness per side: `capture_ts - source_ts` of log changes, newest change and heartbeat.

Why per side and per table in one pass each: these are aggregates over every change, so they are computed by
Spark (percentiles by `percentile_approx`) and only the numbers reach the driver.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from cdcnorm.migrate.matching import LOG_OPS, from_us, iso_us
from cdcnorm.migrate.sides import Side

BUCKETS: tuple[tuple[str, float], ...] = (
    ("<0", 0.0), ("<1ms", 0.001), ("<10ms", 0.01), ("<100ms", 0.1), ("<0.5s", 0.5), ("<1s", 1.0), ("<2s", 2.0),
    ("<5s", 5.0), ("<10s", 10.0), ("<30s", 30.0), ("<1min", 60.0), ("<5min", 300.0), ("<15min", 900.0),
    ("<1h", 3600.0),
)
"""Latency histogram buckets (upper bounds, seconds); the last bucket is `>=1h`."""


def latency_s() -> Column:
    return (F.unix_micros("capture_ts") - F.unix_micros("source_ts")) / 1e6


def _bucket(x: Column) -> Column:
    expr = F.when(x.isNull(), F.lit(None))
    for label, upper in BUCKETS:
        expr = expr.when(x < F.lit(upper), F.lit(label))
    return expr.otherwise(F.lit(">=1h"))


def _stats(row: Any, prefix: str = "") -> dict[str, Any]:
    pct = row[prefix + "pct"] or [None, None, None]
    return {"count": int(row[prefix + "n"]), "p50": pct[0], "p95": pct[1], "p99": pct[2], "max": row[prefix + "max"],
            "mean": row[prefix + "mean"]}


def _latency_aggs(x: Column, prefix: str = "") -> list[Column]:
    return [F.count(x).alias(prefix + "n"), F.percentile_approx(x, [0.5, 0.95, 0.99], 10000).alias(prefix + "pct"),
            F.max(x).alias(prefix + "max"), F.avg(x).alias(prefix + "mean")]


def side_overview(side: Side) -> dict[str, Any]:
    """Window, freshness, overall latency and its histogram, and latency per table, for one side."""
    op = F.col("op")
    log = op.isin(*LOG_OPS)
    data = op.isin(*LOG_OPS, "SNAPSHOT", "TRUNCATE")
    lat = F.when(log, latency_s())
    us = F.unix_micros("source_ts")
    r = side.changes.agg(
        F.min(F.when(log, us)).alias("start"), F.max(F.when(data & (op != "SNAPSHOT"), us)).alias("newest_change"),
        F.max(F.when(op == "HEARTBEAT", us)).alias("newest_heartbeat"), F.max(F.unix_micros("capture_ts")).alias("cap"),
        F.count(F.lit(1)).alias("rows"), *_latency_aggs(lat),
    ).collect()[0]
    ends = [v for v in (r["newest_change"], r["newest_heartbeat"]) if v is not None]
    hist = {b["b"]: int(b["n"]) for b in side.changes.where(log).select(_bucket(latency_s()).alias("b"))
            .where(F.col("b").isNotNull()).groupBy("b").count().withColumnRenamed("count", "n").collect()}
    per_table = {}
    for t in side.changes.where(log).groupBy("stream", "database", "schema", "table").agg(*_latency_aggs(latency_s())).collect():
        per_table[(t["stream"], t["database"], t["schema"], t["table"])] = _stats(t)
    return {
        "start": from_us(r["start"]), "end": from_us(max(ends)) if ends else None,
        "freshness": {"newest_change": iso_us(r["newest_change"]), "newest_heartbeat": iso_us(r["newest_heartbeat"]),
                      "newest_capture": iso_us(r["cap"])},
        "rows": int(r["rows"]),
        "latency": _stats(r),
        "histogram": [{"bucket": label, "count": hist.get(label, 0)} for label, _ in BUCKETS]
        + [{"bucket": ">=1h", "count": hist.get(">=1h", 0)}],
        "per_table": per_table,
    }


def freshness_gap(left: dict[str, Any], right: dict[str, Any]) -> float | None:
    """How far the right side's newest change is behind the left side's, in seconds (negative: ahead)."""
    a, b = left["freshness"]["newest_change"], right["freshness"]["newest_change"]
    if not a or not b:
        return None
    import datetime as dt

    return (dt.datetime.fromisoformat(a) - dt.datetime.fromisoformat(b)).total_seconds()
