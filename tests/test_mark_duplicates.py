"""Marking duplicates by shuffling id hashes only (`mark_duplicates(by_ids=True)`) marks exactly what the exact
check does: repeats in the batch (ties on an identical origin included), ids the lake holds, and nothing else;
and a lake run through either check commits the same rows and the same report."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import VariantType

import cdcnorm
import cdcnorm.ingest.pipeline as pipeline
from cdcnorm.lake.dedup import mark_duplicates
from cdcnorm.simulate import VENDOR_FORMATS, simulate

ORIGIN = "struct<uri:string,partition:string,offset:bigint,index:bigint>"


def _rows(spark):
    rows = [
        ("unique-1", "f1", 0, "a"),
        ("unique-2", "f1", 1, "b"),
        ("repeat", "f2", 5, "second"),  # the same id in two files: the first by origin is kept
        ("repeat", "f1", 9, "first"),
        ("tie", "f3", 0, "t"), ("tie", "f3", 0, "t"), ("tie", "f3", 0, "t"),  # one record read three times
        ("in-lake", "f1", 2, "old"),
        ("in-lake-twice", "f1", 3, "x"), ("in-lake-twice", "f2", 3, "y"),
    ]
    df = spark.createDataFrame([(e, (u, None, None, i), p) for e, u, i, p in rows],
                               f"event_id string, origin {ORIGIN}, payload string")
    existing = spark.createDataFrame([("in-lake",), ("in-lake-twice",), ("only-in-lake",)], "event_id string")
    return df, existing


def _outcome(marked):
    """(event id, origin uri, payload, dup) with how many rows of each: which of identical rows is kept is no
    outcome (they are the same row)."""
    got = marked.groupBy("event_id", "origin.uri", "payload", "_dup").count().collect()
    return sorted((r["event_id"], r["uri"], r["payload"], r["_dup"], r["count"]) for r in got)


@pytest.mark.parametrize("with_lake", [True, False])
def test_the_id_hash_check_marks_exactly_what_the_window_does(spark, with_lake):
    df, existing = _rows(spark)
    existing = existing if with_lake else None
    exact = _outcome(mark_duplicates(df, existing))
    assert _outcome(mark_duplicates(df, existing, by_ids=True)) == exact
    kept = {(e, u, p): n for e, u, p, dup, n in exact if not dup}
    expected = {("unique-1", "f1", "a"): 1, ("unique-2", "f1", "b"): 1, ("repeat", "f1", "first"): 1,
                ("tie", "f3", "t"): 1}
    if not with_lake:
        expected.update({("in-lake", "f1", "old"): 1, ("in-lake-twice", "f1", "x"): 1})
    assert kept == expected
    assert sum(n for *_, n in exact) == 10


def _exchanges(plan: str) -> list[str]:
    """Each hash exchange of a physical plan's tree text with the subtree below it."""
    lines = plan.splitlines()
    depth = [len(line) - len(line.lstrip(" :+-*()0123456789")) for line in lines]
    out = []
    for i, line in enumerate(lines):
        if "Exchange hashpartitioning" in line:
            j = i + 1
            while j < len(lines) and depth[j] > depth[i]:
                j += 1
            out.append("\n".join(lines[i:j]))
    return out


def test_the_id_hash_check_shuffles_the_rows_of_its_suspects_only(spark):
    """By id hashes, the rows' columns are shuffled only below the suspects' semi join (their exact check), and the
    suspects (id hashes, computed once in a job of their own) are read from their checkpoint; the exact check shuffles
    every row by its event id."""
    df, existing = _rows(spark)

    plan = mark_duplicates(df, existing, by_ids=True)._jdf.queryExecution().executedPlan().toString()
    by_ids = _exchanges(plan)
    assert "Scan ExistingRDD[_h" in plan and not any("hashpartitioning(_h" in e.splitlines()[0] for e in by_ids)
    by_event_id = [e for e in by_ids if "hashpartitioning(event_id" in e.splitlines()[0]]
    assert by_event_id and all("LeftSemi" in e for e in by_event_id)
    exact = _exchanges(mark_duplicates(df, existing)._jdf.queryExecution().executedPlan().toString())
    assert any("hashpartitioning(event_id" in e.splitlines()[0] and "LeftSemi" not in e for e in exact)


def _normalized(spark, files, vendor, lake, by_ids, monkeypatch):
    monkeypatch.setattr(pipeline, "MARK_BY_IDS_ROWS", (0, 10**9) if by_ids else (1, 0))
    reports = [cdcnorm.normalize(files, vendor, spark=spark, lake=lake, reprocess=True).report for _ in range(2)]
    changes = cdcnorm.read_changes(spark, lake)
    cols = [F.to_json(f.name).alias(f.name) if isinstance(f.dataType, VariantType) else F.col(f"`{f.name}`")
            for f in changes.schema.fields if f.name != "run_id"]
    rows = sorted(r[0] for r in changes.select(F.to_json(F.struct(*cols))).collect())
    drop = ("run_id", "started_at", "finished_at", "inputs")
    return [{k: v for k, v in r.items() if k not in drop} for r in reports], rows


@pytest.mark.parametrize("vf", ["datahub-blob", pytest.param("replicate-json", marks=pytest.mark.slow)])
def test_a_lake_run_commits_the_same_through_either_check(spark, tmp_path, monkeypatch, vf):
    """A quirk-on history (redeliveries, update halves split over files and runs, merged messages) normalized twice into a lake (the second
    run all duplicates of the lake's rows) through each check: same rows, same reports."""
    manifest = simulate(tmp_path / "sim", vendors=vf, tables=2, rows=20, changes=200, seed=5, rotate=60)
    files = sorted(str(p) for p in manifest.input_dir(vf).rglob("*") if p.is_file())
    vendor = VENDOR_FORMATS[vf][0]
    by_ids = _normalized(spark, files, vendor, str(tmp_path / "ids"), True, monkeypatch)
    exact = _normalized(spark, files, vendor, str(tmp_path / "exact"), False, monkeypatch)
    assert by_ids == exact
    first, second = by_ids[0]
    assert first["outcomes"]["duplicate"] > 0 and first["rows_written"] > 0
    assert second["rows_written"] == 0 and second["outcomes"]["duplicate"] > 0 and second["reconciled"]
