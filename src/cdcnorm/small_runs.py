"""Plan a small run as one Spark job per action: most runs (a follow micro-batch, a file that just landed) are tiny.

Adaptive execution (AQE) runs every shuffle of a query as a Spark job of its own and broadcasts small join sides
in jobs of their own, so a run of a few records cost about 60 jobs, nearly all of it fixed overhead. For input
up to :data:`SMALL_RUN_BYTES`, a run is planned without AQE and without broadcast joins, over a shuffle width
sized to its input (one partition per :data:`BYTES_PER_PARTITION`, at most the session's own width): each action
is one job whose stages run back to back. Larger runs keep the session's settings, where AQE's coalescing and
skew handling pay off. The settings are restored when the run ends (they are the session's, so a query started
meanwhile on the same session in another thread would see them: cdcnorm's own queries do not overlap).
`CDCNORM_SMALL_RUN_BYTES=0` turns this off.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator

from pyspark.sql import SparkSession

SMALL_RUN_BYTES = 256 << 20
BYTES_PER_PARTITION = 32 << 20


def small_run_limit() -> int:
    return int(os.environ.get("CDCNORM_SMALL_RUN_BYTES", SMALL_RUN_BYTES))


def settings_for(spark: SparkSession, input_bytes: int | None) -> dict[str, str]:
    """The session settings a run over `input_bytes` of input is planned with (empty: the session's own)."""
    if input_bytes is None or input_bytes > small_run_limit():
        return {}
    width = int(spark.conf.get("spark.sql.shuffle.partitions", "8"))
    partitions = max(1, min(width, math.ceil(input_bytes / BYTES_PER_PARTITION)))
    return {"spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": str(partitions),
            "spark.sql.autoBroadcastJoinThreshold": "-1"}


@contextlib.contextmanager
def planned_for(spark: SparkSession, input_bytes: int | None) -> Iterator[dict[str, str]]:
    """Apply :func:`settings_for` for the duration of a run, then restore the session's values."""
    settings = settings_for(spark, input_bytes)
    saved = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield settings
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
