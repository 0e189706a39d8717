"""What the BLAKE2b-128 event id costs per row when only its input column goes to Python, in a scalar Arrow UDF.

Why: Spark has no BLAKE2b, so a decode in the JVM still needs Python for the event id (cdcnorm's ids are BLAKE2b-128
of the tuple-encoded id parts, docs/canonical.md). The Spark decode's finisher (`cdcnorm.ingest.jvm_decode`) sends
every column of every row through `mapInArrow` for it; a scalar Arrow UDF (`pyspark.sql.functions.arrow_udf`) sends
only the id bytes and gets the ids back, the other columns staying in the JVM. This times, per row in steady state
(`cpu_per_row`: the least CPU of `--repeat` noop writes after one untimed), over `--rows` rows of 64 to 128 random
bytes held in Spark's cache:

- `sha2(bytes, 256)`: Spark's built-in hash, for scale;
- `arrow_udf identity`: the UDF's round trip alone (the column to Python and back);
- `arrow_udf blake2b-128 hex`: the event id's hash, as the finisher computes it.

Usage: python benchmarks/id_udf_cost.py [--rows 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys

import pyarrow as pa

sys.path.insert(0, os.path.dirname(__file__))

import bench  # noqa: E402
from jvm_decode_pieces import cpu_per_row  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    spark = bench.spark_session("local[*]", "4g")

    from pyspark.sql import functions as F

    @F.arrow_udf("binary")
    def identity(data: pa.Array) -> pa.Array:
        return data

    @F.arrow_udf("string")
    def blake_id(data: pa.Array) -> pa.Array:
        blake = hashlib.blake2b
        return pa.array([blake(b, digest_size=16).hexdigest() for b in data.to_pylist()], pa.string())

    rows = spark.range(args.rows, numPartitions=2).select(
        F.expr("unhex(repeat(sha2(cast(id AS string), 256), 2 + CAST(id % 3 AS INT)))").alias("b")).cache()
    rows.count()
    sides = {
        "sha2(bytes, 256)": rows.select(F.sha2("b", 256)),
        "arrow_udf identity": rows.select(identity("b")),
        "arrow_udf blake2b-128 hex": rows.select(blake_id("b")),
    }
    print(f"{args.rows:,} rows, load {os.getloadavg()[0]:.1f}", flush=True)
    for name, frame in sides.items():
        print(f"  {name:28s} {cpu_per_row(frame, args.rows, args.repeat):6.2f} CPU µs per row", flush=True)


if __name__ == "__main__":
    main()
