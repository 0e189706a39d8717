"""Shared by the pure decode tests: decoded Arrow batches as Python rows, with VARIANT values decoded."""

from __future__ import annotations

from pyspark.sql.types import VariantVal


def rows_of(batch) -> list[dict]:
    """Rows of a decoded batch; `key`, `before` and `after` as Python values (VariantVal.toPython)."""
    rows = batch.to_pylist()
    for r in rows:
        for c in ("key", "before", "after"):
            if r[c] is not None:
                r[c] = VariantVal(r[c]["value"], r[c]["metadata"]).toPython()
    return rows


def changes(rows: list[dict]) -> list[dict]:
    """Only the change rows."""
    return [r for r in rows if r["_kind"] == "change"]


def outcomes(rows: list[dict]) -> list[tuple[str, str | None]]:
    """(kind, rule) of the counted outcome of every input record, in input order."""
    return [(r["_kind"], r["_rule"]) for r in rows if r["_records"] == 1]


def decode_files(vendor: str, paths, **options) -> list[dict]:
    """Decode files with one adapter's read_file, as one executor task of the pipeline would (no Spark)."""
    from cdcnorm.adapters import get_adapter
    from cdcnorm.canonical.emit import BatchBuilder

    adapter = get_adapter(vendor, options)
    out = BatchBuilder()
    for p in paths:
        with open(p, "rb") as fh:
            for _ in adapter.read_file(str(p), fh, out):
                pass
    out.end_record()
    return rows_of(out.flush())
