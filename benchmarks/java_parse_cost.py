"""What an exact read of Datastream JSON lines costs in the JVM with Jackson, beside `from_json` and the decoders.

Why: Spark's own JSON functions turn a number beyond decimal(38) into a double (`from_json` into a string field
copies it as `-3.0747366215582517E30`; `parse_json` the same), and the bench's workload has such a number in every
row, so the Spark-expression decode cuts the payload out and tokenizes it with regular expressions. Jackson, which
Spark ships, gives a number's own text. `benchmarks/java/DatastreamLine.java` (compiled here with `javac` against
pyspark's jars, put on the driver's class path, registered as a Java UDF) reads a line's envelope members typed and
its payload with the wide numbers as strings; this times it per line, in steady state (`cpu_per_row`: the least CPU
of `--repeat` noop writes after one untimed), beside:

- `from_json (hand-written schema)`: the hand-written pipeline's parse (benchmarks/baselines.py);
- `java line read + parse_json + sha2`: the read, the image parsed from the payload text and a SHA-256 over the id
  members (what the hand-written pipeline does after its parse);
- `decode_files (Python)` and `decode_files_jvm` (`decode_listed` with `decode_path: jvm`): cdcnorm's two decoders
  over the same files (origins, ids, schema versions: more than a parse), for scale.

Usage: python benchmarks/java_parse_cost.py [--changes 100000] [--files 10] [--work .bench] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))

import baselines  # noqa: E402
import bench  # noqa: E402
from jvm_decode_pieces import cpu_per_row  # noqa: E402

FORMAT = "datastream-json"
SOURCES = Path(__file__).resolve().parent / "java"
LINE_FIELDS = ("uuid", "read_ts", "source_ts", "object", "read_method", "stream", "schema_key", "table", "database",
               "schema", "change_type", "log_file")


def build_jar(out: Path) -> Path:
    """Compile the measured UDFs (`benchmarks/java/*.java`) against pyspark's jars (Spark's UDF interfaces, its
    Jackson and Avro libraries) into `out/measured.jar`."""
    import pyspark

    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars", "*")
    classes = out / "classes"
    subprocess.run(["javac", "-nowarn", "-cp", jars, "-d", str(classes), *map(str, sorted(SOURCES.glob("*.java")))],
                   check=True)
    jar = out / "measured.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(classes), "."], check=True)
    return jar


def line_type():
    from pyspark.sql import types as T

    return T.StructType([*(T.StructField(n, T.StringType()) for n in LINE_FIELDS),
                         T.StructField("log_position", T.LongType()), T.StructField("is_deleted", T.BooleanType()),
                         T.StructField("pks", T.ArrayType(T.StringType())), T.StructField("payload", T.StringType()),
                         T.StructField("kinds", T.StringType()), T.StructField("widened", T.BooleanType())])


def run_measured(argv: list[str] | None, doc: str, fmt: str, measure: Callable[[Any, list[str], int], None]) -> None:
    """Parse a Java-UDF benchmark's options, generate (or reuse) the workload of `fmt`, compile the UDFs and start a
    session with them on the driver's class path, then `measure(spark, files, repeat)`."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    bench.workload_args(p, 100_000, 10, "cache of generated data (shared with make bench)")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    root = bench.workload(Path(args.work), fmt, args.changes, args.tables, args.rows, args.seed, args.files)
    files = bench.input_files(root, fmt)
    with tempfile.TemporaryDirectory() as tmp:
        jar = build_jar(Path(tmp))
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        from cdcnorm.runtime.session import get_spark

        spark = get_spark("local[*]", app_name=f"java-cost-{fmt}", quiet=True,
                          conf={"spark.driver.memory": "4g", "spark.driver.extraClassPath": str(jar)})
        measure(spark, files, args.repeat)


def main(argv: list[str] | None = None) -> None:
    run_measured(argv, __doc__, FORMAT, measure)


def measure(spark, files: list[str], repeat: int) -> None:
    from pyspark.sql import functions as F

    from cdcnorm.adapters import get_adapter
    from cdcnorm.ingest.jvm_decode import decode_listed
    from cdcnorm.ingest.sources import decode_files

    spark.udf.registerJavaFunction("datastream_line", "cdcnorm.bench.DatastreamLine", line_type())
    lines = spark.read.text(files).cache()
    rows = lines.count()
    read = lines.selectExpr("datastream_line(value) AS d")
    unread = read.where(F.col("d").isNull()).count()
    listed = spark.createDataFrame([(f, os.path.getsize(f)) for f in files], "path string, size long").repartition(2)
    sides = {
        "from_json (hand-written schema)": lines.select(F.from_json("value", baselines.DATASTREAM_JSON_SCHEMA)),
        "java line read": read.select("d.*"),
        "java line read + parse_json + sha2": read.select(
            "d.*", F.parse_json("d.payload").alias("image"),
            F.sha2(F.concat_ws("|", "d.stream", "d.table", "d.change_type", "d.log_file",
                               F.col("d.log_position").cast("string"), F.array_join("d.pks", ",")), 256)),
        "decode_files (Python)": decode_files(listed, get_adapter("datastream", {"stream": f"bench-{FORMAT}"})),
        "decode_files_jvm": decode_listed(listed, get_adapter("datastream", {"decode_path": "jvm",
                                                                            "stream": f"bench-{FORMAT}"})),
    }
    print(f"{FORMAT}: {rows:,} lines in {len(files)} files ({unread} the Java read gave back), load "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    for name, frame in sides.items():
        print(f"  {name:36s} {cpu_per_row(frame, rows, repeat):7.1f} CPU µs per line", flush=True)


if __name__ == "__main__":
    main()
