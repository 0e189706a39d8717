"""A rebuild's key ranges from the statistics' key sample (cdcnorm.state.ranges) instead of Spark's range sampling:
bounds from quantiles, each key's partition among them, and a full apply over several partitions that equals the
state computed without any partitioning, in files of disjoint, ordered key ranges."""

from __future__ import annotations

import bisect

import pytest
from pyspark.sql import functions as F

import cdcnorm
from cdcnorm.lake.store import Lake
from cdcnorm.state import ranges, run
from cdcnorm.state.ranges import PREFIX_BYTES, QUANTILES, key_bounds, partition_id
from conftest import benchmark_module


def test_key_bounds_from_a_sample():
    q = [i * 1000 for i in range(1, QUANTILES)]  # evenly spread prefixes
    got = key_bounds({"n": 10_000, "q": q}, 4)
    assert got == [(v * 1000).to_bytes(PREFIX_BYTES, "big") for v in (QUANTILES // 4, QUANTILES // 2, 3 * QUANTILES // 4)]
    assert key_bounds({"n": 10_000, "q": q}, 1) is None  # one partition: nothing to place
    assert key_bounds({"n": 8 * 4 - 1, "q": q}, 4) is None  # too few sampled keys
    assert key_bounds({"n": 10_000, "q": [7] * (QUANTILES - 1)}, 4) is None  # keys share their leading bytes
    assert key_bounds({"n": 10_000, "q": q}, QUANTILES) is None  # finer than the quantiles
    assert key_bounds(None, 4) is None


def test_partition_id_is_the_place_among_the_bounds(spark):
    bounds = [bytes([0, 0, 0, 0, 0, 0, b]) for b in (10, 20, 30, 40, 50)]
    keys = [bytes([0, 0, 0, 0, 0, 0, b, 1]) for b in range(0, 60, 3)] + [bytes([0, 0, 0, 0, 0, 0, 20]), b"\x01"]
    df = spark.createDataFrame([(k,) for k in keys], "k binary")
    for key in (F.col("k"), "k"):  # a column, or a column's name (one SQL expression)
        got = {bytes(r["k"]): r["p"] for r in df.select("k", partition_id(key, bounds).alias("p")).collect()}
        assert got == {k: bisect.bisect_right(bounds, k) for k in keys}
        assert got[bytes([0, 0, 0, 0, 0, 0, 20])] == 2 and got[b"\x01"] == 5



def test_full_apply_over_sampled_ranges_equals_the_unpartitioned_state(spark, tmp_path, monkeypatch):
    b = benchmark_module("apply_incremental")
    lake = str(tmp_path / "lake")
    Lake(spark, lake, create=True)
    b.commit(spark, lake, b.changes(spark, 0, 4000, "INSERT", 0), b.schema_version(spark))
    b.commit(spark, lake, b.changes(spark, 3500, 700, "UPDATE", 4000))  # 500 updates, 200 new keys
    b.commit(spark, lake, b.changes(spark, 100, 50, "DELETE", 5000))
    used = []
    monkeypatch.setattr(run, "FILE_ROWS", 1024)  # several partitions at this size
    monkeypatch.setattr(run, "key_bounds", lambda *a: used.append(ranges.key_bounds(*a)) or used[-1])
    got = cdcnorm.apply(spark, lake, full=True)
    assert used and used[0] is not None and len(used[0]) >= 3  # the sampled bounds placed the keys
    want = cdcnorm.apply(spark, lake, write=False)
    cols = ["id", "name", "amount", "qty"]
    a, w = next(iter(got.values())).select(*cols), next(iter(want.values())).select(*cols)
    assert a.count() == 4200 - 50 and a.exceptAll(w).count() == 0 and w.exceptAll(a).count() == 0
    assert a.where("id = 3600").first()["name"] == "UPDATE 3600" and a.where("id = 100").count() == 0
    entry = got.summary["tables"][0]
    assert entry["apply"]["mode"] == "rebuilt" and entry["rows"] == 4150
    from cdcnorm.state.paths import CURRENT
    from cdcnorm.state.target import KEY, target

    acts = target(spark, lake, next(iter(got)), None, CURRENT).add_actions()
    spans = sorted(zip(acts.column(f"min.{KEY}").to_pylist(), acts.column(f"max.{KEY}").to_pylist(), strict=True))
    assert len(spans) >= 4 and all(hi < lo for (_, hi), (lo, _) in zip(spans, spans[1:], strict=False))
    want.unpersist()


@pytest.mark.parametrize("parts", [2, 5])
def test_bounds_split_a_sample_evenly(parts):
    q = list(range(1, QUANTILES))
    got = [int.from_bytes(x, "big") for x in key_bounds({"n": 10_000, "q": q}, parts)]
    assert got == [round(j * QUANTILES / parts) for j in range(1, parts)]
