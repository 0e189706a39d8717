"""How a run reaches the lake: staged data files, then seven idempotent Delta commits.

Delta has no multi-table transaction, so a run commits its tables one after the other, in a fixed order
(schemas, quarantine, quarantine_resolved, halves, changes, inputs, runs), each commit carrying the app transaction
`cdcnorm-run-<run_id>` (version 1). Between writing its data files and its first commit, a run records its
intent (`LAKE/_commits/<run_id>.json`: the add actions per table and the report); any later writer (or the same
command re-run) completes a pending intent: a table whose log already holds the run's app transaction is
skipped, the others are committed. So a crash at any point loses nothing and repeats nothing, and readers take
the versions recorded in the run report as their cut.

The duplicate check that precedes the commits is :mod:`cdcnorm.lake.dedup`; a changes commit that
conflicts with another writer's re-checks its rows against the files the other added (only those).
"""

from __future__ import annotations

import datetime as dt
import os
import secrets
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError
from deltalake.transaction import AddAction, CommitProperties, Transaction
from pyspark.sql import DataFrame, SparkSession

from cdcnorm.errors import LakeError
from cdcnorm.lake.dedup import DedupScope, may_hold
from cdcnorm.lake.delta.files import write_arrow
from cdcnorm.lake.delta.read import read_files
from cdcnorm.lake.delta.table import Conflict, DeltaTableRef, add_action, add_dict
from cdcnorm.lake.store import Lake
from cdcnorm.lake.tables import SOURCE_DAY

INTENTS = "_commits"
SERIAL_APP = "cdcnorm-changes"
TABLE_KEY = ("vendor", "stream", "database", "schema", "table")
STAGED_TABLES = ("schemas", "quarantine", "quarantine_resolved", "halves", "changes", "inputs")


def run_app(run_id: str) -> str:
    return f"cdcnorm-run-{run_id}"


def crash_point(name: str) -> None:
    """Fault injection for the crash tests: `CDCNORM_CRASH_AT=<name>` kills the whole process group here
    (the JVM included), like `kill -9` of a normalize at that moment."""
    if os.environ.get("CDCNORM_CRASH_AT") == name:
        os.killpg(os.getpgrp(), signal.SIGKILL)


# -- staging and the commit sequence ----------------------------------------------------------------------------
@dataclass
class Pending:
    """A run whose data files are written and whose commits may be incomplete (the intent file's content)."""

    run_id: str
    adds: dict[str, list[dict[str, Any]]]
    report: dict[str, Any]
    read_version: int
    attempts: list[str] = field(default_factory=list)

    def to_json(self) -> bytes:
        return orjson.dumps({"run_id": self.run_id, "adds": self.adds, "report": self.report,
                             "read_version": self.read_version, "attempts": self.attempts})

    @classmethod
    def from_json(cls, raw: str) -> Pending:
        d = orjson.loads(raw)
        return cls(d["run_id"], d["adds"], d["report"], int(d["read_version"]), d.get("attempts", []))


def stage(lk: Lake, run_id: str, frames: dict[str, DataFrame | pa.Table | None]) -> dict[str, list[AddAction]]:
    """Write each table's new rows as data files of that table (invisible until committed); an Arrow table
    (a local lake's few driver-side rows) is written by the driver."""
    adds: dict[str, list[AddAction]] = {}
    for name in STAGED_TABLES:
        frame = frames.get(name)
        if frame is None:
            continue
        spec = lk.specs[name]
        if isinstance(frame, pa.Table):  # rows the driver holds (metadata): one file, no Spark job
            adds[name] = write_arrow(lk.spark, frame, lk.table(name), f"run={run_id}", spec.stats)
        else:
            adds[name] = spec.write(frame, lk.table(name), f"run={run_id}")
    crash_point("written")
    return adds


def commit_run(lk: Lake, run_id: str, adds: dict[str, list[AddAction]], report: dict[str, Any],
               read_version: int) -> dict[str, Any]:
    """Record the intent, then commit every table; returns the final report (as committed)."""
    pending = Pending(run_id, {k: [add_dict(a) for a in v] for k, v in adds.items()}, report, read_version)
    _save(lk, pending)
    crash_point("intent")
    return complete(lk, pending)


def complete(lk: Lake, p: Pending) -> dict[str, Any]:
    """Commit whatever of `p` is not committed yet (idempotent: safe to run again, or by another writer)."""
    app = run_app(p.run_id)
    versions: dict[str, int] = {}
    for name in ("schemas", "quarantine", "quarantine_resolved", "halves"):
        versions[name] = _commit_once(lk.table(name), [add_action(d) for d in p.adds.get(name, [])], app)
        crash_point(f"committed:{name}")
    versions["changes"] = _commit_changes(lk, p)
    crash_point("committed:changes")
    versions["inputs"] = _commit_once(lk.table("inputs"), [add_action(d) for d in p.adds.get("inputs", [])], app)
    crash_point("committed:inputs")
    _commit_report(lk, p, versions)
    crash_point("committed:runs")
    lk.fs.delete(_intent_path(lk, p.run_id))
    lk.fs.delete(_intent_path(lk, p.run_id) + ".tmp")
    return p.report


def complete_pending(lk: Lake) -> list[str]:
    """Complete every run that stopped between its first and last commit; the run ids completed."""
    done = []
    names = lk.fs.list_dir(lk._p(INTENTS))
    for name in names:
        # an intent being replaced on a store without atomic rename may exist only as its temp file
        if not (name.endswith(".json") or (name.endswith(".json.tmp") and name[:-4] not in names)):
            continue
        text = lk.fs.read_text_or_none(lk._p(INTENTS, name))
        if text is None:  # completed by its own writer meanwhile
            continue
        try:
            pending = Pending.from_json(text)
        except orjson.JSONDecodeError:  # a temp file cut by a crash: its complete copy is the .json
            continue
        complete(lk, pending)
        done.append(pending.run_id)
    return done


MAX_ATTEMPTS = 100
"""Commit attempts before giving up: each lost attempt means another writer committed meanwhile."""


def _attempts(what: str):
    """Retry counter for a commit loop; raises a clear error when the lake is too busy to ever win."""
    yield from range(MAX_ATTEMPTS)
    raise LakeError(f"could not commit {what} after {MAX_ATTEMPTS} attempts: other writers kept committing first")


def _commit_once(table: DeltaTableRef, adds: list[AddAction], app: str) -> int:
    for _ in _attempts(table.uri):
        handle = table.fresh()
        if not adds or handle.transaction_version(app) is not None:
            return handle.version()
        try:
            return table.commit(adds, [(app, 1)], handle=handle)
        except Conflict:
            continue


def _commit_changes(lk: Lake, p: Pending) -> int:
    table = lk.table("changes")
    app = run_app(p.run_id)
    for _ in _attempts(table.uri):
        handle = table.fresh()
        now = handle.version()
        if not p.adds.get("changes") or handle.transaction_version(app) is not None:
            return now
        if now > p.read_version:
            if _recheck(lk, p, handle):
                _save(lk, p)
                continue
            p.read_version = now
        serial = (handle.transaction_version(SERIAL_APP) or 0) + 1
        try:
            return table.commit([add_action(d) for d in p.adds["changes"]], [(app, 1), (SERIAL_APP, serial)],
                                handle=handle)
        except Conflict:
            continue


def _recheck(lk: Lake, p: Pending, handle) -> bool:
    """Drop the staged rows that files committed since the run's dedup check already hold; True if any was."""
    table = lk.table("changes")
    mine = p.adds["changes"]
    scope = {(d["partition_values"]["vendor"], d["partition_values"].get(SOURCE_DAY)) for d in mine}
    before = {f["path"] for f in table.live(p.read_version)}
    theirs = [f["uri"] for f in table.live(handle=handle) if f["path"] not in before
              and may_hold(f, scope, {v: None for v, d in scope if d is None})]
    if not theirs:
        return False
    spark = lk.spark
    other_ids = read_files(spark, table, theirs, ["event_id"]).distinct()
    mine_rows = read_files(spark, table, [table.uri + "/" + d["path"] for d in mine])
    dup = mine_rows.join(other_ids, "event_id", "left_semi")
    counts = [r.asDict() for r in dup.groupBy(*TABLE_KEY, "op").count().collect()]  # aggregates only
    if not counts:
        p.read_version = handle.version()
        return False
    attempt = f"run={p.run_id}.{secrets.token_hex(3)}"
    kept = mine_rows.join(other_ids, "event_id", "left_anti")
    new_adds = lk.specs["changes"].write(kept, table, attempt)
    p.adds["changes"] = [add_dict(a) for a in new_adds]
    p.attempts.append(attempt)
    p.read_version = handle.version()
    _count_late_duplicates(p.report, counts)
    return True


def _count_late_duplicates(report: dict[str, Any], counts: list[dict[str, Any]]) -> None:
    """Move rows another writer delivered first from `emitted` to `duplicate` in the report."""
    n = sum(int(c["count"]) for c in counts)
    outcomes = report.setdefault("outcomes", {})
    outcomes["emitted"] = outcomes.get("emitted", 0) - n
    outcomes["duplicate"] = outcomes.get("duplicate", 0) + n
    report["rows_written"] = report.get("rows_written", 0) - n
    report["duplicates_concurrent"] = report.get("duplicates_concurrent", 0) + n
    by_op = {tuple(r.get(k) for k in (*TABLE_KEY, "op")): r for r in report.get("rows_by_table_op", [])}
    dups = {tuple(r.get(k) for k in TABLE_KEY): r for r in report.setdefault("duplicates_by_table", [])}
    for c in counts:
        row = by_op.get(tuple(c[k] for k in (*TABLE_KEY, "op")))
        if row is not None:
            row["rows"] -= int(c["count"])
        key = tuple(c[k] for k in TABLE_KEY)
        if key in dups:
            dups[key]["duplicates"] += int(c["count"])
        else:
            dups[key] = {**{k: c[k] for k in TABLE_KEY}, "duplicates": int(c["count"])}
            report["duplicates_by_table"].append(dups[key])
    report["rows_by_table_op"] = [r for r in report.get("rows_by_table_op", []) if r["rows"] > 0]


def _commit_report(lk: Lake, p: Pending, versions: dict[str, int]) -> None:
    table = lk.table("runs")
    app = run_app(p.run_id)
    for _ in _attempts(table.uri):
        handle = table.fresh()
        if handle.transaction_version(app) is not None:
            return
        p.report.setdefault("finished_at", dt.datetime.now(dt.UTC).isoformat())
        try:
            append_run_rows(table, [p.report], versions, [app], handle=handle)
            return
        except CommitFailedError:  # a concurrent completion of the same run won: re-check its txn
            continue


def append_run_rows(runs: DeltaTableRef, reports: list[dict[str, Any]], versions: dict[str, int],
                    app_ids: list[str], handle: DeltaTable | None = None) -> None:
    """Append one `runs` row per report (each has `run_id`) recording `versions` as its cut, in one commit
    carrying the given app transactions (a run's report, an upgraded lake's old reports, a compaction's row).

    `handle`: the snapshot the caller checked the app transactions in. The commit is made on it, so a commit of
    the same app id after that check (another completer of the same run) is a conflict, never a second row."""
    for rep in reports:
        rep["table_versions"] = versions
    table = pa.table({
        "run_id": pa.array([rep["run_id"] for rep in reports], pa.string()),
        "vendor": pa.array([rep.get("vendor") for rep in reports], pa.string()),
        "finished_at": pa.array([_instant(rep.get("finished_at")) for rep in reports], pa.timestamp("us", tz="UTC")),
        "versions": pa.array([orjson.dumps(versions).decode()] * len(reports), pa.string()),
        "report": pa.array([orjson.dumps(rep).decode() for rep in reports], pa.string()),
    })
    props = CommitProperties(app_transactions=[Transaction(a, 1) for a in app_ids])
    if handle is not None:
        write_deltalake(handle, table, mode="append", commit_properties=props)
    else:
        write_deltalake(runs.uri, table, mode="append", storage_options=dict(runs.storage_options or {}),
                        commit_properties=props)


def _instant(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    t = dt.datetime.fromisoformat(text)
    return t if t.tzinfo else t.replace(tzinfo=dt.UTC)


def _intent_path(lk: Lake, run_id: str) -> str:
    return lk._p(INTENTS, run_id + ".json")


def _save(lk: Lake, p: Pending) -> None:
    lk.fs.mkdirs(lk._p(INTENTS))
    lk.fs.write_text(_intent_path(lk, p.run_id), p.to_json().decode())


def stage_and_commit(lk: Lake, run_id: str, scope: DedupScope, frames: dict[str, DataFrame | pa.Table | None],
                     make_report: Callable[[dict[str, list[AddAction]]], dict[str, Any]]) -> dict[str, Any]:
    """Stage every table's rows, build the report from what was staged, and commit the run."""
    adds = stage(lk, run_id, frames)
    report = make_report(adds)
    return commit_run(lk, run_id, adds, report, scope.read_version)


def staged_rows(adds: dict[str, list[AddAction]], name: str) -> int:
    """Rows staged for a table, from the add actions' statistics (no data read)."""
    return sum(int(orjson.loads(a.stats)["numRecords"]) for a in adds.get(name, []))


def open_lake(spark: SparkSession, path: str, create: bool = True) -> Lake:
    """The lake at `path` (created if asked), with runs that crashed between two commits completed."""
    lk = Lake(spark, path, create=create)
    complete_pending(lk)
    return lk
