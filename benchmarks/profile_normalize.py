"""Where a warm `normalize` spends its CPU: per Spark stage (executor CPU from Spark's REST API) and per JVM thread
kind (from `/proc/<jvm>/task/*/stat`: executor tasks, JIT compilers, GC), next to the CPU of each process kind
(driver, JVM, Python workers). A profile, not a ratio: no baseline is run.

After `bench.py`'s warm-up, each round normalizes the workload into a fresh lake and prints its figures; the
later rounds show a warmer JVM (the JIT compiles Spark's own code over the first runs), and how many classes of
generated code each round compiled (none after the first when Spark's code cache holds a run's classes).

Usage: python benchmarks/profile_normalize.py [--changes 200000] [--formats datastream-json] [--rounds 2]
       [--conf spark.sql.codegen.cache.maxEntries=100]
Figures in docs/benchmarks.md ("What limits it").
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import re
import urllib.request
from pathlib import Path

import baselines
import bench


def _threads(pid: int | None) -> dict[str, tuple[str, float]]:
    """CPU seconds so far per JVM thread, with its name's kind (digits dropped: `C2 CompilerThre#`)."""
    tick, out = os.sysconf("SC_CLK_TCK"), {}
    for task in glob.glob(f"/proc/{pid}/task/*"):
        try:
            with open(f"{task}/stat") as fh:
                text = fh.read()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        out[task] = (re.sub(r"\d+", "#", text[text.index("(") + 1:text.rindex(")")]),
                     (int(fields[11]) + int(fields[12])) / tick)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    bench.workload_args(p, 200_000, 10, "generated data and scratch lakes")
    p.set_defaults(formats="datastream-json")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark setting of the session (repeatable), e.g. spark.sql.codegen.cache.maxEntries=100")
    args = bench.parse_workload(p, argv)
    vf = args.formats.split(",")[0]
    from cdcnorm.runtime.session import get_spark

    work = Path(args.work)
    root = bench.workload(work, vf, args.changes, args.tables, args.rows, args.seed, args.files)
    files = bench.input_files(root, vf)
    spark = get_spark("local[*]", app_name="cdcnorm-profile", quiet=True,
                      conf={"spark.driver.memory": "4g", "spark.ui.enabled": "true",
                            **dict(kv.split("=", 1) for kv in args.conf)})
    compiled = spark._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()
    ui, app = spark.sparkContext.uiWebUrl, spark.sparkContext.applicationId

    def stages() -> list[dict]:
        with urllib.request.urlopen(f"{ui}/api/v1/applications/{app}/stages?details=false") as fh:
            return json.load(fh)

    pid = baselines.jvm_pid(spark)
    scratch = bench.fresh_scratch(work, "profile")
    bench.warm_up(spark, vf, root, files, scratch)
    for i in range(args.rounds):
        seen, before, res = {s["stageId"] for s in stages()}, _threads(pid), {}
        classes = compiled.getCount()
        bench.measured(res, "n", lambda: bench.normalize(spark, vf, root, files, str(scratch / "lake")))
        by_kind: collections.Counter = collections.Counter()
        for task, (kind, cpu) in _threads(pid).items():
            by_kind[kind] += cpu - before.get(task, (kind, 0.0))[1]
        new = sorted((s for s in stages() if s["stageId"] not in seen and s["status"] == "COMPLETE"),
                     key=lambda s: s["stageId"])
        print(f"round {i}: {res['n_s']:.1f} s, {res['n_cpu']:.1f} CPU s ({bench._fmt(res['n_cpu_by_process'])}); "
              f"executor CPU {sum(s['executorCpuTime'] for s in new) / 1e9:.1f} s in {len(new)} stages; "
              f"{compiled.getCount() - classes} classes of generated code compiled; JVM "
              f"threads: {', '.join(f'{k} {v:.1f}' for k, v in by_kind.most_common(6))}", flush=True)
        for s in new:
            print(f"  stage {s['stageId']:4d}: CPU {s['executorCpuTime'] / 1e9:6.2f} s, {s['numTasks']:3d} tasks, "
                  f"shuffle write {s['shuffleWriteBytes'] / 1e6:6.1f} MB, read {s['shuffleReadBytes'] / 1e6:6.1f} MB, "
                  f"output {s['outputBytes'] / 1e6:6.1f} MB  {s['name'][:48]}", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
