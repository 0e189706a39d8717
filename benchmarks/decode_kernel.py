"""The decode kernel alone: CPU per input record of each vendor format's `read_file` loop, no Spark, against
Datastream JSON's (the reference format) and, for Avro, fastavro's own decode of the same files.

Why a separate bench: inside `normalize` the decode runs in Spark's Python workers next to the JVM, where its
CPU cannot be told apart from Spark's. Here one process runs exactly what a decode task runs
(`cdcnorm.ingest.sources`' `mapInArrow` function: the adapter's `read_file` into a `BatchBuilder`, flushed into the
Arrow batches Spark receives) over a simulated workload, after a warm-up, and measures
`time.process_time`. For Avro formats it also times `fastavro.reader` over the same files: the floor of any
Python decoder of them (for Replicate Avro and Event Hubs Capture it only unpacks the envelope, whose payload
is JSON text, so it is not a like-for-like floor there).

`--inference-cost` also times each format with type observation off (`cdcnorm.canonical.inferred.TypeObserver`
observing nothing) and prints what observing column types costs the decode. `--ab REV` runs the bench alternately
in separate processes with this tree and with git revision REV (checked out in a temporary worktree) first on
PYTHONPATH, `--ab-rounds` times each, and prints both sides' best µs per record and the speedup per format.

Usage: python benchmarks/decode_kernel.py [--changes 30000] [--formats datastream-json,...] [--repeat 3]
       python benchmarks/decode_kernel.py --ab main --formats datastream-json,replicate-avro --repeat 5
Prints one table: µs of CPU per record (best of --repeat), the ratio to Datastream JSON, and for Avro the
ratio to fastavro. Figures and commands: docs/benchmarks.md ("Decode kernel").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import BINARY, options_for, parse_workload, workload, workload_args  # noqa: E402

REFERENCE = "datastream-json"


def prepared_adapter(vf: str, root: Path, files: list[str]) -> Any:
    """The adapter as the pipeline hands it to the executors: options, then its first pass run in-process."""
    import orjson

    from cdcnorm.adapters import get_adapter
    from cdcnorm.adapters.base import FirstPass
    from cdcnorm.runtime.fs import open_input
    from cdcnorm.simulate import VENDOR_FORMATS

    adapter = get_adapter(VENDOR_FORMATS[vf][0], options_for(vf, root))
    if not adapter.needs_first_pass():
        return adapter.prepare(FirstPass(kind="files"))
    seen: dict[bytes, Any] = {}
    for path in files:
        with open_input(path) as fh:
            for item in adapter.first_pass_file(path, fh):
                seen.setdefault(orjson.dumps(item), item)
    return adapter.prepare(FirstPass(kind="files", items=list(seen.values())))


def decode_files(adapter: Any, files: list[str]) -> tuple[int, int]:
    """(input records, output rows) of decoding every file exactly as a decode task does."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from cdcnorm.ingest.sources import _FileDecoder

    records = rows = 0
    paths = pa.record_batch({"path": pa.array(files, pa.string()), "size": pa.array([0] * len(files), pa.int64())})
    for batch in _FileDecoder(adapter)(iter([paths])):  # the function mapInArrow runs, fed one batch of paths
        rows += batch.num_rows
        records += pc.sum(batch.column("_records")).as_py() or 0
    return records, rows


def fastavro_files(files: list[str]) -> int:
    import fastavro

    n = 0
    for path in files:
        with open(path, "rb") as fh:
            for _ in fastavro.reader(fh):
                n += 1
    return n


def cpu_of(fn: Any, repeat: int) -> tuple[float, Any]:
    """Best CPU seconds of `repeat` runs (the machine is shared: the least disturbed run is the kernel's cost)."""
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.process_time()
        result = fn()
        best = min(best, time.process_time() - t0)
    return best, result


def bench_format(args: argparse.Namespace, vf: str) -> dict[str, Any]:
    from bench import input_files

    root = workload(Path(args.work), vf, args.changes, args.tables, args.rows, args.seed, args.files)
    files = input_files(root, vf)
    adapter = prepared_adapter(vf, root, files)
    decode_files(adapter, files[:1])  # warm-up: imports, caches, first-use paths
    cpu, (records, rows) = cpu_of(lambda: decode_files(adapter, files), args.repeat)
    res: dict[str, Any] = {"format": vf, "files": len(files), "records": records, "rows": rows, "cpu_s": cpu,
                           "us_per_record": cpu / max(records, 1) * 1e6}
    if args.inference_cost:
        from cdcnorm.canonical import inferred

        observe = inferred.TypeObserver.observe
        inferred.TypeObserver.observe = lambda self, ident, *images: None
        try:
            off, _ = cpu_of(lambda: decode_files(adapter, files), args.repeat)
        finally:
            inferred.TypeObserver.observe = observe
        res.update(no_inference_cpu_s=off, inference_share=cpu / off - 1 if off else float("nan"))
        print(f"  {vf}: observing column types costs {res['inference_share'] * 100:.1f} % of the decode "
              f"({cpu:.2f} against {off:.2f} CPU s)", flush=True)
    if vf in BINARY:
        fastavro_files(files[:1])
        fcpu, frecords = cpu_of(lambda: fastavro_files(files), args.repeat)
        res.update(fastavro_cpu_s=fcpu, fastavro_records=frecords, fastavro_us=fcpu / max(frecords, 1) * 1e6)
    print(f"  {vf}: {records:,} records, {rows:,} rows, {cpu:.2f} CPU s", flush=True)
    return res


def table(results: list[dict[str, Any]]) -> str:
    ref = next((r["us_per_record"] for r in results if r["format"] == REFERENCE), None)
    lines = ["| format | records | rows | CPU s | µs / record | vs Datastream JSON | fastavro µs / record | vs fastavro |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        vs_ref = f"{r['us_per_record'] / ref:.2f}x" if ref else "-"
        fa = f"{r['fastavro_us']:.1f}" if "fastavro_us" in r else "-"
        vs_fa = f"{r['us_per_record'] / r['fastavro_us']:.2f}x" if "fastavro_us" in r else "-"
        lines.append(f"| {r['format']} | {r['records']:,} | {r['rows']:,} | {r['cpu_s']:.2f} | "
                     f"{r['us_per_record']:.1f} | {vs_ref} | {fa} | {vs_fa} |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    workload_args(p, 30_000, 4, "cache of generated data (shared with bench.py)")
    p.add_argument("--repeat", type=int, default=3, help="runs per measure; the best counts")
    p.add_argument("--json", help="also write the figures to this file")
    p.add_argument("--inference-cost", action="store_true", help="also time the decode without type observation")
    p.add_argument("--ab", metavar="REV", help="run alternately with this tree and git revision REV, in processes")
    p.add_argument("--ab-rounds", type=int, default=2, help="processes per side of --ab")
    return parse_workload(p, argv)


def without_ab(argv: list[str]) -> list[str]:
    """`argv` less its --ab and --ab-rounds options (what each side's process runs)."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in ("--ab", "--ab-rounds"):
            skip = True
        elif not a.startswith(("--ab=", "--ab-rounds=")):
            out.append(a)
    return out


def ab(args: argparse.Namespace, argv: list[str]) -> int:
    """Alternating processes, this tree's and revision `args.ab`'s `cdcnorm` first on PYTHONPATH; best per side."""
    import bench

    child = [sys.executable, str(Path(__file__).resolve()), *without_ab(argv)]
    best: dict[str, dict[str, dict[str, Any]]] = {}
    with bench.revision_tree(args.ab) as rev_src, tempfile.TemporaryDirectory() as tmp:
        trees = {"this": bench.own_tree(), args.ab: rev_src}
        for i in range(args.ab_rounds):
            for side in (list(trees) if i % 2 == 0 else list(trees)[::-1]):
                out = Path(tmp) / f"{i}-{side.replace('/', '_')}.json"
                env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                    x for x in (str(trees[side]), os.environ.get("PYTHONPATH", "")) if x))
                print(f"round {i}, {side} ({trees[side]}), load {os.getloadavg()[0]:.1f}", flush=True)
                subprocess.run([*child, "--json", str(out)], check=True, env=env)
                for r in json.loads(out.read_text()):
                    mine = best.setdefault(side, {}).setdefault(r["format"], r)
                    if r["us_per_record"] < mine["us_per_record"]:
                        best[side][r["format"]] = r
    this, rev = best["this"], best[args.ab]
    print(f"\n| format | this µs / record | {args.ab} µs / record | {args.ab} / this |\n|---|---|---|---|")
    for vf in this:
        print(f"| {vf} | {this[vf]['us_per_record']:.1f} | {rev[vf]['us_per_record']:.1f} | "
              f"{rev[vf]['us_per_record'] / this[vf]['us_per_record']:.2f}x |")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.ab:
        return ab(args, sys.argv[1:] if argv is None else argv)
    print(f"decode kernel: {args.changes:,} changes per format, best of {args.repeat}, load {os.getloadavg()}",
          flush=True)
    results = [bench_format(args, vf) for vf in args.formats.split(",")]
    print()
    print(table(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
