"""Memory of the file readers: decode a large generated file per container and report the RSS growth above the
RSS after a warm-up decode (the baseline), against a 64 MiB limit.

Why: no adapter may hold a whole input file in memory. For each container (JSON lines, concatenated JSON,
JSON array, gzip, Avro, Parquet, CSV) this generates a file of about `--size-mb` MiB from the vendor samples,
then decodes it with the adapter's `read_file` in a fresh subprocess (no Spark: a BatchBuilder whose batches
are flushed and dropped, as a decode task does), and reports the peak RSS (VmHWM) above the RSS after a
warm-up decode of the same file's first records. The gzip case is a JSON lines file of that size, compressed.

Usage: python benchmarks/memory.py [--size-mb 300] [--containers jsonl,avro] [--work .bench]
`make bench` runs it with 300 MiB files; tests/test_memory.py runs it with 100 MiB files (marked slow).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
LIMIT_MB = 64
ORDERS_SCHEMA = (SAMPLES / "datahub" / "schemas" / "orders_record_schema.json").read_text(encoding="utf-8")

CONTAINERS: dict[str, tuple[str, dict[str, Any], str]] = {
    "jsonl": ("datastream", {}, "events.jsonl"),
    "concat": ("datahub", {}, "blobs.json"),
    "array": ("datastream", {}, "events.json"),
    "gzip": ("replicate", {}, "messages.jsonl.gz"),
    "avro": ("datastream", {}, "events.avro"),
    "parquet": ("datahub", {"tuple_schemas": {"orders": ORDERS_SCHEMA}, "primary_keys": ["id"]}, "orders.parquet"),
    "csv": ("datahub", {"tuple_schemas": {"orders": ORDERS_SCHEMA}, "primary_keys": ["id"]}, "orders.csv"),
}
"""container -> (vendor whose read_file decodes it, adapter options, file name)."""


# -- generation ------------------------------------------------------------------------------------------------
def _lines(path: Path) -> list[bytes]:
    return [line for line in path.read_bytes().splitlines() if line.strip()]


def _ds_lines() -> list[bytes]:
    return [line for p in sorted((SAMPLES / "datastream").rglob("*.jsonl")) if "broken" not in p.parts
            for line in _lines(p)]


def _repeat(out: Any, pieces: list[bytes], size: int, sep: bytes = b"\n", first: bytes = b"") -> None:
    block = sep.join(pieces)
    out.write(first)
    written = len(first)
    while written < size:
        out.write(block + sep)
        written += len(block) + len(sep)


def _write_jsonl(path: Path, size: int) -> None:
    with path.open("wb") as out:
        _repeat(out, _ds_lines(), size)


def _write_concat(path: Path, size: int) -> None:
    with path.open("wb") as out:
        _repeat(out, _lines(SAMPLES / "datahub" / "blob" / "documented.jsonl"), size, sep=b"")


def _write_array(path: Path, size: int) -> None:
    with path.open("wb") as out:
        _repeat(out, _ds_lines(), size - 1, sep=b",\n", first=b"[")
        out.write(b"{}]")


def _write_gzip(path: Path, size: int) -> None:
    lines = _lines(SAMPLES / "replicate" / "json" / "orders_wide.jsonl")
    md = [line for line in lines if b'"MD"' in line or b'"lineage"' in line]
    dt = [line for line in lines if line not in md]
    with gzip.open(path, "wb", compresslevel=1) as out:
        _repeat(out, dt, size, first=b"\n".join(md) + b"\n")


def _write_avro(path: Path, size: int) -> None:
    import fastavro

    sample = next((SAMPLES / "datastream" / "shop_payments").rglob("*cdc*.avro"))
    with sample.open("rb") as fh:
        reader = fastavro.reader(fh)
        schema, records = reader.writer_schema, list(reader)
    with path.open("wb") as out:
        writer = fastavro.write.Writer(out, fastavro.parse_schema(schema))
        while out.tell() < size:
            for _ in range(500):
                for r in records:
                    writer.write(r)
            writer.flush()


def _orders_rows(start: int, n: int) -> dict[str, list]:
    ids = list(range(start, start + n))
    return {
        "_sequence_id_": [str(1649991610688000000 + i) for i in ids], "_operation_type_": ["I"] * n,
        "_execute_time_": [1649991800000 + i for i in ids], "_source_table_": ["orders"] * n,
        "_before_image_": ["N"] * n, "_after_image_": ["Y"] * n, "id": ids,
        "name": [os.urandom(24).hex() for _ in ids], "price": [f"{i % 1000}.{i % 100:02d}" for i in ids],
        "paid": ["false"] * n, "updated": [1649991800000000 + i for i in ids],
    }


def _write_parquet(path: Path, size: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    start = 0
    with pq.ParquetWriter(path, pa.table(_orders_rows(0, 1)).schema) as writer:
        while path.stat().st_size < size:
            writer.write_table(pa.table(_orders_rows(start, 50_000)), row_group_size=50_000)
            start += 50_000


def _write_csv(path: Path, size: int) -> None:
    cols = list(_orders_rows(0, 1))
    with path.open("w", encoding="utf-8") as out:
        out.write(",".join(cols) + "\n")
        start = 0
        while out.tell() < size:
            rows = _orders_rows(start, 20_000)
            out.write("".join(",".join(str(rows[c][i]) for c in cols) + "\n" for i in range(20_000)))
            start += 20_000


WRITERS = {"jsonl": _write_jsonl, "concat": _write_concat, "array": _write_array, "gzip": _write_gzip,
           "avro": _write_avro, "parquet": _write_parquet, "csv": _write_csv}


def generate(container: str, size_mb: int, folder: Path) -> Path:
    """The generated file of one container (cached in `folder` by container and size)."""
    path = folder / f"{size_mb}mb" / CONTAINERS[container][2]
    done = path.with_name(path.name + ".complete")
    if not done.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        WRITERS[container](path, size_mb << 20)
        done.write_text("")
    return path


# -- measurement (in a fresh process) --------------------------------------------------------------------------
def _status_mb(field: str) -> float:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def _decode(vendor: str, options: dict[str, Any], path: Path, limit: int | None) -> tuple[int, int]:
    from cdcnorm.adapters import get_adapter
    from cdcnorm.canonical.emit import BatchBuilder

    adapter = get_adapter(vendor, options)
    out = BatchBuilder()
    out.set_context(vendor, adapter.formats[0])
    records = rows = 0
    with path.open("rb") as fh:
        for _ in adapter.read_file(str(path), fh, out):
            records += 1
            if len(out) >= 4096:
                rows += out.flush().num_rows
            if limit is not None and records >= limit:
                break
    out.end_record()
    rows += out.flush().num_rows
    return records, rows


def child(container: str, path: Path) -> dict[str, Any]:
    """Warm up on the first records, then decode the whole file; RSS figures in MiB."""
    vendor, options, _ = CONTAINERS[container]
    _decode(vendor, options, path, 20_000)
    start = _status_mb("VmRSS")
    try:  # reset the peak so that VmHWM measures the decode alone (Linux >= 4.0)
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
    except OSError:
        pass
    t0 = time.perf_counter()
    records, rows = _decode(vendor, options, path, None)
    peak = _status_mb("VmHWM")
    return {"container": container, "vendor": vendor, "file_mb": round(path.stat().st_size / 2**20, 1),
            "records": records, "rows": rows, "seconds": round(time.perf_counter() - t0, 1),
            "rss_start_mb": round(start, 1), "peak_mb": round(peak, 1), "growth_mb": round(peak - start, 1)}


def measure(container: str, path: Path) -> dict[str, Any]:
    """Run :func:`child` in a fresh interpreter and return its figures."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, __file__, "--child", container, str(path)], env=env, check=True,
                          capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(size_mb: int, containers: list[str], work: Path) -> list[dict[str, Any]]:
    results = []
    for c in containers:
        path = generate(c, size_mb, work / "memory")
        res = measure(c, path)
        verdict = "ok" if res["growth_mb"] < LIMIT_MB else f"OVER {LIMIT_MB} MiB"
        print(f"  {c:8} {res['vendor']:10} {res['file_mb']:7.1f} MiB  {res['records']:>9,} records  "
              f"{res['seconds']:6.1f} s  RSS growth {res['growth_mb']:6.1f} MiB  {verdict}", flush=True)
        results.append(res)
    return results


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size-mb", type=int, default=300)
    p.add_argument("--containers", default=",".join(CONTAINERS))
    p.add_argument("--work", default=".bench")
    p.add_argument("--child", nargs=2, metavar=("CONTAINER", "PATH"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], Path(args.child[1]))))
        return 0
    print(f"reader memory: {args.size_mb} MiB files, RSS growth limit {LIMIT_MB} MiB", flush=True)
    results = run(args.size_mb, args.containers.split(","), Path(args.work))
    return 0 if all(r["growth_mb"] < LIMIT_MB for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
