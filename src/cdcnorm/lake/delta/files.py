"""Write rows as a Delta table's data files with Spark's own Parquet writer, and describe them as add actions.

Each write goes to a folder of its own inside the table (`<table>/<prefix>/<partition dirs>/part-*.parquet`),
so concurrent writers never share Spark's `_temporary` folder and a crashed writer's files are plain orphans:
invisible to every Delta reader until committed, removed by `cdcnorm lake maintain` (vacuum). The statistics
(row count, min / max, null count of the chosen columns) come from the written files' Parquet footers when the
driver can read them (a local table: metadata only, no Spark job), else from one Spark aggregation over the
written files, grouped by file: only one row per file reaches the driver.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import uuid
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake.transaction import AddAction
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from cdcnorm.lake.delta.table import DeltaTableRef
from cdcnorm.runtime.fs import Listed, delete_file, is_local, local_path, walk

NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def write_files(df: DataFrame, table: DeltaTableRef, prefix: str, stats_columns: Sequence[str] = (),
                sort_by: Sequence[str] = (), max_records_per_file: int | None = None,
                plain_columns: Sequence[str] = ()) -> list[AddAction]:
    """Write `df` (the table's columns) under `<table>/<prefix>/` and return one add action per written file;
    `plain_columns` (Parquet column paths) are written without a dictionary."""
    names = [f.name for f in table.schema.fields]
    # Rebalance: adaptive execution merges small partitions and splits large ones towards its advisory size, so
    # a small run writes one file per partition value instead of one per task, and a large one sizeable files.
    out = df.select(*[F.col(f"`{n}`") for n in names]).hint("rebalance", *table.partition_by)
    if sort_by:
        out = out.sortWithinPartitions(*[F.col(f"`{c}`") for c in (*table.partition_by, *sort_by)])
    target = f"{table.uri}/{prefix}"
    writer = out.write.mode("error")
    for column in plain_columns:
        writer = writer.option(f"parquet.enable.dictionary#{column}", "false")
    if max_records_per_file:
        writer = writer.option("maxRecordsPerFile", int(max_records_per_file))
    if table.partition_by:
        writer = writer.partitionBy(*table.partition_by)
    writer.parquet(target)
    return written_adds(df.sparkSession, table, prefix, stats_columns)


def write_arrow(spark, rows: pa.Table, table: DeltaTableRef, prefix: str, stats_columns: Sequence[str] = ()
                ) -> list[AddAction]:
    """Write a few driver-side rows (metadata the driver holds already, e.g. a run's new schema versions) as one
    data file of a local, unpartitioned table under `<table>/<prefix>/`, without a Spark job: a Spark write of a
    local relation is a job, its plan and its commit protocol for a handful of rows."""
    if not is_local(table.uri) or table.partition_by:
        raise ValueError(f"write_arrow writes local unpartitioned tables only, not {table.uri}")
    folder = f"{local_path(table.uri)}/{prefix}"
    os.makedirs(folder, exist_ok=False)  # a folder of its own, like a Spark write with mode "error"
    pq.write_table(rows, f"{folder}/part-00000-{uuid.uuid4()}-c000.snappy.parquet", compression="snappy")
    return written_adds(spark, table, prefix, stats_columns)


def written_adds(spark, table: DeltaTableRef, prefix: str, stats_columns: Sequence[str] = ()) -> list[AddAction]:
    """Add actions (with statistics) for the Parquet files Spark wrote under `<table>/<prefix>/`."""
    folder = f"{table.uri}/{prefix}"
    written = walk(spark, folder)
    if is_local(folder):
        adds = _footer_adds(local_path(folder), written, table, prefix, stats_columns)
    else:
        frame = spark.read.schema(_data_schema(table)).parquet(folder)
        adds = _stat_adds(frame, table, stats_columns, lambda uri: _relative(uri, prefix))
    kept = {a.path for a in adds}
    for f in written:  # files without rows (Spark writes one for an empty result): no action, so no orphans
        if f"{prefix}/{f.rel}" not in kept:
            delete_file(spark, f"{folder}/{f.rel}")
    return adds


def _footer_adds(folder: str, written: Sequence[Listed], table: DeltaTableRef, prefix: str,
                 stats_columns: Sequence[str]) -> list[AddAction]:
    """Add actions from the Parquet footers of the written files (row counts and column chunk statistics):
    the same figures as the Spark aggregation, read on the driver without a Spark job. A column whose chunk has
    no min / max (Parquet leaves them out for values over 4 KiB) gets none for that file, as Delta allows."""
    types = {f.name: f.dataType.typeName() for f in _data_schema(table).fields}
    cols = [c for c in stats_columns if c in types]
    adds = []
    for f in written:
        meta = pq.ParquetFile(f"{folder}/{f.rel}").metadata
        if meta.num_rows == 0:
            continue
        stats: dict[str, Any] = {"numRecords": meta.num_rows, "minValues": {}, "maxValues": {}, "nullCount": {}}
        for c in cols:
            lo, hi, nulls = _chunk_range(meta, c)
            if nulls is not None:
                stats["nullCount"][c] = nulls
            if lo is not None:
                stats["minValues"][c] = _stat_value(lo, types[c], up=False)
                stats["maxValues"][c] = _stat_value(hi, types[c], up=True)
        rel = f"{prefix}/{f.rel}"
        adds.append(AddAction(rel, f.size, partition_values(rel, table.partition_by), f.mtime_ms, True,
                              json.dumps(stats, separators=(",", ":"))))
    return adds


def _chunk_range(meta: pq.FileMetaData, column: str) -> tuple[Any, Any, int | None]:
    """(min, max, null count) of a top-level column over a file's row groups; min / max None when a chunk with
    values lacks them (or every value is null), null count None when a chunk does not record it."""
    idx = next((j for j in range(meta.num_columns) if meta.row_group(0).column(j).path_in_schema == column), None)
    lo = hi = None
    nulls: int | None = 0
    ranged = True
    for i in range(meta.num_row_groups):
        chunk = meta.row_group(i).column(idx) if idx is not None else None
        st = chunk.statistics if chunk is not None else None
        if st is None:
            return None, None, None
        if st.has_null_count and nulls is not None:
            nulls += st.null_count
        else:
            nulls = None
        if st.has_min_max:
            lo = st.min if lo is None else min(lo, st.min)
            hi = st.max if hi is None else max(hi, st.max)
        elif not (st.has_null_count and st.null_count == chunk.num_values):
            ranged = False
    return (lo, hi, nulls) if ranged else (None, None, nulls)


def file_adds(spark, table: DeltaTableRef, rel_paths: Sequence[str], stats_columns: Sequence[str] = ()) -> list[AddAction]:
    """Add actions (with statistics) for existing data files of the table, named relative to its folder (e.g. a
    format-1 lake's files, registered where they are). A file without rows gets no action: the aggregation has
    no row for it (the caller decides what to do with it)."""
    if not rel_paths:
        return []
    frame = spark.read.schema(_data_schema(table)).parquet(*[f"{table.uri}/{p}" for p in rel_paths])
    return _stat_adds(frame, table, stats_columns, _suffix_matcher(rel_paths))


def _data_schema(table: DeltaTableRef) -> StructType:
    return StructType([f for f in table.schema.fields if f.name not in table.partition_by])


def _stat_adds(frame: DataFrame, table: DeltaTableRef, stats_columns: Sequence[str],
               relative: Callable[[str], str]) -> list[AddAction]:
    """One add action per file of `frame`, from one aggregation grouped by file (only one row per file reaches
    the driver)."""
    types = {f.name: f.dataType.typeName() for f in frame.schema.fields}
    cols = [c for c in stats_columns if c in types]
    aggs = [F.count(F.lit(1)).alias("_n")]
    for i, c in enumerate(cols):
        col = F.col(f"`{c}`")
        aggs += [F.min(col).alias(f"_min{i}"), F.max(col).alias(f"_max{i}"),
                 F.sum(col.isNull().cast("long")).alias(f"_nulls{i}")]
    meta = frame.groupBy(F.col("_metadata.file_path").alias("_path"), F.col("_metadata.file_size").alias("_size"),
                         F.col("_metadata.file_modification_time").alias("_mtime")).agg(*aggs)
    adds = []
    for r in sorted(meta.collect(), key=lambda r: r["_path"]):  # one row per file: metadata only
        rel = relative(r["_path"])
        stats: dict[str, Any] = {"numRecords": int(r["_n"]), "minValues": {}, "maxValues": {}, "nullCount": {}}
        for i, c in enumerate(cols):
            stats["nullCount"][c] = int(r[f"_nulls{i}"] or 0)
            lo, hi = r[f"_min{i}"], r[f"_max{i}"]
            if lo is not None:
                stats["minValues"][c] = _stat_value(lo, types[c], up=False)
                stats["maxValues"][c] = _stat_value(hi, types[c], up=True)
        mtime = r["_mtime"]
        adds.append(AddAction(rel, int(r["_size"]), partition_values(rel, table.partition_by),
                              int(mtime.replace(tzinfo=dt.UTC).timestamp() * 1000) if mtime else 0,
                              True, json.dumps(stats, separators=(",", ":"))))
    return adds


def partition_values(rel_path: str, partition_by: Sequence[str]) -> dict[str, str | None]:
    """Partition values from the `k=v` folders of a data file's path (Spark escapes them like Hive)."""
    found: dict[str, str | None] = {}
    for seg in rel_path.split("/")[:-1]:
        if "=" in seg:
            k, v = seg.split("=", 1)
            found[k] = None if v == NULL_PARTITION else unquote(v)
    return {k: found.get(k) for k in partition_by}


def _suffix_matcher(rel_paths: Sequence[str]) -> Callable[[str], str]:
    """Map a file URI Spark reports back to the relative path it was read as (the longest matching suffix)."""
    known = set(rel_paths)

    def relative(uri: str) -> str:
        segs = unquote(uri).split("/")
        for k in range(len(segs) - 1, 0, -1):
            cand = "/".join(segs[-k:])
            if cand in known:
                return cand
        raise ValueError(f"read file {uri} is none of the files asked for")

    return relative


def _relative(uri: str, prefix: str) -> str:
    """The file's path relative to the table, as it is on disk (delta-rs quotes it in the log itself)."""
    path = unquote(uri)
    marker = "/" + prefix + "/"
    at = path.rfind(marker)
    if at < 0:
        raise ValueError(f"written file {uri} is not under {prefix}")
    return path[at + 1:]


def _stat_value(v: Any, type_name: str, up: bool) -> Any:
    """A statistic in the Delta log's JSON form; timestamps at millisecond precision, the max rounded up so a
    reader's pruning never skips a file whose true max has microseconds."""
    if type_name in ("timestamp", "timestamp_ntz"):
        if v.tzinfo is None and type_name == "timestamp":
            v = v.replace(tzinfo=dt.UTC)
        micros = v.microsecond % 1000
        if up and micros:
            v = v + dt.timedelta(microseconds=1000 - micros)
        else:
            v = v - dt.timedelta(microseconds=micros)
        text = v.strftime("%Y-%m-%dT%H:%M:%S.") + f"{v.microsecond // 1000:03d}"
        return text + ("Z" if type_name == "timestamp" else "")
    if type_name == "date":
        return v.isoformat()
    return v
