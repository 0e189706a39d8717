"""A/B of the follow micro-batch between two source trees of cdcnorm, in one process on one warm JVM.

Why: on a shared machine the load moves more between two runs than a change moves a micro-batch's cost, so
comparing two benchmark runs compares two loads. Here rounds alternate between the two trees (`--a`, `--b`:
folders holding the `cdcnorm` package) in one process: before each round the `cdcnorm` modules are dropped and
imported again from that round's tree, on the same Spark session (the JVM's compiled code is shared, so both
sides are equally warm). Only driver-side code differs between the sides: the Python workers import `cdcnorm`
once, from the tree first on PYTHONPATH, so the trees must agree on worker-side code (decoders, the paths
source). Each round is the micro-batch of `follow_batch.py` (about 1 k Datastream JSON events, 3 files, a fresh
lake created before the clock starts); per round: wall and CPU seconds (this process, the JVM, Python workers),
Spark jobs, and Delta commits (the lake's table versions after it).

Usage: python benchmarks/follow_ab.py --a ../main/src --b src [--warm 12] [--repeat 4] [--events 1000]
Results: WORK/results/follow-ab-<timestamp>.json; figures in docs/benchmarks.md ("Continuous mode").
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import bench

VF = "datastream-json"


def use_tree(src: str) -> None:
    """Import `cdcnorm` from `src` from now on (the modules of the other tree are dropped)."""
    for name in [m for m in sys.modules if m == "cdcnorm" or m.startswith("cdcnorm.")]:
        del sys.modules[name]
    sys.path[:] = [p for p in sys.path if p not in (_TREES.values())]
    sys.path.insert(0, src)


_TREES: dict[str, str] = {}


def one_round(spark, side: str, folder: str, lake: str) -> dict[str, Any]:
    use_tree(_TREES[side])
    from cdcnorm.lake.commit import open_lake
    from cdcnorm.lake.store import Lake
    from cdcnorm.streaming.follow import follow

    open_lake(spark, lake, create=True)  # creating the lake's tables is not the micro-batch's cost
    dag = spark.sparkContext._jsc.sc().dagScheduler()
    jobs0 = dag.nextJobId()
    res: dict[str, Any] = {"side": side, "load": os.getloadavg()[0]}
    got = bench.measured(res, "batch", lambda: follow([folder], "datastream", lake, spark=spark, settle_seconds=0,
                                                       options={"stream": f"bench-{VF}"}))
    assert [b.status for b in got] == ["committed"], got
    res["jobs"] = dag.nextJobId() - jobs0
    lk = Lake(spark, lake)
    res["commits"] = {name: t.version() for name, t in lk.tables.items()}
    res["rows_written"], res["records"] = got[0].rows_written, got[0].records
    return res


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--a", required=True, help="folder holding the base `cdcnorm` package")
    p.add_argument("--b", required=True, help="folder holding the changed `cdcnorm` package")
    bench.micro_batch_args(p, 12, 4, "untimed rounds per side first (steady state)")
    args = p.parse_args(argv)
    _TREES.update(a=os.path.abspath(args.a), b=os.path.abspath(args.b))
    work = Path(args.work)
    print(f"follow A/B: {_TREES}; {os.cpu_count()} cores, load {os.getloadavg()}", flush=True)
    spark = bench.spark_session("local[*]", "2g")
    use_tree(_TREES["b"])
    from cdcnorm.simulate import Manifest

    root = bench.workload(work, VF, args.events - max(1, args.events // 5), 1, max(1, args.events // 5), args.seed, 1)
    folder = str(Manifest.load(root).input_dir(VF))
    scratch = bench.fresh_scratch(work, "follow-ab")
    timed: list[dict[str, Any]] = []
    for i in range(args.warm + args.repeat):
        for side in (("a", "b") if i % 2 == 0 else ("b", "a")):
            r = one_round(spark, side, folder, str(scratch / f"{side}-{i}"))
            warm = i < args.warm
            print(f"  {'warm ' if warm else 'timed'} {i:2d} {side}: {r['batch_s']:5.2f} s {r['batch_cpu']:5.2f} CPU s, "
                  f"{r['jobs']} jobs, commits {sum(r['commits'].values())} {r['commits']}, load {r['load']:.1f}",
                  flush=True)
            if not warm:
                timed.append(r)
    out: dict[str, Any] = {"args": vars(args), "rounds": timed}
    for side in ("a", "b"):
        out[side] = bench.min_median(timed, side, ("batch_s", "batch_cpu", "jobs"))
        out[side]["commits"] = next(r["commits"] for r in timed if r["side"] == side)
        print(f"{side} ({_TREES[side]}): wall min {out[side]['batch_s']['min']:.2f} median "
              f"{out[side]['batch_s']['median']:.2f} s; CPU min {out[side]['batch_cpu']['min']:.2f} median "
              f"{out[side]['batch_cpu']['median']:.2f} s; jobs {out[side]['jobs']['median']}", flush=True)
    print(f"results: {bench.save_results(work, 'follow-ab-', out)}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
