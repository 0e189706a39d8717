"""A/B of the duplicate check (cdcnorm.lake.dedup.mark_duplicates): id hashes only against the exact window over
the full rows, alternating in one warm session on the same files.

Each round normalizes the workload into a fresh lake once per side (order alternating), timing wall and CPU
seconds of this process and its children; the sides' reports must be equal but for the run's id and clock.

Usage: python benchmarks/mark_ab.py [--changes 200000] [--formats datastream-json] [--repeat 3] [--work .bench]
Figures in docs/benchmarks.md ("Marking duplicates by id hashes (session 14)").
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import bench

SIDES = {"exact": (1, 0), "ids": None}
"""MARK_BY_IDS_ROWS per side (None: the pipeline's own)."""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    bench.workload_args(p, 200_000, 10, "generated data and scratch lakes")
    p.set_defaults(formats="datastream-json")
    p.add_argument("--repeat", type=int, default=3, help="timed rounds per side (after one untimed warm-up round)")
    args = bench.parse_workload(p, argv)
    args.format = args.formats.split(",")[0]
    import cdcnorm.ingest.pipeline as pipeline

    own = pipeline.MARK_BY_IDS_ROWS
    work = Path(args.work)
    root = bench.workload(work, args.format, args.changes, args.tables, args.rows, args.seed, args.files)
    files = bench.input_files(root, args.format)
    spark = bench.spark_session("local[*]", "4g")
    scratch = bench.fresh_scratch(work, "mark-ab")
    bench.warm_up(spark, args.format, root, files, scratch)
    timed: list[dict[str, Any]] = []
    drop = ("run_id", "started_at", "finished_at")
    for i in range(args.repeat + 1):
        reports = {}
        for side in (list(SIDES) if i % 2 == 0 else list(SIDES)[::-1]):
            pipeline.MARK_BY_IDS_ROWS = SIDES[side] or own
            res: dict[str, Any] = {"side": side, "load": os.getloadavg()[0]}
            _, report = bench.measured(res, "normalize", lambda: bench.normalize(
                spark, args.format, root, files, str(scratch / "lake")))
            reports[side] = {k: v for k, v in report.items() if k not in drop}
            print(f"  {'warm ' if i == 0 else 'timed'} {i} {side:5s}: {res['normalize_s']:6.1f} s "
                  f"{res['normalize_cpu']:6.1f} CPU s {bench._fmt(res['normalize_cpu_by_process'])}; "
                  f"load {res['load']:.1f}", flush=True)
            if i:
                timed.append(res)
        assert reports["exact"] == reports["ids"], "the two checks' reports differ"
    pipeline.MARK_BY_IDS_ROWS = own
    out: dict[str, Any] = {"args": vars(args), "rounds": timed}
    for side in SIDES:
        out[side] = bench.min_median(timed, side, ("normalize_s", "normalize_cpu"))
    e, d = out["exact"], out["ids"]
    print(f"ids / exact: CPU min {d['normalize_cpu']['min'] / e['normalize_cpu']['min']:.3f}x, median "
          f"{d['normalize_cpu']['median'] / e['normalize_cpu']['median']:.3f}x; wall min "
          f"{d['normalize_s']['min'] / e['normalize_s']['min']:.3f}x, median "
          f"{d['normalize_s']['median'] / e['normalize_s']['median']:.3f}x")
    print(f"results: {bench.save_results(work, 'mark-ab-', out)}")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
