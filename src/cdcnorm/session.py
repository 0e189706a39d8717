"""The Spark session cdcnorm runs on: embedded `local[*]` by default, any cluster when asked.

Precedence for the master: an explicit `master` argument (`--master`), else `SPARK_MASTER`, else whatever
`spark-submit` configured, else `local[*]`. Locally the Python workers use the driver's interpreter; on a
cluster ship the environment yourself (see the README, "Running on a cluster").
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.pythonUDF.arrow.enabled": "true",
}


def get_spark(master: str | None = None, app_name: str = "cdcnorm", conf: dict[str, str] | None = None) -> SparkSession:
    """Return the active session or create a quiet one configured for cdcnorm."""
    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    master = master or os.environ.get("SPARK_MASTER")
    if master is None and "spark.master" not in _submitted_conf():
        master = "local[*]"
    if master is None or master.startswith("local"):
        # Python workers must run the driver's interpreter, or they miss cdcnorm's dependencies.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    for key, value in {**_DEFAULTS, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("CDCNORM_SPARK_LOG_LEVEL", "ERROR"))
    return spark


def _submitted_conf() -> dict[str, str]:
    """Spark properties set by spark-submit (it passes them through the environment)."""
    raw = os.environ.get("PYSPARK_SUBMIT_ARGS", "")
    return {"spark.master": "set"} if "--master" in raw or os.environ.get("SPARK_ENV_LOADED") else {}
