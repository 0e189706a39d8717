"""The writer lock where it still applies (`apply`, `quarantine retry`): it refuses a second writer, takes over a
dead one's lock. normalize does not take it (its commits are safe concurrently: tests/test_lake_concurrency.py)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from cdcnorm.lake.lock import LOCK, LakeBusy, holds_lock, taken_over, writer_lock
from cdcnorm.runtime.fs import HadoopFS
from conftest import SAMPLES


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _write_lock(lake, **fields) -> None:
    lake.mkdir(parents=True, exist_ok=True)
    doc = {"run_id": "R-old", "command": "apply", "host": socket.gethostname(), "pid": os.getpid(),
           "started_at": "2026-01-01T00:00:00+00:00", "token": "t0", **fields}
    (lake / LOCK).write_text(json.dumps(doc))


def test_lock_refuses_a_live_holder_takes_over_a_dead_one_and_releases(spark, tmp_path):
    lake = tmp_path / "lake"
    fs = HadoopFS(spark, str(lake))
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _write_lock(lake, pid=sleeper.pid)
        with pytest.raises(LakeBusy, match=r"being written by another writer: run R-old \(apply\) on host .*"
                                           rf"pid {sleeper.pid}.*delete .*{LOCK}"), writer_lock(fs, str(lake), "test"):
            pass
    finally:
        sleeper.kill()
        sleeper.wait()
    assert json.loads((lake / LOCK).read_text())["pid"] == sleeper.pid  # a refused writer leaves the lock alone

    _write_lock(lake, pid=_dead_pid())
    with writer_lock(fs, str(lake), "test", run_id="R-new") as info:
        held = json.loads((lake / LOCK).read_text())
        assert held["run_id"] == "R-new" and held["pid"] == os.getpid() and held["token"] == info["token"]
        assert taken_over(str(lake))["run_id"] == "R-old"
        assert taken_over(str(lake))["reason"] == "its process is gone"
        with writer_lock(fs, str(lake), "nested"):  # re-entrant within a process (retry -> normalize)
            assert holds_lock(str(lake))
        assert holds_lock(str(lake))
    assert not (lake / LOCK).exists() and not holds_lock(str(lake))
    assert not [p for p in lake.iterdir() if p.name.startswith(LOCK)]  # no stale copy left aside


def test_apply_and_quarantine_retry_are_refused_while_another_host_holds_the_lock(spark, tmp_path):
    import cdcnorm
    from cdcnorm.ingest.retry import retry_quarantine
    from cdcnorm.lake.store import Lake

    lake = tmp_path / "lake"
    Lake(spark, str(lake), create=True)
    _write_lock(lake, host="some-other-host", pid=1)
    for write in (lambda: cdcnorm.apply(spark, str(lake)), lambda: retry_quarantine(spark, str(lake))):
        with pytest.raises(LakeBusy, match="host some-other-host"):
            write()
    assert json.loads((lake / LOCK).read_text())["host"] == "some-other-host"  # left alone
    assert not (lake / "current").exists()
    fs = HadoopFS(spark, str(lake))
    with writer_lock(fs, str(lake), "test", break_lock=True):
        assert taken_over(str(lake))["reason"] == "broken on request"
    assert not (lake / LOCK).exists()


@pytest.mark.slow
def test_normalize_commits_while_another_writer_holds_the_lock(spark, tmp_path):
    """normalize does not take the writer lock: a lock held by a live process does not stop it."""
    import cdcnorm
    from cdcnorm.lake.store import Lake

    lake = tmp_path / "lake"
    Lake(spark, str(lake), create=True)
    _write_lock(lake, host="some-other-host", pid=1)
    report = cdcnorm.normalize(str(SAMPLES / "datastream"), "datastream", spark=spark, lake=str(lake)).report
    assert report["rows_written"] > 0 and Lake(spark, str(lake)).committed_runs() == [report["run_id"]]
    assert json.loads((lake / LOCK).read_text())["host"] == "some-other-host"
