"""Helpers for pure decode tests: decoded Arrow batches as Python rows, with VARIANT values decoded."""

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
