"""Where a cold `cdcnorm normalize` of the 3-message file spends its wall time: a timeline from process start.

A child process runs the command line with the main steps of `cdcnorm.streaming.follow`, `cdcnorm.ingest.pipeline` and
`cdcnorm.lake.commit` wrapped to print time stamps (seconds since the child was started), and Spark's event log
on; the parent adds the Spark jobs (submission, duration, stages) and the process's exit. Figures of one run
under the load of the moment: docs/benchmarks.md ("Cold start"). (The wrapping imports the run's modules before
the JVM starts; the command itself imports them while it starts.)

Usage: python benchmarks/cold_timeline.py [--work .bench]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from small_file import ROOT, three_message_file  # noqa: E402

STEPS = [("cdcnorm.runtime.session", "get_spark"), ("cdcnorm.streaming.follow", "normalize_once"),
         ("cdcnorm.streaming.paths_source", "register"), ("cdcnorm.streaming.follow", "paths_stream"),
         ("cdcnorm.streaming.follow", "_start"), ("cdcnorm.streaming.follow", "_files_batch"),
         ("cdcnorm.ingest.pipeline", "_stage"), ("cdcnorm.ingest.pipeline", "pair_across_runs"), ("cdcnorm.ingest.pipeline", "aggregate_figures"),
         ("cdcnorm.lake.commit", "stage"), ("cdcnorm.lake.commit", "commit_run"),
         ("cdcnorm.cli.normalize", "print_report")]

CHILD = """
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
    fn = getattr(mod, name)
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


def jobs(events: Path, t0: float) -> list[str]:
    """The Spark jobs of an event log, as timeline lines (seconds since the child started)."""
    out, started = [], {}
    for line in events.read_text().splitlines():
        e = json.loads(line)
        if e["Event"] == "SparkListenerJobStart":
            started[e["Job ID"]] = e["Submission Time"]
            out.append((e["Submission Time"] / 1000 - t0, f"  job {e['Job ID']} starts ({len(e['Stage Infos'])} stages)"))
        elif e["Event"] == "SparkListenerJobEnd":
            dur = (e["Completion Time"] - started[e["Job ID"]]) / 1000
            out.append((e["Completion Time"] / 1000 - t0, f"  job {e['Job ID']} ends ({dur:.2f} s)"))
        elif e["Event"] == "SparkListenerApplicationStart":
            out.append((e["Timestamp"] / 1000 - t0, "  SparkContext started"))
    return [f"{t:8.2f} {what}" for t, what in out]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", default=".bench")
    args = p.parse_args(argv)
    work = Path(args.work).resolve()
    path = three_message_file(work)
    scratch = Path(tempfile.mkdtemp(prefix="timeline-", dir=work))
    (scratch / "events").mkdir()
    t0 = time.time()
    env = {**os.environ, "TIMELINE_T0": repr(t0), "TIMELINE_EVENTS": str(scratch / "events")}
    code = f"STEPS = {STEPS!r}\n{CHILD}"
    res = subprocess.run([sys.executable, "-c", code, "normalize", str(path), "--vendor", "datastream", "--lake",
                          str(scratch / "lake")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         cwd=ROOT, env=env)
    lines = [line for line in res.stderr.splitlines() if line[:8].strip().replace(".", "").isdigit()]
    lines.append(f"{time.time() - t0:8.2f} process exited ({res.returncode})")
    for log in (scratch / "events").rglob("events*"):
        lines += jobs(log, t0)
    print(f"load average {os.getloadavg()[0]:.1f}")
    print("\n".join(sorted(lines, key=lambda s: float(s[:8]))))
    return res.returncode


if __name__ == "__main__":
    sys.exit(main())
