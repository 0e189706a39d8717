"""A/B of small-run planning for apply (cdcnorm.state.build.small_apply_bytes): a small lake applied as a small run
(no AQE, interpreted) against the session's own plan, alternating in one warm session; then the cold command line
with the small-run JVM options against the JVM's defaults.

The lake is the e2e test lake (eight formats, quirks on, 24 tables), built once under `--work`. Each in-process
round is `apply(full=True)` once per side, order alternating; the sides' applied row counts must be equal.

Usage: python benchmarks/apply_small.py [--repeat 3] [--cli-rounds 3] [--work .bench]
Figures in docs/benchmarks.md ("Applies of small lakes (session 15)").
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from unittest import mock

import bench

SESSION_PLAN = {"CDCNORM_SMALL_RUN_BYTES": "0", "CDCNORM_INTERPRETED_RUN_BYTES": "0"}
"""Environment of the side that keeps the session's settings (small-run planning off)."""


def lake_of(spark, work: Path) -> str:
    from cdcnorm.simulate.verify import build_lake

    root = work / "apply-small"
    lake = root / "lake"
    if not (lake / "changes").exists():
        build_lake(spark, root / "sim", lake, tables=3, rows=30, changes=300, seed=7, rotate=60,
                   natural=("replicate-json", "replicate-avro", "replicate-capture"))
    return str(lake)


def applied(spark, lake: str, side: str, rnd: int) -> dict[str, Any]:
    import cdcnorm

    group = f"apply-small-{side}-{rnd}"
    spark.sparkContext.setJobGroup(group, group)
    res: dict[str, Any] = {"side": side}
    try:
        with mock.patch.dict(os.environ, SESSION_PLAN if side == "session" else {}):
            result = bench.measured(res, "apply", lambda: cdcnorm.apply(spark, lake, full=True))
    finally:
        spark.sparkContext.setJobGroup("", "")
    res["jobs"] = len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))
    res["rows"] = {t["path"]: t["rows"] for t in result.summary["tables"]}
    return res


def cold_cli(lake: str, side: str) -> float:
    env = dict(os.environ, **({"CDCNORM_SMALL_RUN_JVM_OPTIONS": ""} if side == "session" else {}))
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "cdcnorm", "apply", "--lake", lake, "--full"], env=env, check=True,
                   capture_output=True)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=3, help="timed in-process rounds per side (after one warm-up round)")
    p.add_argument("--cli-rounds", type=int, default=3, help="cold command-line runs per side (0: none)")
    p.add_argument("--work", default=".bench")
    args = p.parse_args(argv)
    work = Path(args.work)
    spark = bench.spark_session("local[2]", "2g")
    lake = lake_of(spark, work)
    rounds = []
    for rnd in range(args.repeat + 1):
        order = ("small", "session") if rnd % 2 == 0 else ("session", "small")
        got = [applied(spark, lake, side, rnd) for side in order]
        assert got[0]["rows"] == got[1]["rows"], "the two plans applied different row counts"
        if rnd:  # round 0 warms the JVM
            rounds += got
    figures = {side: bench.min_median(rounds, side, ("apply_s", "apply_cpu", "jobs")) for side in ("small", "session")}
    spark.stop()
    cli: dict[str, list[float]] = {"small": [], "session": []}
    for rnd in range(args.cli_rounds):
        for side in (("small", "session") if rnd % 2 == 0 else ("session", "small")):
            cli[side].append(round(cold_cli(lake, side), 1))
    for side, f in figures.items():
        print(f"{side:8s} in-process: wall {f['apply_s']['min']:.1f} / {f['apply_s']['median']:.1f} s, "
              f"CPU {f['apply_cpu']['min']:.1f} / {f['apply_cpu']['median']:.1f} s, jobs {f['jobs']['min']:.0f} "
              f"(min / median); cold CLI {sorted(cli[side])} s")
    bench.save_results(work, "apply-small-", {"rounds": rounds, "figures": figures, "cli": cli})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
