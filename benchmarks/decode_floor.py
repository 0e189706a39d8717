"""What a normalize run costs when its decode costs nothing: the lake's share, against the format's baseline.

Why: the Datastream JSON target compares a whole `normalize` (decode, staging, the duplicate check against the lake,
the reconciled report, sorted files, the Delta commits) with a hand-written `from_json` job, the Avro target with
fastavro alone. This benchmark decodes the workload once, untimed, into Arrow files, then times, alternating in one
warm session (each round runs the baseline first, then the two runs in turn, the order swapped every round):

- `baseline`: for Datastream JSON the hand-written pipeline with dedup and a Delta commit
  (`baselines.handwritten_datastream_json`), for Datastream Avro fastavro alone (`baselines.fastavro_alone`);
- `normalize`: `cdcnorm.normalize` as a user runs it (the Python decoder);
- `replayed`: the same `normalize` with the decode replaced by a replay of the recorded Arrow batches (the same rows
  the decoder gives, read from local Arrow files in the same `mapInArrow` place), so everything else is what a run
  does: its CPU is the least any decode can bring a run to while the lake's protocol stays as it is.

The reports of `normalize` and `replayed` must agree (rows written, outcomes), or the figure is not reported. The
last line gives each side's floor (its least CPU over the rounds) and the floors' ratios to the baseline's.

    python benchmarks/decode_floor.py --changes 1000000 --files 16 --repeat 3
    python benchmarks/decode_floor.py --format datastream-avro --changes 1000000 --files 10 --repeat 3
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))

import baselines  # noqa: E402
import bench  # noqa: E402

BASELINES = {"datastream-json": "the hand-written pipeline", "datastream-avro": "fastavro alone"}


def _cache_name(cache: str, path: str) -> str:
    return os.path.join(cache, hashlib.sha1(path.encode()).hexdigest() + ".arrow")


def _record_file(args: tuple[str, str, str, dict[str, Any]]) -> int:
    """Decode one file (cache folder, path, vendor, options) with the function a run's decode task runs
    (`cdcnorm.ingest.sources._FileDecoder`, as `decode_kernel.py` does) into an Arrow file; the rows it gave."""
    cache, path, vendor, options = args
    from cdcnorm.adapters import get_adapter
    from cdcnorm.canonical.emit import ARROW_SCHEMA
    from cdcnorm.ingest.sources import _FileDecoder

    paths = pa.record_batch({"path": pa.array([path], pa.string()), "size": pa.array([0], pa.int64())})
    rows = 0
    with pa.OSFile(_cache_name(cache, path), "wb") as sink, pa.ipc.new_file(sink, ARROW_SCHEMA) as writer:
        for batch in _FileDecoder(get_adapter(vendor, options))(iter([paths])):
            writer.write_batch(batch)
            rows += batch.num_rows
    return rows


class Replay:
    """mapInArrow function: each listed file's recorded batches, in place of its decode."""

    def __init__(self, cache: str):
        self.cache = cache

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for path in batch.column("path").to_pylist():
                with pa.memory_map(_cache_name(self.cache, path)) as source:
                    reader = pa.ipc.open_file(source)
                    for i in range(reader.num_record_batches):
                        yield reader.get_batch(i)


def replaying(cache: str) -> Any:
    """A context in which `normalize` replays the recorded batches in place of its decode."""
    from cdcnorm.canonical.emit import decoded_schema

    def decode(files, adapter):
        del adapter
        return files.mapInArrow(Replay(cache), decoded_schema())

    return mock.patch("cdcnorm.ingest.pipeline.decode_listed", decode)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bench.workload_args(p, 1_000_000, 16, "where the workload is generated and reused")
    p.add_argument("--format", default="datastream-json", choices=sorted(BASELINES))
    p.add_argument("--repeat", type=int, default=3, help="rounds of the three, alternating")
    p.add_argument("--master", default="local[*]")
    p.add_argument("--memory", default="4g", help="driver memory")
    args = p.parse_args(argv)
    work = Path(args.work)
    vf = args.format
    from cdcnorm.simulate import VENDOR_FORMATS

    root = bench.workload(work, vf, args.changes, args.tables, args.rows, args.seed, args.files)
    files = bench.input_files(root, vf)
    scratch = bench.fresh_scratch(work, "decode-floor")
    cache = scratch / "decoded"
    cache.mkdir()
    options = bench.options_for(vf, root)
    t0 = time.perf_counter()
    with ProcessPoolExecutor(2) as pool:
        recorded = sum(pool.map(_record_file, [(str(cache), f, VENDOR_FORMATS[vf][0], options) for f in files]))
    print(f"{len(files)} files decoded once into {recorded:,} rows in {time.perf_counter() - t0:.1f} s", flush=True)

    spark = bench.spark_session(args.master, args.memory)
    bench.warm_up(spark, vf, root, files, scratch / "warm")
    with replaying(str(cache)):
        bench.normalize(spark, vf, root, [min(files, key=os.path.getsize)], str(scratch / "warm-replayed"))
    cores = spark.sparkContext.defaultParallelism
    rounds: list[dict[str, Any]] = []
    for r in range(args.repeat):
        res: dict[str, Any] = {"load": os.getloadavg()[0]}
        if vf == "datastream-json":
            bench.measured(res, "baseline", lambda out=str(scratch / f"hw-{r}"): baselines.handwritten_datastream_json(
                spark, files, out, True))
        else:
            bench.measured(res, "baseline", lambda: baselines.fastavro_alone(files, cores))
        reports: dict[str, dict[str, Any]] = {}
        for side in ("normalize", "replayed") if r % 2 == 0 else ("replayed", "normalize"):
            lake = str(scratch / f"lake-{side}-{r}")
            with replaying(str(cache)) if side == "replayed" else contextlib.nullcontext():
                reports[side] = bench.measured(res, side, lambda lake=lake: bench.normalize(
                    spark, vf, root, files, lake)[1])
        own, rep = reports["normalize"], reports["replayed"]
        for key in ("rows_written", "outcomes", "records_read"):
            if own[key] != rep[key]:
                raise SystemExit(f"the replayed run's {key} differs: {rep[key]} against {own[key]}")
        res["events"] = own["records_read"]
        rounds.append(res)
        hw = res["baseline_cpu"]
        print(f"round {r + 1}: load {res['load']:.1f}; {BASELINES[vf]} {res['baseline_s']:.1f} s ({hw:.1f} CPU s); "
              f"normalize {res['normalize_s']:.1f} s ({res['normalize_cpu']:.1f} CPU s: "
              f"{bench._fmt(res['normalize_cpu_by_process'])}) = {res['normalize_cpu'] / hw:.2f}x; replayed decode "
              f"{res['replayed_s']:.1f} s ({res['replayed_cpu']:.1f} CPU s: {bench._fmt(res['replayed_cpu_by_process'])})"
              f" = {res['replayed_cpu'] / hw:.2f}x", flush=True)
    floor = {side: min(r[f"{side}_cpu"] for r in rounds) for side in ("baseline", "normalize", "replayed")}
    print(f"{vf}, floors of {len(rounds)} rounds: {BASELINES[vf]} {floor['baseline']:.1f} CPU s; normalize "
          f"{floor['normalize']:.1f} = {floor['normalize'] / floor['baseline']:.2f}x; decode replayed "
          f"{floor['replayed']:.1f} = {floor['replayed'] / floor['baseline']:.2f}x", flush=True)
    out = bench.save_results(work, "decode-floor", {"format": vf, "rounds": rounds, "floors": floor,
                                                    "changes": args.changes, "files": len(files)})
    print(json.dumps({"saved": str(out)}))
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
