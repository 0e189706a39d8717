"""cdcnorm.runtime.jvm_functions: PySpark's function lookup kept per session, the functions unchanged."""

from __future__ import annotations

from py4j import clientserver
from pyspark.sql import functions as F
from pyspark.sql.functions import builtin

from cdcnorm.runtime import jvm_functions


def _round_trips(monkeypatch, make) -> int:
    calls = []
    send = clientserver.ClientServerConnection.send_command
    monkeypatch.setattr(clientserver.ClientServerConnection, "send_command",
                        lambda self, command: calls.append(1) or send(self, command))
    make()
    return len(calls)


def test_a_function_call_is_one_round_trip_once_looked_up(spark, monkeypatch):
    assert builtin._get_jvm_function is jvm_functions._cached  # installed by cdcnorm.runtime.session
    F.col("warm")
    assert _round_trips(monkeypatch, lambda: F.col("x")) == 1
    monkeypatch.setattr(builtin, "_get_jvm_function", jvm_functions._resolve)
    assert _round_trips(monkeypatch, lambda: F.col("x")) == 3  # PySpark's own: class, method, call


def test_cached_functions_compute_what_pyspark_computes(spark):
    df = spark.createDataFrame([(1, "a"), (None, "b")], "n int, s string")
    got = df.select(F.when(F.col("n").isNotNull(), F.lit(10) + F.col("n")).alias("v"), F.upper("s").alias("u"))
    assert [tuple(r) for r in got.collect()] == [(11, "A"), (None, "B")]


def test_a_new_context_resolves_afresh(monkeypatch):
    class Context:  # stands for a SparkContext: only its identity matters to the cache
        pass

    resolved = []
    first, second = Context(), Context()
    monkeypatch.setattr(jvm_functions, "_resolved", {})
    monkeypatch.setattr(jvm_functions, "_resolve", lambda name, sc: resolved.append((name, sc)) or (name, sc))
    assert jvm_functions._cached("col", first) == ("col", first)
    assert jvm_functions._cached("col", first) == ("col", first)
    assert jvm_functions._cached("col", second) == ("col", second)
    assert resolved == [("col", first), ("col", second)]
