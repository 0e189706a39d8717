"""The floor of a continuous-mode micro-batch: a ladder of `availableNow` queries from the minimal one (the
baseline, L0) to cdcnorm's follow micro-batch, each rung's CPU and wall as a ratio to L0's.

Why: a micro-batch's requirements fix how it must work: a stream of file *paths* (the executors open the files),
the vendor adapter's decode, a commit through the Delta protocol with (query id, batch id) as the Delta
transaction. Each rung below adds one of those requirements to the rung before it, so the ladder says what the
requirements cost by themselves (the least any implementation meeting them must do) and what is left for cdcnorm's
own work (duplicate check, pairing, report, several tables). The target: a 1 k-event follow micro-batch on the
Spark-expression decode (L4s) at most 1.5x the rung that does only what the requirements ask on that decode (L3s),
CPU and wall; L0, a minimal `availableNow` query of the same files writing Parquet, stays as the bottom of the
ladder.

- L0 minimal: `readStream.text` of the folder -> `foreachBatch` writing the batch to Parquet (`follow_batch.py`).
- L1 paths: the `cdcnorm_paths` stream of paths -> `foreachBatch`: the batch's paths read from the offset log as the
  follow query does (no Spark job), Spark reads those files as text -> Parquet.
- L2 decode: the paths stream -> `foreachBatch`: the files decoded by the Datastream adapter inside `mapInArrow`
  (`cdcnorm.ingest.sources`, planned as a small run: what `normalize`'s staging does) -> Parquet.
- L3 delta: L2 written as the data files of a Delta table (`cdcnorm.lake.delta.files.write_files`) and committed through
  delta-rs in one transaction with (query id, batch id) as its app transaction, skipped if already committed.
- L4 follow: the real follow micro-batch (`cdcnorm.streaming.follow.follow` into a fresh lake, `follow_batch.py`).
- L2s, L3s, L4s: L2, L3 and L4 with the Spark-expression decode (`decode_path: jvm`,
  `cdcnorm.ingest.jvm_decode.decode_files_jvm`) instead of the Python decode. L3s (paths source, Spark decode, one
  Delta commit with the batch's app transaction) is the floor a follow micro-batch on that decode is measured
  against: L4s / L3s, target at most 1.5x.
- L1j, L3j (side rungs): L1 and L3 with Spark's own file source (`binaryFile`, only the `path` column) as the stream
  of paths instead of the Python source: what the Python source's planner process costs a query.

The workload is `follow_batch.py`'s (about 1 k Datastream JSON events, 3 files); every target (lake, Delta table,
output folder) is fresh and created before the clock starts. After `--warm` untimed rounds, `--repeat` timed rounds
run every rung once, in forward then reverse order; per rung: wall and CPU seconds (this process, the JVM, Python
workers, other children: the Python source's planner), Spark jobs (with their names and seconds), Delta commits and
the moments the micro-batch reached its steps; the floor (fastest round) and median, and their ratios to L0's.

Usage: python benchmarks/follow_floor.py [--warm 12] [--repeat 5] [--events 1000] [--work .bench]
Results: WORK/results/follow-floor-<timestamp>.json; figures in docs/benchmarks.md ("What limits it").
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bench
import follow_batch

RUNGS = ("L0 minimal", "L1 paths", "L2 decode", "L3 delta", "L4 follow", "L2s decode in Spark",
         "L3s delta, decode in Spark", "L4s follow, decode in Spark", "L1j paths, JVM source",
         "L3j delta, JVM source")
"""The ladder, the same three rungs with the Spark-expression decode (`decode_path: jvm`), then two side rungs: L1
and L3 with Spark's file source as the stream of paths (`_paths_query`)."""
FLOOR, FOLLOW = "L3s delta, decode in Spark", "L4s follow, decode in Spark"
FOLLOW_TARGET = 1.5
"""A follow micro-batch on the Spark decode costs at most this many times the floor rung (CPU and wall, floors)."""
BINARY_FILE = "path string, modificationTime timestamp, length long, content binary"
_MARKS: list[tuple[str, float]] = []


def mark(name: str) -> None:
    """Note the moment a round reaches `name` (a step inside its micro-batch; the follow query's progress messages)."""
    _MARKS.append((name, time.perf_counter()))


def _paths_query(spark, folder: str, work: str, body: Callable[[list[str], int, str], None], jvm: bool = False) -> None:
    """An `availableNow` query over a stream of `folder`'s file paths; each micro-batch's paths go to
    `body(paths, batch_id, query_id)`.

    The stream is the `cdcnorm_paths` source (no settle time), its checkpoint and manifest under `work` as a follow
    query keeps them, the batch's paths read from the offset log as `cdcnorm.streaming.follow` reads them (no Spark
    job); or (`jvm`) Spark's own file source in the `binaryFile` format with only its `path` column selected (the
    contents are not read), the batch's paths collected (one JVM-only job): a stream of paths without the Python
    source's planner process, but also without its settle time and its "no file skipped for its age"."""
    from cdcnorm.runtime.fs import local_path
    from cdcnorm.streaming.paths_source import batch_entries, paths_stream

    def run(df, batch_id: int) -> None:
        if jvm:
            paths = [local_path(r["path"]) for r in df.select("path").collect()]
        else:
            entries = batch_entries(work, batch_id)
            assert entries is not None, "the offset log names the batch's files"
            paths = [e.path for e in entries]
        mark("batch started")
        if paths:
            body(sorted(paths), int(batch_id), spark.sparkContext.getLocalProperty("sql.streaming.queryId"))

    if jvm:
        stream = (spark.readStream.format("binaryFile").schema(BINARY_FILE).option("recursiveFileLookup", "true")
                  .load(folder))
    else:
        stream = paths_stream(spark, [folder], f"{work}/manifest", settle_seconds=0)
    q = (stream.writeStream.foreachBatch(run).option("checkpointLocation", f"{work}/checkpoint")
         .trigger(availableNow=True).start())
    q.awaitTermination()


def _decode_and_write(spark, paths: list[str], write: Callable[[Any], Any], decode_path: str = "python") -> Any:
    """`write(decoded)` of the Datastream adapter's decoded rows of `paths`, planned as `normalize` plans its
    staging (the files' frame, the first pass and the decode on `decode_path`, as a small run)."""
    from cdcnorm.adapters import get_adapter
    from cdcnorm.ingest.first_pass import first_pass
    from cdcnorm.ingest.jvm_decode import decode_listed
    from cdcnorm.ingest.sources import files_frame
    from cdcnorm.runtime.fs import FileEntry
    from cdcnorm.runtime.small_runs import planned_for

    files = [FileEntry(p, os.path.getsize(p)) for p in paths]
    adapter = get_adapter("datastream", {"stream": f"bench-{follow_batch.VF}", "decode_path": decode_path})
    with planned_for(spark, sum(f.size for f in files)):
        frame = files_frame(spark, files)
        return write(decode_listed(frame, adapter.prepare(first_pass(adapter, frame, "files", None))))


def paths_text(spark, folder: str, out: str, jvm: bool = False) -> None:
    """L1: the stream of paths; Spark reads the batch's files as text and writes them to Parquet."""
    def body(paths: list[str], batch_id: int, _qid: str) -> None:
        spark.read.text(paths).write.parquet(f"{out}/batch={batch_id}")
        mark("written")

    _paths_query(spark, folder, out + "-q", body, jvm)


def paths_decode(spark, folder: str, out: str, decode_path: str = "python") -> None:
    """L2: the stream of paths; the files decoded by the Datastream adapter and written to Parquet."""
    def body(paths: list[str], batch_id: int, _qid: str) -> None:
        _decode_and_write(spark, paths, lambda decoded: decoded.write.parquet(f"{out}/batch={batch_id}"), decode_path)
        mark("written")

    _paths_query(spark, folder, out + "-q", body)


def delta_table(spark, out: str):
    """L3's Delta table of decoded rows, created (version 0) before the clock starts."""
    from cdcnorm.canonical.emit import decoded_schema
    from cdcnorm.lake.delta.table import DeltaTableRef, delta_uri
    from cdcnorm.runtime.session import use_portable_parquet

    use_portable_parquet(spark)  # the Parquet settings cdcnorm writes its lake with
    ref = DeltaTableRef(delta_uri(out), decoded_schema())
    ref.ensure()
    return ref


def paths_decode_delta(spark, folder: str, out: str, jvm: bool = False, decode_path: str = "python") -> None:
    """L3: L2 written as the Delta table's data files and committed once, (query id, batch id) as the transaction."""
    from cdcnorm.lake.delta.files import write_files

    ref = delta_table(spark, out)

    def body(paths: list[str], batch_id: int, qid: str) -> None:
        app = f"floor-{qid}"
        done = ref.txn_version(app)
        if done is not None and done >= batch_id:
            return
        adds = _decode_and_write(spark, paths, lambda decoded: write_files(decoded, ref, f"floor-{qid}-{batch_id}"),
                                 decode_path)
        mark("written")
        ref.commit(adds, txns=[(app, batch_id)])
        mark("committed")

    _paths_query(spark, folder, out + "-q", body, jvm)


def jobs_since(spark, first: int) -> list[tuple[str, float]]:
    """(name, seconds) of the Spark jobs from job id `first` on (the status store's submission to completion)."""
    sc = spark.sparkContext._jsc.sc()
    store, out = sc.statusStore(), []
    for job in range(first, sc.dagScheduler().nextJobId()):
        try:
            d = store.job(job)
        except Exception:  # noqa: BLE001 - a job the store has dropped already: count it, without a time
            out.append(("?", 0.0))
            continue
        t0, t1 = d.submissionTime(), d.completionTime()
        secs = (t1.get().getTime() - t0.get().getTime()) / 1000 if t0.isDefined() and t1.isDefined() else 0.0
        out.append((d.name(), secs))
    return out


def one_round(spark, rung: str, folder: str, target: str) -> dict[str, Any]:
    """Run one rung into the fresh `target`; its figures."""
    res: dict[str, Any] = {"side": rung, "load": os.getloadavg()[0]}
    decode_path = "jvm" if rung.split()[0].endswith("s") else "python"
    if rung.startswith("L4"):
        from cdcnorm.lake.commit import open_lake
        from cdcnorm.lake.store import Lake
        from cdcnorm.streaming.follow import follow

        open_lake(spark, target, create=True)  # creating the lake's tables is not the micro-batch's cost
        fn: Callable[[], Any] = lambda: follow(  # noqa: E731 - follow_batch.follow_query, with its progress noted
            [folder], "datastream", target, spark=spark, settle_seconds=0,
            options={"stream": f"bench-{follow_batch.VF}", "decode_path": decode_path}, progress=mark)
    elif rung == "L0 minimal":
        fn = lambda: follow_batch.minimal_query(spark, folder, target, target + "-ck")  # noqa: E731
    elif rung.startswith("L3"):
        delta_table(spark, target)  # likewise the table's creation
        fn = lambda: paths_decode_delta(spark, folder, target, rung.startswith("L3j"), decode_path)  # noqa: E731
    elif rung.startswith("L1"):
        fn = lambda: paths_text(spark, folder, target, jvm=rung.startswith("L1j"))  # noqa: E731
    else:
        fn = lambda: paths_decode(spark, folder, target, decode_path)  # noqa: E731
    first = spark.sparkContext._jsc.sc().dagScheduler().nextJobId()
    _MARKS.clear()
    t0 = time.perf_counter()
    got = bench.measured(res, "batch", fn)
    res["marks"] = [(name, t - t0) for name, t in [*_MARKS, ("query ended", time.perf_counter())]]
    res["jobs"] = jobs_since(spark, first)
    if rung.startswith("L4"):
        assert [b.status for b in got] == ["committed"], got
        res["records"] = got[0].records
        res["commits"] = sum(t.version() for t in Lake(spark, target).tables.values())
    elif rung.startswith("L3"):
        res["rows"] = spark.read.parquet(*delta_table(spark, target).files()).count()
        res["commits"] = 1
    else:
        res["rows"] = spark.read.parquet(target).count()
    return res


def summary(timed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per rung: floor and median of wall and CPU seconds, their ratios to L0's, the median CPU per process kind,
    Spark jobs and Delta commits."""
    base = bench.min_median(timed, RUNGS[0], ("batch_s", "batch_cpu"))
    out = []
    for rung in RUNGS:
        rs = [r for r in timed if r["side"] == rung]
        s = bench.min_median(timed, rung, ("batch_s", "batch_cpu"))
        kinds = sorted({k for r in rs for k in r["batch_cpu_by_process"]})
        out.append({"rung": rung, **{f"{k}_{m}": s[k][m] for k in s for m in ("min", "median")},
                    **{f"ratio_{k}_{m}": s[k][m] / base[k][m] for k in s for m in ("min", "median")},
                    "cpu_by_process_median": {k: statistics.median(r["batch_cpu_by_process"].get(k, 0.0) for r in rs)
                                              for k in kinds},
                    "jobs": statistics.median(len(r["jobs"]) for r in rs),
                    "marks_median": {name: statistics.median(dict(r["marks"])[name] for r in rs)
                                     for name, _ in rs[0]["marks"] if all(name in dict(r["marks"]) for r in rs)},
                    "commits": rs[0].get("commits", 0)})
    return out


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| rung | wall floor / median | CPU s floor / median | ratio to L0, floor (CPU / wall) | median "
             "(CPU / wall) | jobs | Delta commits |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['rung']} | {r['batch_s_min']:.2f} / {r['batch_s_median']:.2f} s | "
                     f"{r['batch_cpu_min']:.2f} / {r['batch_cpu_median']:.2f} | {r['ratio_batch_cpu_min']:.1f}x / "
                     f"{r['ratio_batch_s_min']:.1f}x | {r['ratio_batch_cpu_median']:.1f}x / "
                     f"{r['ratio_batch_s_median']:.1f}x | {r['jobs']:g} | {r['commits']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    bench.micro_batch_args(p, 12, 5, "untimed rounds of every rung first (steady state)")
    args = p.parse_args(argv)
    work = Path(args.work)
    print(f"follow floor: {len(RUNGS)} availableNow queries over one {args.events}-event folder; "
          f"{os.cpu_count()} cores, load {os.getloadavg()}", flush=True)
    spark = bench.spark_session("local[*]", "2g")
    from cdcnorm.simulate import Manifest

    rows = max(1, args.events // 5)
    root = bench.workload(work, follow_batch.VF, args.events - rows, 1, rows, args.seed, 1)
    folder = str(Manifest.load(root).input_dir(follow_batch.VF))
    scratch = bench.fresh_scratch(work, "follow-floor")
    timed: list[dict[str, Any]] = []
    loads = [os.getloadavg()]
    for i in range(args.warm + args.repeat):
        warm = i < args.warm
        rounds = [one_round(spark, rung, folder, str(scratch / f"{rung.split()[0]}-{i}"))
                  for rung in (RUNGS if i % 2 == 0 else RUNGS[::-1])]
        counts = {r["side"]: r.get("records", r.get("rows")) for r in rounds}
        by = {rung.split()[0]: n for rung, n in counts.items()}
        assert by["L0"] == by["L1"] == by["L1j"] == by["L4"] == by["L4s"], counts  # the same records
        assert by["L2"] == by["L3"] == by["L3j"] == by["L2s"] == by["L3s"], counts  # the same decoded rows
        loads.append(os.getloadavg())
        print(f"  {'warm ' if warm else 'timed'} {i:2d}: " + "; ".join(
            f"{r['side'].split()[0]} {r['batch_s']:.2f} s {r['batch_cpu']:.2f} CPU s {len(r['jobs'])} jobs"
            for r in sorted(rounds, key=lambda r: r["side"])) + f"; load {loads[-1][0]:.1f}", flush=True)
        if not warm:
            timed += rounds
    rows_ = summary(timed)
    print(table(rows_), flush=True)
    by_rung = {r["rung"]: r for r in rows_}
    target = {f"{m}_{k}": by_rung[FOLLOW][f"batch_{k}_{m}"] / by_rung[FLOOR][f"batch_{k}_{m}"]
              for k in ("cpu", "s") for m in ("min", "median")}
    print(f"  {FOLLOW} / {FLOOR}: floor {target['min_cpu']:.2f}x CPU, {target['min_s']:.2f}x wall (medians "
          f"{target['median_cpu']:.2f}x / {target['median_s']:.2f}x); target <= {FOLLOW_TARGET}x: "
          f"{'met' if max(target['min_cpu'], target['min_s']) <= FOLLOW_TARGET else 'missed'}", flush=True)
    for r in rows_:
        print(f"  {r['rung']}: median CPU by process {({k: round(v, 2) for k, v in r['cpu_by_process_median'].items()})}"
              "; median seconds from the start to: " + ", ".join(f"{k} {v:.2f}" for k, v in r["marks_median"].items()))
    last = {r["side"]: r["jobs"] for r in timed[-len(RUNGS):]}
    for rung in RUNGS[3:]:
        print(f"  {rung} jobs (last round): " + ", ".join(f"{n[:60]!r} {s:.2f} s" for n, s in last[rung]))
    out = {"args": vars(args), "loads": loads, "rungs": rows_, "follow_over_floor": target, "rounds": timed}
    print(f"results: {bench.save_results(work, 'follow-floor-', out)}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
