"""SCD type 2 history of one table: a row per version of each key, from the table's changes in `sort_key` order.

Why windows and not a fold: per key, a column's value at a change is the last value a change carried since the
key's last reset (its DELETE, or a TRUNCATE of the table): `last(struct(value) if carried, ignorenulls)` over
the key's changes in order, partitioned by reset segment, is that fold without a row-at-a-time UDF. The same
rules as the current state (docs/apply.md) therefore give the history's last versions, so its current rows equal
the current-state table. Keyless tables: each copy of an image is a version (opened by its INSERT, closed by the
DELETE or UPDATE that removed it), see :func:`keyless_history`.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from cdcnorm.state.plan import TablePlan
from cdcnorm.state.types import extract

HISTORY_COLUMNS = ("valid_from", "valid_to", "valid_from_ts", "valid_to_ts", "is_current", "opened_by_op",
                   "opened_by_event_id", "closed_by_op", "closed_by_event_id", "_cdc_key")


def _q(name: str) -> Column:
    return F.col("`" + name.replace("`", "``") + "`")


def keyed_history(plan: TablePlan, entries: DataFrame, truncates: list[tuple[bytes, object, str]],
                  track: list[str] | None = None) -> DataFrame:
    """Versions of every key. `entries`: keyed entries with `event_id`, `source_ts` (`_gkey, op, sort_key, _img,
    event_id, source_ts`); `truncates`: the table's (sort_key, source_ts, event_id), metadata only; `track`: only a
    change of these columns opens a version (others update the open version in place)."""
    cols = plan.columns
    key = F.hex("_gkey").alias("_cdc_key")
    sk, op, img = F.col("sort_key"), F.col("op"), F.col("_img")
    tr = F.array(*[F.lit(t) for t, _, _ in truncates]).cast("array<binary>") if truncates else F.array().cast("array<binary>")
    df = entries.select(key, "op", "sort_key", "event_id", "source_ts", "_img")
    df = df.withColumn("_trunc_n", F.size(F.filter(tr, lambda t: t < sk)))
    by_key = Window.partitionBy("_cdc_key").orderBy("sort_key")
    resets = F.sum(F.when(op == "DELETE", 1).otherwise(0)).over(by_key.rowsBetween(Window.unboundedPreceding, -1))
    df = df.withColumn("_seg", F.coalesce(resets, F.lit(0)) + F.col("_trunc_n") * 1_000_000)
    seg = (Window.partitionBy("_cdc_key", "_seg").orderBy("sort_key")
           .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    vals = []
    for c in cols:
        carried = F.when(~(op == "DELETE") & F.map_contains_key(img, F.lit(c.name)),
                         F.struct(extract(img, c.name, c.type, c.canonical_type, c.naive_utc).alias("v")))
        vals.append(F.last(carried, ignorenulls=True).over(seg)["v"].alias(c.name))
    nxt = Window.partitionBy("_cdc_key").orderBy("sort_key")
    df = df.select("*", *vals,
                   F.lead("sort_key").over(nxt).alias("_next_sk"), F.lead("op").over(nxt).alias("_next_op"),
                   F.lead("event_id").over(nxt).alias("_next_id"), F.lead("source_ts").over(nxt).alias("_next_ts"))
    versions = df.where(op != "DELETE")
    if track is not None:
        versions = _collapse(versions, [c.name for c in cols if c.name in set(track)], cols)
    # the first truncate after the version closes it when it comes before the key's next change
    first_tr = F.try_element_at(F.filter(tr, lambda t: t > sk), F.lit(1)) if truncates else F.lit(None).cast("binary")
    versions = versions.withColumn("_tr", first_tr)
    by_trunc = truncates and {t.hex(): (ts, eid) for t, ts, eid in truncates}
    trunc_wins = F.col("_tr").isNotNull() & (F.col("_next_sk").isNull() | (F.col("_tr") < F.col("_next_sk")))
    tr_ts, tr_id = _truncate_lookup(by_trunc or {}, F.col("_tr"))
    out = versions.select(
        *[_q(c.name) for c in cols],
        sk.alias("valid_from"), F.when(trunc_wins, F.col("_tr")).otherwise(F.col("_next_sk")).alias("valid_to"),
        F.col("source_ts").alias("valid_from_ts"),
        F.when(trunc_wins, tr_ts).otherwise(F.col("_next_ts")).alias("valid_to_ts"),
        (F.col("_next_sk").isNull() & ~trunc_wins).alias("is_current"),
        op.alias("opened_by_op"), F.col("event_id").alias("opened_by_event_id"),
        F.when(trunc_wins, F.lit("TRUNCATE")).otherwise(F.col("_next_op")).alias("closed_by_op"),
        F.when(trunc_wins, tr_id).otherwise(F.col("_next_id")).alias("closed_by_event_id"),
        F.col("_cdc_key"),
    )
    return out


def _truncate_lookup(by_trunc: dict[str, tuple], col: Column) -> tuple[Column, Column]:
    ts, eid = F.lit(None).cast("timestamp"), F.lit(None).cast("string")
    for h, (t, e) in by_trunc.items():
        hit = F.hex(col) == F.lit(h.upper())
        ts, eid = F.when(hit, F.lit(t).cast("timestamp")).otherwise(ts), F.when(hit, F.lit(e)).otherwise(eid)
    return ts, eid


def _collapse(versions: DataFrame, tracked: list[str], cols) -> DataFrame:
    """Only changes of tracked columns open a version: later changes in the same version update it in place
    (the version keeps its opening change and time, takes the last values, and closes where its last change
    closes)."""
    w = Window.partitionBy("_cdc_key", "_seg").orderBy("sort_key")
    types = {c.name: c.type for c in cols}
    changed = F.lit(False)
    for c in tracked:
        cur = _comparable(_q(c), types[c])
        prev = F.lag(cur).over(w)
        changed = changed | ~cur.eqNullSafe(prev)
    first = F.lag("sort_key").over(w).isNull()
    v = versions.withColumn("_new", first | changed)
    v = v.withColumn("_vid", F.sum(F.col("_new").cast("int")).over(w.rowsBetween(Window.unboundedPreceding, 0)))
    keep = ["op", "sort_key", "event_id", "source_ts"]
    last = ["_next_sk", "_next_op", "_next_id", "_next_ts", *[c.name for c in cols]]
    order = F.col("sort_key")
    aggs = [F.min_by(F.col(k), order).alias(k) for k in keep] + [F.max_by(_q(k), order).alias(k) for k in last]
    return v.groupBy("_cdc_key", "_seg", "_vid").agg(*aggs)


def _comparable(c: Column, type_name: str) -> Column:
    return F.to_json(c) if type_name == "variant" else c  # VARIANT values cannot be compared: their JSON text can


def keyless_history(plan: TablePlan, rows: DataFrame) -> DataFrame:
    """Keyless tables: every copy of a row image is a version. INSERT / SNAPSHOT (and an UPDATE's after image)
    open one; a DELETE (or an UPDATE's before image) closes the oldest open copy of the same image, if any."""
    op = F.col("op")
    plus = F.struct(F.lit(1).alias("sign"), F.when(op != "DELETE", F.col("after")).alias("v"))
    minus = F.struct(F.lit(-1).alias("sign"), F.when(op.isin("DELETE", "UPDATE"), F.col("before")).alias("v"))
    ex = rows.select("sort_key", "event_id", "source_ts", "op",
                     F.explode(F.filter(F.array(minus, plus), lambda e: e["v"].isNotNull())).alias("e"))
    ex = ex.select("*", F.hex(F.to_json("e.v").cast("binary")).alias("_cdc_key"), F.col("e.sign").alias("_sign"),
                   F.try_variant_get(F.col("e.v"), "$", "map<string,variant>").alias("_img"))
    w = Window.partitionBy("_cdc_key").orderBy("sort_key", "_sign")
    opens = ex.where(F.col("_sign") > 0).withColumn("_n", F.row_number().over(
        Window.partitionBy("_cdc_key").orderBy("sort_key")))
    # count before a change = S - sign - min(0, lowest S so far): a DELETE of nothing (count 0) closes nothing,
    # the m-th effective DELETE closes the m-th copy (the oldest open one)
    run = ex.withColumn("_run", F.sum("_sign").over(w.rowsBetween(Window.unboundedPreceding, 0)))
    low = F.least(F.lit(0).cast("long"), F.coalesce(
        F.min("_run").over(w.rowsBetween(Window.unboundedPreceding, -1)), F.lit(0).cast("long")))
    run = run.withColumn("_before", F.col("_run") - F.col("_sign") - low)
    closes = run.where((F.col("_sign") < 0) & (F.col("_before") > 0))
    closes = closes.withColumn("_n", F.row_number().over(Window.partitionBy("_cdc_key").orderBy("sort_key")))
    c = closes.select("_cdc_key", "_n", F.col("sort_key").alias("valid_to"), F.col("source_ts").alias("valid_to_ts"),
                      F.col("op").alias("closed_by_op"), F.col("event_id").alias("closed_by_event_id"))
    out = opens.join(c, ["_cdc_key", "_n"], "left")
    return out.select(
        *[extract(F.col("_img"), x.name, x.type, x.canonical_type, x.naive_utc).alias(x.name) for x in plan.columns],
        F.col("sort_key").alias("valid_from"), "valid_to", F.col("source_ts").alias("valid_from_ts"), "valid_to_ts",
        F.col("valid_to").isNull().alias("is_current"), F.col("op").alias("opened_by_op"),
        F.col("event_id").alias("opened_by_event_id"), "closed_by_op", "closed_by_event_id", "_cdc_key")
