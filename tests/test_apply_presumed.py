"""A full rebuild's statistics presumed from the run reports and the target (cdcnorm.state.presumed): the same
state and summary as the lean aggregate's, no statistics job, and a redo when a presumed figure is wrong."""

from __future__ import annotations

import glob
import os

import orjson
from tests.conftest import benchmark_module

import cdcnorm
from cdcnorm.lake.store import Lake
from cdcnorm.state import presumed, run
from cdcnorm.state import target as target_mod
from cdcnorm.state.paths import CURRENT
from cdcnorm.state.presumed import PRESUMED, target_bounds
from cdcnorm.state.target import target

COLS = ["id", "name", "amount", "qty"]


def _lake(spark, path: str) -> str:
    b = benchmark_module("apply_incremental")
    Lake(spark, path, create=True)
    b.commit(spark, path, b.changes(spark, 0, 3000, "INSERT", 0), b.schema_version(spark))
    cdcnorm.apply(spark, path)
    b.commit(spark, path, b.changes(spark, 2800, 300, "UPDATE", 3000))  # 200 updates, 100 new keys
    b.commit(spark, path, b.changes(spark, 100, 40, "DELETE", 4000))
    return path


def _spy(monkeypatch, name: str) -> list:
    calls: list = []
    real = getattr(run, name)
    monkeypatch.setattr(run, name, lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


def _entry(res) -> dict:
    e = dict(res.summary["tables"][0])
    e.pop("apply")
    return e


def test_full_apply_presumes_and_matches_the_lean_statistics(spark, tmp_path, monkeypatch):
    for mod in (run, presumed, target_mod):
        monkeypatch.setattr(mod, "FILE_ROWS", 512)  # several files and partitions: bounds from the target's files
    lake = _lake(spark, str(tmp_path / "lake"))
    lean = _spy(monkeypatch, "lean_stats")
    bounds = []
    monkeypatch.setattr(run, "target_bounds", lambda *a: bounds.append(target_bounds(*a)) or bounds[-1])
    got = cdcnorm.apply(spark, lake, full=True)
    assert not lean and bounds and bounds[0] and len(bounds[0]) >= 3  # no statistics job; the target placed keys
    want = cdcnorm.apply(spark, lake, write=False)
    a, w = next(iter(got.values())).select(*COLS), next(iter(want.values())).select(*COLS)
    assert a.count() == 3100 - 40 and a.exceptAll(w).count() == 0 and w.exceptAll(a).count() == 0
    monkeypatch.setattr(run, "presumed_stats", lambda *a: None)  # the lean aggregate's figures, for comparison
    again = cdcnorm.apply(spark, lake, full=True)
    assert lean and _entry(got) == {**_entry(again), "type_changes": _entry(got)["type_changes"]}
    assert got.summary["tables"][0]["changes_applied"] == 3340 and got.summary["tables"][0]["rows"] == 3060
    want.unpersist()


def test_a_wrong_presumption_is_redone_from_the_changes(spark, tmp_path, monkeypatch):
    lake = _lake(spark, str(tmp_path / "lake"))
    real = presumed.presumed_stats

    def off_by_one(*a):
        stats = real(*a)
        for d in stats.values():
            d[PRESUMED]["UPDATE"] -= 1  # as if a report missed a row: the merge observes one more
        return stats

    monkeypatch.setattr(run, "presumed_stats", off_by_one)
    lean = _spy(monkeypatch, "lean_stats")
    got = cdcnorm.apply(spark, lake, full=True)
    assert len(lean) == 1  # planned again from the changes
    want = cdcnorm.apply(spark, lake, write=False)
    a, w = next(iter(got.values())).select(*COLS), next(iter(want.values())).select(*COLS)
    assert a.count() == 3060 and a.exceptAll(w).count() == 0 and w.exceptAll(a).count() == 0
    cur = target(spark, lake, next(iter(got)), None, CURRENT)
    live = {p for p in cur.add_actions().column("path").to_pylist()}
    root = cur.uri.removeprefix("file://")
    on_disk = {os.path.relpath(p, root) for p in glob.glob(f"{root}/apply-v*/*.parquet")}
    prefix = {p.split("/")[0] for p in live}
    assert {p for p in on_disk if p.split("/")[0] in prefix} == live  # the first attempt's files are gone
    assert len({p.split("/")[0] for p in on_disk} - prefix) == 1  # only the previous apply's folder besides
    want.unpersist()


def test_no_presumption_without_reports_that_account_for_every_change(spark, tmp_path):
    lake = _lake(spark, str(tmp_path / "lake"))
    lk = Lake(spark, lake)
    runs = lk._runs()
    cut = lk._cut(runs)["changes"]
    from cdcnorm.state.schema_cache import folded_schemas

    latest = folded_schemas(lk, lk._cut(runs)["schemas"], {r["run_id"] for r in runs}, None)
    marks = run._bookmarks(lk, None)
    got = presumed.presumed_stats(lk, cut, runs, latest, marks)
    (d,) = got.values()
    assert (d["row_changes"], d["deletes"], d["truncates"], d["key_sample"]) == (3340, 40, 0, None)
    last = {**runs[-1], "report": orjson.dumps({**orjson.loads(runs[-1]["report"]), "rows_by_table_op": []})}
    assert presumed.presumed_stats(lk, cut, [*runs[:-1], last], latest, marks) is None  # rows no report counts
    assert presumed.presumed_stats(lk, cut, runs, latest, {}) is None  # no target applied before
    assert presumed.presumed_stats(lk, cut, runs, {}, marks) is None  # no schema version: inferred columns


def test_target_bounds_split_the_files_by_rows():
    ranges = [{"low": f"{i:02X}00", "rows": 10} for i in range(8)]
    assert target_bounds(ranges, 4) == [bytes([2, 0]), bytes([4, 0]), bytes([6, 0])]
    assert target_bounds(ranges, 1) is None and target_bounds([], 4) is None
    assert target_bounds([{"low": None, "rows": 10}, *ranges], 4) is None
    assert target_bounds(ranges[:1], 8) is None  # one file cannot place seven bounds
