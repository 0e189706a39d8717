"""Typed rows of a table: the columns of its plan extracted from row images, and the Spark schema they have.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdcnorm.state.plan import TablePlan
from cdcnorm.state.types import extract, spark_type


def typed_keyless(state: DataFrame, plan: TablePlan, with_meta: bool = False) -> DataFrame:
    """A keyless table's rows (`_gkey, values, _n` from :func:`cdcnorm.state.merge.keyless_state`), each image
    repeated by its multiplicity and typed; `with_meta` adds the `_cdc_*` columns of a target (the image as key)."""
    state = state.withColumn("_rep", F.explode(F.sequence(F.lit(1).cast("long"), F.col("_n"))))
    cols = [extract(F.col("values"), c.name, c.type, c.canonical_type, c.naive_utc).alias(c.name) for c in plan.columns]
    if with_meta:
        cols += [F.hex("_gkey").alias("_cdc_key"), F.lit(None).cast("binary").alias("_cdc_sort_key"),
                 F.lit(None).cast("binary").alias("_cdc_deleted_at"),
                 F.lit(None).cast("map<string,binary>").alias("_cdc_column_sort_keys"),
                 F.lit(True).alias("_live")]
    return state.select(*cols)


def output_schema(plan: TablePlan, extra: list[T.StructField] | None = None) -> T.StructType:
    """The table's columns from its plan (typed), then `extra` (a target's `_cdc_*` columns)."""
    return T.StructType([*[T.StructField(c.name, spark_type(c.type)) for c in plan.columns], *(extra or [])])
