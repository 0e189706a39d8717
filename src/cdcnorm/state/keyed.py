"""One keyed table's new state: the rows of the files a batch touches, its tombstones and its new changes, merged.

The merge keeps, per key, what the full rule needs to stay exact when changes arrive late: each column's value
with the `sort_key` of the change that set it, and the key's last DELETE. A column's value survives when its
change is later than the key's last DELETE and the table's last TRUNCATE; among survivors the latest wins
(a batch change wins a tie: a redelivery or a superseding pair carries the same values). The same function
with no previous state is the full apply, so both paths give the same table by construction.
"""

from __future__ import annotations

import functools

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from cdcnorm.state.merge import group_key
from cdcnorm.state.plan import TablePlan
from cdcnorm.state.ranges import partition_id
from cdcnorm.state.target import COLUMN_SORT_KEYS, DELETED_AT, KEY, SORT_KEY
from cdcnorm.state.types import extract_field, extract_value, spark_type, variant_path

_STATE, _TOMB, _BATCH = 0, 1, 2
_PID = "_pid"


def _sk(i: int) -> str:
    return f"_s{i}"


def _q(name: str) -> Column:
    return F.col("`" + name.replace("`", "``") + "`")


def merged(plan: TablePlan, entries: DataFrame, state: DataFrame | None, tombstones: DataFrame | None,
           ranges: int | None = None, entries_ranged: bool = False) -> DataFrame:
    """Typed columns + `_cdc_*` + `_live` per key. `entries`: :func:`batch_entries` of one table's new changes;
    `state` / `tombstones`: rows of the touched target files (or None). `ranges`: shuffle by key range into that
    many partitions, sorted, so the result is written as it comes (:func:`cdcnorm.state.target.write_sorted` with
    `presorted`) without a second shuffle. `entries_ranged`: the entries were made with the same `ranges`
    (:func:`batch_entries`), so when they are merged alone they are partitioned already.

    One aggregation per key, no window: a column's latest value above the key's reset point (its last DELETE,
    or the table's last TRUNCATE) is its latest value overall when that one is above the reset, else there is
    none; so each column takes its latest value and `sort_key`, and the reset is applied to the result."""
    cols = plan.columns
    parts = [entries]
    if state is not None:
        parts.append(_state(state, cols))
    if tombstones is not None:
        parts.append(_tombstones(tombstones, cols))
    union = parts[0]
    for p in parts[1:]:
        union = union.unionByName(p)
    if ranges and not (entries_ranged and len(parts) == 1):
        union = union.repartitionByRange(ranges, KEY)
    if len(parts) == 1:
        out = _aggregate_entries(union, cols)
    else:
        aggs = []
        for i, c in enumerate(cols):
            order = F.when(F.col(_sk(i)).isNotNull(), F.struct(F.col(_sk(i)), F.col("_kind")))
            aggs += [F.max_by(_q(c.name), order).alias(c.name), F.max(_sk(i)).alias(_sk(i))]
        aggs += [F.max("_row_sk").alias("_R"), F.max("_del").alias("_D")]
        out = union.groupBy(KEY).agg(*aggs)
    trunc = F.lit(plan.truncated_at).cast("binary")
    reset = F.greatest(F.col("_D"), trunc)
    after = lambda c: F.when(reset.isNull() | (c > reset), c)  # noqa: E731
    out = out.select(*[F.when(after(F.col(_sk(i))).isNotNull(), _q(c.name)).alias(c.name) for i, c in enumerate(cols)],
                     *[after(F.col(_sk(i))).alias(_sk(i)) for i in range(len(cols))],
                     KEY, after(F.col("_R")).alias(SORT_KEY), "_D")
    row_sk = F.col(SORT_KEY)
    if cols:
        sks = F.map_from_arrays(F.array(*[F.lit(c.name) for c in cols]), F.array(*[F.col(_sk(i)) for i in range(len(cols))]))
        differs = [F.col(_sk(i)).isNull() | (F.col(_sk(i)) != row_sk) for i in range(len(cols))]
        # most rows have every column from their last change: test that without building a map
        col_sks = F.when(functools.reduce(lambda a, b: a | b, differs),
                         F.map_filter(sks, lambda _k, v: v.isNull() | (v != row_sk)))
    else:
        col_sks = F.lit(None).cast("map<string,binary>")
    deleted = F.when(trunc.isNull() | (F.col("_D") > trunc), F.col("_D"))
    out = out.select(*[_q(c.name) for c in cols], KEY, SORT_KEY, deleted.alias(DELETED_AT),
                     col_sks.alias(COLUMN_SORT_KEYS), row_sk.isNotNull().alias("_live"))
    return out.sortWithinPartitions(KEY) if ranges else out


def _aggregate_entries(entries: DataFrame, cols) -> DataFrame:
    """Per key, each column's latest value and `sort_key` among :func:`batch_entries` alone (a rebuild).

    Why not one `max_by` per column: most changes carry every column (full images), and for them the latest
    such change gives every column at once. So the changes that carry every column are aggregated as whole rows
    (one `max_by` of a struct), and per column only the others (partial images, uncaptured columns): for a
    table of full images those per-column aggregates see no row. A column's value is then the later of the two
    candidates, which is the latest change that carried it, as with one `max_by` per column."""
    row = F.col("_row_sk")
    full = functools.reduce(lambda a, b: a & b, [F.col(_sk(i)).isNotNull() for i in range(len(cols))], row.isNotNull())
    entries = entries.withColumn("_cdc_full_image", full)
    aggs = [F.max_by(F.struct(*[_q(c.name) for c in cols]), F.when(F.col("_cdc_full_image"), row)).alias("_W"),
            F.max(F.when(F.col("_cdc_full_image"), row)).alias("_WR")] if cols else []
    for i, c in enumerate(cols):
        part = F.when(~F.col("_cdc_full_image"), F.col(_sk(i)))
        aggs += [F.max_by(_q(c.name), part).alias(f"_p{i}"), F.max(part).alias(f"_ps{i}")]
    aggs += [F.max(row).alias("_R"), F.max("_del").alias("_D")]
    out = entries.groupBy(KEY, *([_PID] if _PID in entries.columns else [])).agg(*aggs)  # _pid: one per key
    sel = []
    for i, c in enumerate(cols):
        whole, ps, wr = F.col("_W")[c.name], F.col(f"_ps{i}"), F.col("_WR")
        take_whole = ps.isNull() | (wr.isNotNull() & (wr >= ps))
        sel += [F.when(take_whole, whole).otherwise(F.col(f"_p{i}")).alias(c.name), F.greatest(wr, ps).alias(_sk(i))]
    return out.select(*sel, KEY, "_R", "_D")


def live_rows(merged_df: DataFrame) -> DataFrame:
    return merged_df.where(F.col("_live")).drop("_live")


def tombstone_rows(merged_df: DataFrame) -> DataFrame:
    return merged_df.where(~F.col("_live") & F.col(DELETED_AT).isNotNull()).select(KEY, DELETED_AT)


def batch_entries(rows: DataFrame, plan: TablePlan, ranges: int | None = None,
                  bounds: list[bytes] | None = None) -> DataFrame:
    """One entry per applicable change of a keyed table (:func:`cdcnorm.state.merge.applicable` rows): its key
    (`_cdc_key`), DELETE or row `sort_key`, and per column the typed value it carries with its `sort_key`.

    A column is carried when the after image has it and it is not listed in `missing_columns`, or else when the
    change's key has it (partial images keep their key columns); a DELETE carries none. Values are taken straight
    from the VARIANT images with one field lookup each (no `map<string, variant>` of whole images); a column
    name no `variant_get` path can spell goes through the map.

    `ranges`: the rows are shuffled by key range into that many partitions before anything is extracted: the
    range partitioner samples its input by computing it, so the sample costs a scan, not the extraction too.
    `bounds` (:func:`cdcnorm.state.ranges.key_bounds`, with `ranges`): each row goes to the partition of its key
    among them instead (`repartitionById`, no sampling job); the entries then carry that partition id (`_pid`),
    which :func:`merged` groups by with the key so the aggregate needs no second shuffle."""
    op, sk = F.col("op"), F.col("sort_key")
    delete = op == "DELETE"
    gkey = group_key(plan)
    missing = F.coalesce(F.col("missing_columns"), F.array().cast("array<string>"))
    bounds = bounds if ranges else None
    pid = [partition_id("key_bytes" if plan.key_mode == "event" else gkey, bounds).alias(_PID)] if bounds else []
    rows = rows.select(F.hex(gkey).alias(KEY), "op", "sort_key", "after", "key", missing.alias("_m"), *pid).where(F.col(KEY).isNotNull())
    if bounds:
        rows = rows.repartitionById(len(bounds) + 1, _PID)
    elif ranges:
        rows = rows.repartitionByRange(ranges, KEY)
    rows = with_carried(rows, plan.columns, ~delete)
    sel = [F.col(KEY), *([F.col(_PID)] if bounds else []), F.lit(_BATCH).alias("_kind"), F.when(delete, sk).alias("_del"),
           F.when(~delete, sk).alias("_row_sk")]
    for i, c in enumerate(plan.columns):
        sel += [F.col(f"_v{i}").alias(c.name), F.when(F.col(f"_c{i}"), sk).alias(_sk(i))]
    return rows.select(*sel)


def with_carried(df: DataFrame, cols, row: Column) -> DataFrame:
    """`df` (with `after`, `key` and `_m`, the missing columns) with, per column `c` (index i), `_v<i>`: its typed
    value in the change and `_c<i>`: whether the change carries it. `row`: the rows to look into (not a DELETE;
    tested first, so no other row is looked into). Carried: the after image has the field and `_m` does not list
    it, else the change's key has it (partial images keep their key columns).

    Why three selects: a typed value proves the field is there (one lookup); only a null one (a JSON null or a
    cast failure) needs the field itself, and only a field the image lacks needs the key. Written as one
    expression, the value and the carried flag share those tests, and Spark's common-subexpression elimination
    then evaluates every lookup of every row eagerly (about 1.5 CPU s per million changes of four columns)."""
    a, k, m = F.col("after"), F.col("key"), F.col("_m")
    typed, in_after, in_key, out = [], [], [], []
    for i, c in enumerate(cols):
        path = variant_path(c.name)
        if path is None:
            a_field = F.try_element_at(F.try_variant_get(a, "$", "map<string,variant>"), F.lit(c.name))
            k_field = F.try_element_at(F.try_variant_get(k, "$", "map<string,variant>"), F.lit(c.name))
            a_val = extract_value(a_field, c.type, c.canonical_type, c.naive_utc)
            k_val = extract_value(k_field, c.type, c.canonical_type, c.naive_utc)
        else:
            a_field, k_field = F.try_variant_get(a, path, "variant"), F.try_variant_get(k, path, "variant")
            a_val = extract_field(a, path, c.type, c.canonical_type, c.naive_utc)
            k_val = extract_field(k, path, c.type, c.canonical_type, c.naive_utc)
        av, ia, ik = F.col(f"_a{i}"), F.col(f"_ia{i}"), F.col(f"_ik{i}")
        typed.append(F.when(row, a_val).alias(f"_a{i}"))
        in_after.append((row & (av.isNotNull() | a_field.isNotNull()) & ~F.array_contains(m, c.name)).alias(f"_ia{i}"))
        in_key.append((~ia & row & k_field.isNotNull()).alias(f"_ik{i}"))
        out += [F.when(ia, av).when(ik, k_val).cast(spark_type(c.type)).alias(f"_v{i}"),
                (ia | ik).alias(f"_c{i}")]
    if not cols:
        return df
    names = df.columns
    df = df.select(*names, *typed).select(*names, *[f"_a{i}" for i in range(len(cols))], *in_after)
    df = df.select("*", *in_key)
    return df.select(*names, *out)


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
