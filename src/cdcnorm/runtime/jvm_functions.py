"""Spark SQL functions looked up once per session, not on every call.

Why: every `pyspark.sql.functions` call (`F.col`, `F.when`, `F.lit`, ...) first resolves the JVM class
`org.apache.spark.sql.functions` and then its method by reflection, two Py4J round trips before the call itself
(about 0.2 ms on a shared machine). cdcnorm builds wide expressions, one per column of each table (an apply of
24 small tables makes about 10 000 such calls), so the lookups were a tenth of a small apply's time. The
resolved method is the same object PySpark would resolve again; only the lookup is kept. `CDCNORM_JVM_FUNCTION_CACHE=0`
leaves PySpark as it is.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from pyspark.sql.functions import builtin

_resolve: Callable[[str, Any], Callable] = builtin._get_jvm_function
_resolved: dict[tuple[str, int], tuple[Any, Callable]] = {}


def _cached(name: str, sc: Any) -> Callable:
    """PySpark's lookup, kept per function name and SparkContext (a new context resolves afresh)."""
    hit = _resolved.get((name, id(sc)))
    if hit is not None and hit[0] is sc:
        return hit[1]
    function = _resolve(name, sc)
    _resolved[(name, id(sc))] = (sc, function)
    return function


def install() -> None:
    """Route PySpark's function lookup through the cache (idempotent; off with `CDCNORM_JVM_FUNCTION_CACHE=0`)."""
    if os.environ.get("CDCNORM_JVM_FUNCTION_CACHE", "1") != "0":
        builtin._get_jvm_function = _cached
