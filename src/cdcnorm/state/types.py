"""Types for `cdcnorm apply`: canonical column types -> Spark types, and typed extraction from VARIANT values.

Why a separate module: the mapping is declarative (one table of spellings), shared by the schema-version path
and the inferred-schema path, and testable without Spark jobs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdcnorm.canonical.inferred import PREFIX, inference_note

MAX_DECIMAL_PRECISION = 38

_SPELLINGS: dict[str, str] = {
    # canonical names (docs/apply.md, "Columns and types") first, then vendor-ish spellings seen in schemas
    "boolean": "boolean", "bool": "boolean", "bit": "boolean",
    "int": "int", "integer": "int", "int32": "int", "int4": "int", "smallint": "int", "int16": "int",
    "int2": "int", "short": "int", "tinyint": "int", "byte": "int", "int8": "int",
    "bigint": "bigint", "long": "bigint", "int64": "bigint",
    "float": "float", "real": "float", "float32": "float", "float4": "float",
    "double": "double", "float64": "double", "float8": "double", "double precision": "double",
    "string": "string", "str": "string", "text": "string", "varchar": "string", "char": "string",
    "nvarchar": "string", "nchar": "string", "clob": "string", "time": "string", "uuid": "string",
    "binary": "binary", "bytes": "binary", "varbinary": "binary", "blob": "binary", "bytea": "binary",
    "date": "date",
    "timestamp": "timestamp", "timestamptz": "timestamp", "timestamp_ltz": "timestamp", "instant": "timestamp",
    "timestamp with time zone": "timestamp",
    "timestamp_ntz": "timestamp_ntz", "datetime": "timestamp_ntz", "timestamp without time zone": "timestamp_ntz",
    "variant": "variant", "json": "variant", "jsonb": "variant", "object": "variant", "array": "variant",
    "struct": "variant", "map": "variant", "void": "string", "null": "string",
}

_DECIMAL = re.compile(r"^(?:decimal|numeric|number|dec)\s*\(\s*(-?\d+)\s*(?:,\s*(-?\d+)\s*)?\)$")
_SIMPLE: dict[str, T.DataType] = {
    "boolean": T.BooleanType(), "int": T.IntegerType(), "bigint": T.LongType(), "float": T.FloatType(),
    "double": T.DoubleType(), "string": T.StringType(), "binary": T.BinaryType(), "date": T.DateType(),
    "timestamp": T.TimestampType(), "timestamp_ntz": T.TimestampNTZType(), "variant": T.VariantType(),
}


def spark_type_name(canonical: str | None) -> str:
    """The Spark SQL type a current-state column gets for a schema version's `canonical_type`.

    Decimals wider than 38 digits become `string` (the lake already holds them as exact decimal text, flagged
    `decimal_as_string`); anything unknown, including a decimal without a precision, stays `variant` so no
    value is lost or rounded.
    """
    if not canonical:
        return "variant"
    name = " ".join(canonical.strip().lower().split())
    m = _DECIMAL.match(name)
    if m:
        p, s = int(m.group(1)), int(m.group(2) or 0)
        if p < 1 or s < 0 or s > p:
            return "variant"
        return "string" if p > MAX_DECIMAL_PRECISION else f"decimal({p},{s})"
    if name.startswith(("array<", "struct<", "map<", "object<")):
        return "variant"
    return _SPELLINGS.get(name, "variant")


def spark_type(name: str) -> T.DataType:
    """A :class:`DataType` for a name returned by :func:`spark_type_name`."""
    m = _DECIMAL.match(name)
    if m:
        return T.DecimalType(int(m.group(1)), int(m.group(2) or 0))
    return _SIMPLE[name]


def extract(values: Column, name: str, type_name: str, canonical: str | None = None,
            naive_utc: bool = False) -> Column:
    """Typed value of column `name` from a `map<string, variant>` row image (null when absent or not castable).

    `try_variant_get` makes a value that does not fit the declared type (a decimal-as-string in a decimal
    column, a nanosecond timestamp kept as text) null or truncated instead of failing the whole table.
    A decimal wider than 38 digits (`canonical`) is a string column; see :func:`_wide_decimal_text`.
    `naive_utc`: the column's values are date-time text whose vendor says a time without a zone is UTC.
    """
    return extract_value(F.try_element_at(values, F.lit(name)), type_name, canonical, naive_utc)


def variant_path(name: str) -> str | None:
    """The `variant_get` path of top-level field `name` (`$['name']`, or `$["name"]` when the name holds a
    quote); None for a name holding both quotes, which no path can spell (the caller goes through a map)."""
    if "'" not in name:
        return f"$['{name}']"
    if '"' not in name:
        return f'$["{name}"]'
    return None


def extract_field(image: Column, path: str, type_name: str, canonical: str | None = None,
                  naive_utc: bool = False) -> Column:
    """:func:`extract` straight from a VARIANT object at `path` (:func:`variant_path`): one field lookup, no
    `map<string, variant>` of the whole image (which costs an allocation per field of every row)."""
    special = type_name == "variant" or (naive_utc and type_name == "timestamp") or (
        type_name == "string" and wide_decimal_scale(canonical) is not None)
    if special:
        return extract_value(F.try_variant_get(image, path, "variant"), type_name, canonical, naive_utc)
    return F.try_variant_get(image, path, type_name)


def extract_value(value: Column, type_name: str, canonical: str | None = None, naive_utc: bool = False) -> Column:
    """:func:`extract` of one VARIANT value (a field already taken out of its image)."""
    if type_name == "variant":
        return value
    if naive_utc and type_name == "timestamp":
        return _utc_text_timestamp(value)
    scale = wide_decimal_scale(canonical) if type_name == "string" else None
    if scale is not None:
        return _wide_decimal_text(value, scale)
    return F.try_variant_get(value, "$", type_name)


def _utc_text_timestamp(value: Column) -> Column:
    """A timestamp from ISO text where a date or date-time without a zone is UTC, whatever the session time
    zone (Spark reads a zoneless text in the session's zone): the zone is appended before the cast."""
    text = F.try_variant_get(value, "$", "string")
    fixed = (F.when(F.length(text) == 10, F.concat(text, F.lit("T00:00:00Z")))
             .when(text.rlike(r"(Z|[+-]\d{2}:\d{2})$"), text).otherwise(F.concat(text, F.lit("Z"))))
    return fixed.try_cast("timestamp")


def wide_decimal_scale(canonical: str | None) -> int | None:
    """The declared scale of a `decimal(p,s)` with p > 38 (stored as text), else None."""
    m = _DECIMAL.match(" ".join((canonical or "").strip().lower().split()))
    if not m:
        return None
    p, s = int(m.group(1)), int(m.group(2) or 0)
    return s if p > MAX_DECIMAL_PRECISION and 0 <= s <= MAX_DECIMAL_PRECISION else None


def _wide_decimal_text(value: Column, scale: int) -> Column:
    """Exact text of a wide-decimal value at the column's scale.

    The lake keeps a value of such a column as a VARIANT decimal when it fits 38 digits (else as text), and
    VARIANT-to-string drops trailing zeros (`1.50` -> `1.5`): render those through `decimal(38, scale)`
    instead, which keeps the declared scale, but only when that is exact (the value's own scale, as
    `schema_of_variant` reports it, is not larger). Text values and anything else stay as they are.
    """
    kind = F.schema_of_variant(value)
    own_scale = F.regexp_extract(kind, r"^DECIMAL\(\d+,(\d+)\)$", 1)
    padded = F.try_variant_get(value, "$", f"decimal(38,{scale})").cast("string")
    exact = kind.startswith("DECIMAL") & (own_scale.cast("int") <= scale) & padded.isNotNull()
    return F.when(exact, padded).otherwise(F.try_variant_get(value, "$", "string"))


def widens(old: str, new: str) -> bool:
    """Whether every value of Spark type `old` is exactly a value of `new` (int -> bigint -> decimal(p,0), a
    decimal with no fewer integer and fraction digits, date -> timestamp(_ntz), anything -> string/variant)."""
    rank = {"int": 10, "bigint": 19}
    if new in ("string", "variant"):
        return True
    if old in rank and new in rank:
        return rank[old] <= rank[new]
    m_new = _DECIMAL.match(new)
    if m_new:
        p, s = int(m_new.group(1)), int(m_new.group(2) or 0)
        m_old = _DECIMAL.match(old)
        if m_old:
            p0, s0 = int(m_old.group(1)), int(m_old.group(2) or 0)
            return s >= s0 and p - s >= p0 - s0
        return old in rank and p - s >= rank[old]
    return old == "date" and new in ("timestamp", "timestamp_ntz")


@dataclass(frozen=True)
class OutputColumn:
    """One column of a current-state table: its name, Spark type name and where the type came from.

    `source`: `vendor` (a declared type), `inferred` (summarised from JSON values at normalize time), `hint`
    (`--column-type`) or `data` (no schema version: read from the applied images); `note` says why an
    inferred column fell back to string.
    """

    name: str
    type: str
    canonical_type: str | None = None
    source: str = "vendor"
    note: str | None = None
    naive_utc: bool = False
    """values are JSON text where a time without a zone is UTC (Datastream JSON, the only JSON-only source)"""


def schema_column(c: dict) -> OutputColumn:
    """The output column for a schema version's column (declared or inferred, cdcnorm.canonical.inferred)."""
    canonical, vendor_type = c["canonical_type"], c.get("vendor_type")
    if vendor_type and vendor_type.startswith(PREFIX):
        return OutputColumn(c["name"], spark_type_name(canonical), canonical, "inferred",
                            inference_note(vendor_type, canonical), naive_utc=True)
    return OutputColumn(c["name"], spark_type_name(canonical), canonical)


def parse_inferred(ddl: str | None, key_columns: list[str] | None = None) -> list[OutputColumn]:
    """Columns from `schema_of_variant_agg(after)` output such as ``OBJECT<a: BIGINT, `b c`: STRING>``.

    Used only for tables without a schema version. Key columns come first (in key order), the rest in the
    order Spark reports them (by name). Nested objects/arrays and mixed types become `variant`; all-null
    columns (`VOID`) become `string`.
    """
    if not ddl or not ddl.startswith("OBJECT<") or not ddl.endswith(">"):
        return []
    cols = []
    for field in _split_top(ddl[len("OBJECT<"):-1]):
        name, typ = _split_field(field)
        cols.append(OutputColumn(name, _inferred_type(typ), typ, "data"))
    first = [c for k in key_columns or [] for c in cols if c.name == k]
    return first + [c for c in cols if c not in first]


def _split_top(body: str) -> list[str]:
    """Split on commas that are not inside <>, () or a backquoted name."""
    parts, depth, quoted, start = [], 0, False, 0
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "`":
            if quoted and body[i + 1:i + 2] == "`":
                i += 2
                continue
            quoted = not quoted
        elif not quoted and ch in "<(":
            depth += 1
        elif not quoted and ch in ">)":
            depth -= 1
        elif not quoted and depth == 0 and ch == ",":
            parts.append(body[start:i].strip())
            start = i + 1
        i += 1
    if body[start:].strip():
        parts.append(body[start:].strip())
    return parts


def _split_field(field: str) -> tuple[str, str]:
    if field.startswith("`"):
        i = 1
        name = []
        while i < len(field):
            if field[i] == "`":
                if field[i + 1:i + 2] == "`":
                    name.append("`")
                    i += 2
                    continue
                break
            name.append(field[i])
            i += 1
        return "".join(name), field[i + 1:].lstrip(": ").strip()
    name, _, typ = field.partition(":")
    return name.strip(), typ.strip()


def _inferred_type(typ: str) -> str:
    upper = typ.upper()
    if upper.startswith(("OBJECT", "ARRAY")):
        return "variant"
    return spark_type_name(typ)
