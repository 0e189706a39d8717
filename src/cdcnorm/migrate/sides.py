"""The two sides of a comparison or cut-over: which lake and vendor (and stream), and which tables match.

Why its own module: `compare` and `cutover` select rows and pair tables the same way, and a user names a side
the same way in both (`--left-vendor V`, or `V:STREAM` when one vendor runs more than one stream).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cdcnorm.errors import UsageError
from cdcnorm.lake.store import Lake

DATA_ROW_OPS = ("INSERT", "UPDATE", "DELETE", "SNAPSHOT")


class TableRef(NamedTuple):
    """One source table as one side delivers it."""

    vendor: str
    stream: str
    database: str | None
    schema: str | None
    table: str | None
    source_db: str | None = None
    rows: int = 0

    @property
    def name(self) -> str:
        """`database.schema.table` without the null parts (what `apply` and `--table` accept)."""
        return ".".join(p for p in (self.database, self.schema, self.table) if p is not None)

    @property
    def ident(self) -> tuple[str | None, str | None, str | None]:
        return (self.database, self.schema, self.table)

    @property
    def folded(self) -> tuple[str, str, str]:
        """Case-insensitive identity: tables match across vendors by this."""
        return tuple((p or "").lower() for p in self.ident)  # type: ignore[return-value]

    def as_dict(self) -> dict[str, Any]:
        return {"vendor": self.vendor, "stream": self.stream, "database": self.database,
                "schema": self.schema, "table": self.table, "source_db": self.source_db, "name": self.name}


@dataclass
class Side:
    """One side: a lake, the vendor (and optionally stream) selected in it, and its rows."""

    label: str
    lake: str
    vendor: str
    stream: str | None
    lake_obj: Lake
    changes: DataFrame
    schemas: DataFrame
    tables: list[TableRef] = field(default_factory=list)

    @property
    def spec(self) -> str:
        return self.vendor + (f":{self.stream}" if self.stream else "")

    def run_reports(self) -> list[dict[str, Any]]:
        """Committed run reports of this side's vendor (small JSON files read on the driver)."""
        out = []
        for rep in self.lake_obj.run_reports():
            if rep.get("vendor") == self.vendor:
                out.append(rep)
        return out


@dataclass
class TablePair:
    """A table as the left (old) side and the right (new) side deliver it, and how the two were paired."""

    left: TableRef
    right: TableRef
    matched_by: str

    @property
    def name(self) -> str:
        if self.left.name.lower() == self.right.name.lower():
            return self.left.name
        return f"{self.left.name} -> {self.right.name}"


def parse_vendor_spec(spec: str | None) -> tuple[str | None, str | None]:
    """`V` or `V:STREAM` -> (vendor, stream)."""
    if not spec:
        return None, None
    vendor, _, stream = spec.partition(":")
    return vendor.strip() or None, stream.strip() or None


def open_side(spark: SparkSession, label: str, lake: str, spec: str | None,
              other_lake: str | None = None, other_spec: str | None = None) -> Side:
    """Open one side; without a vendor, take the lake's only vendor (or, when both sides share a lake with
    exactly two vendors and neither side names one, the first/second in name order)."""
    lk = Lake(spark, lake)
    vendor, stream = parse_vendor_spec(spec)
    changes = lk.changes()
    if vendor is None:
        vendors = sorted(r["vendor"] for r in changes.select("vendor").distinct().collect())
        vendor = _default_vendor(label, lake, vendors, other_lake, other_spec)
    sel = F.col("vendor") == vendor
    if stream is not None:
        sel = sel & (F.col("stream") == stream)
    rows = changes.where(sel)
    schemas = lk.schemas().where((F.col("vendor") == vendor) & (F.lit(stream is None) | (F.col("stream") == stream)))
    side = Side(label, lake, vendor, stream, lk, rows, schemas)
    side.tables = list_tables(side)
    if not side.tables:
        raise UsageError(f"The {label} side ({side.spec} in {lake}) has no table changes: check --{label}-vendor.")
    return side


def _default_vendor(label: str, lake: str, vendors: list[str], other_lake: str | None,
                    other_spec: str | None) -> str:
    if not vendors:
        raise UsageError(f"The lake {lake} holds no changes.")
    if len(vendors) == 1:
        return vendors[0]
    same_lake = other_lake is not None and other_lake.rstrip("/") == lake.rstrip("/")
    if same_lake and len(vendors) == 2:
        other_vendor, _ = parse_vendor_spec(other_spec)
        if other_vendor in vendors:
            return next(v for v in vendors if v != other_vendor)
        if other_vendor is None:
            return vendors[0] if label in ("left", "old") else vendors[1]
    raise UsageError(f"The lake {lake} holds several vendors ({', '.join(vendors)}): name the {label} one "
                     f"with --{label}-vendor.")


def list_tables(side: Side) -> list[TableRef]:
    """Tables with data changes on a side (one small aggregate); a table on two streams is ambiguous."""
    rows = (side.changes.where(F.col("table").isNotNull())
            .groupBy("stream", "database", "schema", "table")
            .agg(F.max("source_db").alias("source_db"), F.count_if(F.col("op").isin(*DATA_ROW_OPS)).alias("rows"))
            .collect())
    refs = sorted((TableRef(side.vendor, r["stream"], r["database"], r["schema"], r["table"], r["source_db"],
                            int(r["rows"])) for r in rows), key=lambda t: (t.folded, t.stream))
    seen: dict[tuple, TableRef] = {}
    for ref in refs:
        if ref.folded in seen and seen[ref.folded].stream != ref.stream:
            raise UsageError(
                f"{side.vendor} delivers {ref.name} on more than one stream ({seen[ref.folded].stream}, {ref.stream}) "
                f"in {side.lake}: name one with --{side.label}-vendor {side.vendor}:STREAM.")
        seen[ref.folded] = ref
    return refs


def spec_matches(spec: str, ref: TableRef) -> bool:
    """`table`, `schema.table`, `db.table` or `db.schema.table`, case-insensitive, as a dotted suffix."""
    parts = [p for p in spec.strip().lower().split(".") if p]
    names = [p.lower() for p in ref.ident if p is not None]
    return bool(parts) and names[-len(parts):] == parts


def parse_table_map(table_map: dict[str, str] | list[str] | tuple[str, ...] | None) -> dict[str, str]:
    """`{"left": "right"}` or ["LEFT=RIGHT", ...] (the command line form)."""
    if not table_map:
        return {}
    if isinstance(table_map, dict):
        return dict(table_map)
    out = {}
    for item in table_map:
        if "=" not in item:
            raise UsageError(f"--table-map '{item}' must look like LEFT_TABLE=RIGHT_TABLE.")
        left, right = item.split("=", 1)
        out[left.strip()] = right.strip()
    return out


def _unique(spec: str, refs: list[TableRef], label: str) -> TableRef:
    found = [r for r in refs if spec_matches(spec, r)]
    if len(found) != 1:
        what = "No" if not found else f"{len(found)} ({', '.join(r.name for r in found)})"
        raise UsageError(f"{what} {label} table matches '{spec}' in the table map.")
    return found[0]


def match_tables(left: list[TableRef], right: list[TableRef], tables: list[str] | None = None,
                 table_map: dict[str, str] | list[str] | None = None
                 ) -> tuple[list[TablePair], list[TableRef], list[TableRef]]:
    """Pair tables: the map first, then by database/schema/table (case-insensitive), then by table name alone
    where that is unique on both sides. Returns (pairs, unmatched left, unmatched right)."""
    pairs: list[TablePair] = []
    lrest, rrest = list(left), list(right)
    for lspec, rspec in parse_table_map(table_map).items():
        lt, rt = _unique(lspec, lrest, "left"), _unique(rspec, rrest, "right")
        pairs.append(TablePair(lt, rt, "map"))
        lrest.remove(lt)
        rrest.remove(rt)
    by_name = {r.folded: r for r in rrest}
    for lt in list(lrest):
        rt = by_name.get(lt.folded)
        if rt is not None:
            pairs.append(TablePair(lt, rt, "name"))
            lrest.remove(lt)
            rrest.remove(rt)
    for lt in list(lrest):
        same = [r for r in rrest if r.folded[2] == lt.folded[2]]
        if len(same) == 1 and sum(1 for x in lrest if x.folded[2] == lt.folded[2]) == 1:
            pairs.append(TablePair(lt, same[0], "table name"))
            lrest.remove(lt)
            rrest.remove(same[0])
    if tables:
        for spec in tables:
            if not any(spec_matches(spec, r) for r in left + right):
                raise UsageError(f"No table matches --table {spec} on either side.")
        keep = lambda r: any(spec_matches(s, r) for s in tables)  # noqa: E731
        pairs = [p for p in pairs if keep(p.left) or keep(p.right)]
        lrest, rrest = [r for r in lrest if keep(r)], [r for r in rrest if keep(r)]
    pairs.sort(key=lambda p: p.left.folded)
    return pairs, lrest, rrest
