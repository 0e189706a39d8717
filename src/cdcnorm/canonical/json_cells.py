"""Flat JSON objects tokenized by Spark expressions, and each value's kind as :mod:`cdcnorm.canonical.inferred` sees it.

Why: a Datastream JSON payload carries no column types; the Python decoder observes every value it parses
(`TypeObserver`, from `loads_exact`'s exact values: ints as int, every other number as a `Decimal` keeping its
scale). Spark's own JSON functions lose the number text (`from_json` reads `12.50` as 12.5, `parse_json` as
DECIMAL(3,1)), so the JVM decode path reads the scale from the raw text instead: :func:`flat_tokens` splits a
flat object into its members' exact value texts with one regex scan, :func:`cells` classifies each value
exactly as `ColumnSummary.add` would classify the value `loads_exact` gives for it (`cell_summary` folds the
cells into the schema versions' summaries).

What the tokenizer holds exactly, and so the only texts it answers: one JSON object (JSON whitespace around
every token) whose values are strings, numbers without an exponent of at most 38 digits, `true`, `false` or
`null`, whose keys are distinct and written without a backslash escape, in valid UTF-8. Anything else - a nested
object or array, `1e5`, NaN, a duplicate key, invalid JSON - gives NULL: the Python decoder takes that record.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

WHITESPACE = " \t\n\r"
_WS = "[ \\t\\n\\r]*+"
_STRING = r'"[^"\\\x00-\x1f]*+(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*+)*+"'
"""A JSON string token, exactly: no raw control character, only JSON's escapes. Written as an unrolled loop
(runs of plain characters, then one escape at a time) so that Java's regex engine does not recurse per
character (a `(?:a|b)*` loop does, and overflows the stack on a long text)."""
_KEY = r'"[^"\\\x00-\x1f]*+"'
"""A member name without escapes: its text between the quotes is the name."""
_NUMBER = r"-?+(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?+"
"""A JSON number without an exponent (one with an exponent leaves an `e` that no member can start with)."""
_MEMBER = (rf"\G(?:\A{_WS}\{{|(?!\A),){_WS}{_KEY}{_WS}:{_WS}(?:{_STRING}|{_NUMBER}|true|false|null){_WS}")
"""One member with the `{` or `,` before it, starting where the previous one ended (`\\G`): the members found
are the object's text from its start, piece after piece, up to the first character that is not a member."""
_CLOSE = rf"\A{_WS}\}}{_WS}\z"
_EMPTY = rf"\A{_WS}\{{{_WS}\}}{_WS}\z"
MAX_DIGITS = 38


def flat_tokens(text: Column | str, max_digits: int | None = MAX_DIGITS) -> Column:
    """`array<struct<key, token>>`: the members of a flat JSON object text in text order (`key` the name,
    `token` the value's exact JSON text); NULL for any text the tokenizer does not hold exactly (see module).

    The whole text is checked: the members found must be followed by the closing brace and whitespace only.
    """
    text = F.col(text) if isinstance(text, str) else text
    pieces = F.regexp_extract_all(text, F.lit(_MEMBER), 0)
    return F.transform(F.array(pieces), lambda ps: _checked(text, ps, max_digits))[0]


def _checked(text: Column, pieces: Column, max_digits: int | None) -> Column:
    consumed = F.aggregate(pieces, F.lit(0), lambda acc, p: acc + F.char_length(p))
    rest = F.substr(text, consumed + 1)
    members = F.transform(pieces, _member)
    keys = F.transform(members, lambda m: m["key"])
    whole = F.when(F.size(pieces) == 0, text.rlike(_EMPTY)).otherwise(rest.rlike(_CLOSE))
    wide = F.exists(members, lambda m: _digit_count(m["token"]) > max_digits) if max_digits else F.lit(False)
    exact = (F.is_valid_utf8(text) & whole & (F.size(F.array_distinct(keys)) == F.size(keys)) & ~wide)
    return F.when(exact, members)


def _member(piece: Column) -> Column:
    """(key, token) of one member piece `[ws]{|, ws "key" ws : ws token ws` (the key holds no quote)."""
    up_to_key = F.substring_index(piece, '"', 2)
    after_key = F.substr(piece, F.char_length(up_to_key) + 2)
    token = F.btrim(F.substr(F.ltrim(after_key, F.lit(WHITESPACE)), F.lit(2)), F.lit(WHITESPACE))
    return F.struct(F.substring_index(up_to_key, '"', -1).alias("key"), token.alias("token"))


def _digit_count(token: Column) -> Column:
    """Digits of a number token (0 for any other token)."""
    number = ~F.left(token, F.lit(1)).isin('"', "t", "f", "n")
    digits = (F.char_length(token) - F.startswith(token, F.lit("-")).cast("int")
              - F.contains(token, F.lit(".")).cast("int"))
    return F.when(number, digits).otherwise(F.lit(0))


def cells(tokens: Column | str, naive: str = "timestamp") -> Column:
    """`array<struct<name, kind, whole, scale>>`, one per token of :func:`flat_tokens`, classified as
    `ColumnSummary.add` classifies the value `loads_exact` gives for the token.

    kind: `text`, `date`, `timestamp` or `naive` (a date-time text without a zone) for a string; `boolean`;
    `int` / `bigint` / `integer` (32 bits, 64 bits, wider) for an integer, `whole` its digits; `decimal` for
    any other number, `whole` and `scale` as `add_decimal` reads them from the Decimal (`0.05` has whole -1,
    scale 2); NULL for `null` (the column still appears). NULL tokens give NULL.
    """
    if naive not in ("timestamp", "timestamp_ntz"):
        raise ValueError(f"naive must be timestamp or timestamp_ntz, not {naive!r}")
    return F.transform(tokens, lambda m: _cell(m["key"], m["token"], naive))


def _cell(name: Column, token: Column, naive: str) -> Column:
    first = F.left(token, F.lit(1))
    decimal = F.contains(token, F.lit("."))
    magnitude = F.when(first == "-", F.substr(token, F.lit(2))).otherwise(token)
    integer_part = F.substring_index(magnitude, ".", 1)
    fraction = F.substring_index(magnitude, ".", -1)
    scale = F.char_length(fraction)
    decimal_whole = F.when(integer_part != "0", F.char_length(integer_part)).otherwise(
        F.greatest(F.char_length(F.ltrim(fraction, F.lit("0"))), F.lit(1)) - scale)
    integer_kind = (F.when(token.try_cast("int").isNotNull(), F.lit("int"))
                    .when(token.try_cast("bigint").isNotNull(), F.lit("bigint")).otherwise(F.lit("integer")))
    kind = (F.when(first == '"', text_kind(_string_value(token), naive))
            .when(first.isin("t", "f"), F.lit("boolean"))
            .when(first == "n", F.lit(None).cast("string"))
            .when(decimal, F.lit("decimal"))
            .otherwise(integer_kind))
    number = ~first.isin('"', "t", "f", "n")
    whole = F.when(number, F.when(decimal, decimal_whole).otherwise(F.char_length(magnitude)))
    return F.struct(name.alias("name"), kind.alias("kind"), whole.alias("whole"),
                    F.when(number, F.when(decimal, scale).otherwise(F.lit(0))).alias("scale"))


def _string_value(token: Column) -> Column:
    """The text of a string token: its escapes decoded by Spark's JSON reader, only where it has one."""
    decoded = F.from_json(F.concat(F.lit("["), token, F.lit("]")), "array<string>")[0]
    return F.when(F.contains(token, F.lit("\\")), decoded).otherwise(F.btrim(token, F.lit('"')))


_DATE_TIME = (r"^[0-9]{4}-[0-9]{2}-[0-9]{2}"
              r"(?:[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?(?:Z|[+-][0-9]{2}:[0-9]{2})?)?\z")
"""The shapes `inferred._text_kind` accepts before `fromisoformat` checks the calendar (ASCII digits only:
`fromisoformat` reads the UTF-8 bytes)."""


def text_kind(s: Column, naive: str = "timestamp") -> Column:
    """`inferred._text_kind` as a Spark expression: `date`, `timestamp`, `naive` or `text`.

    The shape by regex, then the ranges `fromisoformat` (Python 3.11) checks: year >= 1, month 1-12, a day of
    that month (leap years), hour < 24, minute < 60, second < 60, and a zone offset (`+HH:MM`, the minutes not
    checked on their own) strictly inside 24 hours. The cheap positional test first, as Python does.
    """
    n = F.char_length(s)

    def part(pos: int | Column, length: int) -> Column:
        return F.substr(s, pos if isinstance(pos, Column) else F.lit(pos), F.lit(length)).try_cast("int")

    year, month, day = part(1, 4), part(6, 2), part(9, 2)
    leap = ((year % 4 == 0) & (year % 100 != 0)) | (year % 400 == 0)
    month_days = (F.when(month == 2, F.when(leap, F.lit(29)).otherwise(F.lit(28)))
                  .when(month.isin(4, 6, 9, 11), F.lit(30)).otherwise(F.lit(31)))
    date_ok = (year >= 1) & month.between(1, 12) & (day >= 1) & (day <= month_days)
    time_ok = (part(12, 2) < 24) & (part(15, 2) < 60) & (part(18, 2) < 60)
    offset = F.substr(s, n - 5, F.lit(1)).isin("+", "-")
    offset_ok = part(n - 4, 2) * 60 + part(n - 1, 2) < 24 * 60
    candidate = (((n == 10) | (n >= 19)) & (F.substr(s, F.lit(5), F.lit(1)) == "-")
                 & (F.substr(s, F.lit(8), F.lit(1)) == "-"))
    text = F.lit("text")
    kind = (F.when(~s.rlike(_DATE_TIME) | ~date_ok, text)
            .when(n == 10, F.lit("date"))
            .when(~time_ok, text)
            .when(offset, F.when(offset_ok, F.lit("timestamp")).otherwise(text))
            .when(F.right(s, F.lit(1)) == "Z", F.lit("timestamp"))
            .otherwise(F.lit(naive)))
    return F.when(candidate, kind).otherwise(text)
