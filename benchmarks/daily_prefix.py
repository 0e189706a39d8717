"""A daily job over a growing bucket prefix: each day's new Datastream JSON files land under one folder, and
`cdcnorm normalize PREFIX --lake L` runs once a day over the whole prefix, as a scheduled job does.

1. `--days` cold runs (default 30), one per simulated day, each a new process (the command line, JVM start
   included): the files of earlier days are in the lake's input-file ledger and skipped, so a run costs what its
   day's new files cost, not what the history costs. Target: the last run's CPU at most 1.2x the first's (the
   first and last three runs' medians are compared too).
2. A re-run with no new file, cold, against a cold bare Spark job (the same session, `get_spark`) that lists the
   same folder through Hadoop's file system and writes one row, in alternating order, `--repeat` times each.
   Target: at most 1.5x in CPU and in wall (best and median).
CPU is that of the whole process tree (this process reaps the JVM, so its CPU is counted).

Usage: python benchmarks/daily_prefix.py [--days 30] [--per-day 200] [--repeat 3] [--work .bench]
Figures in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from small_file import PR_SET_CHILD_SUBREAPER, timed

TARGET_GROWTH, TARGET_NOTHING_NEW = 1.2, 1.5

COLD_LIST = """
import sys
from cdcnorm.runtime.session import get_spark
spark = get_spark(quiet=True)
jvm = spark.sparkContext._jvm
path = jvm.org.apache.hadoop.fs.Path(sys.argv[1])
it = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).listFiles(path, True)
n = 0
while it.hasNext():
    it.next()
    n += 1
spark.createDataFrame([(n,)], "files long").write.parquet(sys.argv[2])
"""


def land(manifest, vf: str, day: int, prefix: Path, landed: set[Path]) -> int:
    """Copy the files delivered by the end of `day` that are not in the prefix yet; how many landed."""
    root = manifest.input_dir(vf)
    new = [f for f in manifest.delivered_files(vf, until_day=day) if f not in landed]
    for f in new:
        to = prefix / f.relative_to(root)
        to.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, to)
        landed.add(f)
    return len(new)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--days", type=int, default=30, help="simulated days, one cold run each")
    p.add_argument("--per-day", type=int, default=200, help="source changes per day")
    p.add_argument("--repeat", type=int, default=3, help="cold runs of the no-new-file pair")
    p.add_argument("--work", default=".bench")
    args = p.parse_args(argv)
    from cdcnorm.simulate import simulate

    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="daily-", dir=work))
    vf = "datastream-json"
    try:
        manifest = simulate(scratch / "sim", vendors=[vf], tables=2, rows=50, changes=args.days * args.per_day,
                            seed=30, days=args.days, quirks=["duplicates"], rotate=args.per_day // 2)
        prefix, lake = scratch / "bucket", scratch / "lake"
        cmd = [sys.executable, "-m", "cdcnorm", "normalize", str(prefix), "--vendor", "datastream", "--lake", str(lake)]
        env = dict(os.environ)
        landed: set[Path] = set()
        daily: list[dict[str, float]] = []
        for day in range(args.days):
            if not land(manifest, vf, day, prefix, landed):
                continue
            wall, cpu = timed(cmd, env, scratch / f"day-{day}.log")
            daily.append({"day": day, "files": len(landed), "wall": wall, "cpu": cpu})
            print(f"  day {day:2d}: {len(landed):4d} files in the prefix, wall {wall:6.2f} s, CPU {cpu:6.2f} s, "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
        pairs: dict[str, list[tuple[float, float]]] = {"nothing new": [], "list and write one row": []}
        for i in range(args.repeat):
            order = list(pairs) if i % 2 == 0 else list(reversed(pairs))
            for name in order:
                if name == "nothing new":
                    run = timed(cmd, env, scratch / f"again-{i}.log")
                else:
                    run = timed([sys.executable, "-c", COLD_LIST, str(prefix), str(scratch / f"list-{i}")], env,
                                scratch / f"list-{i}.log")
                pairs[name].append(run)
                print(f"  round {i} {name:22s} wall {run[0]:6.2f} s  CPU {run[1]:6.2f} s", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    first, last = daily[0]["cpu"], daily[-1]["cpu"]
    head = statistics.median(d["cpu"] for d in daily[:3])
    tail = statistics.median(d["cpu"] for d in daily[-3:])
    print(f"daily runs: first {first:.2f} CPU s, last {last:.2f} CPU s: {last / first:.2f}x "
          f"(medians of the first and last three: {tail / head:.2f}x; target <= {TARGET_GROWTH}x)")
    result: dict[str, object] = {"daily": daily, "growth": last / first, "growth_medians": tail / head}
    ours, floor = pairs["nothing new"], pairs["list and write one row"]
    for k, what in ((0, "wall"), (1, "CPU")):
        best = min(r[k] for r in ours) / min(r[k] for r in floor)
        median = statistics.median(r[k] for r in ours) / statistics.median(r[k] for r in floor)
        result[f"nothing_new_{what.lower()}"] = {"best": best, "median": median}
        print(f"re-run with no new file / cold Spark job listing the prefix, {what}: {best:.2f}x best, "
              f"{median:.2f}x median (target <= {TARGET_NOTHING_NEW}x)")
    out = work / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"daily-prefix-{int(time.time())}.json").write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
