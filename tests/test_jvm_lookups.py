"""cdcnorm.runtime.jvm_lookups: Py4J's class and method lookups kept, the calls and their results unchanged."""

from __future__ import annotations

from py4j import clientserver
from py4j.java_gateway import JavaClass, JVMView
from pyspark.sql import functions as F

from cdcnorm.runtime import jvm_lookups


def _round_trips(monkeypatch, make) -> list[str]:
    """The Py4J commands `make` sends (command name and its first argument)."""
    calls: list[str] = []
    send = clientserver.ClientServerConnection.send_command
    monkeypatch.setattr(clientserver.ClientServerConnection, "send_command",
                        lambda self, command: calls.append(" ".join(command.split("\n")[:2])) or send(self, command))
    make()
    return calls


def test_a_function_call_is_one_round_trip_once_looked_up(spark, monkeypatch):
    assert JVMView.__getattr__ is jvm_lookups._view_attr  # installed on import of cdcnorm.runtime
    df = spark.range(1)
    F.col("warm"), df.select("id")
    assert _round_trips(monkeypatch, lambda: F.col("x")) == ["c z:org.apache.spark.sql.functions"]
    select = _round_trips(monkeypatch, lambda: df.select("id"))
    assert not [c for c in select if c.startswith("r ")]  # no reflection left in a select
    monkeypatch.setattr(JVMView, "__getattr__", jvm_lookups._view_lookup)
    monkeypatch.setattr(JavaClass, "__getattr__", jvm_lookups._class_lookup)
    assert len(_round_trips(monkeypatch, lambda: F.col("x"))) == 3  # Py4J's own: class, method, call


def test_kept_lookups_compute_what_pyspark_computes(spark):
    df = spark.createDataFrame([(1, "a"), (None, "b")], "n int, s string")
    got = df.select(F.when(F.col("n").isNotNull(), F.lit(10) + F.col("n")).alias("v"), F.upper("s").alias("u"))
    assert [tuple(r) for r in got.collect()] == [(11, "A"), (None, "B")]


def test_a_class_is_kept_but_a_static_field_is_read_each_time(spark):
    jvm = spark.sparkContext._jvm
    assert jvm.PythonUtils is jvm.PythonUtils
    integer = getattr(jvm, "java.lang.Integer")
    assert integer is getattr(jvm, "java.lang.Integer")
    assert integer.MAX_VALUE == 2**31 - 1 and integer.toString(7) == "7"
    kept = integer.__dict__[jvm_lookups._KEPT]
    assert "toString" in kept and "MAX_VALUE" not in kept
