"""`cdcnorm lake upgrade`: a format-1 lake becomes a format-2 lake without rewriting or moving a data file, and
the input-file ledger (`LAKE/inputs`, :mod:`cdcnorm.lake.ledger`) is filled from the run reports.

Format 1 kept each committed run's Parquet files in `changes/vendor=V/run_id=R/`, `quarantine/run_id=R/`,
`quarantine_resolved/run_id=R/` and `schemas/run_id=R/`, and a run was committed iff `runs/R.json` existed.
The upgrade registers every committed run's files, where they are, as add actions of the Delta table of the
same folder (statistics from one Spark aggregation per table), records the files the runs read in the ledger,
writes one `runs` row per old report, and switches `_cdcnorm.json` to format 2 last. Each run is registered
with the app transaction `cdcnorm-upgrade-<run_id>` (in every table, the ledger included), so re-running after a
crash at any point finishes the job and registers nothing twice. Until the marker says 2, cdcnorm refuses the
lake, so no reader sees half an upgrade.

The ledger from the reports. A report holds only the input paths its run was given (`inputs`: files or
folders), not the files it read nor their identity. So each path is listed now, as a run lists it
(:func:`cdcnorm.runtime.fs.list_files`: recursively, zero-byte objects and hidden files skipped), and:
- a file that is still there is recorded with the size, modification time and ETag it has now, for the earliest
  run (in run id order) that named it and started no earlier than the file's modification time; a file modified
  after the start of every run that named it is not recorded (no run read it as it is now: the next run reads
  it);
- a path that is gone (or cannot be listed) is recorded once with its normalised URI, `size = -1` and null
  `mtime_ms`: an unknown identity, which matches no listing. If such a file appears again it is read again, and
  its events are caught by the duplicate check;
- a report without a start time records every path it names as an unknown identity (which files it read
  cannot be told);
- relative paths are resolved against the directory the upgrade runs in (run it where the runs ran);
- runs that read no file (messages, retries, cut-overs, maintenance) record nothing.
A file copied under an input folder after the last run with an older modification time kept is taken as read;
`cdcnorm normalize --reprocess` reads such files anyway. The rows are written under `inputs/upgrade=<id>/` (one
file for all the runs of one upgrade) and committed in one Delta commit that carries every run's app
transaction.

A format-2 lake whose runs ran before the ledger existed gets the empty `inputs` table from any writer that
opens it (every table is created if missing); `lake upgrade` on it fills the ledger from its `runs` reports the
same way (runs that recorded their own files, or found none new, are skipped), then appends a `runs` row
(`input_kind` ledger, zero counts) so that readers' cut includes the new rows. Both steps are idempotent.

What the old files hold and how it reads back:
- changes files have no `source_day` folder (an old file mixes days): they are registered with
  `source_day = null`, which every duplicate check of the vendor reads (like rows without a source time).
- quarantine_resolved files hold only `quarantine_id`; their `run_id` column reads as null.
- timestamps are TIMESTAMP_MICROS when the lake was written by cdcnorm's own session and INT96 when the
  caller's session kept Spark's default; cdcnorm's reader (Spark) reads both, statistics come from Spark.
Files of runs without a report and `_staging/` folders are not registered: they are listed as leftovers
(`cdcnorm lake maintain` removes them once they are older than its retention).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson
from deltalake.transaction import AddAction
from pyspark.sql import SparkSession

from cdcnorm.canonical.schema import CANONICAL_VERSION
from cdcnorm.errors import LakeError
from cdcnorm.lake.admin.check import UPGRADE_PREFIX
from cdcnorm.lake.commit import INTENTS, STAGED_TABLES, append_run_rows, complete_pending, open_lake, run_app
from cdcnorm.lake.delta.files import file_adds, partition_values, write_arrow, write_files
from cdcnorm.lake.delta.table import Conflict, DeltaTableRef, delta_uri
from cdcnorm.lake.ledger import arrow_rows, known_ids
from cdcnorm.lake.lock import writer_lock
from cdcnorm.lake.store import LAKE_FORMAT, MARKER, Lake, missing_lake, new_run_id
from cdcnorm.lake.tables import STAGING, TableSpec, run_of, specs
from cdcnorm.runtime.fs import (
    FileEntry,
    FileId,
    HadoopFS,
    Listed,
    is_local,
    list_files,
    normalized_uri,
    subfolders,
    walk,
)

OLD_FORMAT = 1
DATA_TABLES = ("schemas", "quarantine", "quarantine_resolved", "changes")
LEDGER = "inputs"
UNKNOWN_SIZE = -1
"""The ledger's `size` of a file the upgrade could not find: an identity that matches no listing."""
CUT_ATTEMPTS = 5


def upgrade_app(run_id: str) -> str:
    return f"cdcnorm-upgrade-{run_id}"


@dataclass
class Leftover:
    """Something of the old layout that is not registered: a folder, its files and bytes, and why."""

    path: str
    files: int
    bytes: int
    why: str


@dataclass
class LedgerFill:
    """What the upgrade recorded in the input-file ledger: the runs whose reports it read, the files recorded
    with their current identity, the paths recorded as unknown identities (gone, or of a report without a start
    time), and the files left out because they changed after the last run that named them."""

    runs: int = 0
    files: int = 0
    unknown: int = 0
    newer: int = 0


@dataclass
class UpgradeResult:
    lake: str
    upgraded: bool
    runs: int = 0
    registered: dict[str, dict[str, int]] = field(default_factory=dict)
    leftovers: list[Leftover] = field(default_factory=list)
    ledger: LedgerFill = field(default_factory=LedgerFill)

    def to_dict(self) -> dict[str, Any]:
        return {"lake": self.lake, "upgraded": self.upgraded, "runs": self.runs, "registered": self.registered,
                "leftovers": [vars(x) for x in self.leftovers], "ledger": vars(self.ledger)}


@dataclass
class OldLayout:
    """A format-1 lake as found on disk: committed runs, their files per table, and what is not committed."""

    committed: list[str]
    files: dict[str, dict[str, list[Listed]]]
    leftovers: list[Leftover]


def upgrade(spark: SparkSession, path: str) -> UpgradeResult:
    """Upgrade the lake at `path` to format 2 and fill its input-file ledger (idempotent; a format-2 lake only
    gets the ledger rows of the runs that have none yet)."""
    path = path.rstrip("/")
    fs = HadoopFS(spark, path)
    meta = _marker(fs, path)
    if meta.get("lake_format") == LAKE_FORMAT:
        return UpgradeResult(path, upgraded=False, ledger=backfill(spark, path))
    if meta.get("lake_format") != OLD_FORMAT:
        raise LakeError(f"{path} is a lake of format {meta.get('lake_format')}; `lake upgrade` turns format "
                        f"{OLD_FORMAT} into {LAKE_FORMAT}.")
    with writer_lock(fs, path, "lake upgrade"):  # cdcnorm <= 0.1 writers take this lock: none writes meanwhile
        old = scan(spark, fs, path)
        the_specs = specs()
        refs = {name: DeltaTableRef(delta_uri(f"{path}/{name}"), s.schema, s.partition_by)
                for name, s in the_specs.items()}
        for ref in refs.values():
            ref.ensure()
        result = UpgradeResult(path, upgraded=True, runs=len(old.committed), leftovers=old.leftovers)
        for name in DATA_TABLES:
            result.registered[name] = _register(spark, refs[name], the_specs[name], old.files.get(name, {}),
                                                old.committed)
        reports = _ReportCache(lambda r: orjson.loads(fs.read_text(f"{path}/runs/{r}.json")))
        result.ledger = fill_ledger(spark, refs[LEDGER], the_specs[LEDGER], old.committed, reports)
        _record_runs(refs, old.committed, reports)
        fs.write_text(f"{path}/{MARKER}", orjson.dumps({
            "lake_format": LAKE_FORMAT, "canonical_version": meta.get("canonical_version", CANONICAL_VERSION),
            "upgraded_from_format": OLD_FORMAT, "upgraded_at": dt.datetime.now(dt.UTC).isoformat(),
        }, option=orjson.OPT_INDENT_2).decode())
    return result


def _marker(fs: HadoopFS, path: str) -> dict[str, Any]:
    marker = f"{path}/{MARKER}"
    if not fs.exists(marker):
        raise missing_lake(path)
    return orjson.loads(fs.read_text(marker))


def scan(spark: SparkSession, fs: HadoopFS, path: str) -> OldLayout:
    """The old layout: committed runs (those with `runs/R.json`), their files, and the leftovers."""
    committed = sorted(n[:-5] for n in fs.list_dir(f"{path}/runs") if n.endswith(".json"))
    done = set(committed)
    files: dict[str, dict[str, list[Listed]]] = {}
    leftovers: list[Leftover] = []
    for name in DATA_TABLES:
        by_run: dict[str, list[Listed]] = defaultdict(list)
        stray: dict[str, list[Listed]] = defaultdict(list)
        for f in walk(spark, f"{path}/{name}"):
            run = run_of(f.rel)
            if run in done and any(seg == f"run_id={run}" for seg in f.segments):
                by_run[run].append(f)
            else:
                folder = "/".join(f.segments[:-1]) or "."
                stray[folder].append(f)
        files[name] = dict(by_run)
        for folder, fl in sorted(stray.items()):
            why = "run without a report (never committed)" if run_of(fl[0].rel) else "not in the format-1 layout"
            leftovers.append(Leftover(f"{name}/{folder}", len(fl), sum(f.size for f in fl), why))
    for run in subfolders(spark, f"{path}/{STAGING}"):
        fl = walk(spark, f"{path}/{STAGING}/{run}", parquet_only=False, hidden=True)
        leftovers.append(Leftover(f"{STAGING}/{run}", len(fl), sum(f.size for f in fl), "staging of an unfinished run"))
    return OldLayout(committed, files, leftovers)


def _register(spark: SparkSession, ref: DeltaTableRef, spec: TableSpec, by_run: dict[str, list[Listed]],
              committed: list[str]) -> dict[str, int]:
    """Add the files of every committed run not registered yet, in one commit carrying each run's app id."""
    handle = ref.fresh()
    todo = [r for r in committed if handle.transaction_version(upgrade_app(r)) is None]
    files = [f for r in todo for f in by_run.get(r, [])]
    if not todo:
        return {"runs": 0, "files": 0, "rows": 0, "bytes": 0}
    adds = file_adds(spark, ref, [f.rel for f in files], spec.stats)
    with_rows = {a.path for a in adds}
    adds += [_empty_add(f, ref.partition_by) for f in files if f.rel not in with_rows]
    _commit_upgrade(ref, adds, todo, handle)
    rows = sum(int(orjson.loads(a.stats)["numRecords"]) for a in adds)
    return {"runs": len(todo), "files": len(adds), "rows": rows, "bytes": sum(a.size for a in adds)}


def _commit_upgrade(ref: DeltaTableRef, adds: list[AddAction], runs: list[str], handle) -> None:
    """One commit of the upgrade's adds carrying each run's app id, so a re-run after a crash adds nothing twice."""
    try:
        ref.commit(adds, [(upgrade_app(r), 1) for r in runs], handle=handle,
                   operation_note={"cdcnorm.operation": "upgrade", "runs": len(runs)})
    except Conflict as exc:
        raise LakeError(f"Another writer committed to {ref.uri} during the upgrade; run `cdcnorm lake upgrade` "
                        "again (it continues where it stopped).") from exc


def _empty_add(f: Listed, partition_by: tuple[str, ...]) -> AddAction:
    """A file without rows (Spark writes one for an empty result) is registered too, so it is no orphan."""
    stats = orjson.dumps({"numRecords": 0, "minValues": {}, "maxValues": {}, "nullCount": {}}).decode()
    return AddAction(f.rel, f.size, partition_values(f.rel, partition_by), f.mtime_ms, True, stats)


def _record_runs(refs: dict[str, DeltaTableRef], committed: list[str], reports: _ReportCache) -> None:
    """One `runs` row per old report not recorded yet; the table versions that hold every registered file and
    the ledger's rows."""
    runs = refs["runs"]
    handle = runs.fresh()
    todo = [r for r in committed if handle.transaction_version(upgrade_app(r)) is None]
    if not todo:
        return
    versions = {name: refs[name].version() for name in (*DATA_TABLES, LEDGER)}
    rows = []
    for r in todo:
        report = dict(reports(r))
        report["run_id"] = r
        report["upgraded_from_format"] = OLD_FORMAT
        rows.append(report)
    append_run_rows(runs, rows, versions, [upgrade_app(r) for r in todo])


# -- the input-file ledger from the run reports --------------------------------------------------------------------
class _ReportCache:
    """Run reports by run id, each read once."""

    def __init__(self, load: Callable[[str], dict[str, Any]]):
        self._load = load
        self._seen: dict[str, dict[str, Any]] = {}

    def __call__(self, run_id: str) -> dict[str, Any]:
        if run_id not in self._seen:
            self._seen[run_id] = self._load(run_id)
        return self._seen[run_id]


def reads_files(report: dict[str, Any]) -> bool:
    """True for the report of a run that read input files (not messages, a retry, a cut-over or a maintenance)."""
    return report.get("input_kind", "files") == "files"


def before_ledger(report: dict[str, Any]) -> bool:
    """True for a file run that did not record its own files in the ledger: a format-1 run, or one of a cdcnorm
    without the ledger (its report has no `files_skipped_known`)."""
    return reads_files(report) and ("upgraded_from_format" in report or "files_skipped_known" not in report)


def _start_ms(report: dict[str, Any]) -> int | None:
    """When the run started (ms since the epoch): no file it read was modified later."""
    text = report.get("started_at")
    if not text:
        return None
    t = dt.datetime.fromisoformat(text)
    return int((t if t.tzinfo else t.replace(tzinfo=dt.UTC)).timestamp() * 1000)


@dataclass
class _Recorded:
    run_id: str
    vendor: str | None
    ident: FileId


def ledger_entries(spark: SparkSession, runs: Iterable[tuple[str, dict[str, Any]]],
                   fill: LedgerFill) -> list[_Recorded]:
    """The ledger rows the reports of `runs` (run id order) tell, as the module doc says; counts go to `fill`."""
    listings: dict[str, list[FileEntry] | None] = {}
    chosen: dict[FileId, _Recorded] = {}
    unknown: dict[str, _Recorded] = {}
    candidates: set[FileId] = set()

    def listing(p: str) -> list[FileEntry] | None:
        if p not in listings:
            try:
                listings[p] = list_files(spark, [p])[0]
            except Exception:  # gone (UsageError), or a store this session cannot list: identity unknown
                listings[p] = None
        return listings[p]

    for run_id, report in runs:
        fill.runs += 1
        start = _start_ms(report)
        for p in [str(x) for x in report.get("inputs") or []]:
            found = listing(p) if start is not None else None
            if found is None:
                uri = normalized_uri(p)
                unknown.setdefault(uri, _Recorded(run_id, report.get("vendor"),
                                                  FileId(uri, UNKNOWN_SIZE, None, None)))
                continue
            for f in found:
                ident = f.identity()
                candidates.add(ident)
                if ident not in chosen and (f.mtime_ms is None or f.mtime_ms <= start):
                    chosen[ident] = _Recorded(run_id, report.get("vendor"), ident)
    fill.newer = len(candidates - set(chosen))
    fill.files, fill.unknown = len(chosen), len(unknown)
    return [*chosen.values(), *unknown.values()]


def fill_ledger(spark: SparkSession, ref: DeltaTableRef, spec: TableSpec, run_ids: list[str],
                reports: Callable[[str], dict[str, Any]], lake: Lake | None = None) -> LedgerFill:
    """Record in the ledger the files read by the file runs among `run_ids` that are not recorded yet (no
    `cdcnorm-upgrade-<run>` nor `cdcnorm-run-<run>` app transaction in its log), in one commit carrying each such
    run's upgrade app transaction. With `lake`, identities its ledger already holds at the cut are left out."""
    fill = LedgerFill()
    handle = ref.fresh()
    todo = [r for r in run_ids if handle.transaction_version(upgrade_app(r)) is None
            and handle.transaction_version(run_app(r)) is None and reads_files(reports(r))]
    if not todo:
        return fill
    entries = ledger_entries(spark, [(r, reports(r)) for r in todo], fill)
    if lake is not None and entries:
        have = known_ids(lake, {e.ident for e in entries})
        entries = [e for e in entries if e.ident not in have]
    adds: list[AddAction] = []
    if entries:
        rows = arrow_rows([(e.ident, e.run_id, e.vendor) for e in entries])
        prefix = f"{UPGRADE_PREFIX}{new_run_id()}"
        if is_local(ref.uri) and not ref.partition_by:
            adds = write_arrow(spark, rows, ref, prefix, spec.stats)
        else:
            adds = write_files(spark.createDataFrame(rows.to_pylist(), spec.schema), ref, prefix, spec.stats)
    _commit_upgrade(ref, adds, todo, handle)
    return fill


def backfill(spark: SparkSession, path: str) -> LedgerFill:
    """Fill the ledger of a format-2 lake from the reports of its runs that ran before the ledger existed, and
    move the readers' cut onto the new rows (idempotent)."""
    lk = open_lake(spark, path)  # creates the missing tables (the ledger) and completes pending runs
    with lk.writer("lake upgrade"):
        rows = {r["run_id"]: orjson.loads(r["report"]) for r in lk._runs()}
        todo = [r for r, rep in rows.items() if before_ledger(rep)]
        fill = fill_ledger(spark, lk.table(LEDGER), lk.specs[LEDGER], todo, rows.__getitem__, lake=lk)
        _advance_cut(lk, fill)
    return fill


def _advance_cut(lk: Lake, fill: LedgerFill) -> None:
    """Append a `runs` row recording the tables' versions when the cut does not include the ledger's latest
    version yet (also after a crash between the ledger's commit and this row)."""
    ledger = lk.table(LEDGER)
    for _ in range(CUT_ATTEMPTS):
        if lk.cut().get(LEDGER, -1) >= ledger.fresh().version():
            return
        versions = {name: lk.table(name).fresh().version() for name in STAGED_TABLES}
        if any(n.endswith(".json") for n in lk.fs.list_dir(lk._p(INTENTS))):
            complete_pending(lk)  # a run between its commits: complete it, so the cut never passes half a run
            continue
        run_id = new_run_id()
        report = {"run_id": run_id, "input_kind": "ledger", "records_read": 0,
                  "outcomes": {"emitted": 0, "merged": 0, "metadata": 0, "filtered": 0, "duplicate": 0,
                               "quarantined": 0},
                  "reconciled": True, "rows_written": 0, "quarantine_new": 0, "schema_versions_new": 0,
                  "ledger_filled": vars(fill), "finished_at": dt.datetime.now(dt.UTC).isoformat()}
        append_run_rows(lk.table("runs"), [report], versions, [run_app(run_id)])
        return
