"""`make bench`: cdcnorm's throughput per vendor format, as ratios to baselines measured in the same run.

For each format: simulate a workload (cached under WORK/data, keyed by its parameters), warm the JVM and the
Python workers up, then time on the same files and cores:

- the copy floor (Spark reads the files as text, or binary for Avro, and writes them to Parquet unchanged);
- `cdcnorm.normalize` into a fresh lake (events/s, and its time as a ratio to the copy floor);
- Datastream JSON: the hand-written `from_json` + VARIANT pipeline, with and without `dropDuplicates`, committed
  as a Delta table through the same delta-rs helper as cdcnorm, and the same with dedup as an `availableNow`
  streaming query (the shape `cdcnorm normalize` runs in);
- Avro formats: fastavro alone decoding the same files, one process per core;
- `cdcnorm.apply` on that lake (and how many shuffles its state plan has), and DuckDB running the same
  projection over the lake's Parquet, for context;
- peak memory (VmHWM) of the Python driver, the JVM and the largest Python worker, per step;
- the file readers' memory (benchmarks/memory.py): RSS growth while one process decodes a generated
  `--memory-mb` file (300 MiB) per container with the adapter's read_file, against the 64 MiB limit.

Usage: python benchmarks/bench.py [--changes 1000000] [--formats datastream-json,datastream-avro] [--work .bench]
Results are printed and saved as WORK/results/<timestamp>.json. Figures and commands: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import baselines
import memory as reader_memory

FORMATS = ("datastream-json", "datastream-avro", "replicate-json", "replicate-avro", "replicate-capture",
           "datahub-blob", "datahub-concat", "datahub-tuple")
BINARY = {"datastream-avro", "replicate-avro", "replicate-capture"}
"""Avro containers: the copy floor reads them as whole binary objects, fastavro alone is their baseline."""
TARGET_COPY = 10.0
"""issue 13: a JSON format's normalize CPU at most 10x the copy floor's"""
TARGET_HANDWRITTEN = 1.0
"""issue 13: Datastream JSON normalize CPU at most the hand-written pipeline's (with dedup, through Delta)"""
TARGET_AVRO = 2.0
"""issue 13: an Avro format's normalize CPU at most 2x fastavro's own decode of the same files"""
TARGET_PER_EVENT = 1.5
"""issue 13: every format's CPU per event at most 1.5x Datastream JSON's"""


# -- workload ------------------------------------------------------------------------------------------------
def workload(work: Path, vf: str, changes: int, tables: int, rows: int, seed: int, files: int) -> Path:
    """The simulated input of one format, generated once per parameter set and reused from WORK/data."""
    rotate = max(1000, math.ceil((changes + tables * rows) / max(1, files)))
    key = f"{vf}-c{changes}-t{tables}-r{rows}-s{seed}-f{rotate}"
    out = work / "data" / key
    if (out / ".complete").exists():
        return out
    from cdcnorm.simulate import simulate

    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    print(f"  generating {key} (about {changes / 15000:.0f} s)", flush=True)
    simulate(out, vendors=vf, tables=tables, rows=rows, changes=changes, seed=seed, quirks=[], rotate=rotate,
             write_changes=False)
    (out / ".complete").write_text(f"{time.perf_counter() - t0:.1f}\n")
    return out


def input_files(root: Path, vf: str) -> list[str]:
    from cdcnorm.simulate import Manifest

    m = Manifest.load(root)
    return sorted(str(p) for p in m.input_dir(vf).rglob("*") if p.is_file())


def options_for(vf: str, root: Path) -> dict[str, Any]:
    """What a user of that format passes (TUPLE topics do not carry their schema)."""
    opts: dict[str, Any] = {"stream": f"bench-{vf}"}
    if vf == "datahub-tuple":
        folder = root / "schemas" / "datahub-tuple"
        opts["tuple_schemas"] = {p.stem: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.json"))}
    return opts


# -- Spark -----------------------------------------------------------------------------------------------------
def spark_session(master: str, memory: str):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from cdcnorm.runtime.session import get_spark

    return get_spark(master, app_name="cdcnorm-bench", conf={"spark.driver.memory": memory}, quiet=True)


def apply_shuffles(spark, lake: str) -> tuple[int, int]:
    """(exchanges, tables) in the plans of a full apply's per-table state: one exchange per table means every
    change is shuffled once (keyed tables: one range exchange by key that the write reuses; keyless: one hash
    exchange by image, after the event-id dedup's)."""

    from cdcnorm.lake.store import Lake
    from cdcnorm.state import keyed
    from cdcnorm.state.merge import applicable
    from cdcnorm.state.plan import latest_schemas, plan_tables, table_hash, table_stats

    lk = Lake(spark, lake)
    changes = lk.changes().withColumn("_tid", table_hash())
    latest = latest_schemas(lk.schemas())
    plans = [p for p in plan_tables(table_stats(changes, set(latest)), latest) if p.key_mode != "keyless"]
    exchanges = 0
    for p in plans:
        entries = keyed.batch_entries(applicable(changes, p), p, 4)
        text = keyed.merged(p, entries, None, None, 4, entries_ranged=True)._jdf.queryExecution().executedPlan().toString()
        exchanges += sum(1 for line in text.splitlines() if "Exchange " in line and "partitioning" in line)
    return exchanges, len(plans)


def normalize(spark, vf: str, root: Path, files: list[str], lake: str) -> tuple[float, dict[str, Any]]:
    import cdcnorm
    from cdcnorm.simulate import VENDOR_FORMATS

    shutil.rmtree(lake, ignore_errors=True)
    t0 = time.perf_counter()
    result = cdcnorm.normalize(files, VENDOR_FORMATS[vf][0], spark=spark, options=options_for(vf, root), lake=lake)
    return time.perf_counter() - t0, result.report


def warm_up(spark, vf: str, root: Path, files: list[str], scratch: Path) -> None:
    """A cold JVM would distort every ratio: run the copy floor and a one-file normalize once, untimed."""
    baselines.copy_floor(spark, files, str(scratch / "warm-copy"), vf in BINARY)
    smallest = min(files, key=os.path.getsize)
    normalize(spark, vf, root, [smallest], str(scratch / "warm-lake"))
    if vf == "datastream-json":
        baselines.handwritten_datastream_json(spark, [smallest], str(scratch / "warm-hw"), True)


def measured(res: dict[str, Any], name: str, fn: Any) -> Any:
    """Run fn, store its wall seconds as res[name + '_s'] and the CPU seconds of our processes as '_cpu'."""
    with baselines.CpuMeter() as meter:
        t0 = time.perf_counter()
        out = fn()
        res[f"{name}_s"] = time.perf_counter() - t0
    res[f"{name}_cpu"] = meter.seconds
    res[f"{name}_cpu_by_process"] = meter.by_kind()
    res[f"{name}_peak_mb"] = meter.peak_mb()
    return out


def _fmt(d: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.0f}" if v >= 10 else f"{k} {v:.1f}" for k, v in sorted(d.items()) if v)


def bench_format(spark, args: argparse.Namespace, vf: str) -> dict[str, Any]:
    work = Path(args.work)
    root = workload(work, vf, args.changes, args.tables, args.rows, args.seed, args.files)
    files = input_files(root, vf)
    scratch = work / "scratch" / vf
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    cores = spark.sparkContext.defaultParallelism
    res: dict[str, Any] = {"format": vf, "files": len(files), "bytes": sum(os.path.getsize(f) for f in files),
                           "load_before": os.getloadavg()}
    print(f"{vf}: {len(files)} files, {res['bytes'] / 2**20:.0f} MiB, load {res['load_before'][0]:.1f}", flush=True)
    warm_up(spark, vf, root, files, scratch)

    binary = vf in BINARY
    measured(res, "copy_floor", lambda: baselines.copy_floor(spark, files, str(scratch / "copy"), binary))
    baselines.reset_peaks(spark)
    lake = str(scratch / "lake")
    report = measured(res, "normalize", lambda: normalize(spark, vf, root, files, lake)[1])
    res["memory_normalize_mb"] = res.pop("normalize_peak_mb")
    res["records"] = report["records_read"]
    res["rows_written"] = report["rows_written"]
    res["reconciled"] = report["reconciled"]
    res["outcomes"] = report["outcomes"]
    res["events_per_s"] = res["records"] / res["normalize_s"]
    res["ratio_copy"] = res["normalize_s"] / res["copy_floor_s"]
    res["ratio_copy_cpu"] = res["normalize_cpu"] / res["copy_floor_cpu"]
    print(f"  copy floor {res['copy_floor_s']:.1f} s ({res['copy_floor_cpu']:.1f} CPU s); normalize "
          f"{res['normalize_s']:.1f} s ({res['normalize_cpu']:.1f} CPU s) = {res['events_per_s']:,.0f} events/s, "
          f"{res['ratio_copy']:.1f}x the copy floor ({res['ratio_copy_cpu']:.1f}x in CPU); CPU by process "
          f"{_fmt(res['normalize_cpu_by_process'])}; peak MiB {_fmt(res['memory_normalize_mb'])}", flush=True)

    if vf == "datastream-json" and not args.skip_baselines:
        measured(res, "handwritten", lambda: baselines.handwritten_datastream_json(
            spark, files, str(scratch / "hw"), False))
        measured(res, "handwritten_dedup", lambda: baselines.handwritten_datastream_json(
            spark, files, str(scratch / "hwd"), True))
        from cdcnorm.simulate import Manifest

        folder = str(Manifest.load(root).input_dir(vf))
        measured(res, "handwritten_stream", lambda: baselines.handwritten_streaming(
            spark, folder, str(scratch / "hws"), str(scratch / "hws-ck")))
        res["ratio_handwritten_dedup"] = res["normalize_s"] / res["handwritten_dedup_s"]
        res["ratio_handwritten_dedup_cpu"] = res["normalize_cpu"] / res["handwritten_dedup_cpu"]
        res["ratio_handwritten_stream_cpu"] = res["normalize_cpu"] / res["handwritten_stream_cpu"]
        print(f"  hand-written from_json {res['handwritten_s']:.1f} s, with dedup {res['handwritten_dedup_s']:.1f} s"
              f" ({res['handwritten_dedup_cpu']:.1f} CPU s), streaming {res['handwritten_stream_s']:.1f} s "
              f"({res['handwritten_stream_cpu']:.1f} CPU s); cdcnorm / hand-written = "
              f"{res['ratio_handwritten_dedup']:.2f} ({res['ratio_handwritten_dedup_cpu']:.2f} in CPU; "
              f"{res['ratio_handwritten_stream_cpu']:.2f} against the streaming one)", flush=True)
    if binary and not args.skip_baselines:
        measured(res, "fastavro", lambda: baselines.fastavro_alone(files, cores))
        res["ratio_fastavro"] = res["normalize_s"] / res["fastavro_s"]
        res["ratio_fastavro_cpu"] = res["normalize_cpu"] / res["fastavro_cpu"]
        print(f"  fastavro alone {res['fastavro_s']:.1f} s ({res['fastavro_cpu']:.1f} CPU s, {cores} processes); "
              f"cdcnorm / fastavro = {res['ratio_fastavro']:.2f} ({res['ratio_fastavro_cpu']:.2f} in CPU)", flush=True)

    if not args.skip_apply:
        import cdcnorm

        baselines.reset_peaks(spark)
        applied = measured(res, "apply", lambda: cdcnorm.apply(spark, lake))
        res["memory_apply_mb"] = res.pop("apply_peak_mb")
        res["apply_rows"] = applied.summary["totals"]["rows"]
        res["apply_exchanges"], res["apply_branches"] = apply_shuffles(spark, lake)
        res["apply_one_shuffle"] = res["apply_exchanges"] == res["apply_branches"]
        print(f"  apply {res['apply_s']:.1f} s ({res['apply_cpu']:.1f} CPU s), {res['apply_rows']:,} rows; state plan: "
              f"{res['apply_exchanges']} exchange(s) over {res['apply_branches']} keyed table(s) = "
              f"{'one shuffle per change' if res['apply_one_shuffle'] else 'MORE than one shuffle'}", flush=True)
        if not args.skip_baselines:
            res["duckdb_rows"] = measured(res, "duckdb", lambda: baselines.duckdb_projection(
                lake, str(scratch / "duck.parquet"), cores))
            print(f"  DuckDB latest row per key {res['duckdb_s']:.1f} s ({res['duckdb_cpu']:.1f} CPU s), "
                  f"{res['duckdb_rows']:,} rows", flush=True)
    res["load_after"] = os.getloadavg()
    if not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)
    return res


# -- report ----------------------------------------------------------------------------------------------------
def _check(name: str, ratio: float, target: float) -> str:
    return f"{name} {ratio:.2f}x CPU (<= {target:g}x: {'met' if ratio <= target else 'MISSED'})"


def fresh_scratch(work: Path, name: str) -> Path:
    """An empty `work/scratch/<name>` folder (a bench's lakes and checkpoints of an earlier run removed)."""
    scratch = work / "scratch" / name
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    return scratch


def min_median(rounds: list[dict[str, Any]], side: str, keys: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """Per figure in `keys`, the minimum and the median over the timed rounds of one side of an A/B (the floor is
    the steadiest figure on a shared machine, the median says how typical it is)."""
    rs = [r for r in rounds if r["side"] == side]
    return {k: {"min": min(r[k] for r in rs), "median": statistics.median(r[k] for r in rs)} for k in keys}


def save_results(work: Path, prefix: str, payload: dict[str, Any]) -> Path:
    """`payload` as JSON in `work/results/<prefix><UTC stamp>.json` (every bench keeps its runs side by side)."""
    path = work / "results" / f"{prefix}{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return path


def verdict(r: dict[str, Any], results: list[dict[str, Any]] | None = None) -> str:
    """Issue 13's targets on CPU seconds (steadier than wall time on a busy machine)."""
    out = []
    if "ratio_handwritten_dedup_cpu" in r:
        out.append(_check("hand-written", r["ratio_handwritten_dedup_cpu"], TARGET_HANDWRITTEN))
    if "ratio_fastavro_cpu" in r and r["format"] == "datastream-avro":  # the others' fastavro reads only envelopes
        out.append(_check("fastavro", r["ratio_fastavro_cpu"], TARGET_AVRO))
    if r["format"] not in BINARY:
        out.append(_check("copy", r["ratio_copy_cpu"], TARGET_COPY))
    ref = next((x for x in results or [] if x["format"] == "datastream-json"), None)
    if ref is not None and r is not ref:
        per_event = (r["normalize_cpu"] / r["records"]) / (ref["normalize_cpu"] / ref["records"])
        out.append(_check("per event vs Datastream JSON", per_event, TARGET_PER_EVENT))
    return "; ".join(out)


def table(results: list[dict[str, Any]]) -> str:
    """Markdown table of one run (wall seconds; CPU seconds of our processes in parentheses)."""
    head = ("format", "events", "normalize s (CPU)", "events/s", "copy floor s (CPU)", "x copy", "baseline s (CPU)",
            "apply s (CPU)", "DuckDB s", "peak MiB driver/JVM/worker", "target")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        base = "-"
        if "handwritten_dedup_s" in r:
            base = (f"hand-written {r['handwritten_s']:.1f} ({r['handwritten_cpu']:.1f}), +dedup "
                    f"{r['handwritten_dedup_s']:.1f} ({r['handwritten_dedup_cpu']:.1f}), streaming "
                    f"{r['handwritten_stream_s']:.1f} ({r['handwritten_stream_cpu']:.1f}); ours "
                    f"{r['ratio_handwritten_dedup']:.2f}x")
        elif "fastavro_s" in r:
            base = f"fastavro {r['fastavro_s']:.1f} ({r['fastavro_cpu']:.1f})"
        mem = {"driver": float("nan"), "jvm": float("nan"), "python_worker": float("nan"), **r["memory_normalize_mb"]}
        lines.append("| " + " | ".join((
            r["format"], f"{r['records']:,}", f"{r['normalize_s']:.1f} ({r['normalize_cpu']:.1f})",
            f"{r['events_per_s']:,.0f}", f"{r['copy_floor_s']:.1f} ({r['copy_floor_cpu']:.1f})",
            f"{r['ratio_copy']:.1f} ({r['ratio_copy_cpu']:.1f})", base,
            (f"{r['apply_s']:.1f} ({r['apply_cpu']:.1f}), "
             f"{'1 shuffle' if r['apply_one_shuffle'] else 'MORE shuffles'}") if "apply_s" in r else "-",
            f"{r['duckdb_s']:.1f}" if "duckdb_s" in r else "-",
            f"{mem['driver']:.0f}/{mem['jvm']:.0f}/{mem['python_worker']:.0f}", verdict(r, results),
        )) + " |")
    return "\n".join(lines)


def workload_args(p: argparse.ArgumentParser, changes: int, files: int, work_help: str) -> None:
    """The simulated workload's options, shared by the benchmarks that read bench.py's cached data."""
    p.add_argument("--changes", type=int, default=changes, help="source changes per vendor format")
    p.add_argument("--formats", default=",".join(FORMATS), help="comma list of vendor formats")
    p.add_argument("--work", default=".bench", help=work_help)
    p.add_argument("--tables", type=int, default=3)
    p.add_argument("--rows", type=int, default=1000, help="initial rows per table (the backfill)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--files", type=int, default=files, help="about how many input files per format")


def micro_batch_args(p: argparse.ArgumentParser, warm: int, repeat: int, warm_help: str) -> None:
    """The options shared by the benchmarks that time rounds of a follow micro-batch over a small folder."""
    p.add_argument("--events", type=int, default=1000)
    p.add_argument("--warm", type=int, default=warm, help=warm_help)
    p.add_argument("--repeat", type=int, default=repeat, help="timed rounds of each side (or rung)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--work", default=".bench")


def parse_workload(p: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """Parse, refusing unknown formats (the options of :func:`workload_args`)."""
    args = p.parse_args(argv)
    unknown = [f for f in args.formats.split(",") if f not in FORMATS]
    if unknown:
        p.error(f"unknown format(s) {', '.join(unknown)}; choose from {', '.join(FORMATS)}")
    return args


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    workload_args(p, 1_000_000, 10, "cache of generated data, scratch lakes and results")
    p.add_argument("--master", default="local[*]")
    p.add_argument("--driver-memory", default="4g")
    p.add_argument("--skip-apply", action="store_true")
    p.add_argument("--skip-baselines", action="store_true", help="no hand-written/fastavro/DuckDB runs")
    p.add_argument("--keep", action="store_true", help="keep the scratch lakes under WORK/scratch")
    p.add_argument("--memory-mb", type=int, default=300, help="file size of the reader memory check (0: skip)")
    return parse_workload(p, argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = Path(args.work)
    (work / "results").mkdir(parents=True, exist_ok=True)
    print(f"cdcnorm bench: {args.changes:,} changes per format, {os.cpu_count()} cores, load {os.getloadavg()}",
          flush=True)
    spark = spark_session(args.master, args.driver_memory)
    results = [bench_format(spark, args, vf) for vf in args.formats.split(",")]
    print()
    print(table(results))
    memory: list[dict[str, Any]] = []
    if args.memory_mb:
        print(f"\nreader memory: {args.memory_mb} MiB files, RSS growth limit {reader_memory.LIMIT_MB} MiB", flush=True)
        memory = reader_memory.run(args.memory_mb, list(reader_memory.CONTAINERS), work)
    path = save_results(work, "", {"args": vars(args), "cores": os.cpu_count(), "results": results,
                                   "reader_memory": memory})
    print(f"\nresults: {path}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
