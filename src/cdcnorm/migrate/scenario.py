"""A migration scenario: one vendor's history replayed as two vendors with an overlapping window.

Why from canonical rows: a migration is the same source history seen by two CDC tools, the old one until it is
switched off, the new one from its start (a backfill of the state at that moment, then its log). Deriving both
from one canonical history keeps the ground truth exact (it is the history itself) and lets tests inject the
differences a migration must catch, deterministically:

* `drop_change`: the new vendor misses one UPDATE inside the overlap;
* `change_value`: the new vendor delivers a different value in the last change of one key (inside the overlap);
* `delay_s`: the new vendor captures every change `delay_s` seconds later.

The old vendor keeps the history's rows (snapshot included) up to the end of the overlap; the new vendor gets a
backfill (SNAPSHOT rows of the state at the start of the overlap) and every log change from then on. Both keep
the history's source times, positions and keys; event ids and streams are their own.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from cdcnorm.errors import UsageError
from cdcnorm.lake.derived import hashed_id, write_run
from cdcnorm.lake.store import Lake
from cdcnorm.migrate.matching import from_us
from cdcnorm.state.types import parse_inferred

LOG_OPS = ("INSERT", "UPDATE", "DELETE")
_MAP = "map<string,variant>"


@dataclass
class Scenario:
    """Where the two vendors were written, their window, and what was injected (for assertions)."""

    old_lake: str
    old_vendor: str
    new_lake: str
    new_vendor: str
    start: dt.datetime
    end: dt.datetime
    injected: list[dict[str, Any]] = field(default_factory=list)


def migration(spark: SparkSession, history: str, out: str, *, out_new: str | None = None,
              history_vendor: str | None = None, old_vendor: str = "replicate", new_vendor: str = "datastream",
              overlap: tuple[float, float] = (0.35, 0.75), drop_change: bool = False, change_value: bool = False,
              delay_s: float = 0.0, project: str | None = None, seed: int = 0) -> Scenario:
    """Write the old vendor to `out` and the new one to `out_new` (default: the same lake, another vendor).

    `overlap` is the common window as fractions of the history's log time span (start > end: a gap, no
    overlap). `project` gives the new vendor a documented lossy projection of the values (see `projections()`).
    """
    if (out_new is None or out_new == out) and old_vendor == new_vendor:
        raise UsageError("In one lake the old and new vendor must differ (or give out_new).")
    h = Lake(spark, history).changes()
    if history_vendor:
        h = h.where(F.col("vendor") == history_vendor)
    schemas = Lake(spark, history).schemas()
    span = h.where(F.col("op").isin(*LOG_OPS)).agg(F.min(F.unix_micros("source_ts")).alias("a"),
                                                   F.max(F.unix_micros("source_ts")).alias("b")).collect()[0]
    if span["a"] is None:
        raise UsageError(f"The history in {history} has no log changes to build a migration from.")
    t0, t1 = int(span["a"]), int(span["b"])
    start_us, end_us = t0 + int((t1 - t0) * overlap[0]), t0 + int((t1 - t0) * overlap[1])
    start, end = from_us(start_us), from_us(end_us)
    assert start is not None and end is not None
    ts = F.col("source_ts")
    old = h.where((F.col("op") == "SNAPSHOT") | (ts <= F.lit(end)))
    new = h.where((F.col("op") != "SNAPSHOT") & (ts >= F.lit(start))).unionByName(_backfill(h, start))
    injected: list[dict[str, Any]] = []
    if drop_change:
        new = _drop_change(new, start, end, seed, injected)
    if change_value:
        new = _change_value(h, new, start, end, seed, injected)
    if delay_s:
        new = new.withColumn("capture_ts", F.col("capture_ts") + F.expr(f"make_dt_interval(0, 0, 0, {float(delay_s)})"))
        injected.append({"kind": "delay", "seconds": delay_s})
    new_schemas = schemas
    if project:
        new, new_schemas = _project(h, new, schemas, project)
        injected.append({"kind": "projection", "projection": project})
    out_new = out_new or out
    for rows, sv, vendor, lake, label in ((old, schemas, old_vendor, out, "old"), (new, new_schemas, new_vendor, out_new, "new")):
        stream = f"migration-{label}"
        write_run(spark, lake, _relabel(rows, vendor, stream), _relabel_schemas(sv, vendor, stream),
                  {"vendor": vendor, "inputs": [history], "scenario": {"side": label, "start": start.isoformat(),
                                                                        "end": end.isoformat()}})
    return Scenario(out, old_vendor, out_new, new_vendor, start, end, injected)


def projections() -> dict[str, dict[str, tuple[str, Callable[[Column], Column]]]]:
    """Lossy value projections a scenario can give the new vendor, by name: base type -> (new type, conversion),
    from every registered vendor's `VendorSpec.scenario_projections`."""
    from cdcnorm.adapters import specs

    return {name: p for s in specs() for name, p in s.scenario_projections.items()}


def _base(type_name: str) -> str:
    return "decimal" if type_name.startswith("decimal") else type_name


def _rebuilt(image: Column, columns: list, rules: dict) -> Column:
    """An image rebuilt from its typed columns, each projected by `rules` (absent columns become null)."""
    m = F.try_variant_get(image, "$", _MAP)
    fields = []
    for c in columns:
        v = F.try_element_at(m, F.lit(c.name))
        if c.type != "variant":
            v = F.try_variant_get(v, "$", c.type)
            if _base(c.type) in rules:
                v = rules[_base(c.type)][1](v)
        fields.append(v.alias(c.name))
    return F.when(image.isNull(), image).otherwise(F.to_variant_object(F.struct(*fields)))


def _project(h: DataFrame, new: DataFrame, schemas: DataFrame, kind: str) -> tuple[DataFrame, DataFrame]:
    """Rebuild every image of the new vendor with its projection (and its schema versions' types)."""
    rules = projections()[kind]
    tables = (h.where(F.col("table").isNotNull()).groupBy("database", "schema", "table")
              .agg(F.schema_of_variant_agg(F.coalesce("after", "before")).alias("ddl")).collect())
    after, before = F.col("after"), F.col("before")
    for t in tables:
        columns = parse_inferred(t["ddl"])
        if columns:
            after = F.when(_table_eq(t), _rebuilt(F.col("after"), columns, rules)).otherwise(after)
            before = F.when(_table_eq(t), _rebuilt(F.col("before"), columns, rules)).otherwise(before)

    def retype(c: Column) -> Column:
        t = c["canonical_type"]
        out = t
        for base, (to, _conv) in rules.items():
            out = F.when(t.startswith("decimal") if base == "decimal" else t == base, F.lit(to)).otherwise(out)
        # a projected type is declared by the new vendor: it replaces an inferred (`json:`) summary too
        projected = F.coalesce(out != t, F.lit(False))
        return (c.withField("canonical_type", out)
                .withField("vendor_type", F.when(projected, out).otherwise(c["vendor_type"])))

    return (new.withColumn("after", after).withColumn("before", before),
            schemas.withColumn("columns", F.transform("columns", retype)))


def _relabel(rows: DataFrame, vendor: str, stream: str) -> DataFrame:
    """The same changes as another vendor's stream: own vendor, stream, format and event ids."""
    return (rows.withColumn("event_id", hashed_id(F.lit(vendor), F.lit(stream), F.col("event_id")))
            .withColumn("vendor", F.lit(vendor)).withColumn("stream", F.lit(stream))
            .withColumn("format", F.lit(f"{vendor}.scenario")))


def _relabel_schemas(schemas: DataFrame, vendor: str, stream: str) -> DataFrame:
    return schemas.withColumn("vendor", F.lit(vendor)).withColumn("stream", F.lit(stream))


def _backfill(h: DataFrame, start: dt.datetime) -> DataFrame:
    """SNAPSHOT rows of the state at `start`: the latest image of every live key (sort key `(0, *key)`)."""
    rows = h.where(F.col("op").isin(*LOG_OPS, "SNAPSHOT") & (F.col("source_ts") < F.lit(start))
                   & F.col("key_bytes").isNotNull())
    w = Window.partitionBy("database", "schema", "table", "key_bytes").orderBy(F.col("sort_key").desc())
    latest = rows.withColumn("_rn", F.row_number().over(w)).where((F.col("_rn") == 1) & (F.col("op") != "DELETE"))
    types = {f.name: f.dataType for f in h.schema.fields}
    at = F.lit(start).cast("timestamp")
    values = {
        "op": F.lit("SNAPSHOT"), "vendor_op": F.lit("SNAPSHOT"), "source_ts": at, "capture_ts": at,
        "sort_key": F.concat(F.lit(b"\x14"), F.col("key_bytes")),
        "event_id": hashed_id(F.lit("snapshot"), F.col("database"), F.col("schema"), F.col("table"), F.hex("key_bytes")),
        **{c: F.lit(None).cast(types[c]) for c in ("before", "changed_columns", "tx_id", "tx_seq", "tx_last",
                                                   "position", "ddl", "ddl_changes")},
    }
    return latest.select(*[values.get(c, F.col(f"`{c}`")).alias(c) for c in h.columns])


def _pick(candidates: DataFrame, seed: int) -> Any:
    """A deterministic choice among candidates (ordered by table and sort key): one row reaches the driver."""
    n = candidates.count()
    if n == 0:
        return None
    idx = (n // 2 + seed) % n
    w = Window.orderBy("database", "schema", "table", "sort_key")
    return candidates.withColumn("_i", F.row_number().over(w)).where(F.col("_i") == idx + 1).drop("_i").collect()[0]


def _table_eq(row: Any) -> Column:
    return (F.col("database").eqNullSafe(F.lit(row["database"])) & F.col("schema").eqNullSafe(F.lit(row["schema"]))
            & F.col("table").eqNullSafe(F.lit(row["table"])))


def _name(row: Any) -> str:
    return ".".join(p for p in (row["database"], row["schema"], row["table"]) if p is not None)


def _drop_change(new: DataFrame, start: dt.datetime, end: dt.datetime, seed: int, injected: list) -> DataFrame:
    ts = F.col("source_ts")
    cand = new.where((F.col("op") == "UPDATE") & (ts > F.lit(start)) & (ts < F.lit(end)))
    row = _pick(cand.select("database", "schema", "table", "sort_key", "event_id", F.to_json("key").alias("k"),
                            F.unix_micros("source_ts").alias("us")), seed)
    if row is None:
        raise UsageError("No UPDATE inside the overlap to drop.")
    injected.append({"kind": "dropped_change", "table": _name(row), "key": row["k"], "op": "UPDATE",
                     "source_ts": from_us(row["us"]).isoformat()})
    return new.where(F.col("event_id") != row["event_id"])


def _change_value(h: DataFrame, new: DataFrame, start: dt.datetime, end: dt.datetime, seed: int,
                  injected: list) -> DataFrame:
    """Change one column of the last change of one key (so the final state differs too)."""
    w = Window.partitionBy("database", "schema", "table", "key_bytes").orderBy(F.col("sort_key").desc())
    last = (h.where(F.col("op").isin(*LOG_OPS) & F.col("key_bytes").isNotNull())
            .withColumn("_rn", F.row_number().over(w)).where(F.col("_rn") == 1))
    ts = F.col("source_ts")
    cand = last.where(F.col("op").isin("INSERT", "UPDATE") & (ts > F.lit(start)) & (ts < F.lit(end)))
    row = _pick(cand.select("database", "schema", "table", "sort_key", "event_id", "primary_keys",
                            F.to_json("key").alias("k")), seed)
    if row is None:
        raise UsageError("No key whose last change lies inside the overlap.")
    ddl = h.where(_table_eq(row) & F.col("after").isNotNull()).agg(F.schema_of_variant_agg("after")).collect()[0][0]
    columns = parse_inferred(ddl, list(row["primary_keys"] or []))
    keys = set(row["primary_keys"] or [])
    target = next((c for c in sorted(columns, key=lambda c: c.name) if c.name not in keys
                   and (c.type.startswith("decimal") or c.type in ("int", "bigint", "double", "string"))), None)
    if target is None:
        raise UsageError(f"{_name(row)} has no numeric or string column to change.")
    image = F.try_variant_get(F.col("after"), "$", _MAP)
    fields = []
    for c in columns:
        value = F.try_variant_get(F.try_element_at(image, F.lit(c.name)), "$", c.type) if c.type != "variant" \
            else F.try_element_at(image, F.lit(c.name))
        if c.name == target.name:
            value = F.concat(value, F.lit("*")) if c.type == "string" else (value + F.lit(1)).cast(c.type)
        fields.append(value.alias(c.name))
    rebuilt = F.to_variant_object(F.struct(*fields))
    before = (h.where(F.col("event_id") == row["event_id"])
              .select(F.to_json(F.try_variant_get("after", f"$['{target.name}']", "variant")).alias("v")).collect()[0][0])
    injected.append({"kind": "changed_value", "table": _name(row), "key": row["k"], "column": target.name,
                     "history_value": before})
    return new.withColumn("after", F.when(F.col("event_id") == row["event_id"], rebuilt).otherwise(F.col("after")))
