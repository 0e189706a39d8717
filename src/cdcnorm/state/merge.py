"""The changes `cdcnorm apply` takes, as entries per row key: which changes apply, their group key and image.

Keyed tables: one entry per change with its group key and the columns it carries as `map<string, variant>`
(uncaptured columns dropped, key columns the image lacks taken from the change's key), merged by
:mod:`cdcnorm.state.keyed`. Keyless tables: +-1 per row image and a running count that never drops below zero.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from cdcnorm.state.plan import ROW_OPS, TablePlan, of_table

_IMAGE = "map<string,variant>"


def applicable(changes: DataFrame, plan: TablePlan) -> DataFrame:
    """One table's changes that can change a row: data ops (no orphan UPDATE without an after image), after the
    table's last TRUNCATE, with the plan's table hash, key mode and key columns as constant columns."""
    op = F.col("op")
    trunc = F.lit(plan.truncated_at).cast("binary")
    rows = changes.where(of_table(plan.tid) & op.isin(*ROW_OPS) & ~((op == "UPDATE") & F.col("after").isNull()))
    if plan.truncated_at is not None:
        rows = rows.where(F.col("sort_key") > trunc)
    return rows.withColumns({"_tid": F.lit(plan.hid), "_trunc": trunc, "_mode": F.lit(plan.key_mode),
                             "_pks": F.array(*[F.lit(k) for k in plan.key_columns]).cast("array<string>")})


def keyless_state(rows: DataFrame) -> DataFrame:
    """`_tid, _gkey, values, _n` of the keyless tables among :func:`applicable` rows."""
    return _count_keyless(_keyless_entries(rows).repartition("_tid", "_gkey"))


def _as_image(col: Column) -> Column:
    return F.try_variant_get(col, "$", _IMAGE)


def group_key(plan: TablePlan) -> Column:
    """The binary group key of one keyed table's :func:`applicable` rows (null: the row has no key).

    `event` keys are the adapters' `key_bytes`; `derived` keys are the JSON of the key columns' values, from the
    change's key, else its after image (its before image for a DELETE), exactly as :func:`keyed_entries`."""
    if plan.key_mode == "event":
        return F.col("key_bytes")
    op, keymap = F.col("op"), _as_image(F.col("key"))
    after, before = _as_image(F.col("after")), _as_image(F.col("before"))
    source = F.when(op == "DELETE", before).otherwise(F.coalesce(after, before))
    kv = F.array(*[F.coalesce(F.try_element_at(keymap, F.lit(c)), F.try_element_at(source, F.lit(c)))
                   for c in plan.key_columns]) if plan.key_columns else F.array().cast("array<variant>")
    keyable = F.exists(kv, lambda v: v.isNotNull() & ~F.is_variant_null(v))
    return F.when(keyable, F.to_json(kv).cast("binary"))


def keyed_entries(rows: DataFrame) -> DataFrame:
    """One entry per change: its group key, and the columns it carries (missing columns dropped)."""
    op = F.col("op")
    df = rows.select(
        "_tid", "_mode", "_pks", "op", "sort_key", "key_bytes", "missing_columns", "event_id", "source_ts",
        _as_image(F.col("after")).alias("_after"), _as_image(F.col("key")).alias("_keymap"),
        _as_image(F.col("before")).alias("_before"),
    )
    source = F.when(op == "DELETE", F.col("_before")).otherwise(F.coalesce("_after", "_before"))
    df = df.withColumn("_kv", F.transform(
        "_pks", lambda c: F.coalesce(F.try_element_at(F.col("_keymap"), c), F.try_element_at(source, c))))
    keyable = F.exists("_kv", lambda v: v.isNotNull() & ~F.is_variant_null(v))
    gkey = F.when(F.col("_mode") == "event", F.col("key_bytes")).when(keyable, F.to_json("_kv").cast("binary"))
    missing = F.coalesce(F.col("missing_columns"), F.array().cast("array<string>"))
    df = df.select("_tid", "op", "sort_key", "event_id", "source_ts", gkey.alias("_gkey"), "_keymap",
                   F.map_filter("_after", lambda k, _v: ~F.array_contains(missing, k)).alias("_present"))
    present, keymap = F.col("_present"), F.col("_keymap")
    extra = F.map_filter(keymap, lambda k, _v: present.isNull() | ~F.map_contains_key(present, k))
    image = (F.when(op == "DELETE", F.lit(None))
             .when(keymap.isNull(), present).when(present.isNull(), keymap)
             .otherwise(F.map_concat(extra, present)))
    return df.where(F.col("_gkey").isNotNull()).select("_tid", "_gkey", "op", "sort_key", image.alias("_img"),
                                                       "event_id", "source_ts")


def _keyless_entries(rows: DataFrame) -> DataFrame:
    """Keyless tables: the row image is the key; DELETE (and an UPDATE's before) -1, the new image +1."""
    op = F.col("op")
    minus = F.struct(F.lit(-1).alias("sign"), F.lit(0).alias("sub"),
                     F.when(op.isin("DELETE", "UPDATE"), F.col("before")).alias("v"))
    plus = F.struct(F.lit(1).alias("sign"), F.lit(1).alias("sub"), F.when(op != "DELETE", F.col("after")).alias("v"))
    exploded = rows.select(
        "_tid", "sort_key", F.explode(F.filter(F.array(minus, plus), lambda e: e["v"].isNotNull())).alias("e"))
    return exploded.select(
        "_tid", "sort_key", F.to_json(F.col("e.v")).cast("binary").alias("_gkey"),
        F.col("e.sub").alias("_sub"), F.col("e.sign").alias("_sign"), _as_image(F.col("e.v")).alias("_img"),
    )


def _count_keyless(entries: DataFrame) -> DataFrame:
    """Multiset of row images: running count in change order, never below zero (a DELETE of nothing is a no-op).

    The final count of a reflected walk is `S_end - min(0, min S_k)` over the running sums S_k.
    """
    order = (Window.partitionBy("_tid", "_gkey").orderBy("sort_key", "_sub")
             .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    runs = entries.withColumn("_run", F.sum("_sign").over(order))
    plus = F.col("_sign") > 0
    agg = runs.groupBy("_tid", "_gkey").agg(
        F.max_by("_run", F.struct("sort_key", "_sub")).alias("_end"), F.min("_run").alias("_low"),
        F.max_by(F.when(plus, F.col("_img")), F.when(plus, F.col("sort_key"))).alias("values"),
    )
    n = (F.col("_end") - F.least(F.lit(0).cast("long"), F.col("_low"))).cast("long")
    return agg.select("_tid", "_gkey", "values", n.alias("_n")).where(F.col("_n") > 0)
