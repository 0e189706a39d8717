"""Shared by the crash and concurrency tests: a small simulated history, normalize as a killable subprocess
(its whole process group, JVM included), in-process fault injection, and the lake's "nothing lost, nothing
doubled" checks."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import cdcnorm.lake.commit as lake_commit
from cdcnorm.lake.store import Lake
from conftest import ROOT

VENDOR_FORMAT = "datastream-json"
VENDOR = "datastream"
HISTORY = {"tables": 2, "rows": 10, "changes": 60, "seed": 3, "rotate": 12}
"""8 files (4 per table lane): redeliveries land in later files of the same lane."""
BROKEN = '{"uuid": "1", "read_timestamp": \n{"not json at all\n'


@dataclass
class History:
    manifest: object
    files: list[str]  # sorted: a prefix of the list holds the lowest origin uris, like the reference's pick
    broken: str  # a damaged file (one quarantined record)


def simulate_history(root: Path) -> History:
    from cdcnorm.simulate import simulate

    manifest = simulate(root / "sim", vendors=[VENDOR_FORMAT], quirks=None, **HISTORY)
    base = Path(manifest.input_dir(VENDOR_FORMAT))
    files = sorted(str(p) for p in base.rglob("*") if p.is_file())
    broken = root / "damaged" / "public_customers" / "zz_broken.jsonl"
    broken.parent.mkdir(parents=True)
    broken.write_text(BROKEN)
    return History(manifest, files, str(broken))


# -- in-process fault injection ---------------------------------------------------------------------------------
class Crashed(BaseException):
    """Raised at a crash point in-process: like a kill, nothing after it runs (BaseException: no handler eats it)."""


@contextlib.contextmanager
def crash_points(action: Callable[[str], None]) -> Iterator[None]:
    """Run `action(point)` at every crash point of cdcnorm.lake.commit while the block runs."""
    saved = lake_commit.crash_point
    lake_commit.crash_point = action
    try:
        yield
    finally:
        lake_commit.crash_point = saved


def crash_at(point: str) -> Callable[[str], None]:
    def action(name: str) -> None:
        if name == point:
            raise Crashed(point)
    return action


# -- normalize as a subprocess in its own process group ---------------------------------------------------------
@dataclass
class CliRun:
    returncode: int
    seconds: float
    killed_by_timer: bool
    group_seen: set[str] = field(default_factory=set)  # process names seen in its process group
    stderr: str = ""


QUICK_JIT_SUBMIT_ARGS = "--driver-java-options -XX:TieredStopAtLevel=1 pyspark-shell"
"""How a test's short-lived follow process starts its JVM: C1 only, like the command line's small batch runs
(cdcnorm.runtime.small_runs.SMALL_RUN_JVM_OPTIONS). `--follow` keeps the JVM's defaults for users (a long-lived process),
but a test's follow process lives seconds before it is killed, and C2 costs it more than it pays back (a small batch
run of the command line: 42 s of CPU with C2, 26 s without). The JIT changes nothing a crash proof observes."""


def cli_env(crash_at_point: str | None = None, quick_jit: bool = False) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CDCNORM_CRASH_AT"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)
    env["PYSPARK_PYTHON"] = sys.executable
    # no class archive dump (cdcnorm.runtime.jvm_archive): a JVM writing one after the command exits would outlive it,
    # and `run_normalize` asserts that nothing of the process group does
    env["CDCNORM_JVM_ARCHIVE"] = "off"
    if crash_at_point:
        env["CDCNORM_CRASH_AT"] = crash_at_point
    if quick_jit:
        env["PYSPARK_SUBMIT_ARGS"] = QUICK_JIT_SUBMIT_ARGS
    return env


def group_members(session: int) -> dict[int, str]:
    """Live (non-zombie) processes of a session: pid -> name (a session started with start_new_session)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] != "Z" and int(fields[3]) == session:  # state, ppid, pgrp, session
            found[int(entry)] = name
    return found


def wait_group_gone(session: int, timeout: float = 30) -> dict[int, str]:
    """Wait until no process of the session is alive; returns the survivors (empty when all are gone)."""
    deadline = time.monotonic() + timeout
    while (left := group_members(session)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def run_normalize(inputs: list[str], lake: str, *args: str, crash_at_point: str | None = None,
                  kill_after: float | None = None, log: Path | None = None, timeout: float = 900,
                  argv: list[str] | None = None) -> CliRun:
    """`python -m cdcnorm normalize INPUTS --lake L --vendor V` in its own process group; optionally killed
    (SIGKILL to the whole group) by `CDCNORM_CRASH_AT` or by a timer after `kill_after` seconds. Asserts that
    no process of the group (the JVM included) survives the run."""
    cmd = argv or [sys.executable, "-m", "cdcnorm"]
    cmd = [*cmd, "normalize", *inputs, "--lake", lake, "--vendor", VENDOR, *args]
    log = log or Path(lake + f".{time.monotonic_ns()}.log")
    t0 = time.monotonic()
    with open(log, "w+") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=cli_env(crash_at_point),
                                cwd=ROOT, start_new_session=True)
        seen: set[str] = set()
        done = threading.Event()
        fired = threading.Event()

        def watch() -> None:  # what runs in the group (proves the JVM was there to be killed)
            while not done.is_set():
                seen.update(group_members(proc.pid).values())
                done.wait(0.5)

        def kill() -> None:
            fired.set()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        timer = threading.Timer(kill_after, kill) if kill_after is not None else None
        if timer:
            timer.start()
        try:
            code = proc.wait(timeout=timeout)
        finally:
            if timer:
                timer.cancel()
            done.set()
            watcher.join()
        survivors = wait_group_gone(proc.pid)
        assert not survivors, f"processes of the killed normalize survived: {survivors}"
        out.seek(0)
        text = out.read()
    return CliRun(code, time.monotonic() - t0, fired.is_set() and code == -signal.SIGKILL, seen, text)


# -- the lake checks --------------------------------------------------------------------------------------------
def as_json(df: DataFrame, drop: tuple[str, ...] = ()) -> DataFrame:
    """Rows as JSON text (VARIANT columns cannot be compared or grouped; their JSON can)."""
    return df.select(F.to_json(F.struct(*[F.col(f"`{c}`") for c in df.columns if c not in drop])).alias("j"))


def same_rows(a: DataFrame, b: DataFrame) -> tuple[int, int]:
    """Rows only in `a`, rows only in `b` (as multisets)."""
    return a.exceptAll(b).count(), b.exceptAll(a).count()


def intents_left(lake: str) -> list[str]:
    return sorted(p.name for p in (Path(lake) / lake_commit.INTENTS).glob("*.json"))


def missing_data_files(lk: Lake) -> list[str]:
    """Files referenced by any table's log that are not on disk."""
    return [f["uri"] for t in lk.tables.values() for f in t.live() if not os.path.exists(f["uri"])]


def check_lake(spark: SparkSession, lake: str) -> dict[str, int]:
    """Invariants of a lake at rest: no duplicate event id, reports reconcile and account for every row, no
    intent left, no commit outside the cut, every logged file on disk. Returns figures for the caller."""
    lk = Lake(spark, lake)
    changes = lk.changes()
    rows, ids = changes.count(), changes.select("event_id").distinct().count()
    assert rows == ids > 0, f"{rows} rows but {ids} distinct event ids"
    assert lk.changes(latest=True).count() == rows, "committed changes outside the cut (a run without report)"
    reports = lk.run_reports()
    assert reports and all(r["reconciled"] for r in reports), [r["run_id"] for r in reports if not r["reconciled"]]
    assert sum(r["rows_written"] for r in reports) == rows
    assert intents_left(lake) == []
    assert missing_data_files(lk) == []
    return {"rows": rows, "runs": len(reports), "quarantine": lk.quarantine().count()}


def check_same_as(spark: SparkSession, lake: str, changes: DataFrame, quarantine: DataFrame) -> None:
    """The lake holds exactly the reference's changes and unresolved quarantine (rows compared as JSON; the
    reference is a clean run's lake or in-memory result)."""
    got = Lake(spark, lake)
    assert same_rows(got.changes().select("event_id"), changes.select("event_id")) == (0, 0)
    assert same_rows(as_json(got.changes()), as_json(changes)) == (0, 0)
    assert quarantine.count() == 1
    assert same_rows(as_json(got.quarantine(), ("quarantined_at",)), as_json(quarantine, ("quarantined_at",))) == (0, 0)


def check_same_as_lake(spark: SparkSession, lake: str, reference: str) -> None:
    ref = Lake(spark, reference)
    check_same_as(spark, lake, ref.changes(), ref.quarantine())


def check_truth(spark: SparkSession, lake: str, history: History) -> None:
    """`cdcnorm.apply` of the lake equals the simulator's ground truth."""
    from cdcnorm.simulate.verify import check_format
    from cdcnorm.state import apply

    frames = apply(spark, lake, write=False)
    assert check_format(frames, history.manifest, VENDOR_FORMAT, natural=True) == []


def applied_state(spark: SparkSession, lake: str, meta: bool = False) -> set[str]:
    """The write-less applied state of every table of `lake`, one `table:JSON` text per row; `meta` keeps the
    `_cdc` columns (which differ between lakes that reached one state by different runs)."""
    from cdcnorm.state.build import apply

    result = apply(spark, lake, write=False)
    out = set()
    for tid, frame in result.items():
        cols = [c for c in frame.columns if meta or not c.startswith("_")]
        for r in frame.select(F.to_json(F.struct(*[F.col(f"`{c}`") for c in cols])).alias("j")).collect():
            out.add(f"{tid}:{r['j']}")
    result.unpersist()
    return out
