"""Column types inferred from untyped (JSON) values: observed while decoding, folded into schema versions.

Why: a JSON source (Datastream JSON) declares no column types, so a table applied from it would keep every
timestamp as text. The adapter observes each value it decodes anyway (:class:`TypeObserver`, per file, no
extra pass) and stores a small per-column *summary* of what it saw in the schema version's `vendor_type`, as
`json:<kinds>[;digits=D;scale=S]` (e.g. `json:timestamp`, `json:bigint,int;digits=12`,
`json:decimal,int;digits=5;scale=2`, `json:text,timestamp`). Summaries only ever widen: the union of kinds,
the largest digit count and scale. That makes the merge of any number of them (files of one run, rows of
earlier runs, concurrent writers) order-free, so :func:`fold_versions` can merge every row of a version in
one Spark aggregation and derive `canonical_type` from the merged summary (:func:`canonical_of`, the only
place the rule is written):

| kinds seen | canonical_type |
|---|---|
| `int` only | `int` (every integer fits 32 bits) |
| `int`, `bigint` | `bigint` (every integer fits 64 bits) |
| with `integer` (beyond 64 bits) and no `decimal` | `decimal(D,0)` |
| with `decimal` (a non-integer number) | `decimal(D+S,S)`: D integer digits and S fraction digits hold every value |
| `date` only | `date` |
| `timestamp`, with or without `date` | `timestamp` (a date is midnight UTC) |
| `timestamp_ntz`, with or without `date` | `timestamp_ntz` |
| `boolean` only / `text` only | `boolean` / `string` |
| `json` (an object or array), with anything | `json` (VARIANT keeps every value) |
| any other mix (text and timestamps, numbers and text, ...) | `string`, noted by `cdcnorm apply` |

A column whose version also has a declared vendor type (a row without the `json:` prefix) keeps the declared
type: declared types win over inference.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

PREFIX = "json:"
INT32 = (-(1 << 31), (1 << 31) - 1)
INT64 = (-(1 << 63), (1 << 63) - 1)
NUMBER_KINDS = ("int", "bigint", "integer", "decimal")
_TAIL = re.compile(r"(?:\.\d{1,6})?(Z|[+-]\d{2}:\d{2})?")
"""What may follow `YYYY-MM-DD[T ]HH:MM:SS` in a date-time text: at most six fraction digits, then `Z`,
`+HH:MM` or nothing. These are the forms Datastream writes and Spark parses exactly; anything else (finer
fractions, which a timestamp would truncate, `+HHMM`, no seconds) stays text."""


class ColumnSummary:
    """What one column's values looked like: their kinds, integer range, digits and scale."""

    __slots__ = ("kinds", "lo", "hi", "digits", "scale", "ints")

    def __init__(self) -> None:
        self.kinds: set[str] = set()
        self.lo = self.hi = 0
        self.digits = self.scale = 0
        self.ints = False
        """an integer was seen (lo/hi hold the range)"""

    def add(self, value: Any, naive: str) -> None:
        """Observe one non-null value; `naive` is the kind a date-time text without a zone is (vendor rule)."""
        if isinstance(value, str):
            self.kinds.add(_text_kind(value, naive))
        elif isinstance(value, bool):
            self.kinds.add("boolean")
        elif isinstance(value, int):
            self.add_int(value)
        elif isinstance(value, Decimal):
            self.add_decimal(value)
        elif isinstance(value, float):  # typed sources only: JSON numbers arrive as int or exact Decimal
            self.add(Decimal(repr(value)), naive)
        elif isinstance(value, dt.datetime):
            self.kinds.add("timestamp_ntz" if value.tzinfo is None else "timestamp")
        elif isinstance(value, dt.date):
            self.kinds.add("date")
        elif isinstance(value, dict | list):
            self.kinds.add("json")
        elif isinstance(value, bytes | bytearray):
            self.kinds.add("text")

    def add_int(self, value: int) -> None:
        """Observe one int (not a bool)."""
        if not self.ints:
            self.lo = self.hi = value
            self.ints = True
        elif value < self.lo:
            self.lo = value
        elif value > self.hi:
            self.hi = value
        self.kinds.add("int" if -2147483648 <= value <= 2147483647 else
                       "bigint" if INT64[0] <= value <= INT64[1] else "integer")

    def add_decimal(self, value: Decimal) -> None:
        """Observe one Decimal."""
        if not value.is_finite():
            self.kinds.add("text")
            return
        _sign, digits, exp = value.as_tuple()
        self.kinds.add("decimal")
        scale = -exp if isinstance(exp, int) and exp < 0 else 0
        whole = len(digits) - scale if scale else len(digits) + int(exp)  # type: ignore[arg-type]
        if whole > self.digits:
            self.digits = whole
        if scale > self.scale:
            self.scale = scale

    def vendor_type(self) -> str:
        """The summary as stored in `vendor_type` (`json:<kinds>[;digits=D;scale=S]`)."""
        text = PREFIX + ",".join(sorted(self.kinds))
        if self.kinds.intersection(NUMBER_KINDS):
            whole = self.digits
            if self.kinds.intersection(("int", "bigint", "integer")):
                whole = max(whole, len(str(abs(self.lo))), len(str(abs(self.hi))))
            text += f";digits={whole};scale={self.scale}"
        return text


def _text_kind(s: str, naive: str) -> str:
    """`date`, a timestamp kind, or `text` for one string value (see :data:`_TAIL` for the accepted forms).

    Cheap structural tests first; `fromisoformat` (C) then proves a real calendar date and time.
    """
    n = len(s)
    if n < 10 or s[4] != "-" or s[7] != "-":
        return "text"
    try:
        if n == 10:
            dt.date.fromisoformat(s)
            return "date"
        if n < 19 or s[10] not in "T " or s[13] != ":" or s[16] != ":":
            return "text"
        m = _TAIL.fullmatch(s, 19)
        if m is None:
            return "text"
        dt.datetime.fromisoformat(s)
    except ValueError:
        return "text"
    return "timestamp" if m.group(1) else naive


_DECIMAL = Decimal


class TypeObserver:
    """Per-file summaries of every table version's columns, filled while the adapter decodes values.

    `naive` is the vendor's documented meaning of a date-time text without a zone: `timestamp` (it is UTC,
    Datastream) or `timestamp_ntz` (a wall-clock time).
    """

    def __init__(self, naive: str = "timestamp") -> None:
        self.naive = naive
        self.tables: dict[Any, dict[str, ColumnSummary]] = {}

    def observe(self, ident: Any, *images: dict[str, Any] | None) -> None:
        """Observe the values of one change's row images (`None` values carry no type).

        The hot path (every value of a JSON file): text and in-range integers are handled inline, a text
        already seen in the column costs one set lookup; everything else goes through :meth:`ColumnSummary.add`.
        """
        cols = self.tables.get(ident)
        if cols is None:
            cols = self.tables[ident] = {}
        naive = self.naive
        for image in images:
            if not image:
                continue
            for name, value in image.items():
                summary = cols.get(name)
                if summary is None:
                    summary = cols[name] = ColumnSummary()
                t = type(value)
                if t is str:
                    kinds = summary.kinds
                    if "text" in kinds and len(kinds) > 1 and "json" not in kinds:
                        continue  # already a mixed (string) column: no text can change its type
                    # most texts fail _text_kind's first structural test: answer those without the call
                    kinds.add("text" if len(value) < 10 or value[4] != "-" or value[7] != "-"
                              else _text_kind(value, naive))
                elif t is int:
                    summary.add_int(value)
                elif t is _DECIMAL:
                    summary.add_decimal(value)
                elif value is not None:
                    summary.add(value, naive)

    def summaries(self, ident: Any) -> dict[str, ColumnSummary]:
        return self.tables.get(ident, {})


# -- Spark: merge summaries and derive the canonical type (one rule, used by normalize and by every reader) ----
def _kinds(vendor_type: Column) -> Column:
    return F.split(F.regexp_extract(vendor_type, r"^json:([^;]*)", 1), ",")


def _number(vendor_type: Column, name: str) -> Column:
    return F.regexp_extract(vendor_type, rf";{name}=(\d+)", 1).try_cast("int")


def canonical_of(kinds: Column, digits: Column, scale: Column) -> Column:
    """`canonical_type` for a merged summary (see the module's table); null when no value was seen."""
    def has(k: str) -> Column:
        return F.array_contains(kinds, k)

    def only(*allowed: str) -> Column:
        return F.size(F.array_except(kinds, F.array(*[F.lit(a) for a in allowed]))) == 0

    numeric = F.concat(F.lit("decimal("), F.greatest(digits + scale, F.lit(1)).cast("string"), F.lit(","),
                       scale.cast("string"), F.lit(")"))
    return (F.when(F.size(kinds) == 0, F.lit(None).cast("string"))
            .when(has("json"), F.lit("json"))
            .when(only(*NUMBER_KINDS), F.when(has("decimal") | has("integer"), numeric)
                  .when(has("bigint"), F.lit("bigint")).otherwise(F.lit("int")))
            .when(only("date"), F.lit("date"))
            .when(only("date", "timestamp"), F.lit("timestamp"))
            .when(only("date", "timestamp_ntz"), F.lit("timestamp_ntz"))
            .when(only("boolean"), F.lit("boolean"))
            .otherwise(F.lit("string")))


def fold_versions(rows: DataFrame, key: str = "version_id") -> DataFrame:
    """One row per `version_id` (or `key`) from any number of schema-version rows (same columns as the input).

    The row with the earliest `first_seen` gives the version's metadata and declared columns (as before
    inference existed); inferred (`json:`) columns are merged over every row of the version, and a column
    declared in any row keeps its declared type. Schema versions are metadata (a row per file and table at
    most), so this aggregation is small.
    """
    names = rows.columns
    order = F.struct(F.col("first_seen").isNull(), F.col("first_seen"))
    first = rows.groupBy(key).agg(F.min_by(F.struct(*[F.col(f"`{n}`") for n in names]), order).alias("s"))
    cols = rows.select(key, order.alias("_o"), F.explode("columns").alias("c"))
    inferred = F.coalesce(F.col("c.vendor_type").startswith(PREFIX), F.lit(False))
    # a null vendor_type (JSON versions written before inference existed) declares nothing
    declared = ~inferred & F.col("c.vendor_type").isNotNull()
    kinds = F.array_sort(F.array_distinct(F.flatten(F.collect_list(F.when(inferred, _kinds(F.col("c.vendor_type")))))))
    kinds = F.filter(kinds, lambda k: k != "")
    digits = F.coalesce(F.max(F.when(inferred, _number(F.col("c.vendor_type"), "digits"))), F.lit(0))
    scale = F.coalesce(F.max(F.when(inferred, _number(F.col("c.vendor_type"), "scale"))), F.lit(0))
    per_col = cols.groupBy(key, F.col("c.name").alias("_name")).agg(
        F.min_by("c", F.when(declared, F.col("_o"))).alias("declared"),
        F.min_by("c", F.col("_o")).alias("firstcol"),
        F.min("c.ordinal").alias("_ordinal"), F.max(inferred.cast("int")).alias("_inferred"),
        kinds.alias("_kinds"), digits.alias("_digits"), scale.alias("_scale"),
    )
    numeric = F.exists("_kinds", lambda k: k.isin(*NUMBER_KINDS))
    vendor_type = F.concat(F.lit(PREFIX), F.array_join("_kinds", ","),
                           F.when(numeric, F.format_string(";digits=%d;scale=%d", "_digits", "_scale"))
                           .otherwise(F.lit("")))
    merged = F.struct(
        F.col("_name").alias("name"), vendor_type.alias("vendor_type"),
        canonical_of(F.col("_kinds"), F.col("_digits"), F.col("_scale")).alias("canonical_type"),
        F.col("_ordinal").alias("ordinal"), F.col("firstcol.pk_position").alias("pk_position"),
        F.col("firstcol.nullable").alias("nullable"))
    col = (F.when(F.col("declared").isNotNull(), F.col("declared")).when(F.col("_inferred") == 1, merged)
           .otherwise(F.col("firstcol")))
    folded = (per_col.groupBy(key)
              .agg(F.max("_inferred").alias("_any"),
                   F.array_sort(F.collect_list(F.struct(F.col("_ordinal"), F.col("_name"), col.alias("c"))))
                   .alias("_cols"))
              .select(key, "_any", F.transform("_cols", lambda x: x["c"]).alias("_columns")))
    out = first.join(folded, key, "left").select(
        *[F.col(f"s.`{n}`").alias(n) for n in names if n != "columns"],
        F.when(F.col("_any") == 1, F.col("_columns")).otherwise(F.col("s.columns")).alias("columns"))
    return out.select(*names)


def widen_over_tables(versions: DataFrame) -> DataFrame:
    """Every version's inferred columns typed for the whole table: merged over all versions of the table.

    Why: a table's current state holds rows last written under older versions too, and a version's summary
    covers only the values seen under it (a new schema key after a DDL may so far have seen only small
    numbers). Used by `cdcnorm apply` on the folded versions (one row each); a column some version declares
    takes the declared type (declared types win over inference).
    """
    ident = F.sha2(F.to_json(F.array(*[F.col(f"`{c}`") for c in ("vendor", "stream", "database", "schema", "table")])),
                   256)
    tagged = versions.withColumn("_table", ident)
    merged = fold_versions(tagged, key="_table").select(
        "_table", F.map_from_entries(F.transform("columns", lambda c: F.struct(c["name"], c))).alias("_by_name"))

    def retyped(c: Column) -> Column:
        table_wide = F.element_at(F.col("_by_name"), c["name"])
        inferred = F.coalesce(c["vendor_type"].startswith(PREFIX), F.lit(False)) & table_wide.isNotNull()
        return F.when(inferred, c.withField("vendor_type", table_wide["vendor_type"])
                      .withField("canonical_type", table_wide["canonical_type"])).otherwise(c)

    out = tagged.join(merged, "_table", "left").withColumn("columns", F.transform("columns", retyped))
    return out.select(*versions.columns)


def inference_note(vendor_type: str | None, canonical: str | None) -> str | None:
    """Why an inferred column fell back to `string` (mixed kinds), for `cdcnorm apply`'s index; else None."""
    if not vendor_type or not vendor_type.startswith(PREFIX) or canonical != "string":
        return None
    kinds = vendor_type[len(PREFIX):].split(";", 1)[0].split(",")
    if len(kinds) < 2:
        return None
    return f"values of mixed kinds ({', '.join(kinds)}): kept as string"
