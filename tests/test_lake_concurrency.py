"""Two normalize runs into one lake at the same time, fed overlapping files (A+B and B+C of one history): both
commit, no event id lands twice, the union of the inputs is all there, and the run that lost the race counts
the rows the other delivered first as `duplicates_concurrent`.

A barrier holds each writer until the other one is there too, so their commit phases really overlap (without
it, one tiny run may finish before the other starts committing and the race is not exercised): in threads,
inside the changes commit (both commit from the same version: the conflict path); in processes, at the
`intent` crash point (after both dedup reads: the loser re-checks whichever way the commits interleave).
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from cdcnorm.canonical.emit import KIND_CHANGE
from cdcnorm.canonical.emit import Bookkeeping as B
from cdcnorm.ingest.pipeline import normalize
from cdcnorm.lake.delta.table import Conflict, DeltaTableRef
from cdcnorm.lake.store import Lake
from lake_checks import (
    VENDOR,
    check_lake,
    check_truth,
    run_normalize,
    same_rows,
    simulate_history,
)

# A normalize subprocess that waits at the `intent` point until the other one has reached it too (marker files).
BARRIER_MAIN = """
import os, sys, time
import cdcnorm.lake.commit as lake_commit
mine, other = sys.argv[1], sys.argv[2]
def barrier(name):
    if name == "intent":
        open(mine, "w").close()
        deadline = time.monotonic() + 600
        while not os.path.exists(other):
            if time.monotonic() > deadline:
                sys.exit("barrier: the other writer never reached its commit")
            time.sleep(0.05)
lake_commit.crash_point = barrier
sys.argv = ["cdcnorm", *sys.argv[3:]]
from cdcnorm.cli.program import main
main()
"""


@pytest.fixture(autouse=True)
def _no_crash_env(monkeypatch):
    monkeypatch.delenv("CDCNORM_CRASH_AT", raising=False)


def groups(history) -> tuple[list[str], list[str]]:
    """Files A+B and B+C: B holds files of both tables' lanes, so both writers stage its rows."""
    f = history.files
    a, b, c = f[:3], f[3:5], f[5:]
    return [*a, *b], [*b, *c]


def expected(spark, history, first: list[str], second: list[str]) -> tuple:
    """From one in-memory run over everything: the union's event ids and how many event ids both writers
    stage (an id has a copy among the first writer's files and one among the second's)."""
    clean = normalize(history.files, VENDOR, spark=spark)
    copies = clean.decoded.where(F.col(B.KIND) == KIND_CHANGE).select("event_id", F.col("origin.uri").alias("uri"))
    both = copies.groupBy("event_id").agg(
        F.max(F.col("uri").isin(*[Path(p).as_uri() for p in first], *first)).alias("in_first"),
        F.max(F.col("uri").isin(*[Path(p).as_uri() for p in second], *second)).alias("in_second"))
    overlap = both.where("in_first AND in_second").count()
    return clean.changes.select("event_id"), overlap


def check_race(spark, lake: str, reports: list[dict], union, overlap: int) -> None:
    ids = Lake(spark, lake).changes().select("event_id")
    assert same_rows(ids, union) == (0, 0)  # every input change is there, none twice (check_lake: no duplicate)
    figures = check_lake(spark, lake)
    assert figures["runs"] == 2
    late = sorted(r.get("duplicates_concurrent", 0) for r in reports)
    assert late == [0, overlap], late  # the loser re-checked and dropped exactly the shared event ids
    assert sum(r["rows_written"] for r in reports) == figures["rows"] == union.count()


def test_two_writers_in_threads_commit_overlapping_files_once(spark, tmp_path, monkeypatch):
    """Both writers commit their changes from the same table version (a barrier inside the commit): exactly
    one gets the conflict on `cdcnorm.changes`, re-checks against the winner's files and commits again."""
    history = simulate_history(tmp_path)
    lake = str(tmp_path / "lake")
    inputs = groups(history)
    union, overlap = expected(spark, history, *inputs)
    assert overlap > 0

    barrier = threading.Barrier(2, timeout=600)
    conflicts: list[str] = []
    commit = DeltaTableRef.commit

    def commit_together(self, *args, **kwargs):
        me = threading.current_thread().name
        if self.uri.endswith("/changes") and me not in conflicts:
            barrier.wait()  # both hold a handle of the same version and decided to commit: go at once
        try:
            return commit(self, *args, **kwargs)
        except Conflict:
            conflicts.append(me)
            raise

    monkeypatch.setattr(DeltaTableRef, "commit", commit_together)
    outcome: dict[str, object] = {}

    def writer(i: int) -> None:
        try:
            outcome[f"w{i}"] = normalize(inputs[i], VENDOR, spark=spark, lake=lake).report
        except BaseException as exc:  # noqa: BLE001 (reported by the test)
            outcome[f"w{i}"] = exc
            barrier.abort()

    threads = [threading.Thread(target=writer, args=(i,), name=f"w{i}") for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    failed = {i: o for i, o in outcome.items() if isinstance(o, BaseException)}
    assert not failed, failed
    assert len(conflicts) == 1, conflicts
    assert outcome[conflicts[0]].get("duplicates_concurrent") == overlap  # the loser re-checked
    check_race(spark, lake, [outcome["w0"], outcome["w1"]], union, overlap)


@pytest.mark.slow
def test_two_writer_processes_commit_overlapping_files_once(spark, tmp_path):
    history = simulate_history(tmp_path)
    lake = str(tmp_path / "lake")
    inputs = groups(history)
    union, overlap = expected(spark, history, *inputs)
    marks = [str(tmp_path / f"at-intent-{i}") for i in (0, 1)]
    runs: dict[int, object] = {}

    def writer(i: int) -> None:
        argv = [sys.executable, "-c", BARRIER_MAIN, marks[i], marks[1 - i]]
        runs[i] = run_normalize(inputs[i], lake, argv=argv, log=tmp_path / f"writer{i}.log")

    threads = [threading.Thread(target=writer, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for run in runs.values():
        assert run.returncode == 0, run.stderr[-3000:]
    reports = Lake(spark, lake).run_reports()
    print(f"\nwriters: {[round(r.seconds, 1) for r in runs.values()]} s; duplicates_concurrent "
          f"{[r.get('duplicates_concurrent', 0) for r in reports]} of {overlap} shared event ids")
    check_race(spark, lake, reports, union, overlap)
    check_truth(spark, lake, history)  # A+B+C is the whole history


def test_a_report_another_completer_commits_after_the_check_is_not_appended_twice(spark, tmp_path, monkeypatch):
    """Two completers of one run's intent (two queries of one process open the lake): the second checks the
    `runs` table's app transaction, the first commits the report just after, the second must not append it again."""
    import cdcnorm.lake.commit as lake_commit

    lk = Lake(spark, str(tmp_path / "lake"), create=True)
    report = {"run_id": "r-race", "vendor": "acme", "records_read": 0, "outcomes": {}}
    app = lake_commit.run_app("r-race")
    real_fresh = DeltaTableRef.fresh
    raced = []

    def fresh_then_race(self):
        handle = real_fresh(self)
        if self.uri.endswith("/runs") and not raced:  # the other completer wins right after this check's read
            raced.append(True)
            lake_commit.append_run_rows(lk.table("runs"), [dict(report)], {}, [app])
        return handle

    monkeypatch.setattr(DeltaTableRef, "fresh", fresh_then_race)
    pending = lake_commit.Pending("r-race", {}, dict(report), 0)
    lake_commit._commit_report(lk, pending, {})
    assert raced
    assert [r["run_id"] for r in lk.run_reports()] == ["r-race"]
