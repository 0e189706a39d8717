"""One writer per lake: the writer lock refuses a second writer, takes over a dead one's lock, and guards cleanup."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from cdcnorm.errors import LakeError
from cdcnorm.fs import HadoopFS
from cdcnorm.lake_lock import LOCK, LakeBusy, holds_lock, taken_over, writer_lock
from conftest import ROOT, SAMPLES


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _write_lock(lake, **fields) -> None:
    lake.mkdir(parents=True, exist_ok=True)
    doc = {"run_id": "R-old", "command": "normalize", "host": socket.gethostname(), "pid": os.getpid(),
           "started_at": "2026-01-01T00:00:00+00:00", "token": "t0", **fields}
    (lake / LOCK).write_text(json.dumps(doc))


def test_lock_refuses_a_live_holder_takes_over_a_dead_one_and_releases(spark, tmp_path):
    lake = tmp_path / "lake"
    fs = HadoopFS(spark, str(lake))
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _write_lock(lake, pid=sleeper.pid)
        with pytest.raises(LakeBusy, match=r"being written by another writer: run R-old \(normalize\) on host .*"
                                           rf"pid {sleeper.pid}.*--break-lock"), writer_lock(fs, str(lake), "test"):
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


def test_other_hosts_lock_needs_break_lock_and_cleanup_needs_the_lock(spark, tmp_path):
    from cdcnorm.lake import Lake

    lake = tmp_path / "lake"
    _write_lock(lake, host="some-other-host", pid=1)
    fs = HadoopFS(spark, str(lake))
    with pytest.raises(LakeBusy, match="host some-other-host"), writer_lock(fs, str(lake), "test"):
        pass
    with writer_lock(fs, str(lake), "test", break_lock=True):
        assert taken_over(str(lake))["reason"] == "--break-lock"
    lk = Lake(spark, str(lake), create=True)
    with pytest.raises(LakeError, match="writer lock"):
        lk.cleanup_uncommitted()


def _normalize_cli(lake: str, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.Popen([sys.executable, "-m", "cdcnorm.cli", "normalize", str(SAMPLES / "datastream"),
                             "--vendor", "datastream", "--lake", lake, "--master", "local[1]", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)


@pytest.mark.slow
def test_two_concurrent_normalize_runs_one_commits_the_other_is_refused(spark, tmp_path):
    import cdcnorm

    lake = str(tmp_path / "lake")
    first = _normalize_cli(lake)
    deadline = time.time() + 120
    while not os.path.exists(os.path.join(lake, LOCK)) and first.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    second = _normalize_cli(lake)  # starts while the first holds the lock
    out1, err1 = first.communicate(timeout=300)
    out2, err2 = second.communicate(timeout=300)
    codes = sorted((first.returncode, second.returncode))
    assert codes == [0, 3], (err1, err2)
    refused = err2 if second.returncode else err1
    lines = [line for line in refused.splitlines() if line.strip()]
    assert len(lines) == 1 and "is being written by another writer" in lines[0], refused
    changes = cdcnorm.read_changes(spark, lake)
    assert changes.count() == changes.select("event_id").distinct().count() > 0
    assert len(list((tmp_path / "lake" / "runs").glob("*.json"))) == 1 and not os.path.exists(os.path.join(lake, LOCK))

    _write_lock(tmp_path / "lake", pid=_dead_pid())  # a crashed writer's lock: taken over, and said so
    third = _normalize_cli(lake)
    out3, err3 = third.communicate(timeout=300)
    assert third.returncode == 0, err3
    assert "took over the lake's writer lock of run R-old" in err3
    changes = cdcnorm.read_changes(spark, lake)
    assert changes.count() == changes.select("event_id").distinct().count()
    reports = [json.loads(p.read_text()) for p in (tmp_path / "lake" / "runs").glob("*.json")]
    assert [r["lock_taken_over"]["run_id"] for r in reports if "lock_taken_over" in r] == ["R-old"]
