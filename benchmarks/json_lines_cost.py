"""The container tier of the JVM decode path: CPU of `split_json_lines` cutting a large Datastream JSON-lines
file into records (line numbers, offsets, raw bytes as one Arrow binary array), per million lines.

Why: when Spark parses the records, this cut is all the Python work per file besides the event id, so its cost
per line is what the JVM path adds on the Python side. The file is the `python -m cdcnorm simulate` Datastream
JSON output (its lines cycled until the file is `--mb` MB), written once to a temporary folder; each run reads it
from disk. For scale it also times reading the same bytes alone (the floor of any cut) and, with `--reference N`,
`JsonRecords` over the file's first N lines (the Python path's container tier, which also parses each line).

Usage: python benchmarks/json_lines_cost.py [--mb 200] [--repeat 3] [--gzip] [--reference 50000]
Prints CPU seconds (time.process_time, best of --repeat) for the file and per 1M lines.
"""

from __future__ import annotations

import argparse
import gzip
import io
import itertools
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cdcnorm.containers import JsonRecords, open_source
from cdcnorm.containers.json_lines import split_json_lines


def datastream_lines(work: Path) -> list[bytes]:
    """The JSON lines of one simulated Datastream history (its .jsonl and .jsonl.gz files)."""
    out = work / "simulated"
    subprocess.run([sys.executable, "-m", "cdcnorm", "simulate", "--out", str(out), "--vendor", "datastream",
                    "--rows", "300", "--changes", "3000", "--quirk", "none"], check=True, capture_output=True)
    lines: list[bytes] = []
    for path in sorted((out / "datastream" / "json").rglob("*.jsonl*")):
        data = path.read_bytes()
        lines += (gzip.decompress(data) if path.suffix == ".gz" else data).splitlines()
    return lines


def write_file(work: Path, lines: list[bytes], megabytes: int, compress: bool) -> tuple[Path, int]:
    """A file of the lines cycled until it holds `megabytes` MB; returns its path and line count."""
    target, size, count, parts = megabytes << 20, 0, 0, []
    for line in itertools.cycle(lines):
        if size >= target:
            break
        parts.append(line + b"\n")
        size += len(line) + 1
        count += 1
    data = b"".join(parts)
    path = work / ("big.jsonl.gz" if compress else "big.jsonl")
    path.write_bytes(gzip.compress(data, compresslevel=6) if compress else data)
    return path, count


def best_cpu(run, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best


def read_only(path: Path) -> None:
    with path.open("rb") as fh:
        src = open_source(fh)
        while src.read_some(16 << 20):
            pass


def split(path: Path) -> int:
    with path.open("rb") as fh:
        lines = split_json_lines(fh)
    assert lines is not None, "the file was routed away"
    return len(lines)


def reference(path: Path, limit: int) -> float:
    with path.open("rb") as fh:
        head = b"".join(itertools.islice(open_source(fh).read(-1).splitlines(keepends=True), limit))
    start = time.process_time()
    for _ in JsonRecords(open_source(io.BytesIO(head))):
        pass
    return time.process_time() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=200, help="size of the decompressed file in MB")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--gzip", action="store_true", help="gzip the file (the cut then includes the inflate)")
    ap.add_argument("--reference", type=int, default=0, help="also time JsonRecords over this many lines")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        path, count = write_file(work, datastream_lines(work), args.mb, args.gzip)
        assert split(path) == count
        per_million = 1e6 / count
        rows = [("read the bytes only", best_cpu(lambda: read_only(path), args.repeat)),
                ("split_json_lines", best_cpu(lambda: split(path), args.repeat))]
        print(f"{path.name}: {args.mb} MB decompressed, {count} lines ({(args.mb << 20) / count:.0f} bytes a line),"
              f" best of {args.repeat}")
        for name, cpu in rows:
            print(f"  {name:<22} {cpu:7.3f} CPU s   {cpu * per_million:7.3f} CPU s per 1M lines")
        if args.reference:
            cpu = min(reference(path, args.reference) for _ in range(args.repeat))
            print(f"  {'JsonRecords (parses)':<22} {cpu:7.3f} CPU s   {cpu * 1e6 / args.reference:7.3f} CPU s per "
                  f"1M lines ({args.reference} lines)")


if __name__ == "__main__":
    main()
