"""Change-stream comparison: match the two vendors' changes of one table (:mod:`.matching`) and report what
does not line up.

Only log changes (INSERT/UPDATE/DELETE) inside the vendors' common window are expected on both sides: a
vendor's window runs from its first log change to its newest change or heartbeat (stream-wide), because in a
migration the new vendor starts late and the old one stops early. Backfill rows (SNAPSHOT) are read at
different times by each vendor, so they are compared as key coverage, not matched.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from cdcnorm.migrate.final_state import TableState
from cdcnorm.migrate.matching import (
    LOG_OPS,
    annotate_matched,
    iso_us,
    match_changes,
    match_key,
    overlap,
    release,
    table_rows,
)
from cdcnorm.migrate.rules import display
from cdcnorm.migrate.sides import Side, TablePair, TableRef


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
