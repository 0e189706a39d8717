"""`cdcnorm lake upgrade`: a format-1 lake becomes a format-2 lake without rewriting or moving a data file.

Format 1 kept each committed run's Parquet files in `changes/vendor=V/run_id=R/`, `quarantine/run_id=R/`,
`quarantine_resolved/run_id=R/` and `schemas/run_id=R/`, and a run was committed iff `runs/R.json` existed.
The upgrade registers every committed run's files, where they are, as add actions of the Delta table of the
same folder (statistics from one Spark aggregation per table), writes one `runs` row per old report, and
switches `_cdcnorm.json` to format 2 last. Each run is registered with the app transaction
`cdcnorm-upgrade-<run_id>`, so re-running after a crash at any point finishes the job and registers nothing
twice. Until the marker says 2, cdcnorm refuses the lake, so no reader sees half an upgrade.

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
from dataclasses import dataclass, field
from typing import Any

import orjson
from deltalake.transaction import AddAction
from pyspark.sql import SparkSession

from cdcnorm.canonical.schema import CANONICAL_VERSION
from cdcnorm.errors import LakeError
from cdcnorm.lake.commit import append_run_rows
from cdcnorm.lake.delta.files import file_adds, partition_values
from cdcnorm.lake.delta.table import Conflict, DeltaTableRef, delta_uri
from cdcnorm.lake.lock import writer_lock
from cdcnorm.lake.store import LAKE_FORMAT, MARKER, missing_lake
from cdcnorm.lake.tables import STAGING, TableSpec, run_of, specs
from cdcnorm.runtime.fs import HadoopFS, Listed, subfolders, walk

OLD_FORMAT = 1
DATA_TABLES = ("schemas", "quarantine", "quarantine_resolved", "changes")


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
class UpgradeResult:
    lake: str
    upgraded: bool
    runs: int = 0
    registered: dict[str, dict[str, int]] = field(default_factory=dict)
    leftovers: list[Leftover] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"lake": self.lake, "upgraded": self.upgraded, "runs": self.runs, "registered": self.registered,
                "leftovers": [vars(x) for x in self.leftovers]}


@dataclass
class OldLayout:
    """A format-1 lake as found on disk: committed runs, their files per table, and what is not committed."""

    committed: list[str]
    files: dict[str, dict[str, list[Listed]]]
    leftovers: list[Leftover]


def upgrade(spark: SparkSession, path: str) -> UpgradeResult:
    """Upgrade the lake at `path` to format 2 (idempotent; a format-2 lake is left as it is)."""
    path = path.rstrip("/")
    fs = HadoopFS(spark, path)
    meta = _marker(fs, path)
    if meta.get("lake_format") == LAKE_FORMAT:
        return UpgradeResult(path, upgraded=False)
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
        _record_runs(fs, path, refs, old.committed)
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
    try:
        ref.commit(adds, [(upgrade_app(r), 1) for r in todo], handle=handle,
                   operation_note={"cdcnorm.operation": "upgrade", "runs": len(todo)})
    except Conflict as exc:
        raise LakeError(f"Another writer committed to {ref.uri} during the upgrade; run `cdcnorm lake upgrade` "
                        "again (it continues where it stopped).") from exc
    rows = sum(int(orjson.loads(a.stats)["numRecords"]) for a in adds)
    return {"runs": len(todo), "files": len(adds), "rows": rows, "bytes": sum(a.size for a in adds)}


def _empty_add(f: Listed, partition_by: tuple[str, ...]) -> AddAction:
    """A file without rows (Spark writes one for an empty result) is registered too, so it is no orphan."""
    stats = orjson.dumps({"numRecords": 0, "minValues": {}, "maxValues": {}, "nullCount": {}}).decode()
    return AddAction(f.rel, f.size, partition_values(f.rel, partition_by), f.mtime_ms, True, stats)


def _record_runs(fs: HadoopFS, path: str, refs: dict[str, DeltaTableRef], committed: list[str]) -> None:
    """One `runs` row per old report not recorded yet; the table versions that hold every registered file."""
    runs = refs["runs"]
    handle = runs.fresh()
    todo = [r for r in committed if handle.transaction_version(upgrade_app(r)) is None]
    if not todo:
        return
    versions = {name: refs[name].version() for name in DATA_TABLES}
    reports = []
    for r in todo:
        report = orjson.loads(fs.read_text(f"{path}/runs/{r}.json"))
        report["run_id"] = r
        report["upgraded_from_format"] = OLD_FORMAT
        reports.append(report)
    append_run_rows(runs, reports, versions, [upgrade_app(r) for r in todo])
