"""The cost of the per-lake duplicate check: 10 k new events into a 1 M-event lake against an empty lake.

A lake of `--lake-events` canonical rows (default 1 M) of the same vendor, written by another run (a derived
run through `cdcnorm.lake.derived.write_run`), its source times spread over `--days` days (default 6) ending on the
newest day of the new events, so the new events' day partitions exist in the big lake and must be read. The
new events are a simulated Datastream JSON workload (`--changes`, default 10 k). Each repetition copies the
prepared lake (so every run meets the same 1 M rows), then times `cdcnorm.normalize` of the new events into
the copy and into an empty lake, interleaved (which goes first alternates), after an untimed warm-up. Target: median CPU ratio <= 1.2.

Usage: python benchmarks/lake_dedup.py [--changes 10000] [--lake-events 1000000] [--repeat 3] [--work .bench]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import bench

TARGET = 1.2
VF = "datastream-json"


def big_lake(spark, path: str, events: int, newest: dt.datetime, days: int) -> None:
    """`events` canonical Datastream rows over `days` days ending at `newest`, committed as one derived run."""
    from pyspark.sql import functions as F

    from cdcnorm.canonical.schema import canonical_schema
    from cdcnorm.lake.derived import write_run

    span = days * 86400
    start = int(newest.timestamp()) - span + 1
    rows = spark.range(events).select(
        F.lit("datastream").alias("vendor"), F.lit("datastream.json").alias("format"),
        F.lit(f"bench-{VF}").alias("stream"), F.lit("mysql").alias("source_db"), F.lit("bench").alias("database"),
        F.lit(None).cast("string").alias("schema"), F.concat(F.lit("big"), (F.col("id") % 5).cast("string")).alias("table"),
        F.lit("INSERT").alias("op"), F.lit("INSERT").alias("vendor_op"),
        F.array(F.lit("id")).alias("primary_keys"),
        F.parse_json(F.concat(F.lit('{"id":'), F.col("id").cast("string"), F.lit("}"))).alias("key"),
        F.col("id").cast("string").cast("binary").alias("key_bytes"),
        F.parse_json(F.concat(F.lit('{"id":'), F.col("id").cast("string"), F.lit(',"name":"row '),
                              F.col("id").cast("string"), F.lit('","amount":12.50}'))).alias("after"),
        F.timestamp_seconds(F.lit(start) + (F.col("id") * span / events).cast("long")).alias("source_ts"),
        F.concat(F.lit("big"), F.col("id").cast("string")).cast("binary").alias("sort_key"),
        F.substring(F.sha2(F.concat(F.lit("big:"), F.col("id").cast("string")), 256), 1, 32).alias("event_id"),
    )
    names = set(rows.columns)
    full = rows.select(*[F.col(f.name) if f.name in names else F.lit(None).cast(f.dataType).alias(f.name)
                         for f in canonical_schema().fields])
    write_run(spark, path, full.withColumn("capture_ts", F.col("source_ts")), None,
              {"vendor": "datastream", "input_kind": "derived"})


def checked_rows(lake: str, days: set[str | None]) -> int:
    """Rows of the lake's changes in the day partitions of the new events (from the Delta log's statistics)."""
    import pyarrow as pa
    from deltalake import DeltaTable

    acts = pa.table(DeltaTable(f"{lake}/changes").get_add_actions(flatten=True)).to_pylist()
    return sum(a["num_records"] for a in acts if a["partition.source_day"] in days)


def run(args: argparse.Namespace) -> dict[str, Any]:
    import cdcnorm
    from cdcnorm.simulate import VENDOR_FORMATS

    work = Path(args.work)
    scratch = work / "scratch" / "dedup"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    spark = bench.spark_session(args.master, args.driver_memory)
    root = bench.workload(work, VF, args.changes, 3, 300, args.seed, 4)
    files = bench.input_files(root, VF)
    vendor = VENDOR_FORMATS[VF][0]
    options = bench.options_for(VF, root)

    def normalize(lake: str) -> dict[str, Any]:
        return cdcnorm.normalize(files, vendor, spark=spark, options=options, lake=lake).report

    probe = str(scratch / "probe")
    normalize(probe)  # warm-up, and where the new events' source times lie
    newest = cdcnorm.read_changes(spark, probe).agg({"source_ts": "max"}).first()[0]
    newest = newest.replace(tzinfo=dt.UTC) if newest.tzinfo is None else newest
    t0 = time.perf_counter()
    prepared = str(scratch / "big")
    big_lake(spark, prepared, args.lake_events, newest, args.days)
    days = {r[0] for r in cdcnorm.read_changes(spark, probe).selectExpr("date_format(source_ts, 'yyyy-MM-dd')")
            .distinct().collect()}  # the new events' days (a handful of rows)
    checked = checked_rows(prepared, days)
    print(f"  prepared a {args.lake_events:,}-event lake over {args.days} days up to {newest:%Y-%m-%d %H:%M} "
          f"in {time.perf_counter() - t0:.0f} s; the new events touch {len(days)} day(s), whose partitions hold "
          f"{checked:,} of its rows (what the duplicate check reads)", flush=True)
    res: dict[str, Any] = {"changes": args.changes, "lake_events": args.lake_events, "days": args.days,
                           "new_event_days": sorted(d for d in days if d), "checked_lake_rows": checked, "runs": []}
    for i in range(args.repeat):
        one: dict[str, Any] = {}
        empty, full = str(scratch / f"empty-{i}"), str(scratch / f"full-{i}")
        shutil.copytree(prepared, full)
        order = [("empty", empty), ("full", full)]  # alternated: the second of a pair runs on a warmer JVM
        reps = {name: bench.measured(one, name, lambda lk=lk: normalize(lk)) for name, lk in order[::1 - 2 * (i % 2)]}
        rep_e, rep_f = reps["empty"], reps["full"]
        assert rep_e["rows_written"] == rep_f["rows_written"], (rep_e["rows_written"], rep_f["rows_written"])
        one["rows_written"] = rep_f["rows_written"]
        one["dedup_unchecked"] = rep_f.get("dedup_unchecked")
        res["runs"].append(one)
        print(f"  run {i + 1}: empty lake {one['empty_s']:.1f} s ({one['empty_cpu']:.1f} CPU s); 1 M lake "
              f"{one['full_s']:.1f} s ({one['full_cpu']:.1f} CPU s); {one['rows_written']:,} rows", flush=True)
        shutil.rmtree(empty, ignore_errors=True)
        shutil.rmtree(full, ignore_errors=True)
    for kind in ("s", "cpu"):
        res[f"ratio_{kind}"] = statistics.median(r[f"full_{kind}"] for r in res["runs"]) / statistics.median(
            r[f"empty_{kind}"] for r in res["runs"])
    res["met"] = res["ratio_cpu"] <= TARGET
    print(f"  1 M lake / empty lake: {res['ratio_cpu']:.2f}x CPU, {res['ratio_s']:.2f}x wall (median of "
          f"{args.repeat}; target <= {TARGET}x CPU): {'met' if res['met'] else 'MISSED'}", flush=True)
    spark.stop()
    return res


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--changes", type=int, default=10_000)
    p.add_argument("--lake-events", type=int, default=1_000_000)
    p.add_argument("--days", type=int, default=6)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=5)
    p.add_argument("--work", default=".bench")
    p.add_argument("--master", default="local[*]")
    p.add_argument("--driver-memory", default="4g")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print(f"lake dedup bench: {args.changes:,} new events, {args.lake_events:,}-event lake, load {os.getloadavg()}",
          flush=True)
    res = run(args)
    print(f"results: {bench.save_results(Path(args.work), 'dedup-', res)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
