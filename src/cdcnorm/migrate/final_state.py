"""Final-state comparison: apply both sides and diff each table by key, datacompy-style.

Why keys are rebuilt from typed columns: `cdcnorm.apply` returns the current-state tables users see (typed
columns, no internal key bytes), so rows are joined on a normalised text form of the key columns. It follows
`key_bytes`' rules: an integer and an integral decimal of the same value are the same key (`5` and `5.00`),
while a string `'5'` is a different key from the number `5`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from cdcnorm.migrate.rules import EXACT_NUMERIC, ColumnComparison, compare_column, display, sql_ref
from cdcnorm.migrate.sides import Side, TablePair, TableRef


@dataclass
class TableState:
    """One side's current state of one table (a typed DataFrame) and how `apply` built it."""

    ref: TableRef
    df: DataFrame | None
    columns: dict[str, str] = field(default_factory=dict)
    key_columns: list[str] = field(default_factory=list)
    key_mode: str = "event"
    rows: int = 0


def applied_states(spark: SparkSession, sides: list[Side], pairs: list[TablePair]) -> dict[tuple[str, TableRef], TableState]:
    """Apply each lake once (not written: compare never changes a lake) for the paired tables of its sides."""
    from cdcnorm.state import TableId, apply

    wanted: dict[str, list[tuple[str, TableRef]]] = {}
    for side, refs in ((sides[0], [p.left for p in pairs]), (sides[1], [p.right for p in pairs])):
        wanted.setdefault(side.lake.rstrip("/"), []).extend((side.label, r) for r in refs)
    out: dict[tuple[str, TableRef], TableState] = {}
    for lake, items in wanted.items():
        if not items:
            continue
        result = apply(spark, lake, tables=sorted({r.name for _, r in items}), write=False)
        entries = {TableId(e["vendor"], e["stream"], e["database"], e["schema"], e["table"]): e
                   for e in result.summary["tables"]}
        for label, ref in items:
            tid = TableId(ref.vendor, ref.stream, ref.database, ref.schema, ref.table)
            entry = entries.get(tid)
            if entry is None:
                out[(label, ref)] = TableState(ref, None)
                continue
            out[(label, ref)] = TableState(
                ref, result[tid], {c["name"]: c["type"] for c in entry["columns"]}, list(entry["key_columns"]),
                entry["key_mode"], int(entry["rows"]))
    return out


def norm_key_value(col: Column, type_name: str) -> Column:
    """Text form of a key value that equals across vendors exactly when `key_bytes` would."""
    t = type_name.lower()
    if t.startswith("decimal") or t in EXACT_NUMERIC:
        s = col.cast("string")
        return F.when(s.contains("."), F.regexp_replace(F.regexp_replace(s, "0+$", ""), r"\.$", "")).otherwise(s)
    if t == "binary":
        return F.lower(F.hex(col))
    if t == "variant":
        return F.to_json(col)
    return col.cast("string")


def _ci(names: dict[str, str]) -> dict[str, str]:
    return {n.lower(): n for n in names}


def _keyed(state: TableState, key_cols: list[str], cols: list[str], keyless: bool) -> DataFrame:
    """`_k` (join key), `_key` (readable key) and the compared columns packed in one struct."""
    df = state.df
    assert df is not None
    norm = [norm_key_value(F.col(f"`{k}`"), state.columns[k]) for k in key_cols]
    k = F.to_json(F.array(*norm)) if norm else F.lit("[]")
    shown = F.to_json(F.struct(*[F.col(f"`{c}`") for c in key_cols])) if key_cols else F.lit("{}")
    out = df.select(k.alias("_k"), shown.alias("_key"), F.struct(*[F.col(f"`{c}`") for c in cols]).alias("v"))
    if keyless:  # a multiset: the n-th copy of a row matches the n-th copy on the other side
        occ = F.row_number().over(Window.partitionBy("_k").orderBy("_k"))
        out = out.withColumn("_k", F.concat("_k", F.lit("#"), occ.cast("string")))
    return out


def diff_state(pair: TablePair, left: TableState, right: TableState, samples: int = 10) -> dict[str, Any]:
    """Rows only left/right, rows with differing values, per-column counts and samples for one table."""
    out: dict[str, Any] = {"rows_left": left.rows, "rows_right": right.rows}
    if left.df is None or right.df is None:
        missing = "left" if left.df is None else "right"
        out.update(equal=False, error=f"no current state on the {missing} side (only non-data rows)")
        return out
    lci, rci = _ci(left.columns), _ci(right.columns)
    common = [(lci[n], rci[n]) for n in lci if n in rci]
    out["columns_only_left"] = sorted(lci[n] for n in lci if n not in rci)
    out["columns_only_right"] = sorted(rci[n] for n in rci if n not in lci)
    keyless = left.key_mode == "keyless" or right.key_mode == "keyless" or not left.key_columns
    if keyless:
        key_pairs = common
    else:
        key_pairs = [(k, rci.get(k.lower())) for k in left.key_columns]
        if any(r is None for _, r in key_pairs):
            out.update(equal=False, error=f"key columns differ: left {left.key_columns}, right {right.key_columns}")
            return out
    out["key_columns"] = [lk for lk, _ in key_pairs]
    out["key_mode"] = "keyless (whole rows)" if keyless else left.key_mode
    lk = _keyed(left, [a for a, _ in key_pairs], [a for a, _ in common], keyless)
    rk = _keyed(right, [b for _, b in key_pairs], [b for _, b in common], keyless)
    joined = (lk.select("_k", F.col("_key").alias("_lkey"), F.col("v").alias("l"))
              .join(rk.select("_k", F.col("_key").alias("_rkey"), F.col("v").alias("r")), "_k", "full_outer"))
    vendor_l, vendor_r = pair.left.vendor, pair.right.vendor
    source_db = pair.left.source_db or pair.right.source_db
    comps = [compare_column(a, b, left.columns[a], right.columns[b], vendor_l, vendor_r, source_db, out_name=a)
             for a, b in common]
    where = (F.when(F.col("l").isNull(), F.lit("right")).when(F.col("r").isNull(), F.lit("left"))
             .otherwise(F.lit("both")))
    joined = joined.withColumn("_in", where).withColumn("_key", F.coalesce("_lkey", "_rkey"))
    joined = joined.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        out.update(_aggregate(joined, comps, common))
        out["samples"] = _samples(joined, comps, common, out, samples)
    finally:
        joined.unpersist()
    out["lossy"] = lossy_rules(out["columns"]) if out["rows_in_both"] else []
    out["equal"] = (out["rows_only_left"] == 0 and out["rows_only_right"] == 0 and out["rows_differing"] == 0
                    and not out["columns_only_left"] and not out["columns_only_right"])
    return out


def lossy_rules(columns: list[dict[str, Any]]) -> list[str]:
    """Rules a table's verdict names: every rule bridging two types (the comparison is lossy whatever the values),
    and a same-type rule (e.g. millisecond truncation) only when it made values equal that differed raw."""
    return sorted({c["rule"] for c in columns
                   if c["rule"] and (c["left_type"] != c["right_type"] or c["lossy_equal"])})


def _all_equal(comps: list[ColumnComparison]) -> Column:
    cond = F.lit(True)
    for c in comps:
        cond = cond & c.equal
    return cond


def _aggregate(joined: DataFrame, comps: list[ColumnComparison], common: list[tuple[str, str]]) -> dict[str, Any]:
    both = F.col("_in") == "both"
    aggs = [F.count_if(F.col("_in") == "left").alias("only_left"), F.count_if(F.col("_in") == "right").alias("only_right"),
            F.count_if(both).alias("both"), F.count_if(both & _all_equal(comps)).alias("all_equal")]
    for i, (c, (a, b)) in enumerate(zip(comps, common, strict=True)):
        la, rb = F.expr(sql_ref("l", a)), F.expr(sql_ref("r", b))
        aggs += [F.count_if(both & ~c.equal).alias(f"ne{i}"), F.count_if(both & c.equal & ~c.raw_equal).alias(f"lossy{i}"),
                 F.count_if(both & (la.isNull() != rb.isNull())).alias(f"nulls{i}")]
        if c.numeric:
            aggs.append(F.max(F.when(both, F.abs(la.cast("double") - rb.cast("double")))).alias(f"max{i}"))
    r = joined.agg(*aggs).collect()[0]
    columns = []
    for i, c in enumerate(comps):
        columns.append({
            "name": c.name, "left_type": c.left_type, "right_type": c.right_type, "unequal": int(r[f"ne{i}"]),
            "null_diff": int(r[f"nulls{i}"]), "max_diff": r[f"max{i}"] if c.numeric else None,
            "lossy_equal": int(r[f"lossy{i}"]), "rule": c.rule.name if c.rule else None,
            "explanation": c.rule.explanation if c.rule else None,
        })
    return {"rows_in_both": int(r["both"]), "rows_equal": int(r["all_equal"]), "rows_only_left": int(r["only_left"]),
            "rows_only_right": int(r["only_right"]), "rows_differing": int(r["both"]) - int(r["all_equal"]),
            "columns": columns}


def _samples(joined: DataFrame, comps: list[ColumnComparison], common: list[tuple[str, str]],
             counts: dict[str, Any], n: int) -> dict[str, Any]:
    """Bounded samples (at most `n` rows each) for the report: never more than that reaches the driver."""
    out: dict[str, Any] = {"only_left": [], "only_right": [], "differing_rows": [], "values": {}}
    for side, struct in (("left", "l"), ("right", "r")):
        if counts[f"rows_only_{side}"]:
            rows = joined.where(F.col("_in") == side).select("_key", F.to_json(struct).alias("row")).limit(n).collect()
            out[f"only_{side}"] = [{"key": x["_key"], "row": x["row"]} for x in rows]
    both = F.col("_in") == "both"
    if counts["rows_differing"]:
        names = F.array_compact(F.array(*[F.when(~c.equal, F.lit(c.name)) for c in comps]))
        rows = joined.where(both & ~_all_equal(comps)).select("_key", names.alias("cols")).limit(n).collect()
        out["differing_rows"] = [{"key": x["_key"], "columns": list(x["cols"])} for x in rows]
    for c, (a, b), col in zip(comps, common, counts["columns"], strict=True):
        if col["unequal"]:
            rows = (joined.where(both & ~c.equal)
                    .select("_key", display("l", a, c.left_type).alias("a"), display("r", b, c.right_type).alias("b"))
                    .limit(n).collect())
            out["values"][c.name] = [{"key": x["_key"], "left": x["a"], "right": x["b"]} for x in rows]
    return out
