"""The lake: canonical changes, quarantine, schema versions and run reports as Delta Lake tables.

Layout::

    LAKE/_cdcnorm.json             lake format (2) + canonical version
    LAKE/changes/                  Delta table, partitioned by vendor and source_day
    LAKE/quarantine/               Delta table: rejected records with raw bytes and reason
    LAKE/quarantine_resolved/      Delta table: quarantine ids re-processed successfully by `retry`
    LAKE/schemas/                  Delta table: table schema versions
    LAKE/halves/                   Delta table: update halves waiting for their partner (cdcnorm.ingest.pairing)
    LAKE/runs/                     Delta table: one row per committed run, its report and the table versions
    LAKE/_commits/R.json           a run between its first and last commit (see cdcnorm.lake.commit)

Any Delta reader reads the tables (Spark with the Delta jars, delta-rs, DuckDB's delta extension, Trino, ...).
cdcnorm itself reads them without jars (:mod:`cdcnorm.lake.delta.read`). Readers of this module take the versions
recorded by the newest run report as their cut, so they never see half of a run.
:func:`write_run` commits a derived stream (a cut-over's stitched stream, a scenario's vendors) the same way.
"""

from __future__ import annotations

import datetime as dt
import secrets
from typing import Any

import orjson
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cdcnorm.canonical.inferred import fold_versions
from cdcnorm.canonical.schema import (
    CANONICAL_VERSION,
    COLUMN_NAMES,
    QUARANTINE_COLUMNS,
    SCHEMA_VERSION_COLUMNS,
)
from cdcnorm.errors import LakeError
from cdcnorm.lake.delta.read import read_table
from cdcnorm.lake.delta.table import DeltaTableRef, add_columns, delta_uri
from cdcnorm.lake.lock import writer_lock
from cdcnorm.lake.tables import TableSpec, run_of, specs
from cdcnorm.runtime.fs import HadoopFS

LAKE_FORMAT = 2
MARKER = "_cdcnorm.json"
IDENT = ("vendor", "stream", "database", "schema", "table")


def new_run_id() -> str:
    """Sortable, unique run id: UTC time + random suffix."""
    return dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ") + "-" + secrets.token_hex(3)


def missing_lake(path: str) -> LakeError:
    """The error for a path that holds no lake (also raised by the command line before Spark starts)."""
    path = path.rstrip("/")
    return LakeError(f"No cdcnorm lake at {path} (missing {MARKER}). Run `cdcnorm normalize ... --lake {path}` first.")


def old_format(path: str, found: Any) -> LakeError:
    return LakeError(f"{path} is a lake of format {found} (Parquet folders); this cdcnorm reads format {LAKE_FORMAT} "
                     f"(Delta Lake). Run `cdcnorm lake upgrade --lake {path}` once (no data file is rewritten).")


class Lake:
    """A cdcnorm lake at a path or URI."""

    def __init__(self, spark: SparkSession, path: str, create: bool = False,
                 storage_options: dict[str, str] | None = None):
        self.spark = spark
        self.path = path.rstrip("/")
        self.fs = HadoopFS(spark, self.path)
        self.storage_options = storage_options
        marker = self._p(MARKER)
        meta: dict[str, Any] | None = None
        if self.fs.exists(marker):
            meta = orjson.loads(self.fs.read_text(marker))
            if meta.get("lake_format") != LAKE_FORMAT:
                raise old_format(self.path, meta.get("lake_format"))
        elif not create:
            raise missing_lake(self.path)
        self.specs: dict[str, TableSpec] = specs()
        self.tables = {name: DeltaTableRef(delta_uri(self._p(name)), s.schema, s.partition_by, storage_options)
                       for name, s in self.specs.items()}
        if create:
            self.fs.mkdirs(self.path)
            for t in self.tables.values():
                t.ensure()
            # create-if-absent: two writers creating the lake at once must not both write it (same temp name)
            if not self.fs.exists(marker):
                self.fs.create_exclusive(marker, orjson.dumps(
                    {"lake_format": LAKE_FORMAT, "canonical_version": CANONICAL_VERSION}, option=orjson.OPT_INDENT_2
                ).decode())
        else:
            for t in self.tables.values():
                if t.exists():
                    t.check_features()
        if meta is not None and str(meta.get("canonical_version")) != CANONICAL_VERSION:
            self._upgrade_canonical(meta)

    def _upgrade_canonical(self, meta: dict[str, Any]) -> None:
        """Canonical version 1 -> 2 in place: the `supersedes` column (null in every older row) and the `halves`
        table; no data file is rewritten. Idempotent, so concurrent openers may both run it."""
        for name, t in self.tables.items():
            if not t.exists():
                t.ensure()
                continue
            have = {f.name for f in t.handle().schema().fields}
            missing = [f for f in self.specs[name].schema.fields if f.name not in have]
            if missing:
                add_columns(t, missing)
        self.fs.write_text(self._p(MARKER), orjson.dumps(
            {**meta, "lake_format": LAKE_FORMAT, "canonical_version": CANONICAL_VERSION}, option=orjson.OPT_INDENT_2
        ).decode())

    def _p(self, *parts: str) -> str:
        return "/".join((self.path, *parts))

    def table(self, name: str) -> DeltaTableRef:
        return self.tables[name]

    # -- runs and the consistent cut -------------------------------------------------------------------------
    def _runs(self) -> list[dict[str, Any]]:
        """Committed run rows (small: one per run), read from the runs table's log on the driver."""
        t = self.tables["runs"]
        if not t.exists():
            return []
        rows = t.handle().to_pyarrow_table(columns=["run_id", "versions", "report"]).to_pylist()
        return sorted(rows, key=lambda r: r["run_id"])

    def cut(self) -> dict[str, int]:
        """Table versions that include every committed run (see :meth:`read` for runs still committing)."""
        return self._cut(self._runs())

    @staticmethod
    def _cut(runs: list[dict[str, Any]]) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in runs:
            for name, v in orjson.loads(r["versions"]).items():
                out[name] = max(out.get(name, -1), int(v))
        return out

    def committed_runs(self) -> list[str]:
        return [r["run_id"] for r in self._runs()]

    def run_report(self, run_id: str) -> dict:
        for r in self._runs():
            if r["run_id"] == run_id:
                return orjson.loads(r["report"])
        raise LakeError(f"No committed run {run_id} in {self.path}")

    def run_reports(self) -> list[dict[str, Any]]:
        return [orjson.loads(r["report"]) for r in self._runs()]

    def writer(self, command: str, run_id: str | None = None, break_lock: bool = False):
        """Hold the lake's writer lock for a block: `apply` and `quarantine retry` take it (cdcnorm.lake.lock);
        normalize runs commit through Delta and may run concurrently."""
        return writer_lock(self.fs, self.path, command, run_id, break_lock)

    # -- reading -------------------------------------------------------------------------------------------
    def read(self, name: str, version: int | None = None, latest: bool = False, **kw) -> DataFrame:
        """A table at the lake's cut (or at `version`, or the latest commit with `latest`).

        At the cut, files a run wrote (`run=<run_id>/...`) count only once that run's report is committed: with
        concurrent writers, a later run's report may record a version that includes an earlier run's first
        commits, and that run is not half visible. Other paths (upgraded lakes, compactions) always count.
        """
        if version is None and not latest:
            runs = self._runs()
            version = self._cut(runs).get(name, -1)
            if name != "runs":
                kw.setdefault("keep", reported_files({r["run_id"] for r in runs}))
        return read_table(self.spark, self.tables[name], version, **kw)

    def files_at_cut(self, name: str) -> list[dict[str, Any]]:
        """A table's live files at the cut that count (a run's files only once it is committed), as
        :meth:`read` reads them; metadata only, for driver-side readers of small tables."""
        runs = self._runs()
        version = self._cut(runs).get(name, -1)
        if version < 0:
            return []
        keep = reported_files({r["run_id"] for r in runs})
        return [f for f in self.tables[name].live(version) if keep(f["path"])]

    def run_rows(self, name: str, run_id: str) -> DataFrame:
        """The rows one run added to a table (its `run=<run_id>` files at the latest version)."""
        return read_table(self.spark, self.tables[name], keep=lambda rel: run_of(rel) == run_id)

    def changes(self, latest: bool = False) -> DataFrame:
        return self.read("changes", latest=latest).select(*[F.col(f"`{n}`") for n in COLUMN_NAMES])

    def quarantine(self, include_resolved: bool = False, latest: bool = False) -> DataFrame:
        names = [c.name for c in QUARANTINE_COLUMNS]
        q = self.read("quarantine", latest=latest).dropDuplicates(["quarantine_id"]).select(*names)
        if include_resolved:
            return q
        resolved = self.read("quarantine_resolved", latest=latest).select("quarantine_id")
        return q.join(resolved, "quarantine_id", "left_anti").select(*names)

    def schemas(self, latest: bool = False) -> DataFrame:
        names = tuple(c.name for c in SCHEMA_VERSION_COLUMNS)
        # One row per version: the earliest row's, with inferred column types merged over all its rows.
        return fold_versions(self.read("schemas", latest=latest).select(*names))


def reported_files(committed: set[str]):
    """A filter of data-file paths: those of a run (`cdcnorm.lake.tables.run_of`: `run=<id>`, a re-check's
    `run=<id>.<attempt>`, an upgraded lake's `run_id=<id>`) only when that run is committed; every other path."""
    def keep(rel: str) -> bool:
        run = run_of(rel)
        return run is None or run in committed
    return keep


def read_changes(spark: SparkSession, lake: str) -> DataFrame:
    """Canonical rows of a lake, in canonical column order."""
    return Lake(spark, lake).changes()


def read_quarantine(spark: SparkSession, lake: str, include_resolved: bool = False) -> DataFrame:
    """Quarantined records of a lake (unresolved ones unless asked)."""
    return Lake(spark, lake).quarantine(include_resolved)


def read_schemas(spark: SparkSession, lake: str) -> DataFrame:
    """Table schema versions of a lake, one row per version."""
    return Lake(spark, lake).schemas()
