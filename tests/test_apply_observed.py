"""A rebuild's statistics from the lean aggregate plus what its merge observes (cdcnorm.state.observed): the
same figures as the full statistics (cdcnorm.state.plan.table_stats), in the summary and the bookmark."""

from __future__ import annotations

from pyspark.sql import functions as F

import cdcnorm
from cdcnorm.lake.store import Lake
from cdcnorm.state import observed, run
from cdcnorm.state.bookmark import stats_json
from cdcnorm.state.paths import CURRENT
from cdcnorm.state.plan import table_stats
from cdcnorm.state.target import read_bookmark, target
from conftest import benchmark_module


def test_lean_rebuild_statistics_equal_the_full_ones(spark, tmp_path, monkeypatch):
    b = benchmark_module("apply_incremental")
    lake = str(tmp_path / "lake")
    Lake(spark, lake, create=True)
    b.commit(spark, lake, b.changes(spark, 0, 600, "INSERT", 0), b.schema_version(spark))
    b.commit(spark, lake, b.changes(spark, 500, 150, "UPDATE", 600))  # 100 updates, 50 new keys
    orphans = b.changes(spark, 10, 3, "UPDATE", 800).withColumn("after", F.lit(None).cast("variant"))
    ddl = b.changes(spark, 0, 2, "DDL", 900).withColumn("after", F.lit(None).cast("variant"))
    b.commit(spark, lake, b.changes(spark, 20, 5, "DELETE", 760).unionByName(orphans).unionByName(ddl))
    lean = []
    monkeypatch.setattr(run, "lean_stats", lambda *a: lean.append(observed.lean_stats(*a)) or lean[-1])
    got = cdcnorm.apply(spark, lake, full=True)
    assert lean and lean[0] is not None  # planned from the lean aggregate, the rest observed
    tid = next(iter(got))
    changes = run.prepared(Lake(spark, lake).changes())
    want = next(iter(table_stats(changes, set(lean[0])).values()))
    want.pop("key_sample")
    bookmark = read_bookmark(target(spark, lake, tid, None, CURRENT))
    assert bookmark["stats"] == stats_json({**want, "truncated_at": None})
    assert bookmark["plan"]["key_columns"] == ["id"] and bookmark["plan"]["key_mode"] == "event"
    assert (want["row_changes"], want["orphan_updates_ignored"], want["deletes"]) == (755, 3, 5)
    e = got.summary["tables"][0]
    assert (e["changes_applied"], e["orphan_updates_ignored"], e["key_columns"], e["rows"]) == (755, 3, ["id"], 645)
    assert e["last_sort_key"] == want["last_sort_key"].hex() and e["last_position"] == want["last_position"]
    assert e["last_source_ts"] == want["last_source_ts"].isoformat() and e["ignored_ops"] == {"DDL": 2}
    assert next(iter(got.values())).where("id = 510").first()["name"] == "UPDATE 510"


def test_supersedes_look_only_where_the_log_cannot_rule_it_out(spark, tmp_path):
    """`supersedes` is a statistics column of `changes`: files whose null count is their row count need no look;
    a file that names a change is looked at, and the change it names is still dropped."""
    b = benchmark_module("apply_incremental")
    lake = str(tmp_path / "lake")
    lk = Lake(spark, lake, create=True)
    b.commit(spark, lake, b.changes(spark, 0, 100, "INSERT", 0), b.schema_version(spark))
    table = lk.table("changes")
    first = {f["path"] for f in table.live()}
    assert run.none_superseded(table, lk.cut()["changes"])
    pair = b.changes(spark, 5000, 1, "INSERT", 5000).withColumn("supersedes", F.sha2(F.lit("e:40"), 256).substr(1, 32))
    b.commit(spark, lake, pair)  # the key-5000 insert replaces the orphan that was key 40's insert
    version = Lake(spark, lake).cut()["changes"]
    assert not run.none_superseded(table, version) and run.none_superseded(table, version, first)
    got = next(iter(cdcnorm.apply(spark, lake, full=True).values()))
    assert got.count() == 100 and got.where("id = 40").count() == 0 and got.where("id = 5000").count() == 1
