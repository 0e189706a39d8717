"""What `cdcnorm apply` decides per table before touching any data: schema version, key mode and columns.

Everything here is metadata: one aggregate over the changes and one over the schema versions, each collected as
one row per table (never data rows).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from cdcnorm.canonical.schema import OPS
from cdcnorm.state.paths import TableId
from cdcnorm.state.ranges import key_sample_aggs, with_key_sample
from cdcnorm.state.types import OutputColumn, parse_inferred, schema_column

IDENT = ("vendor", "stream", "database", "schema", "table")
ROW_OPS = ("INSERT", "UPDATE", "DELETE", "SNAPSHOT")
APPLIED_OPS = (*ROW_OPS, "TRUNCATE")
IGNORED_OPS = tuple(o for o in OPS if o not in APPLIED_OPS)


@dataclass
class TablePlan:
    """How one table is applied: its columns, key mode and the counts reported for it."""

    tid: TableId
    hid: str
    columns: list[OutputColumn]
    schema_version: str | None
    schema_source: str
    key_mode: str
    key_columns: list[str]
    truncated_at: bytes | None
    stats: dict[str, Any] = field(default_factory=dict)
    rows: int = 0
    applied: dict[str, Any] = field(default_factory=dict)
    """How this apply brought the table up to date (mode, why rebuilt, files rewritten); see docs/apply.md."""


def table_hash() -> Column:
    """A null-safe, non-null table id (VARIANT-free and short) to partition and join on."""
    return F.substring(F.sha2(F.to_json(F.array(*[F.col(f"`{c}`") for c in IDENT])), 256), 1, 32)


def of_table(tid: TableId) -> Column:
    """The rows of one table, by its identity (nulls equal): cheaper per row than comparing :func:`table_hash`."""
    cond = F.lit(True)
    for c, v in zip(IDENT, tid, strict=True):
        cond = cond & F.col(f"`{c}`").eqNullSafe(F.lit(v).cast("string"))
    return cond


def name_filter(tables: list[str] | None) -> Column | None:
    """`table`, `schema.table` or `db.schema.table`, case-insensitive, matched as a dotted suffix."""
    if not tables:
        return None
    name = F.lower(F.concat_ws(".", "database", "schema", "table"))
    cond = F.lit(False)
    for t in tables:
        t = t.strip().lower()
        cond = cond | (name == t) | name.endswith("." + t)
    return cond


def matches(tid: TableId, tables: list[str] | None) -> bool:
    """:func:`name_filter` for one table id on the driver (the same dotted-suffix rule)."""
    if not tables:
        return True
    name = tid.name.lower()
    return any(name == t.strip().lower() or name.endswith("." + t.strip().lower()) for t in tables)


def latest_schemas(schemas: DataFrame) -> dict[str, dict[str, Any]]:
    """The latest schema version per table: by `first_seen`, then numerically, then textually by version."""
    order = Window.partitionBy("_tid").orderBy(
        F.col("first_seen").desc_nulls_last(),
        F.expr("try_cast(schema_version AS decimal(38,0))").desc_nulls_last(),
        F.col("schema_version").desc(),
    )
    rows = (schemas.withColumn("_tid", table_hash()).withColumn("_rn", F.row_number().over(order))
            .where(F.col("_rn") == 1).select("_tid", *IDENT, "schema_version", "columns").collect())
    return {r["_tid"]: r.asDict(recursive=True) for r in rows}


def table_stats(changes: DataFrame, with_schema: set[str]) -> dict[str, dict[str, Any]]:
    """Per table: truncate positions, key coverage, counts, and inferred columns (one row per table collected).

    Why in up to three aggregates: the VARIANT images are the bulk of a change, and only UPDATEs (an orphan
    UPDATE has no after image) and a few tables need them. A first aggregate reads no image; a second reads the
    images of UPDATE rows only (Parquet skips row groups without one: a snapshot or insert load costs nothing
    there); tables whose figures need every image (no schema version: columns inferred from the images; rows
    without `key_bytes`: keys derived from the images) are aggregated again in full (:func:`_full_stats`). The
    figures are those of :func:`_full_stats` for every table (tests/test_apply.py checks it). Grouped by the
    identity, the table hash computed once per table afterwards: hashing every change cost a `sha2` of its
    identity's JSON per row. The head aggregate also samples the keys for a rebuild's range bounds
    (:mod:`cdcnorm.state.ranges`: `key_sample`, which the bookmark does not keep)."""
    op, kb = F.col("op"), F.col("key_bytes")
    row = op.isin(*ROW_OPS) & (op != "UPDATE")  # applied without looking at an image
    head = with_key_sample(changes, row, kb).groupBy(*IDENT).agg(*_plain_aggs(), *[
        F.count_if(row).alias("_rows"),
        F.min(F.when(row, kb)).alias("_min"), F.max(F.when(row, kb)).alias("_max"),
        F.count_if(row & kb.isNull()).alias("_unkeyed"),
        F.count_if(op == "UPDATE").alias("_updates"), *key_sample_aggs()]).withColumn("_tid", table_hash()).collect()
    out = {r["_tid"]: r.asDict(recursive=True) for r in head}
    samples = {t: {"n": d.pop("_ksn"), "q": d.pop("_ksq")} for t, d in out.items()}
    upd = [t for t, d in out.items() if d["_updates"]]
    if upd:
        after = F.col("after")
        ok = after.isNotNull()
        tail = (changes.where(op == "UPDATE").groupBy(*IDENT).agg(
            F.count_if(ok).alias("_rows"), F.min(F.when(ok, kb)).alias("_min"), F.max(F.when(ok, kb)).alias("_max"),
            F.count_if(ok & kb.isNull()).alias("_unkeyed"), F.count_if(~ok).alias("orphan_updates_ignored"),
            F.count_if(F.col("before").isNull() & ok).alias("updates_without_before")).withColumn("_tid", table_hash()).collect())
        for r in tail:
            d = out[r["_tid"]]
            d["_rows"] += r["_rows"]
            d["_unkeyed"] += r["_unkeyed"]
            d["_min"] = min((x for x in (d["_min"], r["_min"]) if x is not None), default=None)
            d["_max"] = max((x for x in (d["_max"], r["_max"]) if x is not None), default=None)
            d["orphan_updates_ignored"], d["updates_without_before"] = r["orphan_updates_ignored"], r["updates_without_before"]
    full = []
    for t, d in out.items():
        d.setdefault("orphan_updates_ignored", 0)
        d.setdefault("updates_without_before", 0)
        d["row_changes"], d["unkeyed"] = d.pop("_rows"), d.pop("_unkeyed")
        d["min_key"], d["max_key"] = d.pop("_min"), d.pop("_max")
        d["unkeyable"], d["inferred"] = 0, "VOID"  # schema_of_variant_agg of no image
        del d["_updates"]
        if d["unkeyed"] or (t not in with_schema and d["row_changes"] - d["deletes"] > 0):
            full.append(t)
    if full:
        out.update(_full_stats(changes.where(F.col("_tid").isin(*full)), with_schema))
    for t, d in out.items():
        _finish(d)
        d["key_sample"] = samples.get(t)  # range bounds of a rebuild (cdcnorm.state.ranges), not a count
    return out


def _plain_aggs() -> list[Column]:
    """The aggregates of a table's changes that read no image."""
    op, sk = F.col("op"), F.col("sort_key")
    data = op.isin(*APPLIED_OPS)
    return [
        F.max(F.when(op == "TRUNCATE", sk)).alias("truncated_at"),
        F.count_if(op == "TRUNCATE").alias("truncates"),
        F.count_if(op == "DELETE").alias("deletes"),
        F.max_by("primary_keys", F.when(F.col("primary_keys").isNotNull(), sk)).alias("event_keys"),
        F.max(F.when(data, sk)).alias("last_sort_key"),
        F.max_by("position", F.when(data, sk)).alias("last_position"),
        F.max_by("source_ts", F.when(data, sk)).alias("last_source_ts"),
        *[F.count_if(op == o).alias(f"ignored_{o}") for o in IGNORED_OPS],
    ]


def _full_stats(changes: DataFrame, with_schema: set[str]) -> dict[str, dict[str, Any]]:
    """One aggregate over every change and its images (the definition of each figure)."""
    op = F.col("op")
    orphan = (op == "UPDATE") & F.col("after").isNull()
    applied = op.isin(*ROW_OPS) & ~orphan
    image = F.when(op == "DELETE", F.col("before")).otherwise(F.col("after"))
    no_schema = ~F.col("_tid").isin(*sorted(with_schema)) if with_schema else F.lit(True)
    aggs = [
        *_plain_aggs(),
        F.count_if(applied).alias("row_changes"),
        F.min(F.when(applied, F.col("key_bytes"))).alias("min_key"),
        F.max(F.when(applied, F.col("key_bytes"))).alias("max_key"),
        F.count_if(orphan).alias("orphan_updates_ignored"),
        F.count_if(applied & F.col("key_bytes").isNull()).alias("unkeyed"),
        F.count_if(applied & F.col("key_bytes").isNull() & F.col("key").isNull() & image.isNull()).alias("unkeyable"),
        F.count_if((op == "UPDATE") & F.col("before").isNull() & F.col("after").isNotNull()).alias("updates_without_before"),
        F.schema_of_variant_agg(F.when(no_schema & applied & (op != "DELETE"), F.col("after"))).alias("inferred"),
    ]
    rows = changes.groupBy(*IDENT).agg(*aggs).withColumn("_tid", table_hash()).collect()
    return {r["_tid"]: r.asDict(recursive=True) for r in rows}


def _finish(d: dict[str, Any]) -> None:
    for k in ("truncated_at", "last_sort_key", "min_key", "max_key"):
        d[k] = bytes(d[k]) if d[k] is not None else None
    counts = {o: d.pop(f"ignored_{o}") for o in IGNORED_OPS}
    d["ignored_ops"] = {o: n for o, n in counts.items() if n}


def _schema_columns(schema: dict[str, Any]) -> list[OutputColumn]:
    cols = sorted(schema["columns"] or [], key=lambda c: (c["ordinal"] is None, c["ordinal"] or 0, c["name"]))
    seen: set[str] = set()
    out = []
    for c in cols:
        if c["name"] is not None and c["name"] not in seen:
            seen.add(c["name"])
            out.append(schema_column(c))
    return out


def _schema_keys(schema: dict[str, Any] | None) -> list[str]:
    if not schema:
        return []
    pks = [c for c in schema["columns"] or [] if c["pk_position"] is not None and c["name"] is not None]
    return [c["name"] for c in sorted(pks, key=lambda c: c["pk_position"])]


def plan_tables(stats: dict[str, dict], latest: dict[str, dict]) -> list[TablePlan]:
    """Decide columns and key mode per table: every table with a data change or a schema version."""
    plans = []
    for hid in sorted(set(stats) | set(latest)):
        st, sv = stats.get(hid), latest.get(hid)
        if sv is None and not (st and (st["row_changes"] or st["truncates"])):
            continue  # only DDL/heartbeat/transaction rows: nothing to apply (counted in the summary)
        src = sv or st
        tid = TableId(*(src[c] for c in IDENT))
        event_keys = (st or {}).get("event_keys") or []
        schema_keys = _schema_keys(sv)
        if not st or not st["unkeyed"]:
            mode, keys = "event", event_keys or schema_keys
        elif schema_keys or event_keys:
            mode, keys = "derived", schema_keys or event_keys
        else:
            mode, keys = "keyless", []
        if sv is not None:
            columns, source, version = _schema_columns(sv), "schema_version", sv["schema_version"]
        else:
            columns, source, version = parse_inferred(st["inferred"], keys), "inferred", None
        plans.append(TablePlan(tid, hid, columns, version, source, mode, keys,
                               (st or {}).get("truncated_at"), st or {}))
    return plans
