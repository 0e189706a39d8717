"""The lake: canonical changes, quarantine, schema versions and run reports, committed run by run.

Layout (all Parquet unless noted)::

    LAKE/_cdcnorm.json                          lake format + canonical version
    LAKE/changes/vendor=V/run_id=R/part-*       canonical rows
    LAKE/quarantine/run_id=R/part-*             rejected records with raw bytes and reason
    LAKE/quarantine_resolved/run_id=R/part-*    quarantine ids re-processed successfully by `retry`
    LAKE/schemas/run_id=R/part-*                table schema versions
    LAKE/runs/R.json                            run report; its presence is the commit of run R

A run writes everything under `LAKE/_staging/R/`, moves the finished directories into place, and writes
`runs/R.json` last. Readers only see committed runs, so a crashed run leaves the lake readable; the next
run deletes its leftovers and, since event ids are deterministic, re-running completes the work.
Every writer holds `LAKE/_lock.json` while it writes (:mod:`cdcnorm.lake_lock`): a second writer is refused,
and leftovers are only cleaned up under the lock, so one run never deletes another's staged files.
:func:`write_run` commits a derived stream (a cut-over's stitched stream, a scenario's vendors) the same way.
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from cdcnorm._version import __version__
from cdcnorm.canonical.schema import (
    CANONICAL_VERSION,
    COLUMN_NAMES,
    QUARANTINE_COLUMNS,
    SCHEMA_VERSION_COLUMNS,
    canonical_schema,
    quarantine_schema,
    schema_versions_schema,
)
from cdcnorm.errors import LakeError
from cdcnorm.fs import HadoopFS
from cdcnorm.lake_lock import holds_lock, writer_lock

LAKE_FORMAT = 1
MARKER = "_cdcnorm.json"
IDENT = ("vendor", "stream", "database", "schema", "table")


def new_run_id() -> str:
    """Sortable, unique run id: UTC time + random suffix."""
    return dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ") + "-" + secrets.token_hex(3)


def missing_lake(path: str) -> LakeError:
    """The error for a path that holds no lake (also raised by the command line before Spark starts)."""
    path = path.rstrip("/")
    return LakeError(f"No cdcnorm lake at {path} (missing {MARKER}). Run `cdcnorm normalize ... --lake {path}` first.")


class Lake:
    """A cdcnorm lake at a path or URI."""

    def __init__(self, spark: SparkSession, path: str, create: bool = False):
        self.spark = spark
        self.path = path.rstrip("/")
        self.fs = HadoopFS(spark, self.path)
        marker = self._p(MARKER)
        if self.fs.exists(marker):
            meta = orjson.loads(self.fs.read_text(marker))
            if meta.get("lake_format") != LAKE_FORMAT:
                raise LakeError(f"{self.path} is a lake of format {meta.get('lake_format')}; this cdcnorm reads {LAKE_FORMAT}.")
        elif create:
            self.fs.mkdirs(self.path)
            self.fs.write_text(marker, orjson.dumps(
                {"lake_format": LAKE_FORMAT, "canonical_version": CANONICAL_VERSION}, option=orjson.OPT_INDENT_2
            ).decode())
        else:
            raise missing_lake(self.path)

    def _p(self, *parts: str) -> str:
        return "/".join((self.path, *parts))

    # -- runs ----------------------------------------------------------------------------------------------
    def committed_runs(self) -> list[str]:
        return [n[:-5] for n in self.fs.list_dir(self._p("runs")) if n.endswith(".json")]

    def run_report(self, run_id: str) -> dict:
        return orjson.loads(self.fs.read_text(self._p("runs", run_id + ".json")))

    def writer(self, command: str, run_id: str | None = None, break_lock: bool = False):
        """Hold the lake's writer lock for a block (see :mod:`cdcnorm.lake_lock`)."""
        return writer_lock(self.fs, self.path, command, run_id, break_lock)

    def cleanup_uncommitted(self) -> None:
        """Delete what crashed runs left behind (staging and moved-but-uncommitted directories); only under the
        writer lock, since without it the "leftovers" may be another run's work in progress."""
        if not holds_lock(self.path):
            raise LakeError(f"cleanup of {self.path} needs the lake's writer lock (Lake.writer)")
        committed = set(self.committed_runs())
        self.fs.delete(self._p("_staging"))
        for vendor_dir in self.fs.list_dir(self._p("changes")):
            for run_dir in self.fs.list_dir(self._p("changes", vendor_dir)):
                if run_dir.startswith("run_id=") and run_dir[7:] not in committed:
                    self.fs.delete(self._p("changes", vendor_dir, run_dir))
        for area in ("quarantine", "quarantine_resolved", "schemas"):
            for run_dir in self.fs.list_dir(self._p(area)):
                if run_dir.startswith("run_id=") and run_dir[7:] not in committed:
                    self.fs.delete(self._p(area, run_dir))

    def staging(self, run_id: str, area: str) -> str:
        return self._p("_staging", run_id, area)

    def commit(self, run_id: str, report: dict) -> None:
        """Move a run's staged directories into place, then write its report (the commit point)."""
        staged = self._p("_staging", run_id, "changes")
        for vendor_dir in self.fs.list_dir(staged):
            if vendor_dir.startswith("vendor="):
                self.fs.rename(f"{staged}/{vendor_dir}", self._p("changes", vendor_dir, f"run_id={run_id}"))
        for area in ("quarantine", "quarantine_resolved", "schemas"):
            src = self._p("_staging", run_id, area)
            if self.fs.exists(src):
                self.fs.rename(src, self._p(area, f"run_id={run_id}"))
        self.fs.write_text(self._p("runs", run_id + ".json"), orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())
        self.fs.delete(self._p("_staging", run_id))

    # -- reading -------------------------------------------------------------------------------------------
    def _read(self, area: str, schema, names: tuple[str, ...]) -> DataFrame:
        root = self._p(area)
        runs = self.committed_runs()
        if not runs or not self.fs.exists(root):
            return self.spark.createDataFrame([], schema)
        try:
            df = self.spark.read.option("basePath", root).parquet(root)
        except Exception as exc:  # an area with no data files yet
            if "UNABLE_TO_INFER_SCHEMA" in str(exc) or "PATH_NOT_FOUND" in str(exc):
                return self.spark.createDataFrame([], schema)
            raise
        df = df.where(F.col("run_id").cast("string").isin(runs))
        return df.select(*[F.col(f"`{n}`") for n in names])

    def changes(self) -> DataFrame:
        return self._read("changes", canonical_schema(), COLUMN_NAMES)

    def quarantine(self, include_resolved: bool = False) -> DataFrame:
        q = self._read("quarantine", quarantine_schema(), tuple(c.name for c in QUARANTINE_COLUMNS))
        if include_resolved:
            return q
        resolved = self._read_resolved()
        return q.join(resolved, "quarantine_id", "left_anti")

    def _read_resolved(self) -> DataFrame:
        root = self._p("quarantine_resolved")
        runs = self.committed_runs()
        empty = self.spark.createDataFrame([], "quarantine_id string")
        if not runs or not self.fs.exists(root) or not self.fs.list_dir(root):
            return empty
        df = self.spark.read.option("basePath", root).parquet(root)
        return df.where(F.col("run_id").cast("string").isin(runs)).select("quarantine_id")

    def schemas(self) -> DataFrame:
        names = tuple(c.name for c in SCHEMA_VERSION_COLUMNS)
        df = self._read("schemas", schema_versions_schema(), names)
        # A version without first_seen must still come out (min_by skips rows whose ordering value is null).
        order = F.struct(F.col("first_seen").isNull(), F.col("first_seen"))
        first = F.min_by(F.struct(*[F.col(f"`{n}`") for n in names]), order)
        return df.groupBy("version_id").agg(first.alias("s")).select("s.*")


@contextmanager
def open_for_write(spark: SparkSession, path: str, command: str, run_id: str | None = None,
                   break_lock: bool = False, create: bool = True) -> Iterator[Lake]:
    """The lake at `path` (created if asked) with its writer lock held, leftovers of crashed runs removed."""
    fs = HadoopFS(spark, path)
    if create:
        fs.mkdirs(path.rstrip("/"))
    else:
        Lake(spark, path)  # a missing lake is reported as such, not as a lock failure
    with writer_lock(fs, path, command, run_id, break_lock):
        lk = Lake(spark, path, create=create)
        lk.cleanup_uncommitted()
        yield lk


def read_changes(spark: SparkSession, lake: str) -> DataFrame:
    """Canonical rows of a lake, in canonical column order."""
    return Lake(spark, lake).changes()


def read_quarantine(spark: SparkSession, lake: str, include_resolved: bool = False) -> DataFrame:
    """Quarantined records of a lake (unresolved ones unless asked)."""
    return Lake(spark, lake).quarantine(include_resolved)


def read_schemas(spark: SparkSession, lake: str) -> DataFrame:
    """Table schema versions of a lake, one row per version."""
    return Lake(spark, lake).schemas()


# -- derived streams (a cut-over's stitched stream, a scenario's vendors) -----------------------------------
# A derived stream is an ordinary committed run (staged, moved, report last) with schema versions, so `apply`,
# `compare` and every reader treat it like a normalized vendor stream; re-running adds nothing because rows already
# in the lake (same event id) are skipped.
def hashed_id(*parts: Column) -> Column:
    """A deterministic 128-bit hex id (SHA-256, truncated) of the given parts, null-safe and unambiguous."""
    text = F.to_json(F.array(*[p.cast("string") for p in parts]))
    return F.substring(F.sha2(text.cast("binary"), 256), 1, 32)


def version_id() -> Column:
    """The schema version id exactly as `normalize` computes it."""
    ident = F.concat_ws("\u0001", *[F.coalesce(F.col(c), F.lit("")) for c in (*IDENT, "schema_version")])
    return F.sha2(ident, 256)


def canonical(df: DataFrame) -> DataFrame:
    """Only the canonical columns, in canonical order."""
    return df.select(*[F.col(f"`{n}`") for n in COLUMN_NAMES])


def write_run(spark: SparkSession, lake: str, changes: DataFrame, schemas: DataFrame | None,
              report: dict[str, Any]) -> dict[str, Any]:
    """Commit `changes` (canonical columns) and `schemas` as one run of `lake`; returns the run report."""
    run_id = new_run_id()
    with open_for_write(spark, lake, report.get("input_kind", "derived"), run_id) as lk:
        return _write_run(spark, lk, run_id, changes, schemas, report)


def _write_run(spark: SparkSession, lk: Lake, run_id: str, changes: DataFrame, schemas: DataFrame | None,
               report: dict[str, Any]) -> dict[str, Any]:
    started = dt.datetime.now(dt.UTC)
    existing = lk.changes().select("event_id")
    candidates = canonical(changes)
    new_rows = candidates.join(existing, "event_id", "left_anti").select(*[F.col(f"`{n}`") for n in COLUMN_NAMES])
    new_rows.write.partitionBy("vendor").parquet(lk.staging(run_id, "changes"))
    staged = _read_staged(spark, lk.staging(run_id, "changes"))
    ident = ["vendor", "stream", "database", "schema", "table"]
    rows_by = [r.asDict() for r in staged.groupBy(*ident, "op").count().withColumnRenamed("count", "rows")
               .orderBy(*ident, "op").collect()] if staged is not None else []
    written = sum(r["rows"] for r in rows_by)
    n_versions = 0
    if schemas is not None:
        names = [c.name for c in SCHEMA_VERSION_COLUMNS]
        sv = schemas.withColumn("version_id", version_id()).select(*[F.col(f"`{n}`") for n in names])
        sv = sv.dropDuplicates(["version_id"]).join(lk.schemas().select("version_id"), "version_id", "left_anti")
        sv.select(*[F.col(f"`{n}`") for n in names]).write.parquet(lk.staging(run_id, "schemas"))
        n_versions = spark.read.parquet(lk.staging(run_id, "schemas")).count()
    filtered = int(report.pop("_filtered", 0))
    considered = int(report.pop("_considered", written + filtered))
    full = {
        "run_id": run_id, "cdcnorm_version": __version__, "started_at": started.isoformat(),
        "input_kind": "derived", "files": 0, "skipped_objects": {},
        "records_read": considered,
        "outcomes": {"emitted": written, "merged": 0, "metadata": 0, "filtered": filtered,
                     "duplicate": considered - written - filtered, "quarantined": 0},
        "reconciled": True, "rows_written": written, "rows_by_table_op": rows_by, "quarantine_by_reason": {},
        "filters_by_rule": {}, "metadata_by_kind": {}, "duplicates_by_table": [], "flags": {}, "heartbeats": [],
        "quarantine_new": 0, "schema_versions_new": n_versions,
        **report,
    }
    full["finished_at"] = dt.datetime.now(dt.UTC).isoformat()
    lk.commit(run_id, full)
    return full


def _read_staged(spark: SparkSession, path: str) -> DataFrame | None:
    try:
        return spark.read.parquet(path)
    except Exception as exc:  # no rows written: Spark cannot infer a schema from an empty folder
        if "UNABLE_TO_INFER_SCHEMA" in str(exc) or "PATH_NOT_FOUND" in str(exc):
            return None
        raise
