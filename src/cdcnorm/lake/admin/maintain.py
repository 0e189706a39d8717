"""`cdcnorm lake maintain`: compaction of small files, a log checkpoint and a vacuum for every table, and the
removal of stale `_staging/<run>` folders.

Compaction runs on Spark for every table: the small files of each partition are read (cdcnorm's own reader),
written again as bigger files sorted like the table's writers sort them, and committed in one Delta
transaction as adds plus removes, both with `dataChange = false`, so incremental readers skip it. (delta-rs
`optimize.compact()` also handles the `changes` table's VARIANT columns, but runs on the driver alone, drops
the file order and Spark's Parquet VARIANT annotation; Spark keeps all three and scales with the cluster.)
A compaction is visible to readers once a `runs` row records the new versions: maintain writes one (a
maintenance run with zero counts) when no run is pending, else the next run does.

Vacuum (delta-rs, full mode) deletes files no version within the retention needs: files removed longer ago
than the retention, and unreferenced files (a crashed run's folder) older than it. Files younger than the
retention are never deleted, which is what keeps a running writer's not yet committed files safe; the
files of the version readers currently use (the cut) are always kept.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import orjson

from cdcnorm.errors import LakeError
from cdcnorm.lake.admin.check import COMPACT_PREFIX
from cdcnorm.lake.commit import INTENTS, STAGED_TABLES, append_run_rows, complete_pending, run_app
from cdcnorm.lake.delta.read import read_files
from cdcnorm.lake.delta.table import rewrite
from cdcnorm.lake.store import Lake, new_run_id, reported_files
from cdcnorm.lake.tables import COMMIT_ORDER, STAGING
from cdcnorm.runtime.fs import modified_ms, subfolders, walk

DEFAULT_RETENTION_HOURS = 168
TARGET_FILE_BYTES = 128 * 1024 * 1024
SMALL_FILE_BYTES = 32 * 1024 * 1024
MIN_FILES = 2


@dataclass
class TableWork:
    """What maintain did to one table."""

    table: str
    compacted_files: int = 0
    compacted_bytes: int = 0
    written_files: int = 0
    written_bytes: int = 0
    vacuumed_files: int = 0
    vacuumed_bytes: int = 0
    checkpoint_version: int | None = None
    note: str = ""


@dataclass
class MaintainResult:
    lake: str
    retention_hours: float
    tables: list[TableWork] = field(default_factory=list)
    completed_runs: list[str] = field(default_factory=list)
    cut_advanced: bool = False
    staging_removed: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"lake": self.lake, "retention_hours": self.retention_hours, "tables": [vars(t) for t in self.tables],
                "completed_runs": self.completed_runs, "cut_advanced": self.cut_advanced,
                "staging_removed": self.staging_removed}


def maintain(spark, path: str, retention_hours: float = DEFAULT_RETENTION_HOURS, vacuum: bool = True,
             compact: bool = True, small_file_bytes: int = SMALL_FILE_BYTES,
             target_file_bytes: int = TARGET_FILE_BYTES) -> MaintainResult:
    """Compact, checkpoint and vacuum every table of the lake at `path`; delete stale staging folders."""
    if retention_hours < 0:
        raise LakeError("The retention must not be negative.")
    lk = Lake(spark, path)
    result = MaintainResult(lk.path, retention_hours, [TableWork(name) for name in COMMIT_ORDER])
    result.completed_runs = complete_pending(lk)  # a crashed run's commits first: its files must not be vacuumed
    work = {w.table: w for w in result.tables}
    if compact:
        for name in COMMIT_ORDER:
            compact_table(lk, name, work[name], small_file_bytes, target_file_bytes)
        if any(w.compacted_files for w in result.tables):
            result.cut_advanced = advance_cut(lk, result)
    if vacuum:
        cut = lk.cut()
        for name in COMMIT_ORDER:
            vacuum_table(lk, name, work[name], retention_hours, cut.get(name))
        result.staging_removed = remove_stale_staging(lk, retention_hours)
    for name in COMMIT_ORDER:
        handle = lk.table(name).fresh()
        handle.create_checkpoint()
        work[name].checkpoint_version = handle.version()
    return result


def compact_table(lk: Lake, name: str, work: TableWork, small: int, target: int) -> None:
    """Rewrite each partition's small files (at least MIN_FILES of them) as bigger ones in one commit."""
    ref, spec = lk.table(name), lk.specs[name]
    handle = ref.fresh()
    acts = ref.add_actions(handle=handle)
    counts = acts.column("num_records").to_pylist() if "num_records" in acts.column_names else [None] * acts.num_rows
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    reported = reported_files(set(lk.committed_runs()))  # never fold a run still committing into compacted files
    for f, n in zip(ref.live(handle=handle), counts, strict=True):
        if f["size"] < small and reported(f["path"]):
            groups[tuple(f["partition"].get(c) for c in ref.partition_by)].append({**f, "rows": n})
    chosen = [f for g in groups.values() if len(g) >= MIN_FILES for f in g]
    if not chosen:
        return
    if any(f["rows"] is None for f in chosen):
        work.note = "not compacted: files without row statistics"
        return
    rows, size = sum(f["rows"] for f in chosen), sum(f["size"] for f in chosen)
    frame = read_files(lk.spark, ref, [f["uri"] for f in chosen])
    frame = frame.repartition(*ref.partition_by) if ref.partition_by else frame.repartition(1)
    per_file = max(1, math.ceil(rows * target / max(size, 1)))
    written = spec.write(frame, ref, f"{COMPACT_PREFIX}{new_run_id()}", per_file)
    if sum(int(orjson.loads(a.stats)["numRecords"]) for a in written) != rows:
        raise LakeError(f"Compaction of {ref.uri} wrote a different number of rows than it read; nothing was "
                        "committed (the written files are unreferenced and will be vacuumed).")
    if not rewrite(ref, chosen, written, handle, "compact"):
        work.note = "compaction skipped: another writer changed the same files"
        return
    adds = written
    work.compacted_files, work.compacted_bytes = len(chosen), size
    work.written_files, work.written_bytes = len(adds), sum(a.size for a in adds)


def advance_cut(lk: Lake, result: MaintainResult) -> bool:
    """Record a maintenance run in `runs` so readers use the compacted files; only when no run is between its
    commits (the versions read before the intents are listed then hold only completed runs)."""
    versions = {name: lk.table(name).fresh().version() for name in STAGED_TABLES}
    if any(n.endswith(".json") for n in lk.fs.list_dir(lk._p(INTENTS))):
        return False
    run_id = new_run_id()
    report = {"run_id": run_id, "input_kind": "maintain", "records_read": 0,
              "outcomes": {"emitted": 0, "merged": 0, "metadata": 0, "filtered": 0, "duplicate": 0, "quarantined": 0},
              "reconciled": True, "rows_written": 0, "quarantine_new": 0, "schema_versions_new": 0,
              "compacted": {w.table: {"removed": w.compacted_files, "added": w.written_files}
                            for w in result.tables if w.compacted_files},
              "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())}
    append_run_rows(lk.table("runs"), [report], versions, [run_app(run_id)])
    return True


def vacuum_table(lk: Lake, name: str, work: TableWork, retention_hours: float, keep: int | None) -> None:
    ref = lk.table(name)
    sizes = {f.rel: f.size for f in walk(lk.spark, ref.uri, parquet_only=False)}
    handle = ref.fresh()
    deleted = handle.vacuum(retention_hours=math.ceil(retention_hours), dry_run=False,
                            enforce_retention_duration=False, full=True,
                            keep_versions=[keep] if keep is not None and keep >= 0 else None)
    files = [rel for rel in (_relative(p, ref.uri) for p in deleted) if rel in sizes]  # data files, not .crc
    work.vacuumed_files = len(files)
    work.vacuumed_bytes = sum(sizes[rel] for rel in files)


def _relative(path: str, uri: str) -> str:
    path = unquote(path)
    for base in (uri, "file://" + uri, "file:" + uri):
        if path.startswith(base + "/"):
            return path[len(base) + 1:]
    return path


def remove_stale_staging(lk: Lake, retention_hours: float) -> list[dict[str, Any]]:
    """Delete `_staging/<run>` folders whose newest file is older than the retention (a crashed run's)."""
    limit_ms = (time.time() - retention_hours * 3600) * 1000
    removed = []
    for run in subfolders(lk.spark, lk._p(STAGING)):
        files = walk(lk.spark, lk._p(STAGING, run), parquet_only=False, hidden=True)
        newest = max([modified_ms(lk.spark, lk._p(STAGING, run)), *(f.mtime_ms for f in files)])
        if newest < limit_ms:
            lk.fs.delete(lk._p(STAGING, run))
            removed.append({"run": run, "files": len(files), "bytes": sum(f.size for f in files)})
    return removed
