"""`cdcnorm apply`: the current state of every source table, rebuilt from the canonical lake (module `current`,
so the function `cdcnorm.apply` keeps its name).

Full recomputation in one shuffle: every applicable change of every table is repartitioned once by
(table, row key); the latest value of each column since the key's last reset (DELETE, or the table's last
TRUNCATE) is picked by `sort_key`, generically over the images as `map<string, variant>`, so the number of
tables never multiplies the work. The state is staged once, partitioned by table, then each table is typed
from its latest schema version and written to `LAKE/current/<vendor>/<stream>/<database>/<schema>/<table>/`
(see :func:`path_component`). `LAKE/current/_tables.json` indexes what was written. Semantics: docs/apply.md.
"""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass, field
from typing import Any, NamedTuple
from urllib.parse import quote

import orjson
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdcnorm.apply_types import OutputColumn, extract, parse_inferred, spark_type, spark_type_name
from cdcnorm.canonical.schema import OPS
from cdcnorm.errors import UsageError
from cdcnorm.lake import Lake
from cdcnorm.session import keep_exact_variants

IDENT = ("vendor", "stream", "database", "schema", "table")
ROW_OPS = ("INSERT", "UPDATE", "DELETE", "SNAPSHOT")
APPLIED_OPS = (*ROW_OPS, "TRUNCATE")
IGNORED_OPS = tuple(o for o in OPS if o not in APPLIED_OPS)
CURRENT = "current"
INDEX = "_tables.json"
SMALL_TABLE_ROWS = 1_000_000
"""Tables up to this many rows are written as one file."""

_IMAGE = "map<string,variant>"
_STATE = T.StructType([
    T.StructField("_gkey", T.BinaryType()),
    T.StructField("values", T.MapType(T.StringType(), T.VariantType())),
    T.StructField("_n", T.LongType()),
])
_STAGED = T.StructType([*_STATE.fields, T.StructField("_tid", T.StringType())])


class TableId(NamedTuple):
    """Identity of a source table: null-safe (vendor, stream, database, schema, table)."""

    vendor: str
    stream: str
    database: str | None
    schema: str | None
    table: str | None

    @property
    def name(self) -> str:
        """`database.schema.table` without the null parts (`db.table` for MySQL-family sources)."""
        return ".".join(p for p in (self.database, self.schema, self.table) if p is not None)


def path_component(value: str | None) -> str:
    """One folder name of the path rule: injective, safe on every file system and for Spark's listing.

    Percent-encode everything but letters, digits and `-._~` (so `/` in stream names, `=`, `:` and glob
    characters are escaped); a leading `.` or `_` is encoded too, which keeps `..` out and stops Hadoop/Spark
    treating the folder as hidden. That frees every spelling that starts with `_` for sentinels: null is `_`
    and the empty string is `_empty`.
    """
    if value is None:
        return "_"
    if value == "":
        return "_empty"
    enc = quote(value, safe="")
    if enc[0] in "._":
        enc = f"%{ord(enc[0]):02X}{enc[1:]}"
    return enc


def relative_path(tid: TableId) -> str:
    """`current/<vendor>/<stream>/<database>/<schema>/<table>` for a table, relative to the lake."""
    return "/".join((CURRENT, *(path_component(v) for v in tid)))


def table_path(lake: str, tid: TableId | tuple) -> str:
    """Where `cdcnorm apply` writes a table's current state: `LAKE/current/...` (see :func:`path_component`)."""
    return lake.rstrip("/") + "/" + relative_path(TableId(*tid))


class ApplyResult(dict):
    """`{TableId: DataFrame}` of current-state tables, plus `summary` (what was written and counted)."""

    def __init__(self, frames: dict[TableId, DataFrame], summary: dict[str, Any], cached: DataFrame | None = None):
        super().__init__(frames)
        self.summary = summary
        self._cached = cached

    def unpersist(self) -> None:
        """Free the persisted state behind `write=False` views (they recompute if used afterwards)."""
        if self._cached is not None:
            self._cached.unpersist()


@dataclass
class TablePlan:
    """How one table is applied: its columns, key mode and the counts reported for it."""

    tid: TableId
    hid: str
    columns: list[OutputColumn]
    schema_version: str | None
    schema_source: str
    key_mode: str
    key_columns: list[str]
    truncated_at: bytes | None
    stats: dict[str, Any] = field(default_factory=dict)
    rows: int = 0


def _tid_col() -> Column:
    """A null-safe, non-null table id (VARIANT-free and short) to partition and join on."""
    return F.substring(F.sha2(F.to_json(F.array(*[F.col(f"`{c}`") for c in IDENT])), 256), 1, 32)


def _name_filter(tables: list[str] | None) -> Column | None:
    """`table`, `schema.table` or `db.schema.table`, case-insensitive, matched as a dotted suffix."""
    if not tables:
        return None
    name = F.lower(F.concat_ws(".", "database", "schema", "table"))
    cond = F.lit(False)
    for t in tables:
        t = t.strip().lower()
        cond = cond | (name == t) | name.endswith("." + t)
    return cond


# -- the public API ------------------------------------------------------------------------------------------
def apply(spark: SparkSession, lake: str, tables: list[str] | None = None, write: bool = True) -> ApplyResult:
    """Current state of every source table in `lake` (or those named in `tables`) as typed DataFrames.

    With `write`, each table is written (overwrite) under `LAKE/current/` and the returned DataFrames read
    the written files; without it, the state is computed once, persisted, and the DataFrames are views of it.
    """
    keep_exact_variants(spark)
    lk = Lake(spark, lake)
    selected = _name_filter(tables)
    changes = lk.changes().withColumn("_tid", _tid_col())
    schemas = lk.schemas()
    if selected is not None:
        changes, schemas = changes.where(selected), schemas.where(selected)
    latest = _latest_schemas(schemas)
    stats = _table_stats(changes, set(latest))
    plans = _plan_tables(stats, latest)
    if tables and not plans:
        raise UsageError(f"No table in {lake} matches {', '.join(tables)} (give table, schema.table or db.schema.table).")
    frames: dict[TableId, DataFrame] = {}
    cached = None
    if plans:
        state = _state(changes, plans)
        if write:
            frames = _write_tables(lk, state, plans)
        else:
            cached = state.persist(StorageLevel.MEMORY_AND_DISK)
            frames = _views(cached, plans)
    summary = _summary(lake, plans, stats)
    if write:
        _write_index(lk, summary, replace_all=not tables)
    return ApplyResult(frames, summary, cached)


# -- schemas and per-table statistics (one row per table, collected: metadata, never data) -------------------
def _latest_schemas(schemas: DataFrame) -> dict[str, dict[str, Any]]:
    """The latest schema version per table: by `first_seen`, then numerically, then textually by version."""
    order = Window.partitionBy("_tid").orderBy(
        F.col("first_seen").desc_nulls_last(),
        F.expr("try_cast(schema_version AS decimal(38,0))").desc_nulls_last(),
        F.col("schema_version").desc(),
    )
    rows = (schemas.withColumn("_tid", _tid_col()).withColumn("_rn", F.row_number().over(order))
            .where(F.col("_rn") == 1).select("_tid", *IDENT, "schema_version", "columns").collect())
    return {r["_tid"]: r.asDict(recursive=True) for r in rows}


def _table_stats(changes: DataFrame, with_schema: set[str]) -> dict[str, dict[str, Any]]:
    """One aggregate over the changes: truncate positions, key coverage, counts, and inferred columns."""
    op, sk = F.col("op"), F.col("sort_key")
    orphan = (op == "UPDATE") & F.col("after").isNull()
    applied = op.isin(*ROW_OPS) & ~orphan
    data = op.isin(*APPLIED_OPS)
    image = F.when(op == "DELETE", F.col("before")).otherwise(F.col("after"))
    no_schema = ~F.col("_tid").isin(*sorted(with_schema)) if with_schema else F.lit(True)
    aggs = [
        F.max(F.when(op == "TRUNCATE", sk)).alias("truncated_at"),
        F.count_if(op == "TRUNCATE").alias("truncates"),
        F.count_if(applied).alias("row_changes"),
        F.count_if(orphan).alias("orphan_updates_ignored"),
        F.count_if(applied & F.col("key_bytes").isNull()).alias("unkeyed"),
        F.count_if(applied & F.col("key_bytes").isNull() & F.col("key").isNull() & image.isNull()).alias("unkeyable"),
        F.count_if((op == "UPDATE") & F.col("before").isNull() & F.col("after").isNotNull()).alias("updates_without_before"),
        F.max_by("primary_keys", F.when(F.col("primary_keys").isNotNull(), sk)).alias("event_keys"),
        F.max(F.when(data, sk)).alias("last_sort_key"),
        F.max_by("position", F.when(data, sk)).alias("last_position"),
        F.max_by("source_ts", F.when(data, sk)).alias("last_source_ts"),
        F.schema_of_variant_agg(F.when(no_schema & applied & (op != "DELETE"), F.col("after"))).alias("inferred"),
        *[F.count_if(op == o).alias(f"ignored_{o}") for o in IGNORED_OPS],
    ]
    rows = changes.groupBy("_tid", *IDENT).agg(*aggs).collect()
    out = {}
    for r in rows:
        d = r.asDict(recursive=True)
        for k in ("truncated_at", "last_sort_key"):
            d[k] = bytes(d[k]) if d[k] is not None else None
        d["ignored_ops"] = {o: d.pop(f"ignored_{o}") for o in IGNORED_OPS if d[f"ignored_{o}"]}
        out[d["_tid"]] = d
    return out


def _schema_columns(schema: dict[str, Any]) -> list[OutputColumn]:
    cols = sorted(schema["columns"] or [], key=lambda c: (c["ordinal"] is None, c["ordinal"] or 0, c["name"]))
    seen: set[str] = set()
    out = []
    for c in cols:
        if c["name"] is not None and c["name"] not in seen:
            seen.add(c["name"])
            out.append(OutputColumn(c["name"], spark_type_name(c["canonical_type"]), c["canonical_type"]))
    return out


def _schema_keys(schema: dict[str, Any] | None) -> list[str]:
    if not schema:
        return []
    pks = [c for c in schema["columns"] or [] if c["pk_position"] is not None and c["name"] is not None]
    return [c["name"] for c in sorted(pks, key=lambda c: c["pk_position"])]


def _plan_tables(stats: dict[str, dict], latest: dict[str, dict]) -> list[TablePlan]:
    """Decide columns and key mode per table: every table with a data change or a schema version."""
    plans = []
    for hid in sorted(set(stats) | set(latest)):
        st, sv = stats.get(hid), latest.get(hid)
        if sv is None and not (st and (st["row_changes"] or st["truncates"])):
            continue  # only DDL/heartbeat/transaction rows: nothing to apply (counted in the summary)
        src = sv or st
        tid = TableId(*(src[c] for c in IDENT))
        event_keys = (st or {}).get("event_keys") or []
        schema_keys = _schema_keys(sv)
        if not st or not st["unkeyed"]:
            mode, keys = "event", event_keys or schema_keys
        elif schema_keys or event_keys:
            mode, keys = "derived", schema_keys or event_keys
        else:
            mode, keys = "keyless", []
        if sv is not None:
            columns, source, version = _schema_columns(sv), "schema_version", sv["schema_version"]
        else:
            columns, source, version = parse_inferred(st["inferred"], keys), "inferred", None
        plans.append(TablePlan(tid, hid, columns, version, source, mode, keys,
                               (st or {}).get("truncated_at"), st or {}))
    return plans


# -- the state: one shuffle by (table, key) ------------------------------------------------------------------
def _state(changes: DataFrame, plans: list[TablePlan]) -> DataFrame:
    """`_tid, _gkey, values (map<string, variant>), _n (row multiplicity)` of every live row.

    Each change is shuffled once, by (table, group key); keyed and keyless tables take separate branches
    (disjoint rows), built only when such tables exist.
    """
    spark = changes.sparkSession
    params = spark.createDataFrame(
        [(p.hid, p.truncated_at, p.key_mode, p.key_columns) for p in plans],
        "_tid string, _trunc binary, _mode string, _pks array<string>",
    )
    op = F.col("op")
    rows = (changes.where(op.isin(*ROW_OPS) & ~((op == "UPDATE") & F.col("after").isNull()))
            .join(F.broadcast(params), "_tid")
            .where(F.col("_trunc").isNull() | (F.col("sort_key") > F.col("_trunc"))))
    modes = {p.key_mode for p in plans}
    parts = []
    if modes - {"keyless"}:
        entries = _keyed_entries(rows.where(F.col("_mode") != "keyless"))
        parts.append(_merge_keyed(entries.repartition("_tid", "_gkey")))
    if "keyless" in modes:
        entries = _keyless_entries(rows.where(F.col("_mode") == "keyless"))
        parts.append(_count_keyless(entries.repartition("_tid", "_gkey")))
    return parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])


def _as_image(col: Column) -> Column:
    return F.try_variant_get(col, "$", _IMAGE)


def _keyed_entries(rows: DataFrame) -> DataFrame:
    """One entry per change: its group key, and the columns it carries (missing columns dropped)."""
    op = F.col("op")
    df = rows.select(
        "_tid", "_mode", "_pks", "op", "sort_key", "key_bytes", "missing_columns",
        _as_image(F.col("after")).alias("_after"), _as_image(F.col("key")).alias("_keymap"),
        _as_image(F.col("before")).alias("_before"),
    )
    source = F.when(op == "DELETE", F.col("_before")).otherwise(F.coalesce("_after", "_before"))
    df = df.withColumn("_kv", F.transform(
        "_pks", lambda c: F.coalesce(F.try_element_at(F.col("_keymap"), c), F.try_element_at(source, c))))
    keyable = F.exists("_kv", lambda v: v.isNotNull() & ~F.is_variant_null(v))
    gkey = F.when(F.col("_mode") == "event", F.col("key_bytes")).when(keyable, F.to_json("_kv").cast("binary"))
    missing = F.coalesce(F.col("missing_columns"), F.array().cast("array<string>"))
    df = df.select("_tid", "op", "sort_key", gkey.alias("_gkey"), "_keymap",
                   F.map_filter("_after", lambda k, _v: ~F.array_contains(missing, k)).alias("_present"))
    present, keymap = F.col("_present"), F.col("_keymap")
    extra = F.map_filter(keymap, lambda k, _v: present.isNull() | ~F.map_contains_key(present, k))
    image = (F.when(op == "DELETE", F.lit(None))
             .when(keymap.isNull(), present).when(present.isNull(), keymap)
             .otherwise(F.map_concat(extra, present)))
    return df.where(F.col("_gkey").isNotNull()).select("_tid", "_gkey", "op", "sort_key", image.alias("_img"))


def _keyless_entries(rows: DataFrame) -> DataFrame:
    """Keyless tables: the row image is the key; DELETE (and an UPDATE's before) -1, the new image +1."""
    op = F.col("op")
    minus = F.struct(F.lit(-1).alias("sign"), F.lit(0).alias("sub"),
                     F.when(op.isin("DELETE", "UPDATE"), F.col("before")).alias("v"))
    plus = F.struct(F.lit(1).alias("sign"), F.lit(1).alias("sub"), F.when(op != "DELETE", F.col("after")).alias("v"))
    exploded = rows.select(
        "_tid", "sort_key", F.explode(F.filter(F.array(minus, plus), lambda e: e["v"].isNotNull())).alias("e"))
    return exploded.select(
        "_tid", "sort_key", F.to_json(F.col("e.v")).cast("binary").alias("_gkey"),
        F.col("e.sub").alias("_sub"), F.col("e.sign").alias("_sign"), _as_image(F.col("e.v")).alias("_img"),
    )


def _merge_keyed(entries: DataFrame) -> DataFrame:
    """Per key: each column's last present value after the key's last DELETE; no change after it, no row."""
    w = Window.partitionBy("_tid", "_gkey")
    sk = F.col("sort_key")
    marked = entries.withColumn("_del", F.max(F.when(F.col("op") == "DELETE", sk)).over(w))
    live = marked.where((F.col("op") != "DELETE") & (F.col("_del").isNull() | (sk > F.col("_del"))))
    cells = live.select("_tid", "_gkey", "sort_key", F.explode_outer("_img").alias("_col", "_val"))
    per_col = cells.groupBy("_tid", "_gkey", "_col").agg(F.max_by("_val", "sort_key").alias("_val"))
    entry = F.when(F.col("_col").isNotNull(), F.struct(F.col("_col").alias("k"), F.col("_val").alias("v")))
    return (per_col.groupBy("_tid", "_gkey").agg(F.map_from_entries(F.collect_list(entry)).alias("values"))
            .withColumn("_n", F.lit(1).cast("long")))


def _count_keyless(entries: DataFrame) -> DataFrame:
    """Multiset of row images: running count in change order, never below zero (a DELETE of nothing is a no-op).

    The final count of a reflected walk is `S_end - min(0, min S_k)` over the running sums S_k.
    """
    order = (Window.partitionBy("_tid", "_gkey").orderBy("sort_key", "_sub")
             .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    runs = entries.withColumn("_run", F.sum("_sign").over(order))
    plus = F.col("_sign") > 0
    agg = runs.groupBy("_tid", "_gkey").agg(
        F.max_by("_run", F.struct("sort_key", "_sub")).alias("_end"), F.min("_run").alias("_low"),
        F.max_by(F.when(plus, F.col("_img")), F.when(plus, F.col("sort_key"))).alias("values"),
    )
    n = (F.col("_end") - F.least(F.lit(0).cast("long"), F.col("_low"))).cast("long")
    return agg.select("_tid", "_gkey", "values", n.alias("_n")).where(F.col("_n") > 0)


# -- typing and writing ------------------------------------------------------------------------------------
def _typed(state: DataFrame, plan: TablePlan) -> DataFrame:
    """The table's columns from its schema, typed; keyless rows repeated by their multiplicity."""
    if plan.key_mode == "keyless":
        state = state.withColumn("_rep", F.explode(F.sequence(F.lit(1).cast("long"), F.col("_n"))))
    if not plan.columns:
        return state.select(F.col("values").alias("_row"))  # no schema and nothing to infer from: keep the image
    return state.select(*[extract(F.col("values"), c.name, c.type, c.canonical_type).alias(c.name)
                          for c in plan.columns])


def _output_schema(plan: TablePlan) -> T.StructType:
    if not plan.columns:
        return T.StructType([T.StructField("_row", T.MapType(T.StringType(), T.VariantType()))])
    return T.StructType([T.StructField(c.name, spark_type(c.type)) for c in plan.columns])


def _write_tables(lk: Lake, state: DataFrame, plans: list[TablePlan]) -> dict[TableId, DataFrame]:
    """Stage the state once (partitioned by table), count it, then type and overwrite each table."""
    spark = lk.spark
    staging = f"{lk.path}/{CURRENT}/_staging/{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"
    try:
        state.write.partitionBy("_tid").parquet(staging)
        counts = _counts(spark.read.schema(_STAGED).parquet(staging))
        frames = {}
        for plan in plans:
            plan.rows = counts.get(plan.hid, 0)
            part = f"{staging}/_tid={plan.hid}"
            if plan.rows:
                out = _typed(spark.read.schema(_STATE).parquet(part), plan)
                if plan.rows <= SMALL_TABLE_ROWS:
                    out = out.coalesce(1)
            else:
                out = spark.createDataFrame([], _output_schema(plan))
            path = table_path(lk.path, plan.tid)
            out.write.mode("overwrite").parquet(path)
            frames[plan.tid] = spark.read.schema(_output_schema(plan)).parquet(path)
        return frames
    finally:
        lk.fs.delete(staging)
        if not lk.fs.list_dir(staging.rsplit("/", 1)[0]):
            lk.fs.delete(staging.rsplit("/", 1)[0])


def _views(state: DataFrame, plans: list[TablePlan]) -> dict[TableId, DataFrame]:
    """write=False: per-table views of the (persisted) state."""
    counts = _counts(state)
    frames = {}
    for plan in plans:
        plan.rows = counts.get(plan.hid, 0)
        frames[plan.tid] = _typed(state.where(F.col("_tid") == plan.hid), plan)
    return frames


def _counts(state: DataFrame) -> dict[str, int]:
    return {r["_tid"]: int(r["rows"]) for r in state.groupBy("_tid").agg(F.sum("_n").alias("rows")).collect()}


# -- summary and index ---------------------------------------------------------------------------------------
def _summary(lake: str, plans: list[TablePlan], stats: dict[str, dict]) -> dict[str, Any]:
    tables = [_entry(p) for p in plans]
    ignored: dict[str, int] = {}
    for st in stats.values():
        for o, n in st["ignored_ops"].items():
            ignored[o] = ignored.get(o, 0) + n
    return {
        "lake": lake,
        "applied_at": dt.datetime.now(dt.UTC).isoformat(),
        "tables": tables,
        "totals": {
            "tables": len(tables),
            "rows": sum(t["rows"] for t in tables),
            "orphan_updates_ignored": sum(t["orphan_updates_ignored"] for t in tables),
            "unkeyable_rows_ignored": sum(t["unkeyable_rows_ignored"] for t in tables),
            "ignored_ops": dict(sorted(ignored.items())),
        },
    }


def _entry(p: TablePlan) -> dict[str, Any]:
    st = p.stats
    ts = st.get("last_source_ts")
    return {
        **p.tid._asdict(),
        "path": relative_path(p.tid),
        "rows": p.rows,
        "columns": [{"name": c.name, "type": c.type} for c in p.columns],
        "schema_version": p.schema_version,
        "schema_source": p.schema_source,
        "key_mode": p.key_mode,
        "key_columns": p.key_columns,
        "changes_applied": st.get("row_changes", 0),
        "truncates": st.get("truncates", 0),
        "truncated_at": p.truncated_at.hex() if p.truncated_at else None,
        "last_sort_key": st["last_sort_key"].hex() if st.get("last_sort_key") else None,
        "last_position": st.get("last_position"),
        "last_source_ts": ts.isoformat() if ts else None,
        "orphan_updates_ignored": st.get("orphan_updates_ignored", 0),
        "unkeyable_rows_ignored": st.get("unkeyable", 0) if p.key_mode == "derived" else 0,
        "keyless_updates_without_before": st.get("updates_without_before", 0) if p.key_mode == "keyless" else 0,
        "ignored_ops": st.get("ignored_ops", {}),
    }


def _write_index(lk: Lake, summary: dict[str, Any], replace_all: bool) -> None:
    """`LAKE/current/_tables.json`; a filtered run keeps the other tables' entries."""
    path = f"{lk.path}/{CURRENT}/{INDEX}"
    entries = {e["path"]: e for e in summary["tables"]}
    if not replace_all and lk.fs.exists(path):
        old = orjson.loads(lk.fs.read_text(path)).get("tables", [])
        entries = {**{e["path"]: e for e in old}, **entries}
    doc = {"index_format": 1, "applied_at": summary["applied_at"], "tables": [entries[k] for k in sorted(entries)]}
    lk.fs.write_text(path, orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode())


def read_index(spark: SparkSession, lake: str) -> list[dict[str, Any]]:
    """Entries of `LAKE/current/_tables.json` (empty before the first apply)."""
    lk = Lake(spark, lake)
    path = f"{lk.path}/{CURRENT}/{INDEX}"
    return orjson.loads(lk.fs.read_text(path))["tables"] if lk.fs.exists(path) else []


# -- command line ------------------------------------------------------------------------------------------
def apply_command(lake: str, tables: list[str] | None, master: str | None) -> int:
    """`cdcnorm apply --lake LAKE [--table T ...]`: write current-state tables and list them."""
    from rich.console import Console
    from rich.table import Table

    from cdcnorm.session import get_spark

    console = Console()
    with console.status("applying changes"):
        result = apply(get_spark(master, quiet=True), lake, tables=tables or None)
    summary = result.summary
    out = Table(title="current-state tables")
    for col, just in (("path", "left"), ("rows", "right"), ("columns", "right"), ("key", "left"),
                      ("schema version", "left"), ("orphans ignored", "right")):
        out.add_column(col, justify=just, overflow="fold")
    for t in summary["tables"]:
        key = t["key_mode"] + (f" ({', '.join(t['key_columns'])})" if t["key_columns"] else "")
        out.add_row(f"{lake.rstrip('/')}/{t['path']}", str(t["rows"]), str(len(t["columns"])), key,
                    t["schema_version"] or f"[dim]{t['schema_source']}[/dim]", str(t["orphan_updates_ignored"]))
    console.print(out)
    tot = summary["totals"]
    ignored = ", ".join(f"{k} {v}" for k, v in tot["ignored_ops"].items()) or "none"
    console.print(f"{tot['tables']} table(s), {tot['rows']} row(s); orphan updates ignored: "
                  f"{tot['orphan_updates_ignored']}; non-data rows ignored: {ignored}; "
                  f"index: {lake.rstrip('/')}/{CURRENT}/{INDEX}", highlight=False)
    return 0
