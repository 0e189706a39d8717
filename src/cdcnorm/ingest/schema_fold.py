"""The schema-version fold on the driver: a run's new schema-version rows from its few schema texts.

Why on the driver: schema versions are metadata (the decode emits a schema text per file and table version),
and folding them in Spark, then joining the fold against the lake's folded versions, would be most of the stages
of a micro-batch's report aggregation (about 40 stages for three texts) and a thousand py4j calls of planning. The
aggregation carries the run's distinct schema texts (cdcnorm.ingest.pipeline) and this module folds them here,
with the same rules as the Spark fold (:func:`cdcnorm.canonical.inferred.fold_versions`,
:func:`cdcnorm.ingest.schema_rows.new_schema_rows`); `tests/test_schema_fold.py` checks both give the same rows.

Rows are dicts shaped as :func:`cdcnorm.ingest.schema_rows.as_text` writes them: the schema-version columns, with
`first_seen` as microseconds (`first_seen_us`) and every column struct holding its six fields.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Iterable
from typing import Any

import orjson

from cdcnorm.canonical.inferred import NUMBER_KINDS, PREFIX
from cdcnorm.canonical.schema import SCHEMA_COLUMN, SCHEMA_VERSION_COLUMNS

Row = dict[str, Any]
FIELDS = [f.name for f in SCHEMA_COLUMN.fields]
TEXT_NAMES = [c.name for c in SCHEMA_VERSION_COLUMNS if c.name != "first_seen"] + ["first_seen_us"]
"""The keys of a row's text, in the order Spark's `to_json` of :func:`cdcnorm.ingest.schema_rows.as_text` writes them."""
_IDENT = ("vendor", "stream", "database", "schema", "table", "schema_version")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_KINDS = re.compile(r"^json:([^;]*)")
_INT32_MAX = (1 << 31) - 1


def from_doc(text: str) -> Row:
    """A decoded schema text (cdcnorm.canonical.emit, `_schema`) as a row, its version id derived."""
    doc = orjson.loads(text)
    row: Row = {n: doc.get(n) for n in TEXT_NAMES if n not in ("columns", "version_id", "first_seen_us")}
    row["columns"] = [_column(c) for c in doc.get("columns") or []]
    row["version_id"] = hashlib.sha256("\u0001".join(doc.get(n) or "" for n in _IDENT).encode()).hexdigest()
    row["first_seen_us"] = _micros(doc.get("first_seen"))
    return row


def from_text(text: str) -> Row:
    """A row from its text (:func:`cdcnorm.ingest.schema_rows.as_text`; Spark leaves null fields out)."""
    doc = orjson.loads(text)
    row = {n: doc.get(n) for n in TEXT_NAMES}
    row["columns"] = [_column(c) for c in doc.get("columns") or []]
    return row


def to_text(row: Row) -> str:
    """The row's text as Spark's `to_json` writes it (same keys, same order, null fields left out)."""
    out: Row = {}
    for n in TEXT_NAMES:
        if n == "columns":
            out[n] = [{f: c[f] for f in FIELDS if c[f] is not None} for c in row[n]]
        elif row[n] is not None:
            out[n] = row[n]
    return orjson.dumps(out).decode()


def new_rows(run: Iterable[Row], stored: dict[str, Row]) -> list[Row]:
    """The run's versions the lake lacks, and its inferred versions that widen the lake's (`stored`: the
    lake's folded rows by version id), as :func:`cdcnorm.ingest.schema_rows.new_schema_rows` derives them."""
    folded = fold(run)
    declared = [r for r in folded if not _inferred_row(r) and r["version_id"] not in stored]
    untyped = [r for r in folded if _inferred_row(r)]
    merged = fold(untyped + [stored[r["version_id"]] for r in untyped if r["version_id"] in stored])
    widened = [m for m in merged if m["version_id"] not in stored or stored[m["version_id"]]["columns"] != m["columns"]]
    return declared + widened


def fold(rows: Iterable[Row]) -> list[Row]:
    """One row per version id, as :func:`cdcnorm.canonical.inferred.fold_versions` folds them: the earliest
    row's metadata (and declared columns), inferred columns merged over every row of the version."""
    by_id: dict[str, list[Row]] = {}
    for r in rows:
        by_id.setdefault(r["version_id"], []).append(r)
    return [_fold_one(rs) for rs in by_id.values()]


def _fold_one(rows: list[Row]) -> Row:
    first = min(rows, key=_order)
    per_col: dict[Any, list[tuple[tuple, Row]]] = {}
    for r in rows:
        o = _order(r)
        for c in r["columns"]:
            per_col.setdefault(c["name"], []).append((o, c))
    if not per_col:
        return dict(first)
    cols = []
    for name, seen in per_col.items():
        decl = [(o, c) for o, c in seen if not _inferred(c) and c["vendor_type"] is not None]
        inf = [c for _, c in seen if _inferred(c)]
        firstcol = min(seen, key=lambda oc: oc[0])[1]
        ordinals = [c["ordinal"] for _, c in seen if c["ordinal"] is not None]
        ordinal = min(ordinals) if ordinals else None
        if decl:
            col = min(decl, key=lambda oc: oc[0])[1]
        elif inf:
            kinds = sorted({k for c in inf for k in _kinds(c["vendor_type"])} - {""})
            digits = max((n for c in inf if (n := _number(c["vendor_type"], "digits")) is not None), default=0)
            scale = max((n for c in inf if (n := _number(c["vendor_type"], "scale")) is not None), default=0)
            numeric = any(k in NUMBER_KINDS for k in kinds)
            col = {"name": name,
                   "vendor_type": PREFIX + ",".join(kinds) + (f";digits={digits};scale={scale}" if numeric else ""),
                   "canonical_type": canonical_of(kinds, digits, scale), "ordinal": ordinal,
                   "pk_position": firstcol["pk_position"], "nullable": firstcol["nullable"]}
        else:
            col = firstcol
        cols.append(((ordinal is not None, ordinal or 0, name is not None, name or ""), col))
    out = dict(first)
    if any(_inferred(c) for _, seen in per_col.items() for _, c in seen):
        out["columns"] = [c for _, c in sorted(cols, key=lambda kc: kc[0])]
    return out


def canonical_of(kinds: list[str], digits: int, scale: int) -> str | None:
    """:func:`cdcnorm.canonical.inferred.canonical_of` for one merged summary."""
    have = set(kinds)
    if not have:
        return None
    if "json" in have:
        return "json"
    if have <= set(NUMBER_KINDS):
        if have & {"decimal", "integer"}:
            return f"decimal({max(digits + scale, 1)},{scale})"
        return "bigint" if "bigint" in have else "int"
    for allowed, name in (({"date"}, "date"), ({"date", "timestamp"}, "timestamp"),
                          ({"date", "timestamp_ntz"}, "timestamp_ntz"), ({"boolean"}, "boolean")):
        if have <= allowed:
            return name
    return "string"


def _order(r: Row) -> tuple[bool, int]:
    us = r["first_seen_us"]
    return (us is None, us or 0)


def _inferred(c: Row) -> bool:
    vt = c["vendor_type"]
    return vt is not None and vt.startswith(PREFIX)


def _inferred_row(r: Row) -> bool:
    return any(_inferred(c) for c in r["columns"])


def _kinds(vendor_type: str) -> list[str]:
    m = _KINDS.match(vendor_type)
    return (m.group(1) if m else "").split(",")


def _number(vendor_type: str, name: str) -> int | None:
    m = re.search(rf";{name}=(\d+)", vendor_type)
    if not m:
        return None
    n = int(m.group(1))
    return n if n <= _INT32_MAX else None


def _column(c: Row) -> Row:
    return {f: c.get(f) for f in FIELDS}


def _micros(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        t = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.UTC)
    return (t - _EPOCH) // dt.timedelta(microseconds=1)
