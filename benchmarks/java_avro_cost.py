"""What decoding Datastream Avro container files costs in the JVM with Apache Avro's Java library, beside fastavro.

Why: Spark's Avro data source is a separate jar that cannot be downloaded here, so cdcnorm decodes Avro with
fastavro in Python workers; but pyspark ships Apache Avro's own Java library (`jars/avro-*.jar`, for Hive). This
reads each file whole (`binaryFile`) into a Java UDF (`benchmarks/java/AvroRecords.java`, compiled here with `javac`
against pyspark's jars) that decodes every record into a generic record and reads each field once, and times it per
record in steady state (`cpu_per_row`: the least CPU of `--repeat` noop writes after one untimed) beside:

- `fastavro alone`: `benchmarks/baselines.fastavro_alone`, one process per core, no Spark (the Avro target's
  baseline), the least of `--repeat` runs;
- `decode_files (Python)`: cdcnorm's decoder of the same files in Spark's Python workers (origins, rules, ids, images,
  schema versions: more than a decode), for scale.

Usage: python benchmarks/java_avro_cost.py [--changes 100000] [--files 10] [--work .bench] [--repeat 3]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import baselines  # noqa: E402
from java_parse_cost import run_measured  # noqa: E402
from jvm_decode_pieces import cpu_per_row  # noqa: E402

FORMAT = "datastream-avro"


def main(argv: list[str] | None = None) -> None:
    run_measured(argv, __doc__, FORMAT, measure)


def measure(spark, files: list[str], repeat: int) -> None:
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from cdcnorm.adapters import get_adapter
    from cdcnorm.ingest.sources import decode_files

    spark.udf.registerJavaFunction("avro_records", "cdcnorm.bench.AvroRecords", T.LongType())
    contents = spark.read.format("binaryFile").load(files).select("content").repartition(2).cache()
    read = contents.selectExpr("avro_records(content) AS n")
    counted = read.agg(F.sum(F.shiftright("n", 32)).alias("records"), F.sum(F.col("n").bitwiseAND(0xFFFFFFFF))
                       .alias("fields")).first()
    records = int(counted["records"])
    fast = None
    for _ in range(repeat + 1):
        with baselines.CpuMeter() as meter:
            decoded = baselines.fastavro_alone(files)
        fast = meter.seconds if fast is None else min(fast, meter.seconds)
    if decoded != records:
        raise SystemExit(f"fastavro read {decoded} records, the Java UDF {records}")
    listed = spark.createDataFrame([(f, os.path.getsize(f)) for f in files], "path string, size long").repartition(2)
    print(f"{FORMAT}: {records:,} records ({counted['fields']:,} non-null fields) in {len(files)} files, load "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    print(f"  {'fastavro alone':36s} {fast / records * 1e6:7.1f} CPU µs per record", flush=True)
    sides = {
        "Java Avro library in a UDF": read,
        "decode_files (Python)": decode_files(listed, get_adapter("datastream", {"stream": f"bench-{FORMAT}"})),
    }
    for name, frame in sides.items():
        print(f"  {name:36s} {cpu_per_row(frame, records, repeat):7.1f} CPU µs per record", flush=True)


if __name__ == "__main__":
    main()
