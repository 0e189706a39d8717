"""How two vendors' values of one column are compared: exact, or through a documented lossy projection.

Why a declarative table: every rule is a known, documented property of a vendor's output (DataHub has no DATE
or exact decimal type, Datastream's MySQL JSON carries dates as midnight timestamps and binary as hex); a
comparison that hides anything else would defeat its purpose. A rule names the vendor whose projection is lossy,
the type on that vendor's side and on the other side, and a Spark SQL normalisation for each side (`{x}` is the
column); values equal after normalisation are reported as "equal (lossy: rule)", never silently.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F

from cdcnorm.adapters.spec import (
    DOUBLE_CLOSE,
    EXACT_NUMERIC,
    FLOATING,
    INTEGRAL,
    MIDNIGHT_DATE,
    NUMBER_TEXT,
    TEXT_TYPES,
    LossyRule,
)
from cdcnorm.adapters.spec import base_type as _base


def _vendor_rules() -> tuple[LossyRule, ...]:
    """The lossy projections every registered vendor declares in its package (`VendorSpec.compare_rules`)."""
    from cdcnorm.adapters import specs

    return tuple(rule for s in specs() for rule in s.compare_rules)


GENERIC_RULES: tuple[LossyRule, ...] = (
    LossyRule(
        "json_text_timestamp", None, TEXT_TYPES, ("timestamp", "timestamp_ntz"),
        "try_cast({x} AS TIMESTAMP)", "CAST({x} AS TIMESTAMP)",
        "a timestamp kept as ISO text by untyped JSON output (a Datastream JSON column that also held other "
        "text; typed columns are inferred at normalize time): compared as an instant (a naive time read as UTC)",
        as_text=True,
    ),
    LossyRule(
        "json_text_date", None, TEXT_TYPES, ("date",),
        MIDNIGHT_DATE.replace("{x}", "try_cast({x} AS TIMESTAMP)"), "CAST({x} AS STRING)",
        "untyped JSON output carries a date as ISO text (often a midnight timestamp)", as_text=True,
    ),
    LossyRule(
        "json_text_decimal", None, TEXT_TYPES, (*EXACT_NUMERIC, "string"),
        NUMBER_TEXT, NUMBER_TEXT.replace("{x}", "CAST({x} AS STRING)"),
        "untyped JSON output carries an exact number as JSON number or text: compared as the same decimal "
        "text (trailing zeros of the scale ignored)", as_text=True,
    ),
    LossyRule(
        "json_text_double", None, TEXT_TYPES, FLOATING,
        "try_cast({x} AS DOUBLE)", "CAST({x} AS DOUBLE)",
        "untyped JSON output carries a floating-point number as a JSON number: compared as doubles",
        equal_sql=DOUBLE_CLOSE, as_text=True,
    ),
    LossyRule(
        "json_text_binary", None, TEXT_TYPES, ("binary",),
        "{x}", "{x}",
        "untyped JSON output carries bytes as base64 or hex text", equal_sql=(
            "(lower({a}) <=> lower(hex({b})) OR {a} <=> base64({b}) OR lower(replace({a}, '\\\\x', '')) <=> lower(hex({b})))"),
        as_text=True,
    ),
    LossyRule(
        "integer_boolean", None, INTEGRAL, ("boolean",),
        "CAST({x} AS BOOLEAN)", "{x}",
        "a boolean delivered as an integer 0/1 (MySQL TINYINT(1), untyped JSON)",
    ),
    LossyRule(
        "naive_vs_instant", None, ("timestamp_ntz",), ("timestamp",),
        "CAST({x} AS TIMESTAMP)", "{x}",
        "one vendor reports a naive DATETIME, the other an instant: compared reading the naive time as UTC",
    ),
)
"""Lossy projections of untyped output, whatever the vendor."""


def rules() -> tuple[LossyRule, ...]:
    """The lossy projections compare recognises: each registered vendor's own (declared in its package), then
    the generic ones (docs/compare.md lists them)."""
    return (*_vendor_rules(), *GENERIC_RULES)


RULES: tuple[LossyRule, ...] = rules()
"""The rules of the vendors registered at import time (plug-ins registered later are seen by `find_rule`)."""


@dataclass(frozen=True)
class ColumnComparison:
    """How one column is compared: `equal` (null-safe, normalised), `raw_equal` (no rule), the rule used."""

    name: str
    left_type: str
    right_type: str
    equal: Column
    raw_equal: Column
    rule: LossyRule | None
    numeric: bool

    @property
    def type_note(self) -> str:
        return self.left_type if self.left_type == self.right_type else f"{self.left_type} / {self.right_type}"


def sql_ref(struct: str, column: str) -> str:
    """A SQL reference to `struct.column` with backquotes escaped."""
    return f"`{struct}`.`{column.replace('`', '``')}`"


def find_rule(left_vendor: str, ltype: str, right_vendor: str, rtype: str,
              source_db: str | None) -> tuple[LossyRule, bool] | None:
    """The rule for this column pair and whether the lossy side is the left one."""
    for rule in rules():
        if rule.applies(left_vendor, ltype, rtype, source_db):
            return rule, True
        if rule.applies(right_vendor, rtype, ltype, source_db):
            return rule, False
    return None


def _text(sql: str, type_name: str) -> str:
    """A value as text: a VARIANT scalar as its text (JSON null as SQL null), a string as is."""
    return f"try_variant_get({sql}, '$', 'string')" if _base(type_name) == "variant" else sql


def _plain(sql: str, type_name: str) -> str:
    """A comparable SQL value for a column without a rule: VARIANT as JSON text, binary as hex."""
    t = _base(type_name)
    if t == "variant":
        return f"to_json({sql})"
    return sql


def compare_column(name_left: str, name_right: str, ltype: str, rtype: str, left_vendor: str,
                   right_vendor: str, source_db: str | None, lstruct: str = "l", rstruct: str = "r",
                   out_name: str | None = None) -> ColumnComparison:
    """Build the equality of one column between the `l` and `r` structs of a joined row."""
    a, b = sql_ref(lstruct, name_left), sql_ref(rstruct, name_right)
    lt, rt = _base(ltype), _base(rtype)
    numeric_pair = lt in EXACT_NUMERIC + FLOATING and rt in EXACT_NUMERIC + FLOATING
    same_kind = lt == rt or (lt in EXACT_NUMERIC and rt in EXACT_NUMERIC) or (lt in FLOATING and rt in FLOATING)
    if same_kind or (numeric_pair and not find_rule(left_vendor, ltype, right_vendor, rtype, source_db)):
        same_kind = True  # numbers compare by value across int/decimal/double (Spark widens)
        raw = f"{_plain(a, ltype)} <=> {_plain(b, rtype)}"
    else:
        raw = f"CAST({_plain(a, ltype)} AS STRING) <=> CAST({_plain(b, rtype)} AS STRING)"
    found = find_rule(left_vendor, ltype, right_vendor, rtype, source_db)
    if found is not None and same_kind and not found[0].same_type:
        found = None  # same type on both sides: only rules about projected values apply
    if found is None:
        eq = raw
        rule = None
    else:
        rule, lossy_left = found
        lossy_ref, lossy_type, other_ref = (a, ltype, b) if lossy_left else (b, rtype, a)
        if rule.as_text:
            lossy_ref = _text(lossy_ref, lossy_type)
        if rule.other_as_text:
            other_ref = _text(other_ref, rtype if lossy_left else ltype)
        eq = rule.equal_sql.format(a=rule.lossy_sql.format(x=lossy_ref), b=rule.other_sql.format(x=other_ref))
    numeric = (lt in EXACT_NUMERIC + FLOATING) and (rt in EXACT_NUMERIC + FLOATING)
    return ColumnComparison(out_name or name_left, ltype, rtype, F.coalesce(F.expr(eq), F.lit(False)),
                            F.coalesce(F.expr(raw), F.lit(False)), rule, numeric)


def display(struct: str, column: str, type_name: str) -> Column:
    """A value as readable text for samples: VARIANT as JSON, binary as hex, the rest cast to string."""
    t = _base(type_name)
    ref = sql_ref(struct, column)
    if t == "variant":
        return F.expr(f"to_json({ref})")
    if t == "binary":
        return F.expr(f"lower(hex({ref}))")
    return F.expr(f"CAST({ref} AS STRING)")
