"""Where the Spark decode of Datastream JSON (`decode_path: jvm`) spends its CPU, piece by piece, beside the Python
decoder and the hand-written `from_json` on the same lines.

Why: `make bench` gives the whole run's ratio; this says which piece of the expression stage costs what, per row, in
steady state (each side runs `--repeat` times after a warm-up, the least CPU counted: the first run of a plan also
pays for compiling Spark's generated code, a cost that shrinks with the run's length, not with its rows). The lines
are cut once (cdcnorm.ingest.jvm_decode) and cached, so every side starts from the same rows in memory; each piece
is timed with its inputs given (cached too), so its figure is its own. Sides:

- `from_json (hand-written schema)`: the hand-written pipeline's parse (benchmarks/baselines.py);
- `try_parse_json`, `utf8 + payload count`, `payload extract`, `flat_tokens`, `cells`, `variant_text`,
  `image parse_json`: the pieces of `cdcnorm.adapters.datastream.jvm.lines_to_columns`;
- `lines_to_columns`: the whole expression stage, every column;
- `decode_files_jvm`: cut, expressions and the Python finish (event ids, fallback lines, schema versions);
- `decode_files (Python)`: the Python decoder over the same files.

CPU is the JVM's and the Python workers' (benchmarks/baselines.CpuMeter), in µs per line.

Usage: python benchmarks/jvm_decode_pieces.py [--changes 100000] [--files 10] [--work .bench] [--repeat 3]
       [--sides lines_to_columns,decode_files_jvm]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))

import baselines  # noqa: E402
import bench  # noqa: E402

FORMAT = "datastream-json"


def cpu_per_row(df: Any, rows: int, repeat: int) -> float:
    """The least CPU µs per row of `repeat` noop writes of `df` after one untimed write."""
    df.write.format("noop").mode("overwrite").save()
    best = None
    for _ in range(repeat):
        with baselines.CpuMeter() as meter:
            df.write.format("noop").mode("overwrite").save()
        best = meter.seconds if best is None else min(best, meter.seconds)
    return best / rows * 1e6


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    bench.workload_args(p, 100_000, 10, "cache of generated data (shared with make bench)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--sides", help="comma list of the sides to time (a side's name up to its first space)")
    args = p.parse_args(argv)
    root = bench.workload(Path(args.work), FORMAT, args.changes, args.tables, args.rows, args.seed, args.files)
    files = bench.input_files(root, FORMAT)
    spark = bench.spark_session("local[*]", "4g")

    from pyspark.sql import functions as F

    from cdcnorm.adapters import get_adapter
    from cdcnorm.adapters.datastream import jvm
    from cdcnorm.canonical import json_cells, json_tokens
    from cdcnorm.ingest import jvm_decode
    from cdcnorm.ingest.sources import decode_files

    adapter = get_adapter("datastream", {"decode_path": "jvm", "stream": f"bench-{FORMAT}"})
    listed = spark.createDataFrame([(f, os.path.getsize(f)) for f in files], "path string, size long").repartition(2)
    lines = listed.mapInArrow(jvm_decode._LineCutter(adapter), jvm_decode.line_schema()).cache()
    rows = lines.count()
    text = F.col("value")
    base = lines.select(F.col("_line").cast("string").alias("value")).cache()
    payload = base.withColumn("_p", F.regexp_extract(text, jvm._PAYLOAD, 1)).cache()
    tokens = payload.withColumn("_t", json_cells.flat_tokens(F.col("_p"), max_digits=None)).cache()
    for frame in (base, payload, tokens):
        frame.count()
    out = jvm.lines_to_columns(lines, adapter.options.stream)
    sides = {
        "from_json (hand-written schema)": base.select(F.from_json(text, baselines.DATASTREAM_JSON_SCHEMA)),
        "try_parse_json": base.select(F.try_parse_json(text)),
        "utf8 + payload count": base.select(F.is_valid_utf8(text), F.regexp_count(text, F.lit(r'"payload"\s*:'))),
        "payload extract": base.select(F.regexp_extract(text, jvm._PAYLOAD, 1)),
        "flat_tokens": payload.select(json_cells.flat_tokens(F.col("_p"), max_digits=None)),
        "cells": tokens.select(json_cells.cells(F.col("_t"), "timestamp")),
        "variant_text": tokens.select(*json_tokens.variant_text(F.col("_t"))),
        "image parse_json": payload.select(F.parse_json(F.col("_p"))),
        "lines_to_columns": out,
        "decode_files_jvm": jvm_decode.decode_files_jvm(listed, adapter, adapter.jvm_decode()),
        "decode_files (Python)": decode_files(listed, get_adapter("datastream", {"stream": f"bench-{FORMAT}"})),
    }
    print(f"{FORMAT}: {rows:,} lines in {len(files)} files, load {os.getloadavg()[0]:.1f}", flush=True)
    chosen = args.sides.split(",") if args.sides else None
    for name, frame in sides.items():
        if chosen and name.split(" ")[0] not in chosen:
            continue
        print(f"  {name:32s} {cpu_per_row(frame, rows, args.repeat):7.1f} CPU µs per line", flush=True)


if __name__ == "__main__":
    main()
