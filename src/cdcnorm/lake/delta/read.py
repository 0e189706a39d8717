"""A Delta table as a Spark DataFrame without Spark's Delta jars: the live files come from the Delta log
(delta-rs), Spark reads them as Parquet, and partition values are taken from the files' `k=v` folders.

With the Delta jars on the classpath, `spark.read.format("delta").load(path)` reads the same tables directly.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from urllib.parse import unquote

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from cdcnorm.lake.delta.files import NULL_PARTITION
from cdcnorm.lake.delta.table import DeltaTableRef
from cdcnorm.runtime.fs import is_local


def read_table(spark: SparkSession, table: DeltaTableRef, version: int | None = None,
               columns: Sequence[str] | None = None, keep: Callable[[str], bool] | None = None) -> DataFrame:
    """The table's rows at `version` (latest by default), limited to the files whose path relative to the table
    `keep` accepts."""
    names = list(columns) if columns else [f.name for f in table.schema.fields]
    wanted = StructType([table.schema[n] for n in names])
    if version is not None and version < 0:
        return spark.createDataFrame([], wanted)
    files = table.files(version)
    if keep is not None:
        files = [f for f in files if keep(f[len(table.uri) + 1:] if f.startswith(table.uri + "/") else f)]
    return read_files(spark, table, files, names)


def read_files(spark: SparkSession, table: DeltaTableRef, files: Sequence[str],
               columns: Sequence[str] | None = None) -> DataFrame:
    """Rows of some of the table's data files (absolute URIs), partition columns included."""
    names = list(columns) if columns else [f.name for f in table.schema.fields]
    if not files:
        return spark.createDataFrame([], StructType([table.schema[n] for n in names]))
    data = StructType([f for f in table.schema.fields if f.name not in table.partition_by and f.name in names])
    df = _parquet(spark, data, files)
    for col in table.partition_by:
        if col in names:
            values = {file_partition_value(f, col) for f in files}
            value = F.lit(values.pop()) if len(values) == 1 else partition_column(col)  # one value: no per-row parse
            df = df.withColumn(col, value.cast(table.schema[col].dataType))
    return df.select(*[F.col(f"`{n}`") for n in names])


_LISTING = "spark.sql.sources.parallelPartitionDiscovery.threshold"
LOCAL_LISTING_MAX = 4096
"""Local files up to this many are listed on the driver (see :func:`_parquet`)."""


def _parquet(spark: SparkSession, schema: StructType, files: Sequence[str]) -> DataFrame:
    """`spark.read.parquet` of the files. Why the listing threshold: Spark lists more than 32 paths with a Spark
    job of its own (a task per path: about 0.2 to 0.4 s of scheduling for a table of 40 files), meant for
    object stores where each path is a request; local files are listed on the driver in milliseconds, so for
    them the threshold is raised while the files are resolved (restored after)."""
    if len(files) <= 32 or len(files) > LOCAL_LISTING_MAX or not all(is_local(f) for f in files):
        return spark.read.schema(schema).parquet(*files)
    old = spark.conf.get(_LISTING, None)
    if old is not None and int(old) >= len(files):
        return spark.read.schema(schema).parquet(*files)
    spark.conf.set(_LISTING, str(len(files) + 1))
    try:
        return spark.read.schema(schema).parquet(*files)
    finally:
        if old is None:
            spark.conf.unset(_LISTING)
        else:
            spark.conf.set(_LISTING, old)


def file_partition_value(uri: str, name: str) -> str | None:
    """:func:`partition_column` of one file, on the driver (the same decoding; a file outside any `name=`
    folder has null)."""
    m = re.search(f"/{re.escape(name)}=([^/]*)/", uri)
    seg = m.group(1) if m else ""
    return None if seg in ("", NULL_PARTITION) else unquote(unquote(seg))


def partition_column(name: str):
    """The value of partition `name` from the `name=value` folder in each row's file path (null for Hive's
    null marker; Spark escapes partition values like Hive, so they are URL-decoded)."""
    seg = F.regexp_extract(F.col("_metadata.file_path"), f"/{name}=([^/]*)/", 1)
    # the path is a URI (percent-encoded) of a folder name Spark escaped like Hive: decode both layers
    decoded = F.url_decode(F.regexp_replace(F.url_decode(F.regexp_replace(seg, r"\+", "%2B")), r"\+", "%2B"))
    return F.when((seg == "") | (seg == NULL_PARTITION), F.lit(None)).otherwise(decoded)
