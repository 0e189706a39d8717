"""Typing and writing the live rows: staged once partitioned by table, then one typed Parquet table per source table.
"""

from __future__ import annotations

import datetime as dt
import secrets

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdcnorm.lake import Lake
from cdcnorm.state.paths import CURRENT, TableId, table_path
from cdcnorm.state.plan import TablePlan
from cdcnorm.state.types import extract, spark_type

SMALL_TABLE_ROWS = 1_000_000
"""Tables up to this many rows are written as one file."""

_STATE = T.StructType([
    T.StructField("_gkey", T.BinaryType()),
    T.StructField("values", T.MapType(T.StringType(), T.VariantType())),
    T.StructField("_n", T.LongType()),
])
_STAGED = T.StructType([*_STATE.fields, T.StructField("_tid", T.StringType())])


def _typed(state: DataFrame, plan: TablePlan) -> DataFrame:
    """The table's columns from its schema, typed; keyless rows repeated by their multiplicity."""
    if plan.key_mode == "keyless":
        state = state.withColumn("_rep", F.explode(F.sequence(F.lit(1).cast("long"), F.col("_n"))))
    if not plan.columns:
        return state.select(F.col("values").alias("_row"))  # no schema and nothing to infer from: keep the image
    return state.select(*[extract(F.col("values"), c.name, c.type, c.canonical_type, c.naive_utc).alias(c.name)
                          for c in plan.columns])


def _output_schema(plan: TablePlan) -> T.StructType:
    if not plan.columns:
        return T.StructType([T.StructField("_row", T.MapType(T.StringType(), T.VariantType()))])
    return T.StructType([T.StructField(c.name, spark_type(c.type)) for c in plan.columns])


def write_tables(lk: Lake, state: DataFrame, plans: list[TablePlan]) -> dict[TableId, DataFrame]:
    """Stage the state once (partitioned by table), count it, then type and overwrite each table."""
    spark = lk.spark
    staging = f"{lk.path}/{CURRENT}/_staging/{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"
    try:
        state.write.partitionBy("_tid").parquet(staging)
        counts = _counts(spark.read.schema(_STAGED).parquet(staging))
        frames = {}
        for plan in plans:
            plan.rows = counts.get(plan.hid, 0)
            part = f"{staging}/_tid={plan.hid}"
            if plan.rows:
                out = _typed(spark.read.schema(_STATE).parquet(part), plan)
                if plan.rows <= SMALL_TABLE_ROWS:
                    out = out.coalesce(1)
            else:
                out = spark.createDataFrame([], _output_schema(plan))
            path = table_path(lk.path, plan.tid)
            out.write.mode("overwrite").parquet(path)
            frames[plan.tid] = spark.read.schema(_output_schema(plan)).parquet(path)
        return frames
    finally:
        lk.fs.delete(staging)
        if not lk.fs.list_dir(staging.rsplit("/", 1)[0]):
            lk.fs.delete(staging.rsplit("/", 1)[0])


def state_views(state: DataFrame, plans: list[TablePlan]) -> dict[TableId, DataFrame]:
    """write=False: per-table views of the (persisted) state."""
    counts = _counts(state)
    frames = {}
    for plan in plans:
        plan.rows = counts.get(plan.hid, 0)
        frames[plan.tid] = _typed(state.where(F.col("_tid") == plan.hid), plan)
    return frames


def _counts(state: DataFrame) -> dict[str, int]:
    return {r["_tid"]: int(r["rows"]) for r in state.groupBy("_tid").agg(F.sum("_n").alias("rows")).collect()}
