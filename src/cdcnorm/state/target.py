"""The Delta tables `cdcnorm apply` maintains per source table: the current state and its deleted keys.

Why this layout: an incremental apply must rewrite only the files its changes touch. Every file of a target
holds a disjoint range of `_cdc_key` (the row key as upper-case hex of its order-preserving `key_bytes`, so
text order is key order), sorted, at most :data:`FILE_ROWS` rows; the file statistics carry each file's
`_cdc_key` range, so a batch of keys maps to files through the Delta log alone. Keys that grow with time (the
common CDC shape: sequences, time-ordered ids) keep recent rows in the last files. Deleted keys live in a
sibling table (`LAKE/current/_tombstones/...`), so a late change older than a delete never resurrects its row
and readers of the current state never see tombstones.

The bookmark (lake versions applied, the table's plan and cumulative counts) is the custom metadata of the
target's own commit, and the commit carries the app transaction `cdcnorm-apply` = the `changes` version, so a
crashed apply that already committed is never applied twice (docs/apply.md).
"""

from __future__ import annotations

import bisect
import math
import time
from typing import Any

import orjson
from deltalake.transaction import AddAction, CommitProperties, RemoveAction, Transaction
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdcnorm.lake.delta.files import written_adds
from cdcnorm.lake.delta.table import DeltaTableRef, delta_uri
from cdcnorm.state.paths import TableId, table_path

FILE_ROWS = 32_768
"""Rows per data file of a target: what an incremental apply rewrites for a batch of recent keys (the bench's
10 k updates of the newest keys onto 1 M rows rewrite one such file); a million-row table has about 31 files."""
APP_ID = "cdcnorm-apply"
BOOKMARK = "cdcnorm.apply"
KEY, SORT_KEY, DELETED_AT, COLUMN_SORT_KEYS = "_cdc_key", "_cdc_sort_key", "_cdc_deleted_at", "_cdc_column_sort_keys"
META = (KEY, SORT_KEY, DELETED_AT, COLUMN_SORT_KEYS)
META_FIELDS = [
    T.StructField(KEY, T.StringType()),
    T.StructField(SORT_KEY, T.BinaryType()),
    T.StructField(DELETED_AT, T.BinaryType()),
    T.StructField(COLUMN_SORT_KEYS, T.MapType(T.StringType(), T.BinaryType())),
]
PLAIN_COLUMNS = {f"parquet.enable.dictionary#{c}": "false" for c in (KEY, SORT_KEY, DELETED_AT)}
"""Writer options: the key and position columns hold one distinct value per row, so Parquet's dictionary
encoder fills its dictionary, gives up and rewrites every page plain (about 0.6 CPU s per million rows of a
rebuild, measured). Written plain from the start: same column types and values, only the page encoding differs."""
TOMBSTONE_SCHEMA = T.StructType([T.StructField(KEY, T.StringType()), T.StructField(DELETED_AT, T.BinaryType())])


def target(spark: SparkSession, lake: str, tid: TableId, schema: T.StructType, root: str,
           storage_options: dict[str, str] | None = None) -> DeltaTableRef:
    """The Delta table of `tid` under `root` (`current`, `current/_tombstones` or `history`)."""
    return DeltaTableRef(delta_uri(table_path(lake, tid, root)), schema, (), storage_options)


def user_columns(df: DataFrame) -> DataFrame:
    """The columns a reader of the current state wants: the source table's, without apply's `_cdc_*` ones."""
    return df.select(*[F.col(f"`{c}`") for c in df.columns if c not in META])


def read_current(spark: SparkSession, lake: str, tid: TableId, root: str = "current",
                 storage_options: dict[str, str] | None = None, meta: bool = False) -> DataFrame:
    """A target as a DataFrame (its live Delta files; `meta`: with the `_cdc_*` columns)."""
    from cdcnorm.lake.delta.read import read_table

    ref = target(spark, lake, tid, None, root, storage_options)
    ref.schema = T.StructType.fromJson(orjson.loads(ref.handle().schema().to_json()))
    df = read_table(spark, ref)
    return df if meta else user_columns(df)


# -- bookmarks ---------------------------------------------------------------------------------------------------
def read_bookmark(table: DeltaTableRef) -> dict[str, Any] | None:
    """The bookmark of the newest commit that carries one (None for a table never applied)."""
    if not table.exists():
        return None
    for info in table.handle().history(50):
        if BOOKMARK in info:
            return orjson.loads(info[BOOKMARK])
    return None


# -- file ranges ------------------------------------------------------------------------------------------------
def file_ranges(table: DeltaTableRef) -> list[dict[str, Any]]:
    """Live files with their `_cdc_key` minimum and row count, ordered by key (metadata only)."""
    if not table.exists():
        return []
    acts = table.add_actions()
    if acts.num_rows == 0:
        return []
    lows = acts.column(f"min.{KEY}").to_pylist() if f"min.{KEY}" in acts.column_names else [None] * acts.num_rows
    out = [{"path": p, "low": lo, "rows": n or 0, "size": s} for p, lo, n, s in zip(
        acts.column("path").to_pylist(), lows, acts.column("num_records").to_pylist(),
        acts.column("size_bytes").to_pylist(), strict=True)]
    return sorted(out, key=lambda f: (f["low"] is not None, f["low"] or ""))


def touched_files(spark: SparkSession, ranges: list[dict[str, Any]], keys: DataFrame) -> list[dict[str, Any]]:
    """The files whose key range a batch's keys fall into: file i owns [low_i, low_i+1), the first file everything
    below, the last everything above (so new keys join the last file instead of adding small files). One small
    broadcast range join; only file paths reach the driver."""
    if not ranges:
        return []
    bounds = [(f["path"], None if i == 0 else f["low"], ranges[i + 1]["low"] if i + 1 < len(ranges) else None)
              for i, f in enumerate(ranges)]
    b = spark.createDataFrame(bounds, "_path string, _lo string, _hi string")
    k = F.col(KEY)
    hit = keys.select(KEY).distinct().join(
        F.broadcast(b), (F.col("_lo").isNull() | (k >= F.col("_lo"))) & (F.col("_hi").isNull() | (k < F.col("_hi"))))
    paths = {r["_path"] for r in hit.select("_path").distinct().collect()}
    return [f for f in ranges if f["path"] in paths]


def covering(ranges: list[dict[str, Any]], span: tuple[str, str] | None) -> list[dict[str, Any]] | None:
    """The files a batch touches, from its lowest and highest `_cdc_key` alone (driver only, no Spark job), when
    that is exact: both ends fall in the same file or in two neighbours (the common CDC shape, recent keys in
    the last file). None when the span covers more files (some in between may hold no batch key: the caller
    joins, :func:`touched_files`) or is unknown."""
    if not ranges:
        return []
    lows = [f["low"] for f in ranges]
    if span is None or any(lo is None for lo in lows[1:]):
        return None
    first, last = (bisect.bisect_right(lows, k, lo=1) - 1 for k in span)
    return ranges[first:last + 1] if last - first <= 1 else None


def written_rows(adds: list[AddAction]) -> int:
    """Rows of written files, from their statistics (no count over the data)."""
    return sum(int(orjson.loads(a.stats)["numRecords"]) for a in adds)


# -- writing and committing -------------------------------------------------------------------------------------
def write_sorted(df: DataFrame, table: DeltaTableRef, prefix: str, rows: int, presorted: bool = False) -> list[AddAction]:
    """Write rows as key-sorted files of disjoint `_cdc_key` ranges (at most FILE_ROWS rows each) under
    `<table>/<prefix>/`; add actions carry the `_cdc_key` range. `rows` is an upper estimate of the row count;
    `presorted`: `df` is already range-partitioned and sorted by `_cdc_key`."""
    names = [f.name for f in table.schema.fields]
    parts = max(1, math.ceil(rows / FILE_ROWS))
    out = df.select(*[F.col("`" + n.replace("`", "``") + "`") for n in names])
    if not presorted:
        out = out.repartitionByRange(parts, KEY).sortWithinPartitions(KEY)
    out.write.mode("error").option("maxRecordsPerFile", FILE_ROWS).options(**PLAIN_COLUMNS).parquet(f"{table.uri}/{prefix}")
    return written_adds(df.sparkSession, table, prefix, [KEY])


def commit(table: DeltaTableRef, adds: list[AddAction], removed: list[dict[str, Any]], version: int,
           bookmark: dict[str, Any] | None, overwrite: bool = False) -> int:
    """One Delta commit: the new files, the rewritten ones removed (all of them with `overwrite`, which also sets
    the schema), the app transaction `cdcnorm-apply` = `version` and the bookmark as commit metadata."""
    if not table.exists():
        table.ensure()
    dt = table.fresh()
    now = int(time.time() * 1000)
    removes = [RemoveAction(f["path"], True, now, f["size"], {}) for f in removed] if not overwrite else []
    meta = {BOOKMARK: orjson.dumps(bookmark).decode()} if bookmark is not None else None
    props = CommitProperties(app_transactions=[Transaction(APP_ID, version)], custom_metadata=meta)
    dt.create_write_transaction([*adds, *removes], "overwrite" if overwrite else "append", table.delta_schema(),
                                commit_properties=props)
    dt.update_incremental()
    return dt.version()


def applied_version(table: DeltaTableRef) -> int | None:
    """The `changes` version this target was last committed at (its app transaction), or None."""
    return table.fresh().transaction_version(APP_ID) if table.exists() else None
