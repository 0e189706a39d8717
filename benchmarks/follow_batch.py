"""The cost of one continuous-mode micro-batch against a minimal `availableNow` query over the same files, and
the latency from a file landing to its rows committed.

1. Cost. A simulated Datastream JSON workload of about 1 k events (`--events`, quirks off, a few files) is read,
   on a warm JVM, by two `availableNow` queries over the same folder, alternating which goes first:
   - the follow query (`cdcnorm.streaming.follow.follow`): the stream of paths, one micro-batch that normalizes
     the files and commits them to a fresh lake (created before the clock starts) exactly once;
   - the minimal query: `readStream.text` of the same folder -> `foreachBatch` writing the batch to Parquet.
   Each is timed `--repeat` times (wall and CPU of this process, the JVM and the Python workers); the floor
   (fastest repetition) and the median are reported as ratios (reported, no target: the target of a micro-batch
   is stated against the floor rung of `follow_floor.py`, which does what the requirements ask and no more).
2. Latency. The feeder (cdcnorm.simulate.feed) lands `--latency-files` files of a larger Datastream JSON history
   one every `--interval` seconds while a follow query runs with a `--trigger`-second trigger and no settle
   time; per file, latency = the end of the micro-batch that committed it (the lake holds its rows) - the
   moment it landed. p50 / p95 / max are reported.

3. `--ab REV` (instead of 1 and 2): the follow micro-batch of 1, rounds alternating in one process on one warm JVM
   between this tree and git revision REV checked out in a temporary worktree (the driver re-imports `cdcnorm`
   from the round's tree, each tree has its own Python workers); `--warm` untimed rounds per side, then
   `--repeat` timed ones; min and median wall and CPU per side, Spark jobs and Delta commits per batch. On a
   shared machine the load moves between two benchmark runs more than a change moves a micro-batch's cost: this
   is the like-for-like comparison of two trees.

Usage: python benchmarks/follow_batch.py [--events 1000] [--repeat 5] [--warm 2] [--latency-files 20] [--interval 2]
       [--trigger 1] [--work .bench]
       python benchmarks/follow_batch.py --ab main --warm 10 --repeat 4
Results: WORK/results/follow-<timestamp>.json (follow-ab-<timestamp>.json); figures in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

import baselines
import bench

VF = "datastream-json"


def minimal_query(spark, folder: str, out: str, checkpoint: str) -> None:
    """The least a streaming query over these files does: read them as text, write each batch to Parquet."""
    def write(df, batch_id: int) -> None:
        df.write.mode("overwrite").parquet(f"{out}/batch={batch_id}")

    q = (spark.readStream.format("text").option("recursiveFileLookup", "true").load(folder)
         .writeStream.foreachBatch(write)
         .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    q.awaitTermination()


def follow_query(spark, folder: str, lake: str) -> list[Any]:
    from cdcnorm.streaming.follow import follow

    return follow([folder], "datastream", lake, spark=spark, settle_seconds=0, options={"stream": f"bench-{VF}"})


def cost(spark, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    from cdcnorm.lake.commit import open_lake
    from cdcnorm.simulate import Manifest

    tables, rows = 1, max(1, args.events // 5)
    root = bench.workload(work, VF, args.events - tables * rows, tables, rows, args.seed, 1)
    folder = str(Manifest.load(root).input_dir(VF))
    files = bench.input_files(root, VF)
    scratch = bench.fresh_scratch(work, "follow")

    def fresh(i: int, name: str) -> tuple[str, str]:
        path = str(scratch / f"{name}-{i}")
        if name == "follow":
            open_lake(spark, path, create=True)  # creating the lake's tables is not the micro-batch's cost
        return path, str(scratch / f"{name}-{i}-ck")

    for i in range(args.warm):  # warm-up: JVM, Python workers, the data source's registration, Delta code paths
        follow_query(spark, folder, fresh(-1 - i, "follow")[0])
        minimal_query(spark, folder, *fresh(-1 - i, "minimal"))
    runs: list[dict[str, Any]] = []
    for i in range(args.repeat):
        one: dict[str, Any] = {}
        lake, _ = fresh(i, "follow")
        out, ck = fresh(i, "minimal")
        steps = [("follow", lambda lake=lake: follow_query(spark, folder, lake)),
                 ("minimal", lambda out=out, ck=ck: minimal_query(spark, folder, out, ck))]
        for name, fn in steps[::1 - 2 * (i % 2)]:
            got = bench.measured(one, name, fn)
            if name == "follow":
                assert [b.status for b in got] == ["committed"], got
                one["records"], one["rows_written"] = got[0].records, got[0].rows_written
        lines = spark.read.parquet(out).count()
        assert lines == one["records"], (lines, one["records"])  # the minimal query read the same records
        runs.append(one)
        print(f"  run {i + 1}: follow {one['follow_s']:.2f} s ({one['follow_cpu']:.2f} CPU s, "
              f"{one['rows_written']} rows); minimal {one['minimal_s']:.2f} s ({one['minimal_cpu']:.2f} CPU s)",
              flush=True)
    res: dict[str, Any] = {"files": len(files), "bytes": sum(os.path.getsize(f) for f in files),
                           "records": runs[0]["records"], "rows_written": runs[0]["rows_written"], "runs": runs}
    for kind in ("s", "cpu"):
        f = [r[f"follow_{kind}"] for r in runs]
        m = [r[f"minimal_{kind}"] for r in runs]
        res[f"floor_ratio_{kind}"] = min(f) / min(m)
        res[f"median_ratio_{kind}"] = statistics.median(f) / statistics.median(m)
        res[f"follow_floor_{kind}"], res[f"minimal_floor_{kind}"] = min(f), min(m)
    print(f"  {res['records']} records in {len(files)} files: follow / minimal floor {res['floor_ratio_cpu']:.2f}x "
          f"CPU, {res['floor_ratio_s']:.2f}x wall (median {res['median_ratio_cpu']:.2f}x, "
          f"{res['median_ratio_s']:.2f}x; the target is follow_floor.py's)", flush=True)
    return res


def ab(spark, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """The follow micro-batch of :func:`cost`, alternating between this tree and revision `args.ab`."""
    from cdcnorm.simulate import Manifest

    tables, rows = 1, max(1, args.events // 5)
    root = bench.workload(work, VF, args.events - tables * rows, tables, rows, args.seed, 1)
    folder = str(Manifest.load(root).input_dir(VF))
    scratch = bench.fresh_scratch(work, "follow-ab")
    rounds = iter(range(10**9))

    def one_round(side: str) -> dict[str, Any]:
        from cdcnorm.lake.commit import open_lake
        from cdcnorm.lake.store import Lake

        lake = str(scratch / f"lake-{next(rounds)}")
        open_lake(spark, lake, create=True)  # creating the lake's tables is not the micro-batch's cost
        dag = spark.sparkContext._jsc.sc().dagScheduler()
        jobs0 = dag.nextJobId()
        res: dict[str, Any] = {}
        got = bench.measured(res, "batch", lambda: follow_query(spark, folder, lake))
        assert [b.status for b in got] == ["committed"], got
        return {"batch_s": res["batch_s"], "batch_cpu": res["batch_cpu"], "jobs": dag.nextJobId() - jobs0,
                "commits": sum(t.version() for t in Lake(spark, lake).tables.values())}

    with bench.revision_tree(args.ab) as src:
        trees = {"this": bench.own_tree(), args.ab: src}
        print(f"  follow micro-batch A/B: this tree ({trees['this']}) against {args.ab}", flush=True)
        timed = bench.ab_rounds(spark, trees, args.warm, args.repeat, one_round)
    return {"rev": args.ab, "rounds": timed, **bench.ab_summary(timed, list(trees), ("batch_s", "batch_cpu", "jobs", "commits"))}


def latency(spark, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    from cdcnorm.lake.store import Lake
    from cdcnorm.simulate.feed import feed, landed, prepare
    from cdcnorm.streaming.follow import start_follow

    root = work / "scratch" / "follow-latency"
    shutil.rmtree(root, ignore_errors=True)
    per_file = 100
    plan = prepare(root / "sim", [VF], tables=3, rows=50, changes=args.latency_files * per_file, seed=args.seed,
                   quirks=[], rotate=per_file)
    plan.deliveries[:] = plan.deliveries[:args.latency_files]
    lake = str(root / "lake")
    committed: dict[str, float] = {}

    def on_batch(p) -> None:
        committed[p.run_id] = time.time()

    follower = start_follow([str(plan.manifest.input_dir(VF))], "datastream", lake, spark=spark,
                            options={"stream": f"bench-{VF}"}, trigger=args.trigger, settle_seconds=0,
                            on_batch=on_batch)
    time.sleep(args.trigger * 2)  # the query is up and idle before the first file lands
    feeder = threading.Thread(target=feed, args=(root / "sim", plan, args.interval), daemon=True)
    feeder.start()
    feeder.join()
    deadline = time.time() + 300
    while time.time() < deadline:
        reports = Lake(spark, lake).run_reports()
        if sum(r["files"] for r in reports) >= len(plan.deliveries):
            break
        time.sleep(1)
    follower.stop()
    done_at = {}
    for r in Lake(spark, lake).run_reports():
        for p in r["inputs"]:
            done_at[str(Path(p).resolve())] = committed[r["run_id"]]
    lat = sorted(done_at[str((root / "sim" / x["file"]).resolve())] - x["landed"] for x in landed(root / "sim"))
    res = {"files": len(lat), "interval_s": args.interval, "trigger_s": args.trigger, "batches": len(committed),
           "p50_s": _pct(lat, 50), "p95_s": _pct(lat, 95), "max_s": lat[-1], "latencies_s": lat}
    print(f"  {len(lat)} files landing every {args.interval:g} s, trigger {args.trigger:g} s, {len(committed)} "
          f"micro-batches: latency p50 {res['p50_s']:.1f} s, p95 {res['p95_s']:.1f} s, max {res['max_s']:.1f} s",
          flush=True)
    return res


def _pct(values: list[float], p: float) -> float:
    """Nearest-rank percentile of sorted values."""
    return values[max(0, min(len(values) - 1, round(p / 100 * len(values) + 0.5) - 1))]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=1000, help="events of the micro-batch (backfill + changes)")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--warm", type=int, default=2, help="untimed rounds of both queries first (a follow query runs for "
                   "weeks: its JVM has compiled its code long before; about 12 rounds reach that steady state)")
    p.add_argument("--latency-files", type=int, default=20)
    p.add_argument("--interval", type=float, default=2.0, help="seconds between two landed files")
    p.add_argument("--trigger", type=float, default=1.0, help="the follow query's trigger (seconds)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--work", default=".bench")
    p.add_argument("--master", default="local[*]")
    p.add_argument("--driver-memory", default="2g")
    p.add_argument("--ab", metavar="REV", help="instead: the micro-batch alternating between this tree and git "
                   "revision REV (a temporary worktree)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = Path(args.work)
    print(f"follow bench: a {args.events}-event micro-batch against a minimal availableNow query, then latency; "
          f"{os.cpu_count()} cores, load {os.getloadavg()}", flush=True)
    spark = bench.spark_session(args.master, args.driver_memory)
    baselines.reset_peaks(spark)
    if args.ab:
        res = {"args": vars(args), "load_before": os.getloadavg(), "ab": ab(spark, args, work),
               "load_after": os.getloadavg()}
        print(f"results: {bench.save_results(work, 'follow-ab-', res)}")
        spark.stop()
        return 0
    res = {"args": vars(args), "load_before": os.getloadavg(), "cost": cost(spark, args, work),
           "latency": latency(spark, args, work) if args.latency_files else None, "load_after": os.getloadavg()}
    print(f"results: {bench.save_results(work, 'follow-', res)}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
