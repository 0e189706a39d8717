"""What inferring column types costs the Datastream JSON decode (docs/apply.md, "Typed columns from JSON").

Why a micro-benchmark: the summaries are built inside the adapter's pure-Python decode (no Spark job of their
own), so their cost is the decode time with the observer on versus off, on the same bytes, alternating
(a shared machine's load drifts). Input: a real corpus file repeated (default: the 275-line PostgreSQL backfill,
7 columns of which 2 are timestamps).

    PYTHONPATH=src python benchmarks/json_inference.py [FILE.jsonl] [--copies 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import io
import time
from pathlib import Path

from cdcnorm.adapters import get_adapter
from cdcnorm.canonical import inferred
from cdcnorm.canonical.emit import BatchBuilder

DEFAULT = (Path(__file__).resolve().parents[2] / "shared" / "corpus" / "datastream" / "json_real"
           / "hkh__postgresql_backfill__public_dwh_entity_role_properties.jsonl")


def decode_seconds(data: bytes) -> float:
    """Decode the bytes as one Datastream JSON file, flushing Arrow batches as the pipeline does."""
    adapter = get_adapter("datastream")
    out = BatchBuilder()
    out.set_context("datastream", "datastream.json")
    t0 = time.perf_counter()
    for _ in adapter.read_file("bench.jsonl", io.BytesIO(data), out):
        if len(out) >= 10_000:
            out.flush()
    out.flush()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file", nargs="?", default=str(DEFAULT))
    ap.add_argument("--copies", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    data = Path(args.file).read_bytes().rstrip(b"\n") + b"\n"
    data *= args.copies
    lines = data.count(b"\n")
    observe = inferred.TypeObserver.observe
    best = {"on": float("inf"), "off": float("inf")}
    try:
        for _ in range(args.rounds):
            for label in ("on", "off"):
                inferred.TypeObserver.observe = observe if label == "on" else (lambda self, ident, *images: None)
                best[label] = min(best[label], decode_seconds(data))
    finally:
        inferred.TypeObserver.observe = observe
    for label, sec in best.items():
        print(f"observer {label}: {sec:.3f} s, {sec / lines * 1e6:.2f} us/line ({lines} lines)")
    print(f"inference overhead: {(best['on'] / best['off'] - 1) * 100:.1f}% of the decode")


if __name__ == "__main__":
    main()
