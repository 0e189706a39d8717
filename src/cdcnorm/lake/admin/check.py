"""`cdcnorm lake check`: a full audit of a lake, explicit because it may scan every table.

What it looks for, and why each can happen:
- duplicate event ids in `changes` at the cut: every run checks its new changes against the lake's rows of the
  days they fall in, whatever their age, so a duplicate comes from a run that opted into `--dedup-window`
  (changes older than its window are written unchecked and counted as its `dedup_unchecked`) or from another
  writer of the Delta table; shows how many, a few examples, and the reports' `dedup_unchecked` total.
- ledger rows of runs that are not committed: live files of the input-file ledger (`inputs`) whose rows name a
  run without a `runs` row. A run stopped between its ledger commit and its report leaves them (its intent in
  `_commits/` is pending; the next writer completes it); otherwise something wrote the ledger outside a run.
  Until their run is committed, runs do not skip those files (the ledger is read at the cut, files of runs
  without a report left out). Two rows for one file from two committed runs are no problem: two concurrent runs
  over the same new files both read and record them (the duplicate check keeps their events once).
- unreferenced Parquet files under a table folder: a crashed run's `run=R/` folder (a problem), or files a
  committed run, a compaction or an interrupted `lake upgrade` left behind (garbage that `cdcnorm lake maintain`
  vacuums; not a problem).
- pending intents in `_commits/`: runs stopped between their first and last commit; readers do not see them
  until the next writer (or `cdcnorm lake maintain`) completes them.
- transactions: a transaction's END row (`TX_COMMIT` with the counts a vendor announces, Debezium's
  `event_count` and per-collection counts) against the data rows the lake holds with its `tx_id`. BEGIN/END
  arrive on their own topic, maybe in another run than the data, so completeness is a lake-level fact, never a
  per-run assumption: more or fewer rows than announced is a problem (events not ingested yet, or lost);
  transactions with a BEGIN and no END yet are counted, not a problem (their END may come in a later run).
- reconciliation: every report's `records_read` equals the sum of its outcomes; rows of a run cannot be
  attributed in `changes` any more, so the totals are checked: the sum of `rows_written` equals the rows of
  `changes` at the cut, the sum of `quarantine_new` the rows of `quarantine`.
Nothing is changed; only counts, file metadata and a few example ids reach the driver.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import orjson
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from cdcnorm.canonical.schema import DATA_OPS
from cdcnorm.lake.commit import INTENTS
from cdcnorm.lake.delta.read import read_files, read_table
from cdcnorm.lake.store import Lake
from cdcnorm.lake.tables import run_of
from cdcnorm.runtime.fs import walk

COMPACT_PREFIX = "compact="
UPGRADE_PREFIX = "upgrade="
"""`LAKE/inputs/upgrade=<id>/`: ledger rows `cdcnorm lake upgrade` recorded from the run reports."""


@dataclass
class Finding:
    """One audit: its name, whether it found a problem, a one-line summary and detail rows."""

    name: str
    problem: bool
    summary: str
    details: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class CheckResult:
    lake: str
    findings: list[Finding]

    @property
    def ok(self) -> bool:
        return not any(f.problem for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        return {"lake": self.lake, "ok": self.ok,
                "checks": {f.name: {"problem": f.problem, "summary": f.summary, "details": f.details}
                           for f in self.findings}}


def check(spark: SparkSession, path: str, examples: int = 5) -> CheckResult:
    """Audit the lake at `path` (read-only)."""
    lk = Lake(spark, path)
    committed = set(lk.committed_runs())
    pending = pending_runs(lk)
    pending_ids = {p["run_id"] for p in pending}
    return CheckResult(lk.path, [
        duplicates(lk, examples),
        ledger(lk, committed, pending_ids),
        orphans(lk, committed, pending_ids),
        Finding("pending", bool(pending), f"{len(pending)} run(s) with a pending intent in {INTENTS}/"
                if pending else "no pending run", pending),
        transactions(lk, examples),
        reconciliation(lk),
    ])


def duplicates(lk: Lake, examples: int) -> Finding:
    dup = (lk.changes().groupBy("event_id")
           .agg(F.count(F.lit(1)).alias("rows"), F.first("vendor").alias("vendor"), F.first("stream").alias("stream"),
                F.first("table").alias("table"))
           .where(F.col("rows") > 1)).persist()
    try:
        total = dup.agg(F.count(F.lit(1)).alias("ids"), F.sum(F.col("rows") - 1).alias("extra")).first()
        ids, extra = int(total["ids"]), int(total["extra"] or 0)
        shown = [r.asDict() for r in dup.orderBy(F.desc("rows"), "event_id").limit(examples).collect()] if ids else []
    finally:
        dup.unpersist()
    if not ids:
        return Finding("duplicates", False, "no event id occurs twice in changes")
    unchecked = sum(int(r.get("dedup_unchecked") or 0) for r in lk.run_reports())
    why = (f"the run reports count {unchecked} row(s) written unchecked (older than an opted-in --dedup-window)"
           if unchecked else "no run report counts a row written unchecked: rows of another writer?")
    return Finding("duplicates", True, f"{ids} event id(s) occur more than once ({extra} extra row(s)); {why}", shown)


TX_KEY = ["vendor", "stream", "tx_id"]
_COLLECTIONS = "array<struct<data_collection:string,event_count:bigint>>"


def transactions(lk: Lake, examples: int) -> Finding:
    """Transactions whose END announces other counts than the data rows the lake holds (see the module doc)."""
    ch = lk.changes()
    ends = (ch.where(F.col("op") == "TX_COMMIT")
            .select(*TX_KEY, F.expr("try_variant_get(after, '$.event_count', 'bigint')").alias("expected"),
                    F.expr(f"try_variant_get(after, '$.data_collections', '{_COLLECTIONS}')").alias("collections"))
            .where(F.col("expected").isNotNull()).dropDuplicates(TX_KEY))
    data = ch.where(F.col("op").isin(*DATA_OPS, "TRUNCATE") & F.col("tx_id").isNotNull())
    rows = data.groupBy(*TX_KEY).agg(F.count(F.lit(1)).alias("rows"))
    # a vendor names a collection `db.table` (MySQL) or `schema.table` (PostgreSQL): a row counts under each
    names = F.array_distinct(F.array(*[F.concat_ws(".", *parts) for parts in
                                       (("database", "table"), ("schema", "table"), ("database", "schema", "table"))]))
    by_collection = (data.select(*TX_KEY, F.explode(names).alias("data_collection"))
                     .groupBy(*TX_KEY, "data_collection").agg(F.count(F.lit(1)).alias("rows")))
    announced = ends.select(*TX_KEY, F.explode("collections").alias("c")).select(
        *TX_KEY, F.col("c.data_collection").alias("data_collection"), F.col("c.event_count").alias("expected"))
    off = (ends.join(rows, TX_KEY, "left").select(*TX_KEY, F.lit(None).cast("string").alias("data_collection"),
                                                 "expected", F.coalesce("rows", F.lit(0)).alias("rows"))
           .unionByName(announced.join(by_collection, [*TX_KEY, "data_collection"], "left")
                        .select(*TX_KEY, "data_collection", "expected", F.coalesce("rows", F.lit(0)).alias("rows")))
           .where(F.col("rows") != F.col("expected"))).persist()
    try:
        bad = off.select(*TX_KEY).distinct().count()
        shown = [r.asDict() for r in off.orderBy(*TX_KEY, "data_collection").limit(examples).collect()] if bad else []
    finally:
        off.unpersist()
    begun = ch.where(F.col("op") == "TX_BEGIN").select(*TX_KEY).distinct()
    still_open = begun.join(ch.where(F.col("op") == "TX_COMMIT").select(*TX_KEY), TX_KEY, "left_anti").count()
    ended = ends.count()
    if bad:
        return Finding("transactions", True, f"{bad} of {ended} ended transaction(s) hold other data row counts "
                       f"than their END announces (events not ingested yet, or lost); {still_open} without an "
                       "END yet", shown)
    return Finding("transactions", False, f"{ended} ended transaction(s) complete; {still_open} without an END "
                   "yet")


def ledger(lk: Lake, committed: set[str], pending: set[str]) -> Finding:
    """Rows of the input-file ledger (its live files at the latest version) that name a run not committed."""
    table = lk.table("inputs")
    if not table.exists():
        return Finding("ledger", False, "no input-file ledger yet (a writer creates it; `cdcnorm lake upgrade` "
                       "fills it from the run reports)")
    live = table.live()
    if not live:
        return Finding("ledger", False, "the input-file ledger is empty")
    frame = read_files(lk.spark, table, [f["uri"] for f in live], ["run_id", "uri"])
    by_run = [r.asDict() for r in frame.groupBy("run_id").agg(  # one row per run: metadata only
        F.count(F.lit(1)).alias("files"), F.min("uri").alias("example")).collect()]
    total = sum(int(r["files"]) for r in by_run)
    bad = [{"run_id": r["run_id"], "files": int(r["files"]), "pending": r["run_id"] in pending,
            "example": r["example"]} for r in sorted(by_run, key=lambda r: str(r["run_id"]))
           if r["run_id"] not in committed]
    if not bad:
        return Finding("ledger", False, f"{total} ledger row(s) of {len(by_run)} run(s), every run committed")
    n = sum(d["files"] for d in bad)
    waiting = sum(1 for d in bad if d["pending"])
    return Finding("ledger", True, f"{n} ledger row(s) of {len(bad)} run(s) that are not committed"
                   + (f" ({waiting} with a pending intent: the next writer completes them)" if waiting else ""), bad)


def orphans(lk: Lake, committed: set[str], pending: set[str]) -> Finding:
    """Parquet files under each table folder that the table's log does not reference (latest version)."""
    groups: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for name, ref in lk.tables.items():
        if not ref.exists():
            continue
        live = {f["path"] for f in ref.live()}
        live |= {unquote(p) for p in live}
        for f in walk(lk.spark, ref.uri):
            if f.rel in live:
                continue
            run = run_of(f.rel)
            if f.rel.startswith((COMPACT_PREFIX, UPGRADE_PREFIX)) or run in committed:
                kind = "garbage"
            elif run in pending:
                kind = "pending"
            else:
                kind = "uncommitted"
            folder = "/".join(f.segments[:-1]) or "."
            groups[(name, folder, kind)].append(f.size)
    details = [{"table": t, "folder": folder, "kind": kind, "files": len(sizes), "bytes": sum(sizes)}
               for (t, folder, kind), sizes in sorted(groups.items())]
    n = sum(d["files"] for d in details)
    size = sum(d["bytes"] for d in details)
    bad = [d for d in details if d["kind"] == "uncommitted"]
    if not details:
        return Finding("orphans", False, "every data file is referenced by its table's log")
    summary = (f"{n} unreferenced file(s), {size} bytes; "
               + (f"{sum(d['files'] for d in bad)} of runs that never committed (crashed, or still writing)"
                  if bad else "all left by committed runs or compactions (`lake maintain` vacuums them)"))
    return Finding("orphans", bool(bad), summary, details)


def pending_runs(lk: Lake) -> list[dict[str, Any]]:
    """Intents left in `_commits/`: the run, its age and which tables already hold its commit."""
    from cdcnorm.lake.commit import run_app

    out = []
    now_ms = time.time() * 1000
    for f in walk(lk.spark, lk._p(INTENTS), parquet_only=False):
        if not f.rel.endswith(".json") or "/" in f.rel:
            continue
        run_id = f.rel[:-5]
        done = [name for name, ref in lk.tables.items() if ref.exists() and ref.txn_version(run_app(run_id))]
        out.append({"run_id": run_id, "age_hours": round((now_ms - f.mtime_ms) / 3_600_000, 2),
                    "committed_tables": done})
    return out


def table_rows(lk: Lake, name: str, version: int) -> int:
    """Rows of a table at a version, from the log's statistics (a Spark count only when a file has none)."""
    if version < 0:
        return 0
    acts = lk.table(name).add_actions(version)
    counts = acts.column("num_records").to_pylist() if "num_records" in acts.column_names else [None]
    if acts.num_rows and all(c is not None for c in counts):
        return int(sum(counts))
    if not acts.num_rows:
        return 0
    return read_table(lk.spark, lk.table(name), version, columns=[lk.table(name).schema.fields[0].name]).count()


def reconciliation(lk: Lake) -> Finding:
    cut = lk.cut()
    reports = lk.run_reports()
    bad = []
    for r in reports:
        outcomes = r.get("outcomes")
        if isinstance(outcomes, dict) and "records_read" in r:
            total = sum(int(v or 0) for v in outcomes.values())
            if total != int(r["records_read"]):
                bad.append({"run_id": r.get("run_id"), "records_read": r["records_read"], "outcomes": total})
    written = sum(int(r.get("rows_written") or 0) for r in reports)
    quarantined = sum(int(r.get("quarantine_new") or 0) for r in reports)
    changes = table_rows(lk, "changes", cut.get("changes", -1))
    quarantine = table_rows(lk, "quarantine", cut.get("quarantine", -1))
    totals = {"runs": len(reports), "rows_written": written, "changes_rows": changes,
              "quarantine_new": quarantined, "quarantine_rows": quarantine}
    problems = []
    if bad:
        problems.append(f"{len(bad)} report(s) whose outcomes do not add up to records_read")
    if written != changes:
        problems.append(f"rows_written over all reports is {written}, changes holds {changes} row(s)")
    if quarantined != quarantine:
        problems.append(f"quarantine_new over all reports is {quarantined}, quarantine holds {quarantine} row(s)")
    if problems:
        return Finding("reconciliation", True, "; ".join(problems), [{"totals": totals}, *bad])
    return Finding("reconciliation", False, f"{len(reports)} report(s) reconcile; {written} row(s) written == "
                   f"{changes} in changes, {quarantined} quarantined == {quarantine} in quarantine", [{"totals": totals}])


def to_json(result: CheckResult) -> str:
    return orjson.dumps(result.to_dict(), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
