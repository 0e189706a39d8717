"""`make bench`: cdcnorm's normalize throughput per vendor format, as CPU and wall ratios to baselines measured
in the same run (the copy floor; the hand-written Datastream JSON pipeline; fastavro alone for Avro).

For each format: simulate a workload (cached under WORK/data, keyed by its parameters), warm the JVM and the
Python workers up, then time on the same files and cores:

- the copy floor (Spark reads the files as text, or binary for Avro, and writes them to Parquet unchanged);
- `cdcnorm.normalize` into a fresh lake (events/s, and its time as a ratio to the copy floor);
- Datastream JSON: the hand-written `from_json` + VARIANT pipeline, with and without `dropDuplicates`, committed
  as a Delta table through the same delta-rs commit code as cdcnorm, and the same with dedup as an `availableNow`
  streaming query (the shape `cdcnorm normalize` runs in);
- Avro formats: fastavro alone decoding the same files, one process per core;
- `cdcnorm.apply` on that lake (and how many shuffles its state plan has), and DuckDB running the same
  projection over the lake's Parquet, for context;
- peak memory (VmHWM) of the Python driver, the JVM and the largest Python worker, per step;
- the file readers' memory (benchmarks/memory.py): RSS growth while one process decodes a generated
  `--memory-mb` file (300 MiB) per container with the adapter's read_file, against the 64 MiB limit.

Two more modes, each instead of the above:

- `--ab REV`: the same `normalize` of one format, rounds alternating in one warm session between this tree and git
  revision REV checked out in a temporary worktree (the driver re-imports `cdcnorm` from the round's tree; the
  Python workers of each side run that side's tree); min and median wall and CPU per side, and their ratios.
- `--sizes N,M,...`: growth with size for one format: each size normalized into a fresh lake after a warm-up on the
  smallest; seconds, CPU, JVM heap after GC, peak RSS per size, and a least-squares line (fixed + per million).

Usage: python benchmarks/bench.py [--changes 1000000] [--formats datastream-json,datastream-avro] [--work .bench]
       python benchmarks/bench.py --ab HEAD~1 --changes 200000 --formats datastream-json [--repeat 3]
       python benchmarks/bench.py --sizes 200000,500000,1000000 --formats datastream-json
Results are printed and saved as WORK/results/<timestamp>.json. Figures and commands: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import baselines
import memory as reader_memory

ROOT = Path(__file__).resolve().parent.parent
FORMATS = ("datastream-json", "datastream-avro", "replicate-json", "replicate-avro", "replicate-capture",
           "datahub-blob", "datahub-concat", "datahub-tuple", "debezium-json", "debezium-json-noschema",
           "debezium-avro", "dms-csv", "dms-parquet", "dms-kinesis", "goldengate-json", "goldengate-json_row",
           "goldengate-avro_op", "canal-json", "maxwell-json")
BINARY = {"datastream-avro", "replicate-avro", "replicate-capture", "debezium-avro", "goldengate-avro_op"}
"""Avro containers: the copy floor reads them as whole binary objects, fastavro alone is their baseline."""
PARQUET = {"dms-parquet"}
"""Parquet files: the copy floor reads them as whole binary objects (no fastavro baseline)."""
TARGET_COPY = 10.0
"""target: a JSON format's normalize CPU at most 10x the copy floor's"""
TARGET_HANDWRITTEN = 1.0
"""target: Datastream JSON normalize CPU at most the hand-written pipeline's (with dedup, through Delta)"""
TARGET_AVRO = 4.0
"""target: an Avro format's normalize CPU at most 4x fastavro's own decode of the same files (its Python decode stays:
Spark has no Avro reader without its jar)"""
TARGET_PER_EVENT = 1.5
"""target: every format's CPU per event at most 1.5x Datastream JSON's"""


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
    if vf.startswith("dms-"):  # S3 files: the task's settings, keys and column types
        from cdcnorm.simulate import Manifest
        from cdcnorm.simulate.formats import FORMATS as SIMULATED

        opts.update(SIMULATED[vf].user_options(root, Manifest.load(root).vendor_formats[vf]))
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


JVM_PATH = {"datastream-json"}
"""Formats whose adapter can decode JSON lines with Spark expressions (`decode_path: jvm`): measured that way too."""


def normalize(spark, vf: str, root: Path, files: list[str], lake: str,
              decode_path: str = "python") -> tuple[float, dict[str, Any]]:
    import cdcnorm
    from cdcnorm.simulate import VENDOR_FORMATS

    shutil.rmtree(lake, ignore_errors=True)
    t0 = time.perf_counter()
    options = {**options_for(vf, root), "decode_path": decode_path}
    result = cdcnorm.normalize(files, VENDOR_FORMATS[vf][0], spark=spark, options=options, lake=lake)
    return time.perf_counter() - t0, result.report


def warm_up(spark, vf: str, root: Path, files: list[str], scratch: Path) -> None:
    """A cold JVM would distort every ratio: run the copy floor, a one-file normalize (both decode paths where the
    format has two) and the hand-written pipeline once, untimed. The one-file normalize is planned as the measured
    run is (not as a small run: `CDCNORM_SMALL_RUN_BYTES=0`), so it compiles the same generated code, as the
    hand-written pipeline's warm-up does for its own."""
    baselines.copy_floor(spark, files, str(scratch / "warm-copy"), vf in BINARY | PARQUET)
    smallest = min(files, key=os.path.getsize)
    with mock.patch.dict(os.environ, {"CDCNORM_SMALL_RUN_BYTES": "0"}):
        for path in ("python", "jvm") if vf in JVM_PATH else ("python",):
            normalize(spark, vf, root, [smallest], str(scratch / f"warm-lake-{path}"), path)
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
    measured(res, "copy_floor", lambda: baselines.copy_floor(spark, files, str(scratch / "copy"), vf in BINARY | PARQUET))
    baselines.reset_peaks(spark)
    lake = str(scratch / "lake")
    report = measured(res, "normalize", lambda: normalize(spark, vf, root, files, lake)[1])
    res["memory_normalize_mb"] = res.pop("normalize_peak_mb")
    res["records"] = report["records_read"]
    res["rows_written"] = report["rows_written"]
    res["reconciled"] = report["reconciled"]
    res["outcomes"] = report["outcomes"]
    res["decode_paths"] = report.get("decode_paths")
    res["events_per_s"] = res["records"] / res["normalize_s"]
    res["ratio_copy"] = res["normalize_s"] / res["copy_floor_s"]
    res["ratio_copy_cpu"] = res["normalize_cpu"] / res["copy_floor_cpu"]
    print(f"  copy floor {res['copy_floor_s']:.1f} s ({res['copy_floor_cpu']:.1f} CPU s); normalize "
          f"{res['normalize_s']:.1f} s ({res['normalize_cpu']:.1f} CPU s) = {res['events_per_s']:,.0f} events/s, "
          f"{res['ratio_copy']:.1f}x the copy floor ({res['ratio_copy_cpu']:.1f}x in CPU); CPU by process "
          f"{_fmt(res['normalize_cpu_by_process'])}; peak MiB {_fmt(res['memory_normalize_mb'])}; records by decode "
          f"path {res['decode_paths']}", flush=True)

    if vf in JVM_PATH and not args.skip_baselines:
        jvm_report = measured(res, "normalize_jvm", lambda: normalize(spark, vf, root, files, str(scratch / "lake-jvm"),
                                                                      "jvm")[1])
        res["jvm_decode_paths"] = jvm_report.get("decode_paths")
        res["ratio_jvm_cpu"] = res["normalize_jvm_cpu"] / res["normalize_cpu"]
        print(f"  with decode_path=jvm {res['normalize_jvm_s']:.1f} s ({res['normalize_jvm_cpu']:.1f} CPU s), records by "
              f"path {res['jvm_decode_paths']}; jvm / python = {res['normalize_jvm_s'] / res['normalize_s']:.2f} "
              f"({res['ratio_jvm_cpu']:.2f} in CPU)", flush=True)
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


# -- A/B against a git revision ----------------------------------------------------------------------------------
@contextlib.contextmanager
def revision_tree(rev: str) -> Iterator[Path]:
    """The `src` folder of git revision `rev` of this repository, checked out in a temporary worktree that is
    removed afterwards (the working tree and its branch are not touched)."""
    tmp = Path(tempfile.mkdtemp(prefix="cdcnorm-ab-"))
    tree = tmp / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(tree), rev], check=True)
    try:
        yield tree / "src"
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
        shutil.rmtree(tmp, ignore_errors=True)


def own_tree() -> Path:
    """The folder this process imports `cdcnorm` from (this tree's `src`, or the installed package's folder)."""
    import cdcnorm

    return Path(cdcnorm.__file__).resolve().parent.parent


_TREES: set[str] = set()


def use_tree(spark, src: Path) -> None:
    """Import `cdcnorm` from `src` from now on: the driver drops the modules it has and imports them again from
    there, and the Python workers Spark starts for functions created from now on put `src` first on their path
    (Spark keeps one worker daemon per environment, so each tree's workers stay warm)."""
    for name in [m for m in sys.modules if m == "cdcnorm" or m.startswith("cdcnorm.")]:
        del sys.modules[name]
    sys.path[:] = [p for p in sys.path if p not in _TREES]
    _TREES.add(str(src))
    sys.path.insert(0, str(src))
    if spark is not None:
        rest = os.environ.get("PYTHONPATH", "")
        spark.sparkContext.environment["PYTHONPATH"] = str(src) + (os.pathsep + rest if rest else "")


def ab_rounds(spark, trees: dict[str, Path], warm: int, repeat: int, one_round: Any) -> list[dict[str, Any]]:
    """`warm` untimed, then `repeat` timed rounds of `one_round(side) -> figures`, each round running both sides
    (order alternating), the side's tree in use; the timed rounds' figures, each with its `side`."""
    timed: list[dict[str, Any]] = []
    sides = list(trees)
    for i in range(warm + repeat):
        for side in (sides if i % 2 == 0 else sides[::-1]):
            use_tree(spark, trees[side])
            res = {"side": side, "load": os.getloadavg()[0], **one_round(side)}
            print(f"  {'warm ' if i < warm else 'timed'} {i:2d} {side:8s}: " + ", ".join(
                f"{k} {v:.2f}" for k, v in res.items() if isinstance(v, float) and k != "load")
                + f"; load {res['load']:.1f}", flush=True)
            if i >= warm:
                timed.append(res)
    use_tree(spark, trees[sides[0]])
    return timed


def ab_summary(timed: list[dict[str, Any]], sides: list[str], keys: tuple[str, ...]) -> dict[str, Any]:
    """Min and median per side of `keys` (`sides`: this tree's, then the revision's) and the revision's ratios."""
    out: dict[str, Any] = {side: min_median(timed, side, keys) for side in sides}
    this, rev = (out[s] for s in sides)
    for k in keys:
        ratio = {m: rev[k][m] / this[k][m] if this[k][m] else float("nan") for m in ("min", "median")}
        out[f"ratio_{k}"] = ratio
        print(f"  {k}: {sides[0]} {this[k]['min']:.2f} / {this[k]['median']:.2f}, {sides[1]} {rev[k]['min']:.2f} / "
              f"{rev[k]['median']:.2f} (min / median): {sides[1]} / {sides[0]} {ratio['min']:.3f}x min, "
              f"{ratio['median']:.3f}x median", flush=True)
    return out


REPORT_VOLATILE = ("run_id", "started_at", "finished_at", "duration_s", "timings")
"""Run report keys that differ between two runs of the same input."""


def ab_normalize(spark, args: argparse.Namespace, vf: str) -> dict[str, Any]:
    """`normalize` of one format, rounds alternating between this tree and revision `args.ab`."""
    work = Path(args.work)
    root = workload(work, vf, args.changes, args.tables, args.rows, args.seed, args.files)
    files = input_files(root, vf)
    scratch = fresh_scratch(work, f"ab-{vf}")
    reports: dict[str, dict[str, Any]] = {}

    def one_round(side: str) -> dict[str, Any]:
        res: dict[str, Any] = {}
        _, report = measured(res, "normalize", lambda: normalize(spark, vf, root, files, str(scratch / "lake")))
        reports[side] = {k: v for k, v in report.items() if k not in REPORT_VOLATILE}
        return {k: v for k, v in res.items() if k in ("normalize_s", "normalize_cpu")}

    with revision_tree(args.ab) as rev_src:
        trees = {"this": own_tree(), args.ab: rev_src}
        print(f"{vf}: {len(files)} files; A/B of normalize, this tree ({trees['this']}) against {args.ab}", flush=True)
        use_tree(spark, trees["this"])
        warm_up(spark, vf, root, files, scratch)
        timed = ab_rounds(spark, trees, 1, args.repeat, one_round)
    differ = sorted(k for k in set(reports["this"]) | set(reports[args.ab])
                    if reports["this"].get(k) != reports[args.ab].get(k))
    if differ:
        print(f"  the two sides' run reports differ in: {', '.join(differ)}", flush=True)
    return {"format": vf, "rev": args.ab, "rounds": timed, "reports_differ": differ,
            **ab_summary(timed, list(trees), ("normalize_s", "normalize_cpu"))}


# -- growth with size -------------------------------------------------------------------------------------------
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


def growth(spark, args: argparse.Namespace, vf: str) -> dict[str, Any]:
    """`normalize` of one format at each of `args.sizes` changes (the same number of files at every size, so the
    parallelism is the same): CPU per event against the smallest size's (flat means linear), the JVM heap still
    in use after GC, the peak RSS per process kind, and the least-squares line over the sizes."""
    work = Path(args.work)
    sizes = sorted(int(x) for x in args.sizes.split(",") if x.strip())
    roots = {n: workload(work, vf, n, args.tables, args.rows, args.seed, args.files) for n in sizes}
    scratch = fresh_scratch(work, f"sizes-{vf}")
    warm_up(spark, vf, roots[sizes[0]], input_files(roots[sizes[0]], vf), scratch)
    rows: list[dict[str, Any]] = []
    for n in sizes:
        files = input_files(roots[n], vf)
        lake = str(scratch / f"lake-{n}")
        res: dict[str, Any] = {"changes": n, "files": len(files), "load_before": os.getloadavg()}
        baselines.reset_peaks(spark)
        with baselines.HeapAfterGc(spark) as heap:
            report = measured(res, "normalize", lambda f=files, lk=lake, r=roots[n]: normalize(spark, vf, r, f, lk)[1])
        res.update(heap_after_gc_mb=heap.peak_mb, heap_max_mb=heap.max_mb, records=report["records_read"],
                   input_mb=sum(os.path.getsize(f) for f in files) / 2**20,
                   lake_mb=sum(p.stat().st_size for p in Path(lake).rglob("*") if p.is_file()) / 2**20,
                   load_after=os.getloadavg())
        rows.append(res)
        print(f"  {n:>10,} changes, {res['records']:>10,} events: {res['normalize_s']:7.1f} s "
              f"({res['normalize_cpu']:.1f} CPU s, {res['normalize_cpu'] / res['records'] * 1e6:.1f} µs an event); "
              f"heap after GC {heap.peak_mb:.0f} of {heap.max_mb:.0f} MiB; peak RSS MiB {_fmt(res['normalize_peak_mb'])}"
              f"; input {res['input_mb']:.0f} MiB, lake {res['lake_mb']:.0f} MiB", flush=True)
        shutil.rmtree(lake, ignore_errors=True)
    millions = [r["records"] / 1e6 for r in rows]
    base = rows[0]["normalize_cpu"] / millions[0]
    for r, m in zip(rows, millions, strict=True):
        r["cpu_per_event_vs_smallest"] = r["normalize_cpu"] / m / base
    lines = {}
    for key in ("normalize_s", "normalize_cpu"):
        a, b, r2 = fit(millions, [r[key] for r in rows])
        lines[key] = {"fixed": a, "per_million": b, "r2": r2}
        print(f"  {key}: {a:.1f} s fixed + {b:.1f} s per million events (R^2 = {r2:.4f}); CPU per event vs the "
              f"smallest size: " + ", ".join(f"{r['cpu_per_event_vs_smallest']:.2f}x" for r in rows), flush=True)
    shutil.rmtree(scratch, ignore_errors=True)
    return {"format": vf, "rows": rows, "fit": lines}


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
    """The normalize targets, on CPU seconds (steadier than wall time on a busy machine)."""
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
    p.add_argument("--ab", metavar="REV", help="instead: normalize of each format alternating between this tree and "
                   "git revision REV (a temporary worktree), --repeat timed rounds after one warm-up round")
    p.add_argument("--repeat", type=int, default=3, help="timed rounds per side of --ab")
    p.add_argument("--sizes", metavar="N,M,...", help="instead: growth with size of the first format, normalized at "
                   "each of these change counts")
    args = parse_workload(p, argv)
    if args.ab and args.sizes:
        p.error("--ab and --sizes are two modes: pick one")
    if args.sizes and len([x for x in args.sizes.split(",") if x.strip()]) < 2:
        p.error("--sizes needs at least two sizes")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = Path(args.work)
    (work / "results").mkdir(parents=True, exist_ok=True)
    print(f"cdcnorm bench: {args.changes:,} changes per format, {os.cpu_count()} cores, load {os.getloadavg()}",
          flush=True)
    spark = spark_session(args.master, args.driver_memory)
    if args.ab or args.sizes:
        if args.ab:
            payload = [ab_normalize(spark, args, vf) for vf in args.formats.split(",")]
        else:
            payload = [growth(spark, args, args.formats.split(",")[0])]
        path = save_results(work, "ab-" if args.ab else "sizes-", {"args": vars(args), "results": payload})
        print(f"\nresults: {path}")
        spark.stop()
        return 0
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
