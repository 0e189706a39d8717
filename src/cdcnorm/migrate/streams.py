"""Change-stream comparison: match the two vendors' changes of one table and report what does not line up.

Changes are matched by (table, key) and source time: candidates are the other side's changes of the same key
within the tolerance, and pairs are chosen mutually best (a change's best partner also prefers it), preferring
the same vendor position and op (where both vendors report one), then the smallest time difference, then the
closest rank within the key (a burst of changes at one instant pairs in order). Up to three rounds run, each on
what the previous left over; whatever is still unpaired is a change only on one side.

Only log changes (INSERT/UPDATE/DELETE) inside the vendors' common window are expected on both sides: a
vendor's window runs from its first log change to its newest change or heartbeat (stream-wide), because in a
migration the new vendor starts late and the old one stops early. Backfill rows (SNAPSHOT) are read at
different times by each vendor, so they are compared as key coverage, not matched.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from cdcnorm.apply_types import extract
from cdcnorm.compare.rules import compare_column, display
from cdcnorm.compare.sides import Side, TablePair, TableRef
from cdcnorm.compare.state import TableState

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


def _round(lr: DataFrame, rr: DataFrame, tol_us: int) -> DataFrame:
    """One round of mutual-best pairing among candidates of the same key within the tolerance.

    Preference: same position and op, then the smallest time difference, then the closest rank within the
    key (so a burst of changes at one instant pairs in order), then vendor order.
    """
    cand = lr.join(rr, (F.col("l_key_bytes") == F.col("r_key_bytes")) & _close(tol_us))
    same_pos = F.coalesce((F.col("l_position") == F.col("r_position")) & (F.col("l_op") == F.col("r_op")), F.lit(False))
    cand = (cand.withColumn("_p", F.when(same_pos, 0).otherwise(1))
            .withColumn("_d", F.abs(F.col("l__us") - F.col("r__us")))
            .withColumn("_rd", F.abs(F.col("l__rank") - F.col("r__rank"))))
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
    return df.withColumn(p + "_rank", F.row_number().over(w))


def release(*frames: DataFrame) -> None:
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


def compare_stream(pair: TablePair, left: Side, right: Side, windows: dict[str, dict[str, Any]],
                   states: dict[tuple[str, TableRef], TableState], tol_s: float = 1.0,
                   samples: int = 10) -> dict[str, Any]:
    """Everything the report says about one table's change streams."""
    common = overlap(windows[left.label], windows[right.label])
    lrows = table_rows(left, pair.left).persist(StorageLevel.MEMORY_AND_DISK)
    rrows = table_rows(right, pair.right).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        return _compare_rows(pair, lrows, rrows, left, right, windows, common, states, tol_s, samples)
    finally:
        release(lrows, rrows)


def _compare_rows(pair: TablePair, lrows: DataFrame, rrows: DataFrame, left: Side, right: Side,
                  windows: dict[str, dict[str, Any]], common: tuple[dt.datetime, dt.datetime] | None,
                  states: dict[tuple[str, TableRef], TableState], tol_s: float, samples: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        "window": {"left": _span(windows[left.label]), "right": _span(windows[right.label]),
                   "overlap": [common[0].isoformat(), common[1].isoformat()] if common else None},
        "tolerance_s": tol_s,
    }
    tol = dt.timedelta(seconds=tol_s)
    lstats, rstats = _table_stats(lrows, common, tol), _table_stats(rrows, common, tol)
    out["ops"] = {"left": lstats["ops"], "right": rstats["ops"]}
    out["duplicates"] = {"left": _duplicates(left, pair.left), "right": _duplicates(right, pair.right)}
    out["snapshot"] = _snapshot(lrows, rrows, lstats["snapshot"], rstats["snapshot"])
    out["inversions"] = {"left": lstats["inversions"], "right": rstats["inversions"]}
    out["samples"] = {}
    if common is None:
        out.update(matched=0, matched_by={}, only_left=0, only_right=0, op_mismatch=0, image_differs=0,
                   image_columns={}, equal=True, note="the two vendors' windows do not overlap: no change can be matched")
        out["inversions"]["between"] = 0
        out["lag"] = None
        return out
    lo, hi = common[0] - tol, common[1] + tol
    most = min(lstats["extended"], rstats["extended"])
    matched, lu, ru, temps = match_changes(lrows, rrows, lo, hi, tol_s, most)
    try:
        summary = _matched_summary(pair, matched, states, samples, common)
        out["inversions"]["between"] = summary.pop("inversions_between")
        out["samples"].update(summary.pop("matched_samples"))
        for side, rest, p, st in (("left", lu, "l_", lstats), ("right", ru, "r_", rstats)):
            inside = summary.pop(f"{side}_inside")
            out[f"only_{side}"] = st["strict"] - inside
            out.setdefault("unmatched_at_edges", {})[side] = (st["extended"] - st["strict"]) - (summary["matched"] - inside)
            if out[f"only_{side}"]:
                strict = F.col(p + "source_ts").between(F.lit(common[0]), F.lit(common[1]))
                out["samples"][f"only_{side}"] = _change_samples(rest.where(strict), p, samples)
        out.update(summary)
    finally:
        release(*temps)
    out["equal"] = not (out["only_left"] or out["only_right"] or out["op_mismatch"] or out["image_differs"]
                        or out["inversions"]["between"])
    return out


def _span(w: dict[str, Any]) -> list[str | None]:
    return [w["start"].isoformat() if w.get("start") else None, w["end"].isoformat() if w.get("end") else None]


def _table_stats(rows: DataFrame, common: tuple[dt.datetime, dt.datetime] | None, tol: dt.timedelta) -> dict[str, Any]:
    """One pass over a side's rows of a table: ops (all and inside the window), snapshot rows, and changes of
    a key whose vendor order (`sort_key`) disagrees with source time (inversions within the side)."""
    log = F.col("op").isin(*LOG_OPS)
    inside = (log & F.col("source_ts").between(F.lit(common[0]), F.lit(common[1]))) if common else F.lit(False)
    near = (log & F.col("source_ts").between(F.lit(common[0] - tol), F.lit(common[1] + tol))) if common else F.lit(False)
    w = Window.partitionBy(F.when(log, match_key())).orderBy("sort_key")
    inverted = log & F.coalesce(F.lag("source_ts").over(w) > F.col("source_ts"), F.lit(False))
    got = (rows.withColumn("_inv", inverted).groupBy("op")
           .agg(F.count(F.lit(1)).alias("n"), F.count_if(inside).alias("w"), F.count_if(near).alias("x"),
                F.count_if("_inv").alias("inv")).collect())
    got = sorted(got, key=lambda r: r["op"])
    return {"ops": {"all": {r["op"]: int(r["n"]) for r in got}, "in_window": {r["op"]: int(r["w"]) for r in got if r["w"]}},
            "inversions": sum(int(r["inv"]) for r in got),
            "snapshot": sum(int(r["n"]) for r in got if r["op"] == "SNAPSHOT"),
            "strict": sum(int(r["w"]) for r in got), "extended": sum(int(r["x"]) for r in got)}


def _duplicates(side: Side, ref: TableRef) -> int:
    """Duplicates the vendor delivered for this table, from the lake's run reports (the lake keeps one copy)."""
    total = 0
    for rep in side.run_reports():
        for d in rep.get("duplicates_by_table") or []:
            if (d.get("stream") == ref.stream and d.get("database") == ref.database and d.get("schema") == ref.schema
                    and d.get("table") == ref.table):
                total += int(d.get("duplicates") or 0)
    return total


def _snapshot(lrows: DataFrame, rrows: DataFrame, left_rows: int, right_rows: int) -> dict[str, int]:
    """Backfill coverage: snapshot rows and keys on each side, and keys both backfills read."""
    counts = {"left_rows": left_rows, "right_rows": right_rows}
    if not left_rows and not right_rows:
        return {**counts, "left_keys": 0, "right_keys": 0, "keys_both": 0, "keys_only_left": 0, "keys_only_right": 0}

    def keys(rows: DataFrame, flag: str) -> DataFrame:
        return rows.where(F.col("op") == "SNAPSHOT").select(match_key().alias("k")).distinct().withColumn(flag, F.lit(1))

    j = keys(lrows, "a").join(keys(rrows, "b"), "k", "full_outer")
    r = j.agg(F.count_if(F.col("a").isNotNull()).alias("l"), F.count_if(F.col("b").isNotNull()).alias("r"),
              F.count_if(F.col("a").isNotNull() & F.col("b").isNotNull()).alias("both")).collect()[0]
    return {**counts, "left_keys": int(r["l"]), "right_keys": int(r["r"]), "keys_both": int(r["both"]),
            "keys_only_left": int(r["l"]) - int(r["both"]), "keys_only_right": int(r["r"]) - int(r["both"])}


def _change_samples(rows: DataFrame, p: str, n: int) -> list[dict[str, Any]]:
    got = (rows.orderBy(p + "source_ts", p + "sort_key")
           .select(F.to_json(p + "key").alias("key"), F.col(p + "op").alias("op"), F.unix_micros(p + "source_ts").alias("ts"),
                   F.col(p + "position").alias("position"), F.col(p + "event_id").alias("event_id"))
           .limit(n).collect())
    return [{"key": r["key"], "op": r["op"], "source_ts": iso_us(r["ts"]),
             "position": r["position"], "event_id": r["event_id"]} for r in got]


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
    from cdcnorm.apply_types import parse_inferred

    rows = (side.changes.where(F.col("table").isNotNull() & F.col("op").isin(*IMAGE_OPS))
            .groupBy("stream", "database", "schema", "table").agg(F.schema_of_variant_agg("after").alias("ddl")).collect())
    ddl = {(r["stream"], r["database"], r["schema"], r["table"]): r["ddl"] for r in rows}
    out = {}
    for ref in refs:
        cols = parse_inferred(ddl.get((ref.stream, *ref.ident)))
        out[(label, ref)] = TableState(ref, None, {c.name: c.type for c in cols})
    return out


def _matched_summary(pair: TablePair, matched: DataFrame, states: dict[tuple[str, TableRef], TableState],
                     n: int, common: tuple[dt.datetime, dt.datetime]) -> dict[str, Any]:
    """Op mismatches, differing images, order inversions between the sides, and the lag, in one pass."""
    m, comps = annotate_matched(pair, matched, states)
    m = m.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        lag = (F.unix_micros("r_capture_ts") - F.unix_micros("l_capture_ts")) / 1e6
        aggs = [F.count_if(F.col("l_op") != F.col("r_op")).alias("opm"), F.count_if("_img").alias("img"),
                *[F.count_if(F.col("stage") == s).alias(f"by_{s}") for s in ("position", "time", "nearest")],
                *[F.count_if(F.col(f"{p}_source_ts").between(F.lit(common[0]), F.lit(common[1]))).alias(f"{p}_in")
                  for p in ("l", "r")],
                F.count_if("_inv").alias("inv"), F.percentile_approx(lag, [0.5, 0.95, 0.99], 10000).alias("pct"),
                F.min(lag).alias("min"), F.max(lag).alias("max"), F.count(lag).alias("n")]
        aggs += [F.count_if(d).alias(f"c{i}") for i, (_, _, _, d) in enumerate(comps)]
        r = m.agg(*aggs).collect()[0]
        out: dict[str, Any] = {"op_mismatch": int(r["opm"]), "image_differs": int(r["img"])}
        out["matched_by"] = {s: int(r[f"by_{s}"]) for s in ("position", "time", "nearest")}
        out["matched"] = sum(out["matched_by"].values())
        out["left_inside"], out["right_inside"] = int(r["l_in"]), int(r["r_in"])
        out["inversions_between"] = int(r["inv"])
        out["image_columns"] = {a: int(r[f"c{i}"]) for i, (a, _, _, _) in enumerate(comps) if r[f"c{i}"]}
        pct = r["pct"] or [None, None, None]
        out["lag"] = {"count": int(r["n"]), "p50": pct[0], "p95": pct[1], "p99": pct[2], "min": r["min"], "max": r["max"]}
        samples: dict[str, Any] = {}
        key, ts = F.to_json("l_key").alias("key"), F.unix_micros("l_source_ts").alias("ts")
        if out["op_mismatch"]:
            got = m.where(F.col("l_op") != F.col("r_op")).select(key, ts, "l_op", "r_op").limit(n).collect()
            samples["op_mismatch"] = [{"key": x["key"], "source_ts": iso_us(x["ts"]), "left": x["l_op"], "right": x["r_op"]}
                                      for x in got]
        if out["inversions_between"]:
            got = m.where("_inv").select(key, ts).limit(n).collect()
            samples["inversions"] = [{"key": x["key"], "source_ts": iso_us(x["ts"])} for x in got]
        for a, b, c, d in comps:
            if out["image_columns"].get(a):
                got = (m.where(d).select(key, ts, F.col("l_op").alias("op"), display("li", a, c.left_type).alias("lv"),
                                         display("ri", b, c.right_type).alias("rv")).limit(n).collect())
                samples.setdefault("image", {})[a] = [
                    {"key": x["key"], "source_ts": iso_us(x["ts"]), "op": x["op"], "left": x["lv"], "right": x["rv"]}
                    for x in got]
        out["matched_samples"] = samples
        return out
    finally:
        m.unpersist()


def iso_us(us: int | None) -> str | None:
    """Epoch microseconds -> ISO-8601 UTC text (independent of the driver's and the session's time zone)."""
    return from_us(us).isoformat() if us is not None else None


def from_us(us: int | None) -> dt.datetime | None:
    return None if us is None else dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=int(us))
