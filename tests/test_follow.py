"""Continuous mode: the stream of paths, micro-batches committed exactly once, the --follow CLI."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from pyspark.sql import functions as F
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxFiles

from cdcnorm.canonical.schema import COLUMN_NAMES
from cdcnorm.ingest.pipeline import normalize
from cdcnorm.lake.store import Lake
from cdcnorm.streaming import follow as follow_mod
from cdcnorm.streaming.follow import follow, follow_folder, start_follow
from cdcnorm.streaming.paths_source import PathsStreamReader, batch_entries, paths_stream
from conftest import ROOT, SAMPLES
from lake_checks import check_lake, cli_env, crash_points

DATASTREAM = SAMPLES / "datastream"
FIRST = ["shop_orders/2025/01/21/11/00", "shop_orders/2025/01/21/11/05"]
LATER = ["shop_orders/2025/01/21/11/09", "shop_customers/2025/01/21/12/00"]


def drop(folders: list[str], into: Path) -> None:
    """Copy sample folders into the followed folder (the layout, and so the streams, stay Datastream's)."""
    for rel in folders:
        shutil.copytree(DATASTREAM / rel, into / rel, dirs_exist_ok=True)


def reader(inputs: Path, manifest: Path, settle: float = 0, cap: int | None = None) -> PathsStreamReader:
    opts = {"inputs": json.dumps([str(inputs)]), "manifest": str(manifest), "settleSeconds": str(settle)}
    if cap:
        opts["maxFilesPerTrigger"] = str(cap)
    return PathsStreamReader(opts)


def emitted(r: PathsStreamReader, start: dict, end: dict) -> list[str]:
    return [row[0] for p in r.partitions(start, end) for row in r.read(p)]


def write(path: Path, text: str, age: float = 3600) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    old = time.time() - age
    os.utime(path, (old, old))


# -- (a) the source ---------------------------------------------------------------------------------------------
def test_source_admits_each_file_identity_once(tmp_path):
    src, man = tmp_path / "in", tmp_path / "m"
    write(src / "a.json", "1")
    write(src / "sub" / "b.json", "22")
    write(src / "_hidden.json", "x")
    write(src / "empty.json", "")
    r = reader(src, man)
    first = r.latestOffset({"files": 0}, ReadAllAvailable())
    assert first == {"files": 2}
    assert emitted(r, {"files": 0}, first) == [str(src / "a.json"), str(src / "sub" / "b.json")]
    write(src / "a.json", "1 rewritten")  # listed again, changed (size, time): another file identity, emitted again
    write(src / "c.json", "333")
    second = r.latestOffset(first, ReadAllAvailable())
    assert second == {"files": 4}
    assert emitted(r, first, second) == [str(src / "a.json"), str(src / "c.json")]
    assert r.latestOffset(second, ReadAllAvailable()) == second  # listed again, unchanged: never emitted twice
    # a restarted reader (new process) rebuilds the same history from the manifest
    again = reader(src, man)
    assert again.latestOffset(second, ReadAllAvailable()) == second
    assert emitted(again, {"files": 0}, second) == [str(src / "a.json"), str(src / "sub" / "b.json"),
                                                    str(src / "a.json"), str(src / "c.json")]


def test_source_waits_for_young_files_and_never_skips_old_ones(tmp_path):
    src, man = tmp_path / "in", tmp_path / "m"
    write(src / "old.json", "1", age=10 * 86400)  # ten days old: admitted like any other
    write(src / "young.json", "2", age=0)
    r = reader(src, man, settle=60)
    end = r.latestOffset({"files": 0}, ReadAllAvailable())
    assert emitted(r, {"files": 0}, end) == [str(src / "old.json")]
    write(src / "young.json", "2", age=120)  # settled now
    later = r.latestOffset(end, ReadAllAvailable())
    assert emitted(r, end, later) == [str(src / "young.json")]


def test_source_caps_files_per_trigger(tmp_path):
    src, man = tmp_path / "in", tmp_path / "m"
    for i in range(5):
        write(src / f"f{i}.json", "x")
    r = reader(src, man, cap=2)
    assert r.getDefaultReadLimit() == ReadMaxFiles(2)
    ends, start = [], {"files": 0}
    while (end := r.latestOffset(start, r.getDefaultReadLimit())) != start:
        ends.append(end["files"])
        start = end
    assert ends == [2, 4, 5]
    assert r.latestOffset({"files": 0}, ReadAllAvailable()) == {"files": 5}  # the engine's limit wins


def test_source_under_spark_gives_one_batch_per_capped_slice(spark, tmp_path):
    src = tmp_path / "in"
    for i in range(3):
        write(src / f"f{i}.json", "x" * (i + 1))
    seen: list[tuple[int, list[tuple[str, int]]]] = []

    def collect(df, batch_id):
        seen.append((batch_id, sorted((r["path"].rsplit("/", 1)[-1], r["size"]) for r in df.collect())))

    q = (paths_stream(spark, [str(src)], str(tmp_path / "m"), 0, 2).writeStream.foreachBatch(collect)
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    q.awaitTermination()
    assert seen == [(0, [("f0.json", 1), ("f1.json", 2)]), (1, [("f2.json", 3)])]


def test_batch_files_from_the_offset_log_equal_the_batch_rows(spark, tmp_path):
    """A micro-batch's files are read on the driver from the offset log and the manifest (no Spark job): the same
    as the batch's rows, batch by batch; a log that does not say gives None (the rows are read then)."""
    src, folder = tmp_path / "in", tmp_path / "q"
    for i in range(3):
        write(src / f"f{i}.json", "x" * (i + 1))
    seen: list[tuple[list, list]] = []

    def collect(df, batch_id):
        rows = sorted((r["path"], r["size"]) for r in df.collect())
        seen.append((rows, sorted((e.path, e.size) for e in batch_entries(str(folder), batch_id))))

    q = (paths_stream(spark, [str(src)], str(folder / "manifest"), 0, 2).writeStream.foreachBatch(collect)
         .option("checkpointLocation", str(folder / "checkpoint")).trigger(availableNow=True).start())
    q.awaitTermination()
    assert [len(rows) for rows, _ in seen] == [2, 1]
    assert all(rows == logged for rows, logged in seen)
    assert batch_entries(str(folder), 2) is None  # no such batch
    (folder / "checkpoint" / "offsets" / "1").write_text("v2\n{}\n{}\n")
    assert batch_entries(str(folder), 1) is None


# -- (b) follow equals batch ------------------------------------------------------------------------------------
def lake_rows(spark, lake: str):
    row = F.to_json(F.struct(*[F.col(f"`{c}`") for c in COLUMN_NAMES]))
    return Lake(spark, lake).changes().select("event_id", row.alias("j"))


def assert_same_lake(spark, followed: str, batch: str) -> None:
    a, b = lake_rows(spark, followed), lake_rows(spark, batch)
    assert a.count() == b.count() > 0
    assert a.select("event_id").distinct().count() == a.count()  # no event twice
    assert a.exceptAll(b).count() == 0 and b.exceptAll(a).count() == 0


@pytest.mark.slow  # the fast suite keeps test_follow_state's test_batch_command_is_the_available_now_query
def test_follow_available_now_twice_equals_one_batch(spark, tmp_path):
    src, lake, ref = tmp_path / "in", str(tmp_path / "lake"), str(tmp_path / "ref")
    drop(FIRST, src)
    first = follow([src], "datastream", lake, spark=spark, settle_seconds=0)
    assert [(b.status, b.files) for b in first] == [("committed", 2)]
    drop(LATER, src)
    second = follow([src], "datastream", lake, spark=spark, settle_seconds=0)
    assert [b.status for b in second] == ["committed"] and second[0].batch_id == 1
    assert second[0].files == 2  # the new data files only (the zero-byte one is skipped)
    again = follow([src], "datastream", lake, spark=spark, settle_seconds=0)
    assert again == []  # nothing new: no batch

    normalize([str(src)], "datastream", spark=spark, lake=ref)
    assert_same_lake(spark, lake, ref)
    reports = Lake(spark, lake).run_reports()
    assert len(reports) == 2 and all(r["reconciled"] for r in reports)
    batch_report = Lake(spark, ref).run_reports()[0]
    assert sum(r["records_read"] for r in reports) == batch_report["records_read"]
    assert sum(r["rows_written"] for r in reports) == batch_report["rows_written"]
    query_id = first[0].run_id.rsplit("-", 1)[0]
    assert sorted(r["run_id"] for r in reports) == [f"{query_id}-{i}" for i in range(2)]


# -- (c) exactly once across a crash between the lake commit and the checkpoint ---------------------------------
def test_batch_committed_before_checkpoint_is_skipped_on_restart(spark, tmp_path, monkeypatch):
    src, lake, ref = tmp_path / "in", str(tmp_path / "lake"), str(tmp_path / "ref")
    drop(FIRST + LATER, src)
    real = follow_mod.normalize
    calls = []

    def crash_after_commit(*args, **kwargs):
        real(*args, **kwargs)
        calls.append(kwargs["run_id"])
        raise RuntimeError("simulated crash: the lake holds the batch, the checkpoint does not")

    monkeypatch.setattr(follow_mod, "normalize", crash_after_commit)
    with pytest.raises(Exception, match="simulated crash"):
        follow([src], "datastream", lake, spark=spark, settle_seconds=0)
    assert len(calls) == 1 and Lake(spark, lake).committed_runs() == calls
    commits = Path(follow_folder(lake, "default")) / "checkpoint" / "commits"
    assert not commits.exists() or not list(commits.glob("[0-9]*"))  # Spark never recorded the batch

    monkeypatch.setattr(follow_mod, "normalize", real)
    restarted = follow([src], "datastream", lake, spark=spark, settle_seconds=0)
    assert [(b.run_id, b.status) for b in restarted] == [(calls[0], "already_committed")]
    assert Lake(spark, lake).committed_runs() == calls
    normalize([str(src)], "datastream", spark=spark, lake=ref)
    assert_same_lake(spark, lake, ref)


def test_batch_with_pending_intent_is_completed_not_rerun(spark, tmp_path, monkeypatch):
    from cdcnorm.lake import commit as lake_commit

    src, lake = tmp_path / "in", str(tmp_path / "lake")
    drop(FIRST, src)

    def stop_after_intent(lk, p):
        raise RuntimeError("simulated crash after the intent")

    monkeypatch.setattr(lake_commit, "complete", stop_after_intent)
    with pytest.raises(Exception, match="simulated crash after the intent"):
        follow([src], "datastream", lake, spark=spark, settle_seconds=0)
    monkeypatch.undo()
    runs = []
    monkeypatch.setattr(follow_mod, "normalize", lambda *a, **k: runs.append(k) or pytest.fail("re-ran the batch"))
    restarted = follow([src], "datastream", lake, spark=spark, settle_seconds=0)
    # opening the lake completes the pending intent; the batch is then found committed
    assert [b.status for b in restarted] in (["already_committed"], ["completed_pending"])
    assert restarted[0].rows_written > 0 and runs == []
    assert len(Lake(spark, lake).committed_runs()) == 1


def test_batch_killed_after_writing_files_reruns_over_its_leftovers(spark, tmp_path):
    """A batch that wrote data files (and staged rows) but no intent is run again; its leftovers are replaced."""
    src, lake = tmp_path / "in", str(tmp_path / "lake")
    drop(FIRST, src)
    with crash_points(crash_at_error("written")), pytest.raises(Exception, match="crashed at written"):
        follow([src], "datastream", lake, spark=spark, settle_seconds=0)
    leftovers = list(Path(lake, "changes").glob("run=*"))
    assert len(leftovers) == 1 and list(leftovers[0].rglob("*.parquet"))
    assert Lake(spark, lake).committed_runs() == []
    resumed = follow([src], "datastream", lake, spark=spark, settle_seconds=0)
    assert [(b.status, b.run_id) for b in resumed] == [("committed", leftovers[0].name[len("run="):])]
    figures = check_lake(spark, lake)  # no duplicate event id, reports reconcile, every logged file on disk
    assert figures["runs"] == 1 and resumed[0].rows_written == figures["rows"]
    assert not Path(lake, "_staging").exists() or list(Path(lake, "_staging").iterdir()) == []


class CrashedHere(Exception):
    """A crash point reached inside foreachBatch: an ordinary exception fails the query like a crash (a
    BaseException would kill Py4J's callback thread instead); nothing after the point runs."""


def crash_at_error(point: str):
    def action(name: str) -> None:
        if name == point:
            raise CrashedHere(f"crashed at {point}")
    return action


def test_stop_during_a_batch_lets_it_commit_and_starts_no_other(spark, tmp_path, monkeypatch):
    src, lake = tmp_path / "in", str(tmp_path / "lake")
    drop(FIRST, src)
    stop, real = threading.Event(), follow_mod.normalize

    def signalled_meanwhile(*args, **kwargs):
        stop.set()  # SIGTERM arrives while the batch decodes
        return real(*args, **kwargs)

    monkeypatch.setattr(follow_mod, "normalize", signalled_meanwhile)
    follower = start_follow([src], "datastream", lake, spark=spark, settle_seconds=0, trigger=0.5,
                            max_files_per_trigger=1, stop=stop)
    follower.run_until_stopped()
    assert not follower.query.isActive
    assert [(b.batch_id, b.status, b.files) for b in follower.batches] == [(0, "committed", 1)]
    assert Lake(spark, lake).committed_runs() == [follower.batches[0].run_id]


def test_batch_started_after_a_stop_is_left_to_the_next_start(spark, tmp_path):
    src, lake = tmp_path / "in", str(tmp_path / "lake")
    drop(FIRST, src)
    stopped = threading.Event()
    stopped.set()  # as the CLI's SIGTERM handler does, here before the first batch ran
    follower = start_follow([src], "datastream", lake, spark=spark, settle_seconds=0, trigger=1, stop=stopped)
    follower.run_until_stopped()  # returns without error
    assert not follower.query.isActive and follower.batches == []
    assert Lake(spark, lake).committed_runs() == []
    resumed = follow([src], None, lake, spark=spark, settle_seconds=0)  # the vendor detected from the batch
    assert [(b.batch_id, b.status, b.files) for b in resumed] == [(0, "committed", 2)]
    assert Lake(spark, lake).run_report(resumed[0].run_id)["vendor"] == "datastream"


def test_replicate_file_stream_naming_is_refused(spark, tmp_path):
    from cdcnorm.errors import UsageError

    with pytest.raises(UsageError, match="--stream"):
        follow([tmp_path], "replicate", str(tmp_path / "lake"), spark=spark, options={"stream_naming": "file"})


KILL_POINTS = ("written", "intent", "committed:changes", "committed:inputs", "committed:runs")
FOLLOW_ONCE = ("import sys; from cdcnorm.streaming.follow import follow; from cdcnorm.runtime.session import get_spark; "
               "follow([sys.argv[1]], 'datastream', sys.argv[2], spark=get_spark('local[1]', quiet=True), "
               "settle_seconds=0)")


@pytest.mark.slow
def test_follow_killed_at_every_commit_point_then_restarted(spark, tmp_path):
    """kill -9 of the whole process group (JVM included) at each point of a batch's commit sequence, each time
    with new files waiting; the restart from the same checkpoint leaves the lake of one clean batch run."""
    src, lake, ref = tmp_path / "in", str(tmp_path / "lake"), str(tmp_path / "ref")
    groups = [[FIRST[0]], [FIRST[1]], [LATER[0]], [LATER[1]], ["shop_payments/2025/01/21/11/00"]]
    statuses = []
    for point, group in zip(KILL_POINTS, groups, strict=True):
        drop(group, src)
        proc = subprocess.run([sys.executable, "-c", FOLLOW_ONCE, str(src), lake], env=cli_env(point),
                              start_new_session=True, capture_output=True, text=True, timeout=600)
        assert proc.returncode == -signal.SIGKILL, proc.stdout + proc.stderr
        resumed = follow([src], "datastream", lake, spark=spark, settle_seconds=0)
        statuses.append([b.status for b in resumed])
    # killed before the intent: run again; after it: completed when the lake is opened, then found committed
    assert statuses == [["committed"]] + [["already_committed"]] * (len(KILL_POINTS) - 1)
    check_lake(spark, lake)
    normalize([str(src)], "datastream", spark=spark, lake=ref)
    assert_same_lake(spark, lake, ref)
    assert len(Lake(spark, lake).committed_runs()) == len(KILL_POINTS)


# -- (d) the command line ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_cli_follow_runs_until_sigterm(spark, tmp_path):
    src, lake, progress = tmp_path / "in", str(tmp_path / "lake"), tmp_path / "progress.jsonl"
    src.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cdcnorm", "normalize", str(src), "--lake", lake, "--vendor", "datastream",
         "--follow", "--trigger-seconds", "1", "--settle-seconds", "0", "--progress-json", str(progress),
         "--master", "local[1]"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        drop(FIRST, src)
        _wait_for(lambda: _batches(progress) >= 1, proc)
        drop(LATER, src)
        _wait_for(lambda: sum(b["files"] for b in _read(progress)) >= 4, proc)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, out
    assert "batch 0 (committed)" in out
    batches = _read(progress)
    assert all(b["status"] == "committed" and b["reconciled"] for b in batches)
    ref = str(tmp_path / "ref")
    normalize([str(src)], "datastream", spark=spark, lake=ref)
    assert_same_lake(spark, lake, ref)


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _batches(path: Path) -> int:
    return len(_read(path))


def _wait_for(cond, proc, timeout: float = 180) -> None:
    deadline = time.time() + timeout
    while not cond():
        if proc.poll() is not None:
            raise AssertionError(f"follow exited early ({proc.returncode}): {proc.stdout.read()}")
        if time.time() > deadline:
            raise AssertionError("timed out waiting for the follow query")
        time.sleep(0.5)


class _EndedQuery:
    """A query that has ended, with `error` (or cleanly): what `Follower.run_until_stopped` waits on."""

    def __init__(self, error: Exception | None):
        self.error = error

    def awaitTermination(self, _timeout):  # noqa: N802 (pyspark's name)
        if self.error:
            raise self.error
        return True

    def exception(self):
        return None


def _attempts(*errors: Exception | None):
    made = []

    def start():
        made.append(follow_mod.Follower(_EndedQuery(errors[len(made)]), [f"batch {len(made)}"],
                                        threading.Event(), threading.Lock()))
        return made[-1]
    return start, made


CONNECT_BACK = RuntimeError("[STREAM_FAILED] terminated with exception: Python worker failed to connect back.")


def test_a_transient_failure_restarts_the_query_and_keeps_every_batch():
    start, made = _attempts(CONNECT_BACK, CONNECT_BACK, None)
    seen = []
    follower = follow_mod.run_restarting(start, restarts=3, on_restart=seen.append)
    assert len(made) == 3 and seen == [CONNECT_BACK, CONNECT_BACK]
    assert follower.batches == ["batch 0", "batch 1", "batch 2"]


def test_an_input_failure_or_too_many_transient_ones_are_raised_at_once():
    start, made = _attempts(ValueError("bad record"), None)
    with pytest.raises(ValueError, match="bad record"):
        follow_mod.run_restarting(start, restarts=3)
    assert len(made) == 1
    start, made = _attempts(CONNECT_BACK, CONNECT_BACK, None)
    with pytest.raises(RuntimeError, match="connect back"):
        follow_mod.run_restarting(start, restarts=1)
    assert len(made) == 2
