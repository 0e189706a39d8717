"""Alternating cold runs of the 3-message file: `cdcnorm normalize` variants (each a set of environment variables)
and the cold Spark job of `small_file.py`, in rotating order; wall from start to exit and CPU of the whole process
tree (this process becomes a sub-reaper, so the JVM, which outlives the command by a moment, is reaped and
counted). Figures: docs/benchmarks.md ("Cold start (session 13)").

Usage: python benchmarks/cold_ab.py [--rounds 4] [--work .bench] NAME=ENV_JSON ...
  e.g. 'main={"PYTHONPATH": "/path/to/main/src"}' 'branch={}' 'floor={}'   (a name starting `floor`: the Spark job)
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from small_file import COLD_SPARK, ROOT, three_message_file

PR_SET_CHILD_SUBREAPER = 36


def reap() -> None:
    """Wait for every orphaned descendant (the JVM, Spark's Python daemons) so their CPU is counted."""
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def run(cmd: list[str], env: dict[str, str], log: Path) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with log.open("w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT, env=env)
        if proc.wait() != 0:
            raise SystemExit(f"{cmd[:4]} failed: see {log}")
    wall = time.perf_counter() - start
    reap()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--work", default=".bench")
    p.add_argument("variants", nargs="+", help="NAME=ENV_JSON")
    args = p.parse_args(argv)
    variants = [(name, json.loads(env or "{}")) for name, _, env in (v.partition("=") for v in args.variants)]
    base = Path(args.work).resolve()
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="cold-ab-", dir=base))
    path = three_message_file(work)
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name, _ in variants}
    for i in range(args.rounds):
        for name, env in variants[i % len(variants):] + variants[:i % len(variants)]:
            if name.startswith("floor"):
                cmd = [sys.executable, "-c", COLD_SPARK, str(work / f"{name}-{i}")]
            else:
                cmd = [sys.executable, "-m", "cdcnorm", "normalize", str(path), "--vendor", "datastream", "--lake",
                       str(work / f"lake-{name}-{i}")]
            wall, cpu = run(cmd, {**os.environ, **env}, work / f"{name}-{i}.log")
            load = os.getloadavg()[0]
            results[name].append((wall, cpu, load))
            print(f"round {i} {name:10s} wall {wall:6.2f} s  CPU {cpu:6.2f} s  load {load:.1f}", flush=True)
    for name, rows in results.items():
        walls, cpus = [r[0] for r in rows], [r[1] for r in rows]
        print(f"{name:10s} wall best {min(walls):6.2f} median {statistics.median(walls):6.2f}   CPU best "
              f"{min(cpus):6.2f} median {statistics.median(cpus):6.2f}   load {min(r[2] for r in rows):.1f} to "
              f"{max(r[2] for r in rows):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
