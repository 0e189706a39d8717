"""What the tuple encoding costs the JVM (`cdcnorm.canonical.tuple_expr`): a frame of `--rows` rows with the
elements of a typical sort key (str, int, ts, a tuple of 3 ints), written with and without its encoding.

Why a noop write and not `count()`: `count()` needs no column, so Spark's optimizer drops the encoding and both
sides would measure the same plan. Writing to Spark's `noop` format evaluates every selected column and stores
nothing. The sides:

- inputs: the input columns only (the cost of generating them: the baseline);
- encode: the inputs and `encode(elements)`;
- encode+encodable: the inputs, `encode` and `encodable`, as the decode path selects them.

Each side runs `--warm` untimed rounds, then `--repeat` timed rounds (the sides alternate). Per side: the best and
median wall seconds, the JVM's CPU seconds (utime + stime of the JVM process from /proc/<pid>/stat: the Python
process's own clock does not see the JVM), and the extra CPU ns per row over the inputs. For scale it also times
`tuple_codec.encode` in this Python process over `--python-rows` rows of the same values (µs of CPU per row).

Spark's code generation is on (a million-row run is beyond the interpreted small runs); `--interpreted` measures
Spark's interpreter instead.

Measured on 2 shared cores (local[2], load 5 to 9, so wall times are noisy; CPU is the steadier figure), 1 M
rows: generated code, inputs 0.19 s JVM CPU, encode 0.64 s (+0.42 to 0.45 µs per row, about 65 ns per element
of the 7), encode+encodable +0.46 to 0.54 µs; the interpreter +3.1 µs (encode) and +3.4 µs (both) per row.
`tuple_codec.encode` of the same rows in CPython: 2.3 µs per row (without the Arrow transfer around it).

Usage: python benchmarks/tuple_expr_cost.py [--rows 1000000] [--warm 2] [--repeat 5] [--interpreted]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import time
from typing import Any

ELEMENT_NAMES = ("str", "int", "ts", "tuple<int, int, int>")
BASE_MICROS = 1_600_000_000_000_000


def frame(spark, rows: int):
    """`rows` rows: an id string, a signed long of up to 8 bytes, a timestamp with micros, three ints."""
    from pyspark.sql import functions as F

    return spark.range(rows).select(
        F.concat(F.lit("evt-"), F.col("id").cast("string"), F.lit("-a\u00e9")).alias("s"),
        (F.col("id") * 7_919_000_003 - 4_000_000_000_000).alias("i"),
        F.timestamp_micros(F.col("id") * 1_000_003 + BASE_MICROS).alias("ts"),
        (F.col("id") % 1000).alias("a"), (F.col("id") / 7).cast("long").alias("b"), (-F.col("id")).alias("c"))


def elements() -> list:
    from pyspark.sql import functions as F

    return [("str", F.col("s")), ("int", F.col("i")), ("ts", F.col("ts")),
            ("tuple", [("int", F.col("a")), ("int", F.col("b")), ("int", F.col("c"))])]


def python_values(row_id: int) -> tuple:
    """The Python values of row `row_id` of :func:`frame` (what `tuple_codec.encode` gets in the Python path)."""
    micros = row_id * 1_000_003 + BASE_MICROS
    return (f"evt-{row_id}-a\u00e9", row_id * 7_919_000_003 - 4_000_000_000_000,
            dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=micros),
            (row_id % 1000, row_id // 7, -row_id))


def sides(spark, rows: int) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from cdcnorm.canonical.tuple_expr import encodable, encode

    df = frame(spark, rows)
    inputs = [F.col(c) for c in df.columns]
    return {
        "inputs": df.select(*inputs),
        "encode": df.select(*inputs, encode(elements()).alias("key")),
        "encode+encodable": df.select(*inputs, encode(elements()).alias("key"), encodable(elements()).alias("ok")),
    }


def jvm_cpu_seconds(pid: int) -> float:
    """utime + stime of process `pid` (all its threads), from /proc."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(spark, rows: int, warm: int, repeat: int) -> dict[str, dict[str, float]]:
    """Wall and JVM CPU seconds of each side (see the module docstring)."""
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    frames = sides(spark, rows)
    timings: dict[str, list[tuple[float, float]]] = {name: [] for name in frames}
    for round_no in range(warm + repeat):
        for name, df in frames.items():
            cpu0, wall0 = jvm_cpu_seconds(pid), time.perf_counter()
            df.write.format("noop").mode("overwrite").save()
            wall, cpu = time.perf_counter() - wall0, jvm_cpu_seconds(pid) - cpu0
            if round_no >= warm:
                timings[name].append((wall, cpu))
    out = {}
    for name, runs in timings.items():
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        out[name] = {"wall_best": min(walls), "wall_median": statistics.median(walls),
                     "cpu_best": min(cpus), "cpu_median": statistics.median(cpus)}
    return out


def python_cost(rows: int) -> float:
    """µs of this process's CPU per row for `tuple_codec.encode` of the same values."""
    from cdcnorm.canonical import tuple_codec

    values = [python_values(i) for i in range(rows)]
    start = time.process_time()
    for v in values:
        tuple_codec.encode(v)
    return (time.process_time() - start) / rows * 1e6


def check(spark, rows: int) -> None:
    """The benchmark's encodings are the Python codec's (a guard against measuring something else)."""
    from pyspark.sql import functions as F

    from cdcnorm.canonical import tuple_codec

    got = sides(spark, rows)["encode+encodable"].select((-F.col("c")).alias("id"), "key", "ok").collect()
    assert sorted(r.id for r in got) == list(range(rows))
    for row in got:
        assert row.ok is True
        assert bytes(row.key) == tuple_codec.encode(python_values(row.id)), row.id


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--warm", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--python-rows", type=int, default=200_000)
    parser.add_argument("--interpreted", action="store_true", help="Spark's interpreter instead of generated code")
    args = parser.parse_args(argv)

    from cdcnorm.runtime.session import get_spark
    from cdcnorm.runtime.small_runs import INTERPRETED

    conf = dict(INTERPRETED) if args.interpreted else {}
    spark = get_spark("local[2]", conf=conf)
    check(spark, 2000)
    results = run(spark, args.rows, args.warm, args.repeat)
    base = results["inputs"]["cpu_best"]
    print(f"{args.rows} rows of ({', '.join(ELEMENT_NAMES)}), "
          f"{'interpreted' if args.interpreted else 'generated code'}, best / median of {args.repeat}:")
    print(f"{'side':<18} {'wall s':>14} {'JVM CPU s':>14} {'+CPU ns/row':>12}")
    for name, r in results.items():
        extra = (r["cpu_best"] - base) / args.rows * 1e9
        print(f"{name:<18} {r['wall_best']:>6.2f} / {r['wall_median']:<5.2f} "
              f"{r['cpu_best']:>6.2f} / {r['cpu_median']:<5.2f} {extra:>12.0f}")
    if args.python_rows:
        print(f"tuple_codec.encode in Python: {python_cost(args.python_rows):.2f} µs CPU per row")
    spark.stop()


if __name__ == "__main__":
    main()
