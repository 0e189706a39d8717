"""Shared by the continuous-mode proofs (tests/test_follow_feed.py): the feeder as a gated thread, a follow
process group killed at commit points or at random times and restarted, and the lake checks "zero lost,
zero doubled, apply equals the truth".

Run as a script (`python tests/follow_proof.py SIM LAKE PROGRESS`), it is the follow process of the
every-format proof: one follow query per simulated vendor format in one Spark application (one JVM: a kill -9
of the process group kills every query at once), until it is killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cdcnorm.lake.store import Lake
from cdcnorm.simulate.feed import FeedPlan, land
from lake_checks import cli_env, wait_group_gone

SAFE_POINTS = ("written", "intent", "committed:changes", "committed:inputs", "committed:runs")
"""Crash points every batch with data reaches (the quarantine points need a quarantined record)."""


class GatedFeeder(threading.Thread):
    """Lands the plan's files one per `interval` seconds, but never more than `allowed`: the test opens the gate
    a little before each follow process starts, so files keep landing while the processes run and die."""

    def __init__(self, out: str | Path, plan: FeedPlan, interval: float):
        super().__init__(daemon=True)
        self.out, self.plan, self.interval = out, plan, interval
        self.allowed = self.landed = 0
        self.landings: list[tuple[str, float, bool]] = []  # (file, landed at, late)
        self._cond = threading.Condition()
        self._halt = threading.Event()

    @property
    def total(self) -> int:
        return len(self.plan.deliveries)

    def allow(self, n: int) -> None:
        with self._cond:
            self.allowed = min(self.total, max(self.allowed, n))
            self._cond.notify_all()

    def run(self) -> None:
        for d in self.plan.deliveries:
            with self._cond:
                self._cond.wait_for(lambda: self.landed < self.allowed or self._halt.is_set())
            if self._halt.is_set():
                return
            self.landings.append((d.rel, land(self.out, d), d.late))
            self.landed += 1
            if self._halt.wait(self.interval):
                return

    def finish(self, timeout: float = 600) -> None:
        """Open the gate fully and wait until every file landed."""
        self.allow(self.total)
        self.join(timeout)
        assert self.landed == self.total, f"feeder stuck at {self.landed}/{self.total}"

    def stop(self) -> None:
        self._halt.set()
        with self._cond:
            self._cond.notify_all()


def progress_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.endswith("}")]


def data_batches(path: Path) -> int:
    """Progress lines of batches that had files (a fresh query may run an empty batch 0 on an empty folder)."""
    return sum(p["status"] != "no_data_files" for p in progress_lines(path))


@dataclass
class Killed:
    how: str  # "at <point>" | "after <s> s" (random time after the process's first batch)
    returncode: int
    seconds: float
    batches: int  # progress lines (batches) this process wrote before it died


@dataclass
class KillLog:
    runs: list[Killed] = field(default_factory=list)

    @property
    def kills(self) -> int:
        return sum(r.returncode == -signal.SIGKILL for r in self.runs)

    def lines(self) -> list[str]:
        return [f"  kill {r.how:<26} rc {r.returncode:>3}  {r.seconds:5.1f} s  {r.batches} batch(es)" for r in self.runs]


def run_killed(cmd: list[str], progress: Path, log: Path, *, point: str | None = None, delay: float | None = None,
               timeout: float = 600, idle: float = 300) -> Killed:
    """Start `cmd` (a follow process) in its own process group and kill -9 the whole group: by the
    `CDCNORM_CRASH_AT` point, or `delay` seconds after the process's first batch with files (of any of its
    queries; `idle` seconds at most: a restart may find nothing left to read). A point not reached
    within `timeout` is a failure, so is a process that ends by itself (follow only ends when stopped)."""
    before, data_before = len(progress_lines(progress)), data_batches(progress)
    t0 = time.monotonic()
    with open(log, "a") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=cli_env(point, quick_jit=True),
                                start_new_session=True)
        try:
            if point is not None:
                code = proc.wait(timeout=timeout)
            else:  # no batch within `idle` seconds: nothing was left to read; killed idle, then
                deadline = time.monotonic() + idle
                while data_batches(progress) == data_before and proc.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.2)
                if proc.poll() is None:
                    time.sleep(delay or 0)
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                code = proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=60)
        survivors = wait_group_gone(proc.pid)
    assert not survivors, f"processes of the killed follow survived: {survivors}"
    assert code == -signal.SIGKILL, f"follow ended by itself (rc {code}): {Path(log).read_text()[-3000:]}"
    how = f"at {point}" if point else f"after {delay:.1f} s"
    return Killed(how, code, time.monotonic() - t0, len(progress_lines(progress)) - before)


def kill_plan(rng: random.Random, kills: int) -> list[tuple[str | None, float | None]]:
    """`kills` kills: half at a named commit point (cycling, so no point repeats back to back), half at a random
    time 0..3 s after the process's first batch; in a random order."""
    points = [(SAFE_POINTS[i % len(SAFE_POINTS)], None) for i in range(kills // 2)]
    timed = [(None, round(rng.uniform(0.0, 3.0), 1)) for _ in range(kills - kills // 2)]
    plan = points + timed
    rng.shuffle(plan)
    for i in range(1, len(plan)):  # a point repeated right after itself would only complete the killed batch
        if plan[i][0] is not None and plan[i][0] == plan[i - 1][0]:
            j = next((k for k in range(i + 1, len(plan)) if plan[k][0] != plan[i][0]), None)
            if j is not None:
                plan[i], plan[j] = plan[j], plan[i]
    return plan


def kill_while_feeding(cmd: list[str], feeder: GatedFeeder, progress: Path, log: Path,
                       kills: int | list[tuple[str | None, float | None]], seed: int) -> KillLog:
    """The proof's loop: before each follow process starts, the gate lets a further share of the files land
    (they land while the process starts and runs); each process is killed (see `run_killed`). A point kill
    needs a batch with data: once every file has landed and was read, the remaining kills are timed. `kills`:
    a number (see `kill_plan`) or the plan itself."""
    rng, out = random.Random(seed), KillLog()
    plan = kill_plan(rng, kills) if isinstance(kills, int) else kills
    for i, (point, delay) in enumerate(plan):
        feeder.allow(max(feeder.allowed + 1, (i + 1) * feeder.total // (len(plan) + 1)))
        if point is not None and feeder.landed >= feeder.total:
            point, delay = None, round(rng.uniform(0.0, 3.0), 1)
        out.runs.append(run_killed(cmd, progress, log, point=point, delay=delay))
    return out


# -- the checks ---------------------------------------------------------------------------------------------
def effective_ids(df: DataFrame) -> DataFrame:
    """Event ids that count: a change named in some row's `supersedes` (an orphan half its pair replaced)
    does not. Lakes without the column have none."""
    ids = df.select("event_id")
    if "supersedes" not in df.columns:
        return ids
    gone = df.where(F.col("supersedes").isNotNull()).select(F.col("supersedes").alias("event_id"))
    return ids.join(gone, "event_id", "left_anti")


@dataclass
class Tally:
    events: int  # distinct effective event ids in the followed lake
    expected: int  # distinct event ids of the batch run
    lost: int  # in the batch run, not in the followed lake
    doubled: int  # rows of the followed lake beyond one per effective event id
    unexpected: int  # effective ids the batch run does not have

    def ok(self) -> bool:
        return self.lost == self.doubled == self.unexpected == 0 and self.events == self.expected > 0


def tally(spark: SparkSession, followed: str, reference: str, where: str | None = None) -> Tally:
    """Zero lost, zero doubled: the followed lake's effective event ids against a batch run's (both lakes at
    their cut; `where` narrows both, e.g. to one stream)."""
    got, ref = Lake(spark, followed).changes(), Lake(spark, reference).changes()
    if where:
        got, ref = got.where(where), ref.where(where)
    ids, want = effective_ids(got), ref.select("event_id")
    distinct = ids.distinct()
    return Tally(events=distinct.count(), expected=want.distinct().count(),
                 lost=want.distinct().exceptAll(distinct).count(), doubled=ids.count() - distinct.count(),
                 unexpected=distinct.exceptAll(want.distinct()).count())


# -- the every-format follow process ------------------------------------------------------------------------
def follow_all(sim: str, lake: str, progress: str) -> None:
    """One follow query per simulated format (stream `e2e-<format>`, the options a user passes), in one JVM,
    until killed. Batches run one at a time across the queries (a lock around the batch pipeline): the proof
    is about crashes, and the test machine has two cores."""
    from cdcnorm.runtime.session import get_spark
    from cdcnorm.simulate import VENDOR_FORMATS, Manifest
    from cdcnorm.simulate.verify import options_for
    from cdcnorm.streaming import follow as follow_mod

    spark = get_spark("local[2]", quiet=True, conf={"spark.python.authenticate.socketTimeout": "120s"})
    manifest = Manifest.load(sim)
    lock, real = threading.Lock(), follow_mod.normalize

    def one_at_a_time(*args, **kwargs):
        with lock:
            return real(*args, **kwargs)

    follow_mod.normalize = one_at_a_time
    write = threading.Lock()

    def report(vf: str):
        def on_batch(p) -> None:
            with write, open(progress, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"format": vf, **p.to_dict()}) + "\n")
        return on_batch

    def start(vf: str):
        f = follow_mod.start_follow([str(manifest.input_dir(vf))], VENDOR_FORMATS[vf][0], lake, spark=spark,
                                    options=options_for(vf, manifest), name=vf, trigger=0.5, settle_seconds=0,
                                    on_batch=report(vf))
        deadline = time.monotonic() + 60
        while f.query.isActive and f.query.status["message"] == "Initializing sources" and time.monotonic() < deadline:
            time.sleep(0.2)
        return f

    # one after the other: eight queries starting their Python source workers at once on a loaded two-core
    # machine miss Spark's fixed connect-back timeout; one that misses it anyway is started again
    followers = {vf: start(vf) for vf in manifest.formats}
    restarts = 0
    while True:
        for vf, f in followers.items():
            if not f.query.isActive:
                exc = f.query.exception()
                if exc is not None and "failed to connect back" in str(exc) and restarts < 10:
                    print(f"query {vf}: a Python worker missed the connect-back timeout; started again", flush=True)
                    restarts += 1
                    followers[vf] = start(vf)
                    continue
                print(f"query {f.query.name} ended: {exc}", flush=True)
                os._exit(3)
        time.sleep(1)


if __name__ == "__main__":
    follow_all(*sys.argv[1:4])
