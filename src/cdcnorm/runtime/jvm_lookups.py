"""JVM classes and methods looked up once through Py4J, not before every call.

Why: Py4J resolves `jvm.some.Class` and then `Class.method` by reflection, one round trip each, before the call
itself; nothing keeps what it found. Every `pyspark.sql.functions` call (`F.col`, `F.when`, `F.lit`, ...) resolves
`org.apache.spark.sql.functions` and its method that way, and every `select` PySpark's `PythonUtils`: three round
trips where one does (about 0.2 ms each on a shared machine). cdcnorm builds wide expressions, one per column of
each table (an apply of 24 small tables made about 10 000 such calls), so the lookups were a tenth of a small
apply's time. Kept: what a view resolves to a class, and a class's methods and inner classes, per object (a new
session's gateway objects start empty). Not kept: a static field's value (it may change), names that resolve to a
package. `CDCNORM_JVM_LOOKUP_CACHE=0` leaves Py4J as it is.
"""

from __future__ import annotations

import os
from typing import Any

from py4j.java_gateway import JavaClass, JavaMember, JVMView

_view_lookup = JVMView.__getattr__
_class_lookup = JavaClass.__getattr__
_KEPT = "_cdcnorm_kept"


def _kept_lookup(obj: Any, name: str, lookup: Any, keep: tuple[type, ...]) -> Any:
    """`lookup(obj, name)`, its result kept on `obj` when it is one of `keep`."""
    kept = obj.__dict__.get(_KEPT)
    if kept is None:
        kept = obj.__dict__[_KEPT] = {}
    found = kept.get(name)
    if found is None:
        found = lookup(obj, name)
        if isinstance(found, keep):
            kept[name] = found
    return found


def _view_attr(self: JVMView, name: str) -> Any:
    """`JVMView.__getattr__`, a class it resolves kept (`jvm.org.apache.spark.sql.functions`, `jvm.PythonUtils`)."""
    return _kept_lookup(self, name, _view_lookup, (JavaClass,))


def _class_attr(self: JavaClass, name: str) -> Any:
    """`JavaClass.__getattr__`, a static method or inner class kept (a field's value is read each time; magic names
    go to Py4J, which refuses them)."""
    if name.startswith("__"):
        return _class_lookup(self, name)
    return _kept_lookup(self, name, _class_lookup, (JavaMember, JavaClass))


def install() -> None:
    """Route Py4J's lookups through the caches (idempotent; off with `CDCNORM_JVM_LOOKUP_CACHE=0`)."""
    if os.environ.get("CDCNORM_JVM_LOOKUP_CACHE", "1") != "0":
        JVMView.__getattr__ = _view_attr
        JavaClass.__getattr__ = _class_attr

