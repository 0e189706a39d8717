"""A/B of the Python-worker launcher (cdcnorm.runtime.worker_python) on the follow micro-batch, in one process.

Why: `follow_ab.py` alternates source trees, but the workers' interpreter is the session's, set once. Here rounds
alternate `SparkContext.pythonExec` between the plain interpreter and the launcher; the paths source is registered
per query, so each round's streaming planner process starts with that round's interpreter (the UDF daemons of
both are warm after the first rounds). Each round is the micro-batch of `follow_batch.py` (about 1 k Datastream
JSON events, 3 files, a fresh lake created before the clock starts, query start included), then the minimal
availableNow query of `follow_batch.py`; wall and CPU seconds (this process and its children) per round.

Usage: python benchmarks/follow_launcher_ab.py [--warm 5] [--repeat 4] [--events 1000] [--work .bench]
Figures in docs/benchmarks.md ("Continuous mode", session 12).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path
from typing import Any

import bench
import follow_batch

VF = "datastream-json"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    bench.micro_batch_args(p, 5, 4, "untimed rounds per side first")
    args = p.parse_args(argv)
    spark = bench.spark_session("local[*]", "2g")
    from cdcnorm.lake.commit import open_lake
    from cdcnorm.runtime.worker_python import worker_python
    from cdcnorm.simulate import Manifest

    execs = {"plain": sys.executable, "launcher": worker_python(sys.executable)}
    if execs["launcher"] == sys.executable:
        print("no launcher here (cdcnorm.runtime.worker_python): nothing to compare")
        return 1
    print(f"launcher A/B: {execs}; load {os.getloadavg()}", flush=True)
    work = Path(args.work)
    rows = max(1, args.events // 5)
    root = bench.workload(work, VF, args.events - rows, 1, rows, args.seed, 1)
    folder = str(Manifest.load(root).input_dir(VF))
    scratch = bench.fresh_scratch(work, "follow-launcher-ab")
    timed: list[dict[str, Any]] = []
    for i in range(args.warm + args.repeat):
        for side in (("plain", "launcher") if i % 2 == 0 else ("launcher", "plain")):
            spark.sparkContext.pythonExec = execs[side]
            lake = str(scratch / f"{side}-{i}")
            open_lake(spark, lake, create=True)
            res: dict[str, Any] = {"side": side, "load": os.getloadavg()[0]}
            got = bench.measured(res, "batch", lambda lake=lake: follow_batch.follow_query(spark, folder, lake))
            assert [b.status for b in got] == ["committed"], got
            out = str(scratch / f"minimal-{side}-{i}")
            bench.measured(res, "minimal", lambda out=out: follow_batch.minimal_query(spark, folder, out, out + "-ck"))
            warm = i < args.warm
            print(f"  {'warm ' if warm else 'timed'} {i:2d} {side:8s}: {res['batch_s']:5.2f} s "
                  f"{res['batch_cpu']:5.2f} CPU s {({k: round(v, 2) for k, v in res['batch_cpu_by_process'].items()})}; "
                  f"minimal {res['minimal_s']:.2f} s {res['minimal_cpu']:.2f} CPU s; load {res['load']:.1f}", flush=True)
            if not warm:
                timed.append(res)
    floor_s = min(r["minimal_s"] for r in timed)
    floor_cpu = min(r["minimal_cpu"] for r in timed)
    out_: dict[str, Any] = {"args": vars(args), "rounds": timed}
    for side in execs:
        s = out_[side] = bench.min_median(timed, side, ("batch_s", "batch_cpu"))
        other = statistics.median(r["batch_cpu_by_process"].get("other", 0.0) for r in timed if r["side"] == side)
        print(f"{side}: wall min {s['batch_s']['min']:.2f} median {s['batch_s']['median']:.2f} s; CPU min "
              f"{s['batch_cpu']['min']:.2f} median {s['batch_cpu']['median']:.2f} s; other processes (median) "
              f"{other:.2f} s; floor / minimal query's floor (both sides): {s['batch_cpu']['min'] / floor_cpu:.1f}x "
              f"CPU, {s['batch_s']['min'] / floor_s:.1f}x wall", flush=True)
    print(f"results: {bench.save_results(work, 'follow-launcher-ab-', out_)}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
