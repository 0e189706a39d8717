"""JSON value tokens (the exact text of a member's value, from `cdcnorm.canonical.json_cells.flat_tokens`) read as
the Python decoder reads them, in Spark: their tuple-codec element (keys, positions) and a row image's VARIANT text.

Why tokens: Spark's JSON functions turn `12.50` into 12.5; the token keeps the text, so the value is typed exactly
as `cdcnorm.containers.loads_exact` types it (an int, an exact Decimal, a str, a bool, None).
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from cdcnorm.canonical import tuple_expr
from cdcnorm.canonical.json_cells import string_value

INT_TOKEN = r"^-?(0|[1-9][0-9]{0,17})$"
"""An integer token that fits a long with room (18 digits): larger ones go to the Python decoder."""
DECIMAL_TOKEN = r"^-?(0|[1-9][0-9]{0,19})\.[0-9]{1,18}$"
"""A decimal token decimal(38,18) holds exactly (at most 20 integer and 18 fraction digits)."""
_NUMBER = r"^-?[0-9]"


def scalar_encodable(token: Column) -> Column:
    """Whether `element_of` encodes this token exactly (a string, null, true/false, or a number in range)."""
    return (token.startswith('"') | token.isin("true", "false", "null") | token.rlike(INT_TOKEN)
            | token.rlike(DECIMAL_TOKEN))


def element_of(token: Column, nested: bool) -> Column:
    """The tuple-codec element of the value a token holds (`scalar_encodable` tokens only)."""
    return (F.when(token == "null", tuple_expr.none(nested))
            .when(token.startswith('"'), tuple_expr.element("str", string_value(token), nested))
            .when(token == "true", tuple_expr.element("bool", F.lit(True), nested))
            .when(token == "false", tuple_expr.element("bool", F.lit(False), nested))
            .when(token.rlike(INT_TOKEN), tuple_expr.element("int", token.cast("bigint"), nested))
            .otherwise(tuple_expr.element("decimal", token.cast("decimal(38,18)"), nested)))


def nested_tuple(tokens: Column) -> Column:
    """A nested tuple of the tokens' values (NULL array: the empty tuple)."""
    parts = F.transform(F.coalesce(tokens, F.array().cast("array<string>")), lambda t: element_of(t, True))
    return tuple_expr.nested(F.aggregate(parts, F.lit(bytearray()), lambda acc, b: F.concat(acc, b)))


def top_level(tokens: Column) -> Column:
    """The tuple of the tokens' values as a top-level encoding (key bytes)."""
    parts = F.transform(tokens, lambda t: element_of(t, False))
    return F.aggregate(parts, F.lit(bytearray()), lambda acc, b: F.concat(acc, b))


def _fits_variant(token: Column) -> Column:
    """A number token the VARIANT encoder holds as a number: at most 38 significant digits and scale 38."""
    digits = F.regexp_replace(F.regexp_replace(token, r"[-.]", ""), r"^0+", "")
    scale = F.length(F.regexp_extract(token, r"\.([0-9]+)$", 1))
    return (F.length(digits) <= 38) & (scale <= 38)


def variant_text(tokens: Column) -> tuple[Column, Column]:
    """(JSON text, widened): the object of the tokens with every number beyond decimal(38) as its exact text,
    as `cdcnorm.canonical.emit` stores such numbers (flag `decimal_as_string`); widened says one was."""
    def long_number(t: Column) -> Column:  # at most 38 characters: at most 38 digits and a scale below 38
        return (F.length(t["token"]) > 38) & t["token"].rlike(_NUMBER) & ~_fits_variant(t["token"])

    widened = F.exists(tokens, long_number)
    rebuilt = F.concat(F.lit("{"), F.array_join(F.transform(tokens, lambda t: F.concat(
        F.lit('"'), t["key"], F.lit('":'),
        F.when(long_number(t), F.concat(F.lit('"'), t["token"], F.lit('"'))).otherwise(t["token"]))), ","), F.lit("}"))
    return rebuilt, widened


def object_text(keys: Column, tokens: Column) -> Column:
    """A JSON object text of names (no escapes needed: flat_tokens refuses escaped names) and value tokens."""
    return F.concat(F.lit("{"), F.array_join(F.transform(F.arrays_zip(keys.alias("k"), tokens.alias("t")),
                                                         lambda z: F.concat(F.lit('"'), z["k"], F.lit('":'), z["t"])),
                                             ","), F.lit("}"))
