"""`cdcnorm cutover`: stitch an old and a new vendor's streams of the same tables into one continuous history.

Per table, the two vendors' log changes inside their common window are matched (as `cdcnorm compare` does).
The switch point is a matched pair of changes P: the stitched stream takes the old vendor's rows up to P (in
the old vendor's order, its backfill included) and the new vendor's rows after P (in its order, its backfill
excluded, since the old history already covers it). P is safe when

* it is a clean cut: the changes both vendors delivered up to P are the same set in both vendors' orders (no
  change would be taken twice or never), and
* the vendors agree from P on: inside the common window no change after P (or within the tolerance before it)
  is missing on a side, has another op or other values.

`--at auto` takes the earliest safe P (the longest verified agreement after the switch); `--at TIME` takes the
last matched change at or before TIME and checks it. When no safe point exists (the windows do not overlap,
or the vendors disagree after every candidate) nothing is written and the reasons are reported.

The stitched rows keep their content; `stream` is the given name, `vendor` the new vendor's (the history
continues as the new vendor's), table names are the new vendor's spelling, and `format`, `position` and
`origin` still say where each row came from. `sort_key` becomes the tuple `(side, *original sort_key)` with
side 0 (old) or 1 (new), so the stream stays totally ordered across the switch; event ids are recomputed from
(stream, side, original event id). Schema versions of both sides are copied (renamed) so `apply` works on it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from cdcnorm.errors import UsageError
from cdcnorm.lake.derived import hashed_id, write_run
from cdcnorm.migrate.latency import side_overview
from cdcnorm.migrate.matching import (
    annotate_matched,
    from_us,
    inferred_states,
    iso_us,
    match_changes,
    overlap,
    release,
    table_rows,
)
from cdcnorm.migrate.sides import Side, TablePair, match_tables, open_side

SIDE_PREFIX = {0: b"\x14", 1: b"\x15\x01"}
"""Tuple-codec encodings of the integers 0 and 1: the stitched sort key's first element."""

Progress = Callable[[str], None]


@dataclass
class Cut:
    """Where one table switches: old rows with sort_key <= old_cut, new rows with sort_key > new_cut."""

    pair: TablePair
    at: dt.datetime | None = None
    old_cut: bytes | None = None
    new_cut: bytes | None = None
    how: str = ""
    refused: str | None = None
    warnings: list[str] = field(default_factory=list)
    verified: dict[str, Any] = field(default_factory=dict)


def parse_at(at: str | None) -> dt.datetime | None:
    """`auto` (None) or an ISO-8601 time (UTC when it has no zone)."""
    if at is None or at.strip().lower() in ("", "auto"):
        return None
    try:
        t = dt.datetime.fromisoformat(at.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"--at '{at}' is neither 'auto' nor an ISO-8601 time such as 2025-03-01T12:00:00Z.") from None
    return t.replace(tzinfo=dt.UTC) if t.tzinfo is None else t.astimezone(dt.UTC)


def check_stream_name(stream: str | None) -> None:
    """The stitched stream's name: non-empty and without ':' (which separates vendor and stream in specs)."""
    if not stream or ":" in stream:
        raise UsageError(f"--stream '{stream}' must be a non-empty name without ':'.")


def cutover(spark: SparkSession, old: str, new: str, lake: str, old_vendor: str | None = None,
            new_vendor: str | None = None, at: str | None = "auto", stream: str = "cutover",
            tables: list[str] | None = None, table_map: dict[str, str] | list[str] | None = None,
            tolerance_s: float = 1.0, progress: Progress | None = None) -> dict[str, Any]:
    """Choose (or check) a switch point per table and write the stitched stream into `lake`.

    Returns the cut-over report; `report["status"]` is `done` or `refused` (then nothing was written and each
    refused table says why).
    """
    say = progress or (lambda _m: None)
    when = parse_at(at)
    say("reading both sides")
    os_ = open_side(spark, "old", old, old_vendor, new, new_vendor)
    ns = open_side(spark, "new", new, new_vendor, old, old_vendor)
    if os_.lake.rstrip("/") == ns.lake.rstrip("/") and os_.vendor == ns.vendor and os_.stream == ns.stream:
        raise UsageError(f"Old and new are both {os_.spec} in {os_.lake}: name two vendors (or streams).")
    check_stream_name(stream)
    pairs, only_old, only_new = match_tables(os_.tables, ns.tables, tables, table_map)
    windows = {"old": side_overview(os_), "new": side_overview(ns)}
    common = overlap(windows["old"], windows["new"])
    report: dict[str, Any] = {
        "stream": stream, "old": _side_info(os_, windows["old"]), "new": _side_info(ns, windows["new"]),
        "window": [common[0].isoformat(), common[1].isoformat()] if common else None,
        "at": at or "auto", "tolerance_s": tolerance_s,
        "unmatched_tables": {"old": [r.as_dict() for r in only_old], "new": [r.as_dict() for r in only_new]},
    }
    cuts: list[Cut] = []
    if common is None:
        reason = (f"the windows do not overlap: the old vendor delivered changes from {_span(windows['old'])}, "
                  f"the new one from {_span(windows['new'])}; run both until they overlap")
        cuts = [Cut(p, refused=reason) for p in pairs]
    else:
        states = {**inferred_states(os_, "left", [p.left for p in pairs]),
                  **inferred_states(ns, "right", [p.right for p in pairs])}
        for pair in pairs:
            say(f"verifying {pair.name}")
            cuts.append(_choose(pair, os_, ns, common, states, when, tolerance_s))
    report["tables"] = [_cut_info(c) for c in cuts]
    problems = [f"{c.pair.name}: {c.refused}" for c in cuts if c.refused]
    problems += [f"{r.name}: only the old vendor delivers this table" for r in only_old]
    problems += [f"{r.name}: only the new vendor delivers this table" for r in only_new]
    if not pairs and not problems:
        problems.append("no table to stitch")
    if problems:
        report.update(status="refused", reasons=problems)
        return report
    say("writing the stitched stream")
    stitched, counts = _stitch(spark, os_, ns, cuts, stream)
    schemas = _stitched_schemas(os_, ns, cuts, stream)
    run = write_run(spark, lake, stitched, schemas, {
        "vendor": ns.vendor, "input_kind": "cutover", "inputs": [old, new],
        "_considered": counts["considered"], "_filtered": counts["old_after"] + counts["new_before"],
        "filters_by_rule": {"cutover_old_after_switch": counts["old_after"],
                            "cutover_new_before_switch": counts["new_before"]},
        "cutover": {k: v for k, v in report.items() if k != "unmatched_tables"},
    })
    for t in report["tables"]:
        t.update(counts["per_table"].get(t["name"], {}))
    report.update(status="done", lake=lake, run_id=run["run_id"], rows_written=run["rows_written"],
                  rows_skipped_existing=run["outcomes"]["duplicate"])
    return report


def _side_info(side: Side, w: dict[str, Any]) -> dict[str, Any]:
    return {"lake": side.lake, "vendor": side.vendor, "stream": side.stream, "window": _span(w, as_list=True)}


def _span(w: dict[str, Any], as_list: bool = False):
    a = w["start"].isoformat() if w.get("start") else None
    b = w["end"].isoformat() if w.get("end") else None
    return [a, b] if as_list else f"{a or '(no log changes)'} to {b or '-'}"


def _cut_info(c: Cut) -> dict[str, Any]:
    return {"name": c.pair.name, "old": c.pair.left.as_dict(), "new": c.pair.right.as_dict(),
            "status": "refused" if c.refused else "ok", "reason": c.refused,
            "at": c.at.isoformat() if c.at else None, "how": c.how,
            "old_cut": c.old_cut.hex() if c.old_cut is not None else None,
            "new_cut": c.new_cut.hex() if c.new_cut is not None else None,
            "warnings": c.warnings, "verified": c.verified}


def _choose(pair: TablePair, os_: Side, ns: Side, common: tuple[dt.datetime, dt.datetime],
            states: dict, when: dt.datetime | None, tol_s: float) -> Cut:
    """Match the table's changes in the common window and pick (or check) a safe switch pair."""
    if when is not None and not (common[0] <= when <= common[1]):
        return Cut(pair, refused=f"--at {when.isoformat()} is outside the window in which both vendors delivered "
                                 f"changes ({common[0].isoformat()} to {common[1].isoformat()})")
    tol = dt.timedelta(seconds=tol_s)
    tol_us = int(tol_s * 1_000_000)
    lrows = table_rows(os_, pair.left).persist(StorageLevel.MEMORY_AND_DISK)
    rrows = table_rows(ns, pair.right).persist(StorageLevel.MEMORY_AND_DISK)
    matched, lu, ru, temps = match_changes(lrows, rrows, common[0] - tol, common[1] + tol, tol_s)
    try:
        m, _ = annotate_matched(pair, matched, states)
        m = _clean_cuts(m).persist(StorageLevel.MEMORY_AND_DISK)
        temps.append(m)
        problems = _problems(m, lu, ru, common)
        cut = Cut(pair)
        last = problems[-1]["us"] if problems else None
        cut.verified = {"matched": m.count(), "disagreements": len(problems)}
        strict = F.col("l_source_ts").between(F.lit(common[0]), F.lit(common[1]))
        cand = m.where(strict & F.col("_clean"))
        if last is not None:
            cand = cand.where(F.col("l__us") > F.lit(last + tol_us))
        if when is not None:
            cand = m.where(strict & (F.col("l_source_ts") <= F.lit(when))).orderBy(F.col("l_sort_key").desc())
        else:
            cand = cand.orderBy("l_sort_key")
        best = cand.select("l_sort_key", "r_sort_key", "l__us", "_clean").limit(1).collect()
        if best:
            b = best[0]
            if when is not None and not b["_clean"]:
                return _refuse(cut, "the vendors order the changes around --at differently (a change would be taken "
                                    "twice or lost); choose another time")
            if when is not None and last is not None and b["l__us"] <= last + tol_us:
                return _refuse(cut, _disagree(problems, "after --at"))
            cut.at, cut.old_cut, cut.new_cut = from_us(b["l__us"]), bytes(b["l_sort_key"]), bytes(b["r_sort_key"])
            cut.how = "at" if when is not None else "auto"
        elif cut.verified["matched"] == 0 and not problems:
            _time_cut(cut, lrows, rrows, when or common[0])
        elif when is not None:
            return _refuse(cut, f"no change delivered by both vendors at or before --at inside the window; "
                                f"choose a time after {common[0].isoformat()}")
        else:
            return _refuse(cut, _disagree(problems, "") if problems else
                           "no clean switch point: the vendors order the changes differently throughout the window")
        at_us = None if cut.at is None else (cut.at - from_us(0)) // dt.timedelta(microseconds=1)
        before = [p for p in problems if at_us is None or p["us"] < at_us]
        cut.warnings = [f"{p['kind']} before the switch (old vendor kept): key {p['key']} at {iso_us(p['us'])}"
                        for p in before[:20]]
        return cut
    finally:
        release(*temps, lrows, rrows)


def _refuse(cut: Cut, reason: str) -> Cut:
    cut.refused = reason
    return cut


def _disagree(problems: list[dict[str, Any]], where: str) -> str:
    p = problems[-1]
    kinds: dict[str, int] = {}
    for x in problems:
        kinds[x["kind"]] = kinds.get(x["kind"], 0) + 1
    summary = ", ".join(f"{v} {k}" for k, v in sorted(kinds.items()))
    return (f"the vendors disagree {where}in the common window ({summary}); the last disagreement is a "
            f"{p['kind']} for key {p['key']} at {iso_us(p['us'])}, and no change both vendors agree on follows it")


def _clean_cuts(m: DataFrame) -> DataFrame:
    """`_clean`: the pairs up to this one (old order) are exactly the pairs up to it in the new order."""
    by_new = Window.orderBy("r_sort_key")
    by_old = Window.orderBy("l_sort_key")
    running = Window.orderBy("l_sort_key").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    ranked = m.withColumn("_rn", F.row_number().over(by_new)).withColumn("_ro", F.row_number().over(by_old))
    return ranked.withColumn("_clean", F.max("_rn").over(running) == F.col("_ro"))


def _problems(m: DataFrame, lu: DataFrame, ru: DataFrame, common: tuple[dt.datetime, dt.datetime],
              limit: int = 1000) -> list[dict[str, Any]]:
    """Disagreements inside the window, in time order: changes only on one side, other ops or values."""
    lo, hi = F.lit(common[0]), F.lit(common[1])
    parts = [
        lu.where(F.col("l_source_ts").between(lo, hi)).select(F.col("l__us").alias("us"), F.lit("change only on the old side").alias("kind"),
                                                             F.to_json("l_key").alias("key")),
        ru.where(F.col("r_source_ts").between(lo, hi)).select(F.col("r__us").alias("us"), F.lit("change only on the new side").alias("kind"),
                                                             F.to_json("r_key").alias("key")),
        m.where(F.col("l_op") != F.col("r_op")).select(F.col("l__us").alias("us"), F.lit("different op").alias("kind"),
                                                       F.to_json("l_key").alias("key")),
        m.where("_img").select(F.col("l__us").alias("us"), F.lit("different values").alias("kind"), F.to_json("l_key").alias("key")),
    ]
    union = parts[0]
    for p in parts[1:]:
        union = union.unionByName(p)
    rows = union.orderBy(F.col("us").desc()).limit(limit).collect()  # bounded: the latest disagreements
    return [r.asDict() for r in reversed(rows)]


def _time_cut(cut: Cut, lrows: DataFrame, rrows: DataFrame, at: dt.datetime) -> None:
    """A table with no change in the window (idle): switch at a time; the new backfill stays excluded."""
    old = lrows.where((F.col("source_ts") <= F.lit(at)) | (F.col("op") == "SNAPSHOT")).agg(F.max("sort_key")).collect()[0][0]
    new = rrows.where((F.col("source_ts") <= F.lit(at)) | (F.col("op") == "SNAPSHOT")).agg(F.max("sort_key")).collect()[0][0]
    cut.at, cut.how = at, "idle"
    cut.old_cut = bytes(old) if old is not None else b""
    cut.new_cut = bytes(new) if new is not None else b""


def _cuts_frame(spark: SparkSession, cuts: list[Cut]) -> DataFrame:
    rows = [(c.pair.left.database, c.pair.left.schema, c.pair.left.table, c.pair.right.database, c.pair.right.schema,
             c.pair.right.table, c.pair.name, c.old_cut, c.new_cut) for c in cuts]
    return spark.createDataFrame(rows, "o_db string, o_schema string, o_table string, n_db string, n_schema string, "
                                       "n_table string, _name string, old_cut binary, new_cut binary")


def _join_cuts(rows: DataFrame, cuts: DataFrame, p: str) -> DataFrame:
    cond = (rows["database"].eqNullSafe(cuts[f"{p}_db"]) & rows["schema"].eqNullSafe(cuts[f"{p}_schema"])
            & rows["table"].eqNullSafe(cuts[f"{p}_table"]))
    return rows.join(F.broadcast(cuts), cond)


def _relabel(rows: DataFrame, side: int, vendor: str, stream: str) -> DataFrame:
    return (rows.withColumn("event_id", hashed_id(F.lit(stream), F.lit(side), F.col("event_id")))
            .withColumn("sort_key", F.concat(F.lit(SIDE_PREFIX[side]), F.col("sort_key")))
            .withColumn("schema_version", F.concat(F.col("vendor"), F.lit(":"), F.col("schema_version")))
            .withColumn("vendor", F.lit(vendor)).withColumn("stream", F.lit(stream)))


def _stitch(spark: SparkSession, os_: Side, ns: Side, cuts: list[Cut], stream: str) -> tuple[DataFrame, dict[str, Any]]:
    """The stitched rows, and how many rows each side gave and lost per table (one aggregate)."""
    cf = _cuts_frame(spark, cuts)
    first = min(c.at for c in cuts if c.at is not None)
    old = _join_cuts(os_.changes, cf, "o").withColumn("_keep", F.col("sort_key") <= F.col("old_cut"))
    new = _join_cuts(ns.changes, cf, "n").withColumn("_keep", F.col("sort_key") > F.col("new_cut"))
    rename = {"database": "n_db", "schema": "n_schema", "table": "n_table"}
    tagged = []
    for side, rows in ((0, old), (1, new)):
        rows = rows.withColumn("_side", F.lit(side))
        for col, src in rename.items():
            rows = rows.withColumn(col, F.col(src))
        tagged.append(rows)
    tableless = [
        os_.changes.where(F.col("table").isNull()).withColumn("_keep", F.col("source_ts") <= F.lit(first))
        .withColumn("_side", F.lit(0)).withColumn("_name", F.lit(None).cast("string")),
        ns.changes.where(F.col("table").isNull()).withColumn("_keep", F.col("source_ts") > F.lit(first))
        .withColumn("_side", F.lit(1)).withColumn("_name", F.lit(None).cast("string")),
    ]
    cols = [*os_.changes.columns, "_keep", "_side", "_name"]
    allrows = tagged[0].select(*cols)
    for more in (tagged[1].select(*cols), *[t.select(*cols) for t in tableless]):
        allrows = allrows.unionByName(more)
    allrows = allrows.withColumn("_keep", F.coalesce("_keep", F.lit(False)))
    got = allrows.groupBy("_name", "_side", "_keep").count().collect()
    per: dict[str, dict[str, int]] = {}
    for r in got:
        if r["_name"] is None:
            continue
        key = ("rows_from_old" if r["_side"] == 0 else "rows_from_new") if r["_keep"] else \
            ("old_rows_after_switch" if r["_side"] == 0 else "new_rows_before_switch")
        per.setdefault(r["_name"], {})[key] = per.setdefault(r["_name"], {}).get(key, 0) + int(r["count"])
    counts = {"considered": sum(int(r["count"]) for r in got),
              "old_after": sum(int(r["count"]) for r in got if r["_side"] == 0 and not r["_keep"]),
              "new_before": sum(int(r["count"]) for r in got if r["_side"] == 1 and not r["_keep"]),
              "per_table": per}
    kept = allrows.where("_keep")
    stitched = _relabel(kept.where(F.col("_side") == 0), 0, ns.vendor, stream).unionByName(
        _relabel(kept.where(F.col("_side") == 1), 1, ns.vendor, stream))
    return stitched.drop("_keep", "_side", "_name"), counts


def _stitched_schemas(os_: Side, ns: Side, cuts: list[Cut], stream: str) -> DataFrame:
    """Both sides' schema versions of the stitched tables, renamed like the rows."""
    cf = _cuts_frame(os_.changes.sparkSession, cuts)
    parts = []
    for side, p in ((os_, "o"), (ns, "n")):
        s = _join_cuts(side.schemas, cf, p)
        s = (s.withColumn("schema_version", F.concat(F.col("vendor"), F.lit(":"), F.col("schema_version")))
             .withColumn("database", F.col("n_db")).withColumn("schema", F.col("n_schema")).withColumn("table", F.col("n_table"))
             .withColumn("vendor", F.lit(ns.vendor)).withColumn("stream", F.lit(stream)))
        parts.append(s.select(*side.schemas.columns))
    return parts[0].unionByName(parts[1])
