"""Matching two vendors' changes of one table: shared by `cdcnorm compare` and `cdcnorm cutover`.

Changes are matched by (table, key) and source time: candidates are the other side's changes of the same key
within the tolerance, and pairs are chosen mutually best (a change's best partner also prefers it), preferring
the same vendor position and op (where both vendors report one), then the smallest time difference (at the
second when one side's time is a whole second: :func:`time_difference`), then the closest rank within the key (a burst of changes at one instant pairs in order; against a whole-second time,
the rank within the key's changes of that second). Up to three rounds run, each on what the previous left over; whatever is still unpaired is a change only on one side.

Matched pairs carry each side's columns prefixed `l_` / `r_` (`l__us`: source time in epoch microseconds,
`l__rank`: rank within the key, `l__srank`: rank within the key's changes of one second); :func:`annotate_matched` adds `_img` (row images differ) and `_inv` (the vendors
order the key's changes differently). These column names are part of this module's interface.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from cdcnorm.migrate.final_state import TableState
from cdcnorm.migrate.rules import compare_column
from cdcnorm.migrate.sides import Side, TablePair, TableRef
from cdcnorm.state.types import extract, parse_inferred

LOG_OPS = ("INSERT", "UPDATE", "DELETE")

IMAGE_OPS = ("INSERT", "UPDATE", "SNAPSHOT")

_COLS = ("event_id", "key_bytes", "op", "source_ts", "capture_ts", "sort_key", "position", "after",
         "missing_columns", "key")

_MAP = "map<string,variant>"


def table_rows(side: Side, ref: TableRef) -> DataFrame:
    """All rows of one table on one side (null-safe on database and schema)."""
    return side.changes.where(
        (F.col("stream") == ref.stream) & F.col("database").eqNullSafe(F.lit(ref.database))
        & F.col("schema").eqNullSafe(F.lit(ref.schema)) & F.col("table").eqNullSafe(F.lit(ref.table)))


def overlap(lw: dict[str, Any], rw: dict[str, Any]) -> tuple[dt.datetime, dt.datetime] | None:
    """The common window of two side windows (`start`, `end`), or None when they do not overlap."""
    if not (lw.get("start") and rw.get("start") and lw.get("end") and rw.get("end")):
        return None
    start, end = max(lw["start"], rw["start"]), min(lw["end"], rw["end"])
    return (start, end) if start <= end else None


def match_key() -> Column:
    """The key a change is matched on: `key_bytes`, else (keyless tables) the image as JSON text."""
    return F.coalesce(F.col("key_bytes"), F.to_json(F.coalesce(F.col("after"), F.col("before"))).cast("binary"))


def _prep(rows: DataFrame, lo: dt.datetime, hi: dt.datetime, p: str) -> DataFrame:
    df = rows.where(F.col("op").isin(*LOG_OPS) & F.col("source_ts").between(F.lit(lo), F.lit(hi)))
    df = df.withColumn("key_bytes", match_key()).withColumn("_us", F.unix_micros("source_ts"))
    return df.select(*[F.col(c).alias(p + c) for c in (*_COLS, "_us")])


def _close(tol_us: int) -> Column:
    return F.abs(F.col("l__us") - F.col("r__us")) <= F.lit(tol_us)


SECOND_US = 1_000_000


def _coarse(left_us: Column, right_us: Column) -> Column:
    """Either time is a whole second (a MySQL binlog event's: it says only its second)."""
    second = F.lit(SECOND_US)
    return (F.pmod(left_us, second) == 0) | (F.pmod(right_us, second) == 0)


def time_difference(left_us: Column, right_us: Column) -> Column:
    """Microseconds between two source times, at the coarser one's precision: a whole-second time (a MySQL binlog
    event's, so Debezium's MySQL `source.ts_ms`) says only its second, so against it the other time counts by its
    second too; else two changes of one key within one second would pair crosswise with the finer side's."""
    second = F.lit(SECOND_US)
    coarse = _coarse(left_us, right_us)
    seconds = F.floor(left_us / second) - F.floor(right_us / second)
    return F.when(coarse, F.abs(seconds) * second).otherwise(F.abs(left_us - right_us))


def _round(lr: DataFrame, rr: DataFrame, tol_us: int) -> DataFrame:
    """One round of mutual-best pairing among candidates of the same key within the tolerance.

    Preference: same position and op, then the smallest time difference, then the closest rank within the
    key (so a burst of changes at one instant pairs in order), then vendor order. Against a whole-second time the
    rank counts within the key's changes of that second: a change of the key that only one side holds earlier
    (a backfill row left out of the window, a dropped change) does not shift the burst's pairing.
    """
    cand = lr.join(rr, (F.col("l_key_bytes") == F.col("r_key_bytes")) & _close(tol_us))
    same_pos = F.coalesce((F.col("l_position") == F.col("r_position")) & (F.col("l_op") == F.col("r_op")), F.lit(False))
    cand = (cand.withColumn("_p", F.when(same_pos, 0).otherwise(1))
            .withColumn("_d", time_difference(F.col("l__us"), F.col("r__us")))
            .withColumn("_rd", F.when(_coarse(F.col("l__us"), F.col("r__us")),
                                      F.abs(F.col("l__srank") - F.col("r__srank")))
                        .otherwise(F.abs(F.col("l__rank") - F.col("r__rank")))))
    bl = Window.partitionBy("l_event_id").orderBy("_p", "_d", "_rd", "r_sort_key")
    br = Window.partitionBy("r_event_id").orderBy("_p", "_d", "_rd", "l_sort_key")
    best = cand.withColumn("_bl", F.row_number().over(bl)).withColumn("_br", F.row_number().over(br))
    how = F.when(F.col("_p") == 0, "position").when(F.col("_d") == 0, "time").otherwise("nearest")
    return best.where((F.col("_bl") == 1) & (F.col("_br") == 1)).withColumn("stage", how).drop("_p", "_d", "_rd", "_bl", "_br")


ROUNDS = 3


def match_changes(left: DataFrame, right: DataFrame, lo: dt.datetime, hi: dt.datetime, tol_s: float,
                  most: int | None = None) -> tuple[DataFrame, DataFrame, DataFrame, list[DataFrame]]:
    """Match log changes with source times in [lo, hi]: (pairs, left leftovers, right leftovers, to release).

    Up to three rounds of mutual-best pairing, each on what the previous rounds left; `most` (the smaller
    side's number of changes, when known) stops early once everything is paired. The caller releases the
    returned frames with :func:`release`.
    """
    tol_us = int(round(tol_s * 1_000_000))
    lr = _ranked(_prep(left, lo, hi, "l_"), "l_").persist(StorageLevel.MEMORY_AND_DISK)
    rr = _ranked(_prep(right, lo, hi, "r_"), "r_").persist(StorageLevel.MEMORY_AND_DISK)
    rounds: list[DataFrame] = []
    lrest, rrest = lr, rr
    paired = 0
    for _ in range(ROUNDS):
        if most is not None and paired >= most:
            break
        pairs = _round(lrest, rrest, tol_us).persist(StorageLevel.MEMORY_AND_DISK)
        n = pairs.count()
        if n == 0:
            pairs.unpersist()
            break
        paired += n
        rounds.append(pairs)
        lrest = lrest.join(pairs.select("l_event_id"), "l_event_id", "left_anti")
        rrest = rrest.join(pairs.select("r_event_id"), "r_event_id", "left_anti")
    matched = rounds[0] if rounds else _round(lr, rr, tol_us).where(F.lit(False))
    for more in rounds[1:]:
        matched = matched.unionByName(more)
    return matched, lrest, rrest, [*rounds, lr, rr]


def _ranked(df: DataFrame, p: str) -> DataFrame:
    w = Window.partitionBy(p + "key_bytes").orderBy(p + "_us", p + "sort_key")
    ws = Window.partitionBy(p + "key_bytes", F.floor(F.col(p + "_us") / SECOND_US)).orderBy(p + "_us", p + "sort_key")
    return df.withColumn(p + "_rank", F.row_number().over(w)).withColumn(p + "_srank", F.row_number().over(ws))


def release(*frames: DataFrame) -> None:
    """Unpersist frames persisted while matching."""
    for f in frames:
        f.unpersist()


def images_comparison(pair: TablePair, ls: TableState, rs: TableState, lp: str = "l_", rp: str = "r_"):
    """Column comparisons of two matched changes' row images (after), and the struct columns they read."""
    lci = {n.lower(): n for n in ls.columns}
    rci = {n.lower(): n for n in rs.columns}
    common = [(lci[n], rci[n]) for n in lci if n in rci]
    lmap = F.try_variant_get(F.col(lp + "after"), "$", _MAP)
    rmap = F.try_variant_get(F.col(rp + "after"), "$", _MAP)
    lstruct = F.struct(*[extract(lmap, a, ls.columns[a]).alias(a) for a, _ in common])
    rstruct = F.struct(*[extract(rmap, b, rs.columns[b]).alias(b) for _, b in common])
    source_db = pair.left.source_db or pair.right.source_db
    comps = []
    for a, b in common:
        c = compare_column(a, b, ls.columns[a], rs.columns[b], pair.left.vendor, pair.right.vendor, source_db,
                           lstruct="li", rstruct="ri", out_name=a)
        present = F.map_contains_key(lmap, F.lit(a)) & F.map_contains_key(rmap, F.lit(b))
        not_missing = ~F.array_contains(F.coalesce(F.col(lp + "missing_columns"), F.array().cast("array<string>")), a) \
            & ~F.array_contains(F.coalesce(F.col(rp + "missing_columns"), F.array().cast("array<string>")), b)
        both_images = F.col(lp + "op").isin(*IMAGE_OPS) & F.col(rp + "op").isin(*IMAGE_OPS)
        differs = F.coalesce(both_images & present & not_missing & ~c.equal, F.lit(False))
        comps.append((a, b, c, differs))
    return lstruct, rstruct, comps


def annotate_matched(pair: TablePair, matched: DataFrame,
                     states: dict[tuple[str, TableRef], TableState]) -> tuple[DataFrame, list]:
    """Matched pairs with `_img` (row images differ), `_inv` (vendor orders disagree for the key) and, for
    samples, the typed images `li`/`ri`; plus the per-column comparisons."""
    ls, rs = states.get(("left", pair.left)), states.get(("right", pair.right))
    comps: list = []
    m = matched
    if ls is not None and rs is not None and ls.columns and rs.columns:
        lstruct, rstruct, comps = images_comparison(pair, ls, rs)
        m = m.withColumn("li", lstruct).withColumn("ri", rstruct)
    w = Window.partitionBy("l_key_bytes").orderBy("l_sort_key")
    m = m.withColumn("_inv", F.coalesce(F.lag("r_sort_key").over(w) > F.col("r_sort_key"), F.lit(False)))
    any_diff = F.lit(False)
    for _, _, _, d in comps:
        any_diff = any_diff | d
    return m.withColumn("_img", any_diff), comps


def inferred_states(side: Side, label: str, refs: list[TableRef]) -> dict[tuple[str, TableRef], TableState]:
    """Column types of each table's row images, inferred from the data (one aggregate): enough to compare
    two vendors' images of matched changes without applying the tables."""
    rows = (side.changes.where(F.col("table").isNotNull() & F.col("op").isin(*IMAGE_OPS))
            .groupBy("stream", "database", "schema", "table").agg(F.schema_of_variant_agg("after").alias("ddl")).collect())
    ddl = {(r["stream"], r["database"], r["schema"], r["table"]): r["ddl"] for r in rows}
    out = {}
    for ref in refs:
        cols = parse_inferred(ddl.get((ref.stream, *ref.ident)))
        out[(label, ref)] = TableState(ref, None, {c.name: c.type for c in cols})
    return out


def iso_us(us: int | None) -> str | None:
    """Epoch microseconds -> ISO-8601 UTC text (independent of the driver's and the session's time zone)."""
    return from_us(us).isoformat() if us is not None else None


def from_us(us: int | None) -> dt.datetime | None:
    """Epoch microseconds -> an aware UTC datetime."""
    return None if us is None else dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=int(us))
