"""The members of a JSON line read by Spark, once each, with the exactness checks a Spark decode path gathers.

Why a class of its own: an adapter's Spark decode (`Adapter.jvm_decode`, docs/architecture.md "Two decode paths")
reads tens of envelope members and derives values that several canonical columns share. Two costs decide its speed:

- where a member is read from: one `from_json` of the line into a struct of exactly the members read (`_e`), each a
  VARIANT of its own (so its JSON type is known), costs less than looking names up in the line's whole VARIANT, a
  search of its key dictionary per read. `from_json` takes the last of duplicate keys, as `loads_exact` does;
- how often an expression runs: inlined, Spark repeats an expression in every column that reads it. Every member
  read (`get`) and every value kept (`keep`) is a named column computed once, in a projection per level of values
  that read others (`with_values`).

The line must be valid JSON for the members to mean anything: `with_values` reads them where `valid` holds (the
caller's `try_parse_json` test).
"""

from __future__ import annotations

import functools
import operator
import re

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

OBJECT_PROBE = "struct<`\x00`:int>"
"""A struct type whose one field no JSON member is named: a member casts to it exactly when it is an object."""
_KEPT_NAME = re.compile(r"_k_[a-z_]+")
_NAME = re.compile(r"[a-z_]+")
ENVELOPE = "_e"


class JsonMembers:
    """The members one decode reads from its lines (`$.name` or `$.name.inner`), the values it keeps, its checks."""

    def __init__(self, line: Column, valid: Column):
        self.line, self.valid = line, valid
        self.checks: list[Column] = []
        self.reads: dict[str, Column] = {}
        self.kept: dict[str, Column] = {}
        self._names: dict[tuple[str, str], str] = {}
        self._members: dict[str, set[str]] = {}  # top-level name -> the names read inside it (set: an object)

    def member(self, path: str) -> Column:
        """The VARIANT of `$.name` or `$.name.inner` (or the struct of `$.name` when names inside it are read)."""
        parts = path.removeprefix("$.").split(".")
        if len(parts) > 2 or not all(_NAME.fullmatch(n) for n in parts):
            raise ValueError(f"a member path of one or two plain names, not {path!r}")
        inner = self._members.setdefault(parts[0], set())
        if len(parts) == 2:
            inner.add(parts[1])
        column = F.col(ENVELOPE)[parts[0]]
        return column[parts[1]] if len(parts) == 2 else column

    def get(self, path: str, type_: str) -> Column:
        """`variant_get(member, '$', type_)`, read once (`type`: the member's JSON type name)."""
        name = self._names.get((path, type_))
        if name is None:
            name = self._names[(path, type_)] = f"_r{len(self._names)}"
            member = self.member(path)
            if type_ == "type":
                read = F.schema_of_variant(member)
            elif type_ == OBJECT_PROBE:
                read = F.try_variant_get(member, "$", type_)
            else:
                read = F.variant_get(member, "$", type_)
            self.reads[name] = read
        return F.col(name)

    def typ(self, path: str) -> Column:
        """The JSON type of a member (`STRING`, `BIGINT`, `VOID` for null, `OBJECT<...>`); NULL when absent."""
        return self.get(path, "type")

    def given(self, path: str) -> Column:
        """The member is present and not JSON null (Python's `is not None`)."""
        t = self.typ(path)
        return t.isNotNull() & (t != "VOID")

    def is_object(self, path: str) -> Column:
        """The member is a JSON object: it casts to a struct (of a field no JSON name has), with no copy of it and no
        type name built (`schema_of_variant` writes out every member's type)."""
        return self.get(path, OBJECT_PROBE).isNotNull()

    def is_struct(self, path: str) -> Column:
        """The member is a JSON object whose members are read (`$.name.inner`): `from_json` read it as a struct,
        NULL when absent, null or not an object."""
        return self.member(path).isNotNull()

    def keep(self, name: str, value: Column) -> Column:
        """`value` computed once, after the members are read (as `_k_<name>`)."""
        self.kept[f"_k_{name}"] = value
        return F.col(f"_k_{name}")

    def exact(self) -> Column:
        """Every check holds (NULL counts as failed); joined with `&`, not a lambda, which Spark runs interpreted."""
        return F.coalesce(functools.reduce(operator.and_, self.checks), F.lit(False))

    def envelope(self) -> str:
        """The struct type `from_json` reads: every member read, objects read inside as structs of VARIANTs."""
        fields = [f"`{n}`: struct<{', '.join(f'`{i}`: variant' for i in sorted(inner))}>" if inner else f"`{n}`: variant"
                  for n, inner in sorted(self._members.items())]
        return f"struct<{', '.join(fields)}>"

    def with_values(self, df: DataFrame) -> DataFrame:
        """`df` with the members read and the values kept: one projection per level of values that read others
        (each projection writes the whole row again)."""
        df = df.withColumn(ENVELOPE, F.when(self.valid, F.from_json(self.line, self.envelope())))
        df = df.withColumns(self.reads)
        level: dict[str, int] = {}
        for name, value in self.kept.items():  # kept in order: a value reads only those kept before it
            level[name] = 1 + max((level[n] for n in _KEPT_NAME.findall(str(value)) if n in level), default=0)
        for depth in sorted(set(level.values())):
            df = df.withColumns({n: self.kept[n] for n, d in level.items() if d == depth})
        return df

    def columns(self) -> list[str]:
        """The working columns `with_values` adds, for the caller to drop once its columns are built."""
        return [ENVELOPE, *self.reads, *self.kept]
