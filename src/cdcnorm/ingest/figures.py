"""A run's figures in one Spark job: every count its report needs, from one union of small parts aggregated once.

Why one job: each aggregation of a run's rows is a Spark job with its own plan, and for a micro-batch or a small
file those fixed costs were most of the run (docs/benchmarks.md, "Continuous mode"). The parts are projections
written as SQL texts (one `selectExpr` each), so building them costs a few py4j calls, not hundreds.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from cdcnorm.canonical.emit import KIND_SCHEMA
from cdcnorm.canonical.emit import Bookkeeping as B
from cdcnorm.ingest.pairing import Pairing

_IDENT = ("vendor", "stream", "source_db", "database", "schema", "table")
_SUMS = ("records", "merged", "rows", "unchecked", "held_in", "held_out", "state_rows")
_TYPES = {"dup": "boolean", "newest": "timestamp", **{c: "bigint" for c in _SUMS}}
_PART_COLUMNS = ("k_kind", "k_rule", *_IDENT, "op", "dup", "flag", "text", *_SUMS, "newest")


def _part(df: DataFrame, name: str, **cols: str) -> DataFrame:
    """One part of the report aggregation's union: `cols` (SQL expressions by output column) over `df`, every
    other column null. Written as one `selectExpr` of SQL texts: building the same projection from Column
    objects took some 400 py4j calls a part, a share of a micro-batch's fixed cost."""
    exprs = [f"'{name}' AS part"]
    for c in _PART_COLUMNS:
        exprs.append(f"CAST({cols.get(c, 'NULL')} AS {_TYPES.get(c, 'string')}) AS `{c}`")
    return df.selectExpr(*exprs)


def _part_row(name: str, **cols: str) -> str:
    """A row of :func:`_part` as one SQL struct (for :func:`_parts`)."""
    fields = [f"'part', '{name}'"]
    fields += [f"'{c}', CAST({cols.get(c, 'NULL')} AS {_TYPES.get(c, 'string')})" for c in _PART_COLUMNS]
    return f"named_struct({', '.join(fields)})"


def _parts(df: DataFrame, rows: str) -> DataFrame:
    """Several parts over one frame in one pass: `rows` is an SQL array of :func:`_part_row` structs per row
    of `df`. The frame's plan appears once in the aggregation, not once per part (a run's marked changes are
    a few shuffles: planning them twice was a share of a small run's cost)."""
    return df.selectExpr(f"inline({rows})")


def aggregate_figures(decoded: DataFrame, marked: DataFrame, pairing: Pairing | None,
               schema_texts: bool = False) -> dict[str, Any]:
    """Every figure of the run in one Spark job: the decoded rows by kind and rule, the marked change rows
    by table, op and duplicate, their flags, and the pairing counts, unioned and aggregated together; with
    `schema_texts`, the run's distinct decoded schema texts too (metadata: folded on the driver,
    cdcnorm.ingest.schema_rows.new_schema_texts)."""
    kind, rule, records, merged = (f"`{c}`" for c in (B.KIND, B.RULE, B.RECORDS, B.MERGED))
    group = _part_row("group", **{c: f"`{c}`" for c in _IDENT}, op="op", dup="_dup", records=records,
                      merged=merged, rows="1", newest="source_ts", unchecked="_unchecked")
    # a marked row: its group row, and one flag row per flag of a row that is not a duplicate
    flags = "coalesce(IF(_dup, NULL, flags), CAST(array() AS array<string>))"
    frames = [
        _part(decoded, "kind", k_kind=kind, k_rule=rule, records=records, rows="1"),
        _parts(marked, f"concat(array({group}), transform({flags}, f -> {_part_row('flag', flag='f', rows='1')}))"),
    ]
    if pairing is not None and pairing.counts is None:  # one state row per entry: both parts in one pass
        frames.append(_parts(pairing.entries, f"array({_part_row('held', held_in='0', held_out='0', state_rows='1')}, "
                                              f"{_part_row('entries', rows='1')})"))
    elif pairing is not None:
        frames.append(_part(pairing.counts, "held", **{c: c for c in ("held_in", "held_out", "state_rows")}))
        frames.append(_part(pairing.entries, "entries", rows="1"))
    if schema_texts:
        frames.append(_part(decoded.where(F.col(B.KIND) == KIND_SCHEMA), "schemas", text=f"`{B.SCHEMA}`", rows="1"))
    union = frames[0]
    for f in frames[1:]:
        union = union.unionByName(f)
    keys = ["part", "k_kind", "k_rule", *_IDENT, "op", "dup", "flag", "text"]
    aggs = [*[f"sum({c}) AS {c}" for c in _SUMS], "max(newest) AS newest"]
    out: dict[str, Any] = {"kind": [], "group": [], "flag": [], "held": [], "entries": [], "schemas": []}
    # aggregates and metadata only: one row per (kind, table op, flag), and per distinct schema text
    agg = union.groupBy(*keys).agg(*[F.expr(a) for a in aggs])
    for r in agg.collect():
        out[r["part"]].append(r.asDict())
    if pairing is not None and pairing.state_before:  # the live entries a run passed by (flush_past_memory)
        held = out["held"] or [{"held_in": 0, "held_out": 0, "state_rows": 0}]
        held[0]["state_rows"] = int(held[0]["state_rows"] or 0) + pairing.state_before
        out["held"] = held
    out["entries"] = sum(int(r["rows"] or 0) for r in out["entries"])
    out["schemas"] = sorted(r["text"] for r in out["schemas"])
    out["pairing"] = pairing is not None
    return out
