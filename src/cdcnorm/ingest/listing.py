"""The files a run reads: its listing less the files the lake's input-file ledger knows (cdcnorm.lake.ledger),
and the run that finds no new file, which records only its `runs` row (the audit trail)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from cdcnorm.canonical.schema import canonical_schema, quarantine_schema, schema_versions_schema
from cdcnorm.lake.commit import commit_run
from cdcnorm.lake.store import Lake
from cdcnorm.runtime.fs import FileEntry

EMPTY_PARTS: dict[str, list[dict[str, Any]]] = {"kind": [], "group": [], "held": [], "flag": []}
"""The figures of a run that decoded nothing (cdcnorm.ingest.figures.aggregate_figures' shape)."""


@dataclass(frozen=True)
class Listing:
    """The input files a run reads, and how many listed files it skipped as already read (`files_skipped_known`)."""

    files: list[FileEntry]
    known: int


def known_only(lk: Lake, report: dict[str, Any]) -> dict[str, Any]:
    """Commit a run that found only known files: no data file, its `runs` row alone."""
    report.update(dedup_window_days=None, quarantine_new=0, schema_versions_new=0)
    report["finished_at"] = dt.datetime.now(dt.UTC).isoformat()
    return commit_run(lk, report["run_id"], {}, report, lk.table("changes").version())


def empty_frames(spark: SparkSession) -> tuple[Callable[[], DataFrame], ...]:
    """The changes, quarantine and schema versions of a run that read nothing, built when asked for."""
    return tuple((lambda s=schema: spark.createDataFrame([], s()))
                 for schema in (canonical_schema, quarantine_schema, schema_versions_schema))
