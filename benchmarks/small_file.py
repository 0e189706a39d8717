"""The fixed cost of one small run: a 3-message Datastream JSON file through `cdcnorm normalize`, cold and warm,
against a cold Spark job writing 3 rows (the least any Spark job costs).

1. Cold: a new process runs `cdcnorm normalize FILE --lake L` (the command line, JVM start included) against a new
   process that starts the same Spark session (`cdcnorm.runtime.session.get_spark`) and writes 3 rows to Parquet,
   in rotating order, `--repeat` times each; wall from start to exit and CPU of the whole process tree (this
   process reaps the JVM, which outlives the command by a moment, so its CPU is counted). The fastest of each and
   the median are reported as wall ratios (target <= 1.5x).
2. Warm: in one process, after two untimed runs, `cdcnorm.normalize` of the same file into a fresh lake, with the
   Spark jobs it ran counted (job group + status tracker; target <= 10).

Options for comparisons: `--ab REV` adds the command line of git revision REV (checked out in a temporary
worktree) to the cold rotation; `--variant NAME=ENV_JSON` adds the command line run with those environment
variables (e.g. `'nocds={"CDCNORM_JVM_ARCHIVE": "off"}'`). `--timeline` instead runs one cold command with its
main steps time-stamped from process start, and Spark's jobs from its event log.

Usage: python benchmarks/small_file.py [--repeat 5] [--work .bench] [--ab REV] [--variant NAME=ENV_JSON ...]
       python benchmarks/small_file.py --timeline
Figures in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples/datastream/shop_orders/2025/01/21/11/05"
TARGET_WALL, TARGET_JOBS = 1.5, 10
PR_SET_CHILD_SUBREAPER = 36

COLD_SPARK = """
import sys
from cdcnorm.runtime.session import get_spark
spark = get_spark(quiet=True)
spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "id long, v string").write.parquet(sys.argv[1])
"""

WARM = """
import json, sys, tempfile
from cdcnorm.ingest.pipeline import normalize
from cdcnorm.runtime.session import get_spark
spark = get_spark(quiet=True)
sc = spark.sparkContext
for i in range(3):
    sc.setJobGroup(f"small-{i}", "small file")
    report = normalize([sys.argv[1]], "datastream", spark=spark, lake=tempfile.mkdtemp() + "/lake").report
    jobs = len(sc.statusTracker().getJobIdsForGroup(f"small-{i}"))
print(json.dumps({"jobs": jobs, "rows": report["rows_written"], "reconciled": report["reconciled"]}))
"""

TIMELINE_STEPS = [
    ("cdcnorm.runtime.session", "get_spark"), ("cdcnorm.streaming.follow", "normalize_once"),
    ("cdcnorm.streaming.paths_source", "register"), ("cdcnorm.streaming.follow", "paths_stream"),
    ("cdcnorm.streaming.follow", "_start"), ("cdcnorm.streaming.follow", "_files_batch"),
    ("cdcnorm.ingest.pipeline", "_stage"), ("cdcnorm.ingest.pipeline", "pair_across_runs"),
    ("cdcnorm.ingest.pipeline", "aggregate_figures"), ("cdcnorm.lake.commit", "stage"),
    ("cdcnorm.lake.commit", "commit_run"), ("cdcnorm.cli.normalize", "print_report")]
"""(module, function) wrapped with time stamps by `--timeline`; a name a tree lacks is skipped."""

TIMELINE_CHILD = """
import atexit, functools, importlib, os, sys, time
t0 = float(os.environ["TIMELINE_T0"])
def mark(what): print(f"{time.time() - t0:8.2f} {what}", file=sys.__stderr__, flush=True)
mark("python started")
atexit.register(lambda: mark("last atexit handler"))
import cdcnorm.runtime.session as session
get_spark = session.get_spark
def with_event_log(master=None, app_name="cdcnorm", conf=None, quiet=False):
    conf = {**(conf or {}), "spark.eventLog.enabled": "true", "spark.eventLog.compress": "false",
            "spark.eventLog.dir": os.environ["TIMELINE_EVENTS"]}
    return get_spark(master, app_name, conf, quiet)
session.get_spark = with_event_log
for module, name in STEPS:
    mod = importlib.import_module(module)
    fn = getattr(mod, name, None)
    if fn is None:
        continue
    def wrapped(*a, __fn=fn, __name=f"{module}.{name}", **k):
        mark(f"> {__name}")
        try:
            return __fn(*a, **k)
        finally:
            mark(f"< {__name}")
    setattr(mod, name, functools.wraps(fn)(wrapped))
mark("modules imported")
from cdcnorm.cli.program import main
main()
"""


def three_message_file(work: Path) -> Path:
    """The first 3 messages of a sample Datastream JSON file, in the same folder layout."""
    source = next(SAMPLE.glob("*mysql-cdc-binlog*.jsonl"))
    folder = work / "small" / "shop_orders" / "2025" / "01" / "21" / "11" / "05"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / source.name
    lines = [line for line in source.read_text().splitlines(keepends=True) if line.strip()]
    target.write_text("".join(lines[:3]))
    return target


def reap() -> None:
    """Wait for every orphaned descendant (the JVM, Spark's Python daemons) so that their CPU is counted."""
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def timed(cmd: list[str], env: dict[str, str], log: Path) -> tuple[float, float]:
    """(wall seconds from start to exit, CPU seconds of the process tree) of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with log.open("w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT, env=env)
        if proc.wait() != 0:
            raise SystemExit(f"{' '.join(cmd[:4])} failed: see {log}")
    wall = time.perf_counter() - start
    reap()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def with_path(src: Path | None) -> dict[str, str]:
    """This process's environment, with `src` first on PYTHONPATH when given."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def timeline(path: Path, scratch: Path) -> int:
    """One cold `cdcnorm normalize` of the file, its main steps and Spark jobs as seconds from process start."""
    (scratch / "events").mkdir()
    t0 = time.time()
    env = {**os.environ, "TIMELINE_T0": repr(t0), "TIMELINE_EVENTS": str(scratch / "events")}
    code = f"STEPS = {TIMELINE_STEPS!r}\n{TIMELINE_CHILD}"
    res = subprocess.run([sys.executable, "-c", code, "normalize", str(path), "--vendor", "datastream", "--lake",
                          str(scratch / "lake")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         cwd=ROOT, env=env)
    lines = [(float(line[:8]), line[9:]) for line in res.stderr.splitlines()
             if line[:8].strip().replace(".", "").isdigit()]
    lines.append((time.time() - t0, f"process exited ({res.returncode})"))
    started: dict[int, float] = {}
    for log in (scratch / "events").rglob("events*"):
        for raw in log.read_text().splitlines():
            e = json.loads(raw)
            if e["Event"] == "SparkListenerJobStart":
                started[e["Job ID"]] = e["Submission Time"]
                lines.append((e["Submission Time"] / 1000 - t0,
                              f"  job {e['Job ID']} starts ({len(e['Stage Infos'])} stages)"))
            elif e["Event"] == "SparkListenerJobEnd":
                dur = (e["Completion Time"] - started[e["Job ID"]]) / 1000
                lines.append((e["Completion Time"] / 1000 - t0, f"  job {e['Job ID']} ends ({dur:.2f} s)"))
            elif e["Event"] == "SparkListenerApplicationStart":
                lines.append((e["Timestamp"] / 1000 - t0, "  SparkContext started"))
    print(f"load average {os.getloadavg()[0]:.1f}; seconds from process start "
          "(the wrapping imports the run's modules before the JVM starts; the command overlaps them with it)")
    print("\n".join(f"{t:8.2f} {what}" for t, what in sorted(lines)))
    return res.returncode


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=5, help="cold runs of each command")
    p.add_argument("--work", default=".bench")
    p.add_argument("--ab", metavar="REV", help="also time the command line of git revision REV (temporary worktree)")
    p.add_argument("--variant", action="append", default=[], metavar="NAME=ENV_JSON",
                   help="also time the command line with these environment variables (repeatable)")
    p.add_argument("--timeline", action="store_true", help="instead: one cold run's steps and Spark jobs, timed")
    args = p.parse_args(argv)
    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    path = three_message_file(work)
    scratch = Path(tempfile.mkdtemp(prefix="small-", dir=work))
    if args.timeline:
        try:
            return timeline(path, scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    with contextlib.ExitStack() as stack:
        commands: dict[str, dict[str, str] | None] = {"floor": None, "ours": with_path(None)}
        if args.ab:
            import bench

            commands[args.ab] = with_path(stack.enter_context(bench.revision_tree(args.ab)))
        for v in args.variant:
            name, _, env = v.partition("=")
            commands[name] = {**os.environ, **json.loads(env or "{}")}
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        names = list(commands)
        try:
            for i in range(args.repeat):
                for name in names[i % len(names):] + names[:i % len(names)]:
                    env = commands[name]
                    if env is None:
                        cmd = [sys.executable, "-c", COLD_SPARK, str(scratch / f"floor-{i}")]
                    else:
                        cmd = [sys.executable, "-m", "cdcnorm", "normalize", str(path), "--vendor", "datastream",
                               "--lake", str(scratch / f"lake-{name}-{i}")]
                    runs[name].append(timed(cmd, env or dict(os.environ), scratch / f"{name}-{i}.log"))
                    print(f"  round {i} {name:10s} wall {runs[name][-1][0]:6.2f} s  CPU {runs[name][-1][1]:6.2f} s  "
                          f"load {os.getloadavg()[0]:.1f}", flush=True)
            warm = json.loads(subprocess.run([sys.executable, "-c", WARM, str(path)], check=True, capture_output=True,
                                             text=True, cwd=ROOT).stdout.strip().splitlines()[-1])
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    walls = {name: [w for w, _ in r] for name, r in runs.items()}
    floor = walls["floor"]
    result: dict[str, object] = {"runs": runs, "warm": warm}
    for name, w in walls.items():
        cpu = [c for _, c in runs[name]]
        best, median = min(w) / min(floor), statistics.median(w) / statistics.median(floor)
        result[name] = {"ratio_best": best, "ratio_median": median}
        print(f"3-message file, cold process, {name}: wall {min(w):.2f} s best, {statistics.median(w):.2f} s median; "
              f"CPU {min(cpu):.2f} / {statistics.median(cpu):.2f} s"
              + ("" if name == "floor" else f": {best:.2f}x best, {median:.2f}x median the cold Spark job"
                 + (f" (target <= {TARGET_WALL}x)" if name == "ours" else "")))
    print(f"warm normalize of the same file: {warm['jobs']} Spark jobs (target <= {TARGET_JOBS}), "
          f"{warm['rows']} rows, reconciled {warm['reconciled']}")
    out = work / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"small-file-{int(time.time())}.json").write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
