"""The lake's Delta tables: their schemas, partitioning, statistics and file order.

`changes` is partitioned by `vendor` and `source_day` (the UTC date of `source_ts`, null when the change has no
source time) and its files are sorted by stream, table and event id: a new batch's duplicate check reads only
the partitions of the days it touches (within the dedup window), and incremental readers prune by day.
"""

from __future__ import annotations

from dataclasses import dataclass

from deltalake.transaction import AddAction
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

from cdcnorm.canonical.emit import decoded_schema
from cdcnorm.canonical.schema import canonical_schema, quarantine_schema, schema_versions_schema
from cdcnorm.lake.delta.files import write_files
from cdcnorm.lake.delta.table import DeltaTableRef

SOURCE_DAY = "source_day"
STAGING = "_staging"
"""LAKE/_staging/<run_id>/: a normalize run's decoded rows, deleted when the run ends."""
STAGING_PARQUET = {"parquet.enable.dictionary": "false"}
"""How the staged rows are written: without the dictionaries Parquet would try on every column chunk and give up on
for the ids, keys and images, nearly all distinct (docs/benchmarks.md, "Parquet dictionaries")."""


@dataclass(frozen=True)
class TableSpec:
    """How one lake table is laid out."""

    name: str
    schema: StructType
    partition_by: tuple[str, ...] = ()
    stats: tuple[str, ...] = ()
    sort_by: tuple[str, ...] = ()
    plain: tuple[str, ...] = ()
    """columns (Parquet paths) whose values are nearly all distinct: written without a dictionary, which Parquet
    would build for every column chunk and then give up on (docs/benchmarks.md, "Parquet dictionaries")"""

    def write(self, frame: DataFrame, table: DeltaTableRef, prefix: str,
              max_records_per_file: int | None = None) -> list[AddAction]:
        """Write `frame` as data files of `table` laid out as this spec says (statistics, sort, plain columns)."""
        return write_files(frame, table, prefix, self.stats, self.sort_by, max_records_per_file, self.plain)


def runs_schema() -> StructType:
    return StructType([
        StructField("run_id", StringType(), False),
        StructField("vendor", StringType(), True),
        StructField("finished_at", TimestampType(), True),
        StructField("versions", StringType(), False),
        StructField("report", StringType(), False),
    ])


def resolved_schema() -> StructType:
    return StructType([StructField("quarantine_id", StringType(), False), StructField("run_id", StringType(), False)])


def halves_schema() -> StructType:
    """Update halves waiting for their partner across runs (cdcnorm.ingest.pairing): decoded rows plus entry
    bookkeeping; a `released` entry is a tombstone naming the `entry_id` it ends."""
    return StructType([*decoded_schema().fields,
                       StructField("entry_kind", StringType(), False),
                       StructField("entry_id", StringType(), False),
                       StructField("event_time", TimestampType(), True)])


def inputs_schema() -> StructType:
    """The input-file ledger (cdcnorm.lake.ledger): one row per file a committed run read, by its identity."""
    return StructType([
        StructField("uri", StringType(), False),
        StructField("size", LongType(), False),
        StructField("mtime_ms", LongType(), True),
        StructField("etag", StringType(), True),
        StructField("vendor", StringType(), True),
        StructField("run_id", StringType(), False),
        StructField("recorded_at", TimestampType(), True),
    ])


def specs() -> dict[str, TableSpec]:
    """The tables in commit order: schemas, quarantine, resolutions, pairing state, changes, the input-file
    ledger, then the run report last."""
    changes = StructType([*canonical_schema().fields, StructField(SOURCE_DAY, StringType(), True)])
    return {
        "schemas": TableSpec("schemas", schema_versions_schema(), stats=("vendor", "stream", "table", "version_id")),
        "quarantine": TableSpec("quarantine", quarantine_schema(), stats=("vendor", "error_class", "quarantine_id")),
        "quarantine_resolved": TableSpec("quarantine_resolved", resolved_schema(), stats=("quarantine_id", "run_id")),
        "halves": TableSpec("halves", halves_schema(), ("vendor",), stats=("entry_kind", "event_time")),
        "changes": TableSpec("changes", changes, ("vendor", SOURCE_DAY),
                             stats=("stream", "database", "schema", "table", "op", "source_ts", "capture_ts",
                                    "event_id", "supersedes"),
                             sort_by=("stream", "table", "event_id"),
                             plain=("event_id", "sort_key", "before.value", "after.value", "source_ts", "capture_ts",
                                    "origin.offset", "origin.index")),
        "inputs": TableSpec("inputs", inputs_schema(), stats=("uri", "run_id")),
        "runs": TableSpec("runs", runs_schema(), stats=("run_id", "vendor", "finished_at")),
    }


COMMIT_ORDER = tuple(specs())


def source_day() -> Column:
    """The changes table's day partition of a canonical row."""
    return F.date_format(F.col("source_ts"), "yyyy-MM-dd")


def run_of(rel: str) -> str | None:
    """The run a data file belongs to, from its folders: `run=R` (a format-2 run, `run=R.<attempt>` for a
    re-check's rewrite) or `run_id=R` (format 1); None when the path names no run (compactions)."""
    for seg in rel.split("/")[:-1]:
        if seg.startswith("run="):
            return seg[4:].split(".", 1)[0]
        if seg.startswith("run_id="):
            return seg[7:]
    return None
