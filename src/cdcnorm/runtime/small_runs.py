"""Plan a small run cheaply: most runs (a follow micro-batch, a file that just landed) are tiny, and their cost is
nearly all fixed: Spark jobs, and compiling the code of a dozen wide query plans.

Adaptive execution (AQE) runs every shuffle of a query as a Spark job of its own and broadcasts small join sides
in jobs of their own, so a run of a few records cost about 60 jobs, nearly all of it fixed overhead. For input
up to :data:`SMALL_RUN_BYTES`, a run is planned without AQE and without broadcast joins, over a shuffle width
sized to its input (one partition per :data:`BYTES_PER_PARTITION`, at most the session's own width): each action
is one job whose stages run back to back. Larger runs keep the session's settings, where AQE's coalescing and
skew handling pay off.

Up to :data:`INTERPRETED_RUN_BYTES`, the run's expressions are also evaluated by Spark's interpreter instead of
generated Java code (whole-stage code generation off, `spark.sql.codegen.factoryMode=NO_CODEGEN`). Every plan of a
run is new Java source (literals such as the run's id and clock are part of it), compiled by Janino on the driver
and by each executor task, then JIT-compiled again: for a 1 k-record micro-batch that was most of its CPU (the
JVM's C2 compiler alone about half of it), and interpreting the few rows costs far less. Generated code pays off
once a run has enough rows: measured crossover in docs/benchmarks.md ("Spark jobs per run").

A command-line run over at most that much local input also starts its JVM with :data:`SMALL_RUN_JVM_OPTIONS`
(:func:`jvm_conf_for`): a short-lived process spends much of its time in the JIT's optimizing compiler (C2) on
Spark's own code, which it leaves before the optimized code pays off. Only the command line's own session gets
it: a session the user made, the API and `--follow` keep the JVM's defaults. The same JVM maps Spark's classes
from an archive (:mod:`cdcnorm.runtime.jvm_archive`) instead of loading them from the jars.

The settings are restored when the run ends (they are the session's, so a query started meanwhile on the same
session in another thread would see them: cdcnorm's own queries do not overlap). `CDCNORM_SMALL_RUN_BYTES=0`
turns all of this off, `CDCNORM_INTERPRETED_RUN_BYTES=0` the interpreter only.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Iterator

from pyspark.sql import SparkSession

from cdcnorm.runtime import jvm_archive
from cdcnorm.runtime.fs import is_local, local_size

SMALL_RUN_BYTES = 256 << 20
BYTES_PER_PARTITION = 32 << 20
INTERPRETED_RUN_BYTES = 32 << 20

SMALL_RUN_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData"
"""JIT with the quick C1 compiler only, the serial collector (no concurrent GC threads competing with the run for
the cores of a process that lives seconds), no performance-counter file (`CDCNORM_SMALL_RUN_JVM_OPTIONS`
overrides; empty: none). Measured in docs/benchmarks.md ("Spark jobs per run", the cold start)."""

INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
"""Spark's interpreted evaluation: the same results (Spark tests both paths), no code to compile."""


def small_run_limit() -> int:
    return int(os.environ.get("CDCNORM_SMALL_RUN_BYTES", SMALL_RUN_BYTES))


def interpreted_run_limit() -> int:
    return min(small_run_limit(), int(os.environ.get("CDCNORM_INTERPRETED_RUN_BYTES", INTERPRETED_RUN_BYTES)))


def settings_for(spark: SparkSession, input_bytes: int | None) -> dict[str, str]:
    """The session settings a run over `input_bytes` of input is planned with (empty: the session's own)."""
    if input_bytes is None or input_bytes > small_run_limit():
        return {}
    width = int(spark.conf.get("spark.sql.shuffle.partitions", "8"))
    partitions = max(1, min(width, math.ceil(input_bytes / BYTES_PER_PARTITION)))
    settings = {"spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": str(partitions),
                "spark.sql.autoBroadcastJoinThreshold": "-1"}
    if input_bytes <= interpreted_run_limit():
        settings.update(INTERPRETED)
    return settings


def jvm_conf_for(inputs: list[str]) -> dict[str, str]:
    """Session settings for a command-line run over `inputs`: the small-run JVM options when every input is
    local and they total at most :func:`interpreted_run_limit` bytes (a walk of the folders; no Spark), with the
    class archive of :mod:`cdcnorm.runtime.jvm_archive`."""
    options = os.environ.get("CDCNORM_SMALL_RUN_JVM_OPTIONS", SMALL_RUN_JVM_OPTIONS).strip()
    if not options or not inputs or not all(is_local(p) for p in inputs):
        return {}
    if sum(local_size(p) for p in inputs) > interpreted_run_limit():
        return {}
    archive = jvm_archive.jvm_options()
    return {"spark.driver.extraJavaOptions": f"{options} {archive}".strip()}


_LOCK = threading.Lock()
_ACTIVE: dict[int, tuple[int, dict[str, str | None]]] = {}
"""per session: runs under way, and the session's own values of every key they may set"""
_KEYS = ("spark.sql.adaptive.enabled", "spark.sql.shuffle.partitions", "spark.sql.autoBroadcastJoinThreshold",
         *INTERPRETED)


@contextlib.contextmanager
def planned_for(spark: SparkSession, input_bytes: int | None) -> Iterator[dict[str, str]]:
    """Apply :func:`settings_for` for the duration of a run, then restore the session's values.

    Runs may overlap on one session (a follow query's batch thread and a caller's own run, or the batch command's
    query around its run): the session's own values are saved by the first and restored by the last to end, so an
    overlap never leaves a small run's settings on the session."""
    settings = settings_for(spark, input_bytes)
    session = id(spark)
    with _LOCK:
        depth, saved = _ACTIVE.get(session, (0, {}))
        if depth == 0:
            saved = {key: spark.conf.get(key, None) for key in _KEYS}
        _ACTIVE[session] = (depth + 1, saved)
        for key, value in settings.items():
            spark.conf.set(key, value)
    try:
        yield settings
    finally:
        with _LOCK:
            depth, saved = _ACTIVE.pop(session)
            if depth > 1:
                _ACTIVE[session] = (depth - 1, saved)
            else:
                for key, value in saved.items():
                    if value is None:
                        spark.conf.unset(key)
                    else:
                        spark.conf.set(key, value)
