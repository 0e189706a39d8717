"""Key ranges of a rebuilt target without Spark's range-partitioner sampling job.

Why: `repartitionByRange` computes its input once more to sample it before the shuffle (at 1 M changes about
0.6 executor CPU s: the scan and the projection of every image column, for a sample of a few thousand keys).
The statistics aggregate (:func:`cdcnorm.state.plan.table_stats`) already reads every change's `key_bytes`;
there it also takes the quantiles of a deterministic 1-in-:data:`SAMPLE_EVERY` sample of their leading bytes
(:func:`key_sample_aggs`), and a rebuild sends each change to the partition its key's place among those bounds
names (:func:`partition_id`, `repartitionById`). Bounds only decide which file holds which key range, never a
value: when the sample cannot give them (too few sampled keys, keys sharing their leading bytes, derived keys
without `key_bytes`), :func:`key_bounds` returns None and the rebuild range-partitions as before.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

SAMPLE_EVERY = 32
"""One key in this many (by a hash of its bytes, so a key's rows are all in or all out) feeds the quantiles."""
QUANTILES = 512
"""Quantiles taken per table; a rebuild of up to QUANTILES // 2 partitions picks its bounds among them."""
PREFIX_BYTES = 7
"""Leading key bytes compared (7 bytes fit a non-negative bigint, which `approx_percentile` orders)."""
MIN_SAMPLES_PER_PART = 8
_KSP = "_ksp"


def key_prefix(kb: Column) -> Column:
    """The first :data:`PREFIX_BYTES` bytes of a key as a non-negative bigint, zero-padded on the right, so
    bigint order is the byte order of those prefixes."""
    return F.conv(F.rpad(F.hex(F.substring(kb, 1, PREFIX_BYTES)), 2 * PREFIX_BYTES, "0"), 16, 10).cast("bigint")


def with_key_sample(changes: DataFrame, rows: Column, kb: Column) -> DataFrame:
    """`changes` with `_ksp`: the key prefix of the `rows` whose key `kb` is sampled, else null. A column of its
    own (computed in the scan's generated code) because :func:`key_sample_aggs` is an imperative aggregate,
    whose input Spark evaluates row by row without code generation."""
    sampled = rows & kb.isNotNull() & (F.xxhash64(kb) % SAMPLE_EVERY == 0)
    return changes.withColumn(_KSP, F.when(sampled, key_prefix(kb)))


def key_sample_aggs() -> list[Column]:
    """Aggregates over :func:`with_key_sample` rows: `_ksq`, the quantiles of the sampled prefixes, and `_ksn`,
    how many were sampled."""
    qs = F.array(*[F.lit(i / QUANTILES) for i in range(1, QUANTILES)])
    return [F.percentile_approx(_KSP, qs, 10_000).alias("_ksq"), F.count(_KSP).alias("_ksn")]


def key_bounds(sample: dict[str, Any] | None, parts: int) -> list[bytes] | None:
    """`parts - 1` ascending, distinct lower bounds (key prefixes as bytes) for `parts` partitions from a table's
    sample (`{"n": sampled keys, "q": quantiles}`), or None when the sample cannot place them."""
    if parts <= 1 or not sample or not sample.get("q") or parts > QUANTILES // 2:
        return None
    if (sample.get("n") or 0) < MIN_SAMPLES_PER_PART * parts:
        return None
    q = sample["q"]
    picks = [q[round(j * QUANTILES / parts) - 1] for j in range(1, parts)]
    bounds = sorted({int(v).to_bytes(PREFIX_BYTES, "big") for v in picks if v is not None and v > 0})
    return bounds if 2 * len(bounds) >= parts - 1 else None  # keys share their leading bytes: no usable spread


def partition_id(key: Column | str, bounds: list[bytes]) -> Column:
    """The number of `bounds` at or below `key` (a binary search of nested comparisons: partition i holds the
    keys from bounds[i - 1] up to bounds[i], so partitions are ordered, disjoint key ranges). `key`: a column,
    or a column's name, for which the search is one SQL expression (one call into the JVM instead of a few per
    comparison: about 0.15 s of the driver for 31 partitions)."""

    if isinstance(key, str):
        name = "`" + key.replace("`", "``") + "`"

        def text(lo: int, hi: int) -> str:
            if lo == hi:
                return str(lo)
            mid = (lo + hi) // 2
            return f"CASE WHEN {name} < X'{bounds[mid].hex()}' THEN {text(lo, mid)} ELSE {text(mid + 1, hi)} END"

        return F.expr(f"CAST({text(0, len(bounds))} AS INT)")

    def search(lo: int, hi: int) -> Column:
        if lo == hi:
            return F.lit(lo)
        mid = (lo + hi) // 2
        return F.when(key < F.lit(bounds[mid]), search(lo, mid)).otherwise(search(mid + 1, hi))

    return search(0, len(bounds)).cast("int")
