"""The Spark session cdcnorm runs on: embedded `local[*]` by default, any cluster when asked.

Precedence for the master: an explicit `master` argument (`--master`), else `SPARK_MASTER`, else whatever
`spark-submit` configured, else `local[*]`. Locally the Python workers use the driver's interpreter, importing its
installed pyspark rather than Spark's zip of it (cdcnorm.runtime.worker_python); on a cluster ship the environment yourself
(see the README, "Running on a cluster").
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator

from pyspark.sql import SparkSession

from cdcnorm.runtime.worker_python import worker_python

_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.pythonUDF.arrow.enabled": "true",
    # PySpark's call-site capture for error contexts costs four or five JVM round trips and a Python stack walk
    # per DataFrame function call (about 40 % of the JVM calls of an apply, whose plans are wide expressions);
    # errors keep the JVM's own context.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    # A normalize run with generated code compiles about 130 classes, past Spark's default cache of 100: a second
    # run in the same JVM (an API caller's next run, a follow micro-batch over more than a small run's input)
    # evicted and compiled them all again, and the JIT compiled the new classes again (docs/benchmarks.md,
    # "Generated code across runs").
    "spark.sql.codegen.cache.maxEntries": "1000",
}

PORTABLE_PARQUET = {
    # Delta readers other than Spark expect INT64 microsecond timestamps, not Spark's default INT96.
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # Parquet VARIANT shredding widens every decimal of a field to one inferred scale (1.5 is read back as
    # 1.500000): the lake and current-state tables must keep each value's exact scale.
    "spark.sql.variant.writeShredding.enabled": "false",
    # A VARIANT annotated with Parquet's variant logical type is read as JSON by DuckDB's Delta reader, which
    # then fails to read the column as the struct of `value` / `metadata` the Delta protocol describes.
    "spark.sql.parquet.variant.annotateLogicalType.enabled": "false",
}
"""How every Parquet file of the lake and the current-state tables is written, on any session."""


def jvm_log_path() -> str:
    """Where the command line sends the JVM's own console output (Spark's log lines, JDK warnings)."""
    return os.environ.get("CDCNORM_SPARK_LOG", os.path.join(tempfile.gettempdir(), "cdcnorm-spark.log"))


@contextlib.contextmanager
def jvm_output_to_log() -> Iterator[None]:
    """Start the JVM with its stdout and stderr in a log file, so a terminal shows only cdcnorm's own messages.

    The JVM inherits file descriptors 1 and 2 when it starts; pointing them at a file for that moment keeps every
    later Spark log line out of the user's terminal while Python's own streams are restored right after. Its
    stdout too when that is not a terminal: the JVM writes nothing the user needs there, and a JVM holding the
    command's pipe made its reader (`cdcnorm ... | tee run.log`, `subprocess.run(capture_output=True)`) wait for
    the JVM's own shutdown after the command had exited. (A terminal keeps it: the progress spinner draws there
    while the JVM starts, and nobody waits for a terminal to close.)
    """
    sys.stdout.flush()
    sys.stderr.flush()
    saved = {fd: os.dup(fd) for fd in ((2,) if _is_terminal(1) else (1, 2))}
    with open(jvm_log_path(), "ab") as log:
        for fd in saved:
            os.dup2(log.fileno(), fd)
        try:
            yield
        finally:
            for fd, copy in saved.items():
                os.dup2(copy, fd)
                os.close(copy)


def _is_terminal(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def use_portable_parquet(spark: SparkSession) -> None:
    """Set :data:`PORTABLE_PARQUET` on a session (also one the user passed in): variants keep each value's
    exact scale and every Delta reader (delta-rs, DuckDB, Spark with the Delta jars) reads the files."""
    for key, value in PORTABLE_PARQUET.items():
        spark.conf.set(key, value)


def get_spark(master: str | None = None, app_name: str = "cdcnorm", conf: dict[str, str] | None = None,
              quiet: bool = False) -> SparkSession:
    """Return the active session or create one configured for cdcnorm (`quiet`: JVM output to a log file)."""
    if quiet and SparkSession.getActiveSession() is None:
        with jvm_output_to_log():
            return get_spark(master, app_name, conf)
    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    master = master or os.environ.get("SPARK_MASTER")
    if master is None and "spark.master" not in _submitted_conf():
        master = "local[*]"
    if master is None or master.startswith("local"):
        # Python workers must run the driver's interpreter, or they miss cdcnorm's dependencies; they import its
        # installed pyspark, not Spark's zip of it (cdcnorm.runtime.worker_python: each worker start compiled the zip).
        # The JVM's own Python processes (the data-source lookup a session runs once) take PYSPARK_DRIVER_PYTHON.
        for variable in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):
            if master and os.environ.get(variable, sys.executable) == sys.executable:
                os.environ[variable] = worker_python(sys.executable)
            os.environ.setdefault(variable, sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    for key, value in {**_DEFAULTS, **PORTABLE_PARQUET, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("CDCNORM_SPARK_LOG_LEVEL", "ERROR"))
    return spark


def _submitted_conf() -> dict[str, str]:
    """Spark properties set by spark-submit (it passes them through the environment)."""
    raw = os.environ.get("PYSPARK_SUBMIT_ARGS", "")
    return {"spark.master": "set"} if "--master" in raw or os.environ.get("SPARK_ENV_LOADED") else {}
