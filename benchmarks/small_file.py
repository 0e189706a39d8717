"""The fixed cost of one small run: a 3-message file through `cdcnorm normalize`, cold and warm.

1. Cold (issue 13's small-file figure): a new process runs `cdcnorm normalize FILE --lake L` (the command line,
   JVM start included) against a new process that starts the same Spark session (`cdcnorm.runtime.session.get_spark`)
   and writes 3 rows to Parquet: the least any Spark job costs. Alternating, `--repeat` times; the fastest of
   each and the median are reported as wall ratios (target <= 1.5x).
2. Warm: in one process, after two untimed runs, `cdcnorm.normalize` of the same file into a fresh lake, with
   the Spark jobs it ran counted (job group + status tracker; target <= 10).

Usage: python benchmarks/small_file.py [--repeat 5] [--work .bench]. Figures in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
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


def three_message_file(work: Path) -> Path:
    """The first 3 messages of a sample Datastream JSON file, in the same folder layout."""
    source = next(SAMPLE.glob("*mysql-cdc-binlog*.jsonl"))
    folder = work / "small" / "shop_orders" / "2025" / "01" / "21" / "11" / "05"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / source.name
    lines = [line for line in source.read_text().splitlines(keepends=True) if line.strip()]
    target.write_text("".join(lines[:3]))
    return target


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--work", default=".bench")
    args = p.parse_args(argv)
    work = Path(args.work).resolve()
    path = three_message_file(work)
    scratch = Path(tempfile.mkdtemp(prefix="small-", dir=work))
    ours, floor = [], []
    try:
        for i in range(args.repeat):
            runs = [("floor", [sys.executable, "-c", COLD_SPARK, str(scratch / f"floor-{i}")]),
                    ("ours", [sys.executable, "-m", "cdcnorm", "normalize", str(path), "--vendor", "datastream",
                              "--lake", str(scratch / f"lake-{i}")])]
            for name, cmd in (runs if i % 2 == 0 else runs[::-1]):
                (ours if name == "ours" else floor).append(timed(cmd))
        warm = json.loads(subprocess.run([sys.executable, "-c", WARM, str(path)], check=True, capture_output=True,
                                         text=True, cwd=ROOT).stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    best, median = min(ours) / min(floor), statistics.median(ours) / statistics.median(floor)
    result = {"cold_normalize_s": ours, "cold_spark_job_s": floor, "ratio_best": best, "ratio_median": median,
              "warm": warm}
    print(f"3-message file, cold process: cdcnorm normalize {min(ours):.2f} s (median {statistics.median(ours):.2f})"
          f" / Spark job writing 3 rows {min(floor):.2f} s (median {statistics.median(floor):.2f}): "
          f"{best:.2f}x best, {median:.2f}x median (target <= {TARGET_WALL}x)")
    print(f"warm normalize of the same file: {warm['jobs']} Spark jobs (target <= {TARGET_JOBS}), "
          f"{warm['rows']} rows, reconciled {warm['reconciled']}")
    out = work / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"small-file-{int(time.time())}.json").write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
