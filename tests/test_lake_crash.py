"""Nothing lost, nothing doubled: normalize killed at any point of its commit sequence and restarted leaves the
lake exactly as one clean run of the same input would.

The fast test kills one real normalize subprocess (SIGKILL to the whole process group, the JVM included, by
`CDCNORM_CRASH_AT`) right after its changes commit, so the restart must complete the run's pending intent, and
restarts it in-process (one JVM start less). The slow tests kill at three points, then 20 real normalize
subprocesses at named points and at random times, and restart them as such.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from cdcnorm.ingest.pipeline import normalize
from cdcnorm.lake.store import Lake
from lake_checks import (
    VENDOR,
    check_lake,
    check_same_as,
    check_same_as_lake,
    check_truth,
    intents_left,
    run_normalize,
    simulate_history,
)

POINTS = ("written", "intent", "committed:schemas", "committed:quarantine", "committed:quarantine_resolved",
          "committed:changes", "committed:inputs", "committed:runs")


@pytest.fixture(autouse=True)
def _no_crash_env(monkeypatch):
    monkeypatch.delenv("CDCNORM_CRASH_AT", raising=False)  # the in-process runs must never kill the test


def chunks(history) -> list[list[str]]:
    """Four runs' inputs, in file order (so each event's first copy is in the earliest run that has one, as
    in one run over everything); the damaged file goes with the second run."""
    f = history.files
    return [f[:2], [*f[2:5], history.broken], f[5:7], f[7:]]


def orphans(spark, lake: str) -> list[str]:
    """Changes data files on disk that no commit references (a crashed run's)."""
    live = {f["path"] for f in Lake(spark, lake).table("changes").live()}
    on_disk = {str(p.relative_to(Path(lake, "changes"))) for p in Path(lake, "changes").rglob("*.parquet")}
    return sorted(on_disk - live)


def test_crash_after_the_changes_commit_then_restart_completes_the_run(spark, tmp_path):
    history = simulate_history(tmp_path)
    lake = str(tmp_path / "lake")
    parts = chunks(history)
    reference = normalize([*history.files, history.broken], VENDOR, spark=spark)  # in memory: one clean run

    normalize(parts[0], VENDOR, spark=spark, lake=lake)
    # a real `kill -9` of a normalize process group (the JVM included) between the changes and runs commits ...
    killed = run_normalize(parts[1], lake, crash_at_point="committed:changes")
    assert killed.returncode == -9 and "java" in killed.group_seen, killed.stderr[-3000:]
    (pending,) = intents_left(lake)
    crashed = pending[:-len(".json")]
    assert crashed not in Lake(spark, lake).committed_runs()
    restart = normalize(parts[1], VENDOR, spark=spark, lake=lake).report  # ... then the same command again
    # the restart completed the crashed run first (its rows and its files in the ledger), so it read nothing
    assert restart["files"] == 0 and restart["files_skipped_known"] == len(parts[1])
    assert restart["rows_written"] == 0 and restart["quarantine_new"] == 0
    assert intents_left(lake) == []
    normalize([*parts[2], *parts[3]], VENDOR, spark=spark, lake=lake)

    lk = Lake(spark, lake)
    by_run = {r["run_id"]: r for r in lk.run_reports()}
    assert by_run[crashed]["quarantine_new"] == 1 and by_run[crashed]["rows_written"] > 0
    figures = check_lake(spark, lake)
    assert figures["runs"] == 4
    assert figures["rows"] == reference.report["rows_written"] and figures["quarantine"] == 1
    check_same_as(spark, lake, reference.changes, reference.quarantine)
    check_truth(spark, lake, history)


@pytest.mark.slow
def test_crash_at_three_points_then_restart_loses_and_doubles_nothing(spark, tmp_path):
    history = simulate_history(tmp_path)
    lake = str(tmp_path / "lake")
    parts = chunks(history)
    reference = normalize([*history.files, history.broken], VENDOR, spark=spark)  # in memory: one clean run

    crashed: dict[str, str] = {}
    for inputs, point in zip(parts, ("written", "committed:quarantine", "committed:changes"), strict=False):
        # a real `kill -9` of a normalize process group (the JVM included) at the point ...
        killed = run_normalize(inputs, lake, crash_at_point=point)
        assert killed.returncode == -9 and "java" in killed.group_seen, killed.stderr[-3000:]
        pending = intents_left(lake)
        if point == "written":  # nothing committed: no intent, the files written are invisible orphans
            assert pending == [] and orphans(spark, lake) and Lake(spark, lake).committed_runs() == []
        else:
            assert len(pending) == 1
            crashed[point] = pending[0][:-len(".json")]
            assert crashed[point] not in Lake(spark, lake).committed_runs()
        restart = normalize(inputs, VENDOR, spark=spark, lake=lake).report  # ... then the same command again
        if point != "written":  # the restart completed the crashed run first, so every file was known
            assert restart["rows_written"] == 0 and restart["quarantine_new"] == 0
            assert restart["files"] == 0 and restart["files_skipped_known"] == len(inputs)
    normalize(parts[3], VENDOR, spark=spark, lake=lake)

    lk = Lake(spark, lake)
    assert set(crashed.values()) <= set(lk.committed_runs())
    by_run = {r["run_id"]: r for r in lk.run_reports()}
    assert by_run[crashed["committed:quarantine"]]["quarantine_new"] == 1
    assert by_run[crashed["committed:changes"]]["rows_written"] > 0
    figures = check_lake(spark, lake)
    assert figures["runs"] == 6  # 1 + (crashed, restart) * 2 + 1: the run killed at `written` never committed
    assert figures["rows"] == reference.report["rows_written"] and figures["quarantine"] == 1
    check_same_as(spark, lake, reference.changes, reference.quarantine)
    check_truth(spark, lake, history)


@pytest.mark.slow
def test_twenty_kill_9_at_points_and_random_times_then_restart(spark, tmp_path):
    """20 kills of real normalize processes (SIGKILL to the process group, the JVM included): at a named
    crash point or after a random delay; each input is re-run until a run ends without being killed. A re-run
    of the same input reads its files again (`--reprocess`: the ledger would skip the files a completed run
    recorded, and such a run never reaches `written`), so every run reaches every point."""
    rng = random.Random(20261124)
    history = simulate_history(tmp_path)
    lake, reference = str(tmp_path / "lake"), str(tmp_path / "reference")
    clean = run_normalize([*history.files, history.broken], reference)
    assert clean.returncode == 0, clean.stderr[-3000:]
    assert "java" in clean.group_seen
    span = clean.seconds

    kills, runs, log = 0, 0, []
    parts = chunks(history)
    for i, inputs in enumerate(parts):
        last = i == len(parts) - 1
        attempt = 0
        while True:
            point = delay = None
            if kills < 20 and (last or rng.random() < 0.85):
                if rng.random() < 0.5:
                    point = rng.choice(POINTS)
                else:
                    delay = round(rng.uniform(1.0, span * 1.1), 1)
            again = ("--reprocess",) if attempt else ()
            run = run_normalize(inputs, lake, *again, crash_at_point=point, kill_after=delay)
            runs, attempt = runs + 1, attempt + 1
            log.append((i, point or (f"after {delay} s" if delay else "-"), run.returncode, run.seconds,
                        "java" in run.group_seen))
            if point:  # every run reaches every point (a restart reaches them first completing the killed run)
                assert run.returncode == -9 and "java" in run.group_seen, run.stderr[-3000:]
            if run.returncode == -9:
                kills += 1
                continue  # restart the same command
            assert run.returncode == 0, run.stderr[-3000:]
            if not (last and kills < 20):
                break
    print(f"\n{kills} kills in {runs} runs (reference run {span:.1f} s):")
    for part, kill, code, seconds, java in log:
        print(f"  part {part}  kill {kill:<26} rc {code:>3}  {seconds:5.1f} s  java seen {java}")
    assert kills == 20
    figures = check_lake(spark, lake)
    print("lake:", figures, "reference:", check_lake(spark, reference))
    check_same_as_lake(spark, lake, reference)
    check_truth(spark, lake, history)
