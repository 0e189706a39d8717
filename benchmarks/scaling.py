"""Does `normalize` (and optionally `apply`) time grow linearly with the number of changes? One format, 1 to 10 M.

Why: a per-event cost that creeps up with size (a skewed shuffle, spilling, a driver-side collect) would not
show at the sizes the main benchmark runs. Each size is simulated once (cached under WORK/data), the JVM is
warmed up on the smallest, then every size is normalized into a fresh lake. The output fits
`seconds = fixed + per_million * millions` (least squares) and shows each size's cost per million events
relative to the smallest size: flat means linear.

Usage: python benchmarks/scaling.py [--format datastream-json] [--sizes 1000000,2000000,5000000,10000000]
                                    [--max 2000000] [--apply] [--work .bench]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import bench


def fit(xs: list[float], ys: list[float]) -> tuple[float, float, float]:
    """Least-squares line y = a + b x; returns (a, b, R squared)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    a = my - b * mx
    ss_tot = sum((y - my) ** 2 for y in ys)
    ss_res = sum((y - a - b * x) ** 2 for x, y in zip(xs, ys, strict=True))
    return a, b, 1 - ss_res / ss_tot if ss_tot else 1.0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--format", default="datastream-json", choices=bench.FORMATS)
    p.add_argument("--sizes", default="1000000,2000000,5000000,10000000", help="comma list of change counts")
    p.add_argument("--max", type=int, default=None, help="skip sizes above this (10 M takes hours here)")
    p.add_argument("--apply", action="store_true", help="also time apply on each lake")
    p.add_argument("--work", default=".bench")
    p.add_argument("--tables", type=int, default=3)
    p.add_argument("--rows", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--files", type=int, default=10, help="about how many input files at every size (same parallelism)")
    p.add_argument("--master", default="local[*]")
    p.add_argument("--driver-memory", default="4g")
    args = p.parse_args(argv)
    args.size_list = sorted(int(s) for s in args.sizes.split(",") if s.strip())
    if args.max is not None:
        args.size_list = [s for s in args.size_list if s <= args.max]
    if len(args.size_list) < 2:
        p.error("need at least two sizes (after --max) to show growth")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = Path(args.work)
    (work / "results").mkdir(parents=True, exist_ok=True)
    vf = args.format
    print(f"cdcnorm scaling: {vf}, sizes {', '.join(f'{s:,}' for s in args.size_list)}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()}", flush=True)
    roots = {n: bench.workload(work, vf, n, args.tables, args.rows, args.seed, args.files) for n in args.size_list}
    spark = bench.spark_session(args.master, args.driver_memory)
    scratch = work / "scratch" / f"scaling-{vf}"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    smallest = args.size_list[0]
    bench.warm_up(spark, vf, roots[smallest], bench.input_files(roots[smallest], vf), scratch)

    rows: list[dict[str, Any]] = []
    for n in args.size_list:
        files = bench.input_files(roots[n], vf)
        lake = str(scratch / f"lake-{n}")
        res: dict[str, Any] = {"changes": n, "files": len(files), "load_before": os.getloadavg()}
        bench.baselines.reset_peaks(spark)
        with bench.baselines.HeapAfterGc(spark) as heap:
            report = bench.measured(res, "normalize", lambda f=files, lk=lake, r=roots[n]: bench.normalize(
                spark, vf, r, f, lk)[1])
        res["heap_after_gc_mb"], res["heap_max_mb"] = heap.peak_mb, heap.max_mb
        res["input_mb"] = sum(os.path.getsize(f) for f in files) / 2**20
        res["lake_mb"] = sum(p.stat().st_size for p in Path(lake).rglob("*") if p.is_file()) / 2**20
        res["records"] = report["records_read"]
        if args.apply:
            import cdcnorm

            bench.measured(res, "apply", lambda lk=lake: cdcnorm.apply(spark, lk))
        res["load_after"] = os.getloadavg()
        rows.append(res)
        print(f"  {n:>10,} changes, {res['records']:>10,} events: normalize {res['normalize_s']:7.1f} s "
              f"({res['normalize_cpu']:.1f} CPU s)" + (f", apply {res['apply_s']:.1f} s" if args.apply else "") +
              f"; heap after GC {res['heap_after_gc_mb']:.0f} of {res['heap_max_mb']:.0f} MiB, peak RSS MiB "
              f"{bench._fmt(res['normalize_peak_mb'])}; input {res['input_mb']:.0f} MiB, lake {res['lake_mb']:.0f} MiB",
              flush=True)
        shutil.rmtree(lake, ignore_errors=True)

    millions = [r["records"] / 1e6 for r in rows]
    print()
    print("| changes | events | normalize s (CPU s) | s per M events (CPU) | vs smallest | heap after GC / max MiB |"
          " peak RSS MiB |" + (" apply s |" if args.apply else ""))
    print("|---|---|---|---|---|---|---|" + ("---|" if args.apply else ""))
    base = rows[0]["normalize_cpu"] / millions[0]
    for r, m in zip(rows, millions, strict=True):
        per = r["normalize_s"] / m
        per_cpu = r["normalize_cpu"] / m
        print(f"| {r['changes']:,} | {r['records']:,} | {r['normalize_s']:.1f} ({r['normalize_cpu']:.1f}) | "
              f"{per:.1f} ({per_cpu:.1f}) | {per_cpu / base:.2f}x | {r['heap_after_gc_mb']:.0f} / {r['heap_max_mb']:.0f} | "
              f"{bench._fmt(r['normalize_peak_mb'])} |" + (f" {r['apply_s']:.1f} |" if args.apply else ""))
    summary = {}
    for key in ("normalize_s", "normalize_cpu") + (("apply_s",) if args.apply else ()):
        a, b, r2 = fit(millions, [r[key] for r in rows])
        summary[key] = {"fixed": a, "per_million": b, "r2": r2}
        print(f"{key}: {a:.1f} s fixed + {b:.1f} s per million events (R^2 = {r2:.4f})")
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    path = work / "results" / f"scaling-{vf}-{stamp}.json"
    path.write_text(json.dumps({"args": {k: v for k, v in vars(args).items()}, "rows": rows, "fit": summary},
                               indent=2, default=str) + "\n")
    print(f"\nresults: {path}")
    shutil.rmtree(scratch, ignore_errors=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
