"""One keyed table's new state: the rows of the files a batch touches, its tombstones and its new changes, merged.

The merge keeps, per key, what the full rule needs to stay exact when changes arrive late: each column's value
with the `sort_key` of the change that set it, and the key's last DELETE. A column's value survives when its
change is later than the key's last DELETE and the table's last TRUNCATE; among survivors the latest wins
(a batch change wins a tie: a redelivery or a superseding pair carries the same values). The same function
with no previous state is the full apply, so both paths give the same table by construction.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from cdcnorm.state.plan import TablePlan
from cdcnorm.state.target import COLUMN_SORT_KEYS, DELETED_AT, KEY, SORT_KEY
from cdcnorm.state.types import extract, spark_type

_STATE, _TOMB, _BATCH = 0, 1, 2


def _sk(i: int) -> str:
    return f"_s{i}"


def _q(name: str) -> Column:
    return F.col("`" + name.replace("`", "``") + "`")


def merged(plan: TablePlan, changes: DataFrame, state: DataFrame | None, tombstones: DataFrame | None,
           ranges: int | None = None) -> DataFrame:
    """Typed columns + `_cdc_*` + `_live` per key. `changes`: :func:`cdcnorm.state.merge.keyed_entries` of one
    table (`_gkey, op, sort_key, _img`); `state` / `tombstones`: rows of the touched target files (or None).
    `ranges`: shuffle by key range into that many partitions, sorted, so the result is written as it comes
    (:func:`cdcnorm.state.target.write_sorted` with `presorted`) without a second shuffle."""
    cols = plan.columns
    parts = [_batch(changes, cols)]
    if state is not None:
        parts.append(_state(state, cols))
    if tombstones is not None:
        parts.append(_tombstones(tombstones, cols))
    entries = parts[0]
    for p in parts[1:]:
        entries = entries.unionByName(p)
    trunc = F.lit(plan.truncated_at).cast("binary")
    if ranges:
        entries = entries.repartitionByRange(ranges, KEY)
    entries = entries.withColumn("_D", F.max("_del").over(Window.partitionBy(KEY)))
    reset = F.greatest(F.col("_D"), trunc)
    after = lambda c: F.when(reset.isNull() | (c > reset), c)  # noqa: E731
    aggs = []
    for i, c in enumerate(cols):
        s = after(F.col(_sk(i)))
        aggs += [F.max_by(_q(c.name), F.when(s.isNotNull(), F.struct(s, F.col("_kind")))).alias(c.name),
                 F.max(s).alias(_sk(i))]
    aggs += [F.max(after(F.col("_row_sk"))).alias(SORT_KEY), F.max("_D").alias("_D")]
    out = entries.groupBy(KEY).agg(*aggs)
    row_sk = F.col(SORT_KEY)
    if cols:
        sks = F.map_from_arrays(F.array(*[F.lit(c.name) for c in cols]), F.array(*[F.col(_sk(i)) for i in range(len(cols))]))
        differing = F.map_filter(sks, lambda _k, v: v.isNull() | (v != row_sk))
        col_sks = F.when(F.size(differing) > 0, differing)
    else:
        col_sks = F.lit(None).cast("map<string,binary>")
    deleted = F.when(trunc.isNull() | (F.col("_D") > trunc), F.col("_D"))
    out = out.select(*[_q(c.name) for c in cols], KEY, SORT_KEY, deleted.alias(DELETED_AT),
                     col_sks.alias(COLUMN_SORT_KEYS), row_sk.isNotNull().alias("_live"))
    return out.sortWithinPartitions(KEY) if ranges else out


def live_rows(merged_df: DataFrame) -> DataFrame:
    return merged_df.where(F.col("_live")).drop("_live")


def tombstone_rows(merged_df: DataFrame) -> DataFrame:
    return merged_df.where(~F.col("_live") & F.col(DELETED_AT).isNotNull()).select(KEY, DELETED_AT)


def _batch(changes: DataFrame, cols) -> DataFrame:
    delete = F.col("op") == "DELETE"
    sk = F.col("sort_key")
    img = F.col("_img")
    sel = [F.hex("_gkey").alias(KEY), F.lit(_BATCH).alias("_kind"), F.when(delete, sk).alias("_del"),
           F.when(~delete, sk).alias("_row_sk")]
    for i, c in enumerate(cols):
        sel += [F.when(delete, F.lit(None)).otherwise(extract(img, c.name, c.type, c.canonical_type, c.naive_utc))
                .cast(spark_type(c.type)).alias(c.name),
                F.when(~delete & F.map_contains_key(img, F.lit(c.name)), sk).alias(_sk(i))]
    return changes.select(*sel)


def _column_sk(name: str) -> Column:
    m, row = F.col(COLUMN_SORT_KEYS), F.col(SORT_KEY)
    return F.when(m.isNull(), row).when(F.map_contains_key(m, F.lit(name)), F.try_element_at(m, F.lit(name))).otherwise(row)


def _state(state: DataFrame, cols) -> DataFrame:
    sel = [F.col(KEY), F.lit(_STATE).alias("_kind"), F.col(DELETED_AT).alias("_del"), F.col(SORT_KEY).alias("_row_sk")]
    for i, c in enumerate(cols):
        sel += [_q(c.name), _column_sk(c.name).alias(_sk(i))]
    return state.select(*sel)


def _tombstones(tombs: DataFrame, cols) -> DataFrame:
    sel = [F.col(KEY), F.lit(_TOMB).alias("_kind"), F.col(DELETED_AT).alias("_del"),
           F.lit(None).cast("binary").alias("_row_sk")]
    for i, c in enumerate(cols):
        sel += [F.lit(None).cast(spark_type(c.type)).alias(c.name), F.lit(None).cast("binary").alias(_sk(i))]
    return tombs.select(*sel)
