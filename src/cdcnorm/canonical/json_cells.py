"""Flat JSON objects tokenized by Spark expressions, and each value's kind as :mod:`cdcnorm.canonical.inferred` sees it.

Why: a Datastream JSON payload carries no column types; the Python decoder observes every value it parses
(`TypeObserver`, from `loads_exact`'s exact values: ints as int, every other number as a `Decimal` keeping its
scale). Spark's own JSON functions lose the number text (`from_json` reads `12.50` as 12.5, `parse_json` as
DECIMAL(3,1)), so the JVM decode path reads the scale from the raw text instead: :func:`flat_tokens` splits a
flat object into its members' exact value texts with one regex pass, :func:`cells` classifies each value
exactly as `ColumnSummary.add` would classify the value `loads_exact` gives for it (`cell_summary` folds the
cells into the schema versions' summaries).

What the tokenizer holds exactly, and so the only texts it answers: one JSON object (any JSON whitespace
between its tokens) whose values are strings, numbers without an exponent of at most 38 digits (or more, see
`max_digits`), `true`, `false` or `null`, whose keys are distinct and written without a backslash escape, in valid UTF-8. Anything else - a nested
object or array, `1e5`, NaN, a duplicate key, invalid JSON - gives NULL: the Python decoder takes that record.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

_WS = "[ \\t\\n\\r]*+"
_STRING = r'"[^"\\\x00-\x1f]*+(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*+)*+"'
"""A JSON string token, exactly: no raw control character, only JSON's escapes. Written as an unrolled loop
(runs of plain characters, then one escape at a time) so that Java's regex engine does not recurse per
character (a `(?:a|b)*` loop does, and overflows the stack on a long text)."""
MAX_DIGITS = 38
"""The default longest number :func:`flat_tokens` holds (decimal(38) holds it)."""
LONGEST_INTEGER = 3998
"""The longest integer :func:`flat_tokens` holds whatever `max_digits`: `loads_exact` reads an integer literal of
4,000 characters or more as a Decimal, and one of 4,000 (a sign and 3,999 digits) as an int or a Decimal
depending on the rest of the line."""


def _number(max_digits: int | None) -> str:
    """A JSON number without an exponent, of at most `max_digits` digits (None: any fraction, integers up to
    :data:`LONGEST_INTEGER` digits). A fraction's digits and point are looked ahead first. A number with an
    exponent leaves an `e` that no member can start with; a longer number matches nothing."""
    integer_digits = min(max_digits or LONGEST_INTEGER, LONGEST_INTEGER)
    fraction = rf"(?=[0-9.]{{1,{max_digits + 1}}}+(?![0-9.]))" if max_digits else ""
    return (rf"-?+(?:{fraction}(?:0|[1-9][0-9]*+)\.[0-9]++"
            rf"|(?:0|[1-9][0-9]{{0,{integer_digits - 1}}}+)(?![0-9.]))")


def _member(max_digits: int | None) -> str:
    """One member with the `{` or `,` before it, starting where the previous one ended (`\\G`), so that the
    members found are the object's text from its start, one after another, up to the first character that is
    not a member: group 1 the name (written without escapes: the text between the quotes is the name), group 2
    the value."""
    return (rf'\G(?:\A{_WS}\{{|(?!\A),){_WS}"([^"\\\x00-\x1f]*+)"{_WS}:{_WS}'
            rf"({_STRING}|{_number(max_digits)}|true|false|null){_WS}")


_END = "\u0000"
"""What :func:`flat_tokens` writes after each name and each value: JSON allows no raw NUL in a valid text."""
_CLOSE = rf"\A{_WS}\}}{_WS}\z"
_EMPTY = rf"\A{_WS}\{{{_WS}\}}{_WS}\z"
_TOKENS = "array<struct<key:string,token:string>>"


def flat_tokens(text: Column | str, max_digits: int | None = MAX_DIGITS) -> Column:
    """`array<struct<key, token>>`: the members of a flat JSON object text in text order (`key` the name,
    `token` the value's exact JSON text); NULL for any text the tokenizer does not hold exactly (see module),
    including a number of more than `max_digits` digits (None: any fraction, integers up to
    :data:`LONGEST_INTEGER` digits).

    One regex pass rewrites every member as `name NUL value NUL`; whatever it leaves after the last member
    must be the closing brace and whitespace, so the members account for the whole text. `text` is read more
    than once: pass a column, not an expensive expression.
    """
    if max_digits is not None and max_digits < 1:
        raise ValueError(f"max_digits must be None or at least 1, not {max_digits}")
    text = F.col(text) if isinstance(text, str) else text
    marked = F.regexp_replace(text, F.lit(_member(max_digits)), F.lit(f"$1{_END}$2{_END}"))
    return _let(F.split(marked, _END), lambda parts: _checked_members(text, parts))


def _let(value: Column, body) -> Column:
    """`body(value)` with `value` computed once (a lambda's variable), however often `body` reads it."""
    return F.transform(F.array(value), body)[0]


def _checked_members(text: Column, parts: Column) -> Column:
    """`parts`: name, value, name, value, ..., what follows the last member."""
    count = ((F.size(parts) - 1) / 2).cast("int")
    members = F.transform(F.sequence(F.lit(0), count - 1),
                          lambda i: F.struct(parts[2 * i].alias("key"), parts[2 * i + 1].alias("token")))
    rest = F.element_at(parts, -1)
    whole = F.when(count > 0, rest.rlike(_CLOSE)).otherwise(text.rlike(_EMPTY))
    valid = F.is_valid_utf8(text) & ~F.contains(text, F.lit(_END)) & whole
    keys = F.filter(parts, lambda _, i: (i % 2 == 0) & (i < 2 * count))
    return F.when(valid & (count == 0), F.array().cast(_TOKENS)).when(
        valid & (F.size(F.array_distinct(keys)) == count), members)


def string_value(token: Column) -> Column:
    """The str a JSON string token decodes to (escapes resolved by Spark's JSON reader only where there are any)."""
    inner = F.substring(token, 2, F.length(token) - 2)
    return F.when(token.contains("\\"), F.from_json(F.concat(F.lit("["), token, F.lit("]")),
                                                    "array<string>")[0]).otherwise(inner)


def cells(tokens: Column | str, naive: str = "timestamp") -> Column:
    """`array<struct<name, kind, whole, scale>>`, one per token of :func:`flat_tokens`, classified as
    `ColumnSummary.add` classifies the value `loads_exact` gives for the token.

    kind: `text`, `date`, `timestamp` or `naive` (a date-time text without a zone) for a string; `boolean`;
    `int` / `bigint` / `integer` (32 bits, 64 bits, wider) for an integer, `whole` its digits; `decimal` for
    any other number, `whole` and `scale` as `add_decimal` reads them from the Decimal (`0.05` has whole -1,
    scale 2); NULL for `null` (the column still appears). NULL tokens give NULL.
    """
    _check_naive(naive)
    tokens = F.col(tokens) if isinstance(tokens, str) else tokens
    return F.transform(tokens, lambda m: _cell(m["key"], m["token"], naive))


def _check_naive(naive: str) -> None:
    if naive not in ("timestamp", "timestamp_ntz"):
        raise ValueError(f"naive must be timestamp or timestamp_ntz, not {naive!r}")


def _cell(name: Column, token: Column, naive: str) -> Column:
    """One cell; every test is on the token's bytes (no parsing), each case computes only its own fields."""
    def cell(kind: Column | str | None, whole: Column | None = None, scale: Column | None = None) -> Column:
        kind = kind if isinstance(kind, Column) else F.lit(kind).cast("string")
        return F.struct(name.alias("name"), kind.alias("kind"),
                        (F.lit(None) if whole is None else whole).cast("int").alias("whole"),
                        (F.lit(None) if scale is None else scale).cast("int").alias("scale"))

    escaped = F.contains(token, F.lit("\\"))
    string_kind = F.when(escaped, text_kind(string_value(token), naive)).otherwise(_token_kind(token, naive))
    return (F.when(F.startswith(token, F.lit('"')), cell(string_kind))
            .when((token == "true") | (token == "false"), cell("boolean"))
            .when(token == "null", cell(None))
            .when(F.contains(token, F.lit(".")), _decimal_cell(token, cell))
            .otherwise(_integer_cell(token, cell)))


def _integer_cell(token: Column, cell) -> Column:
    """`int`, `bigint` or `integer` by the digits, compared as text with the limits at 10 and 19 digits (no
    leading zeros in JSON: equal lengths compare as the numbers do)."""
    negative = F.startswith(token, F.lit("-"))
    digits = F.char_length(token) - negative.cast("int")

    def within(positive: str, negative_limit: str) -> Column:
        return F.when(negative, token <= negative_limit).otherwise(token <= positive)

    kind = (F.when(digits <= 9, F.lit("int"))
            .when(digits == 10, F.when(within("2147483647", "-2147483648"), F.lit("int")).otherwise(F.lit("bigint")))
            .when(digits <= 18, F.lit("bigint"))
            .when(digits == 19, F.when(within("9223372036854775807", "-9223372036854775808"), F.lit("bigint"))
                  .otherwise(F.lit("integer")))
            .otherwise(F.lit("integer")))
    return cell(kind, digits, F.lit(0))


def _decimal_cell(token: Column, cell) -> Column:
    """`decimal` with `add_decimal`'s whole and scale: the scale is the fraction's length; the whole is the
    integer part's length, except for `0.xxx`, whose Decimal digits lose the fraction's leading zeros."""
    point = F.instr(token, ".")
    scale = F.char_length(token) - point
    whole_digits = point - 1 - F.startswith(token, F.lit("-")).cast("int")
    below_one = (whole_digits == 1) & (F.substr(token, point - 1, F.lit(1)) == "0")
    significant = F.greatest(F.char_length(F.ltrim(F.substr(token, point + 1), F.lit("0"))), F.lit(1))
    return cell(F.lit("decimal"), F.when(below_one, significant - scale).otherwise(whole_digits), scale)


_YEAR = "(?!0000)[0-9]{4}"
_LEAP_YEAR = "(?!0000)(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)"
_DATE = (rf"(?:{_YEAR}-(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)"
         rf"|(?:0[13578]|1[02])-31)|{_LEAP_YEAR}-02-29)")
_TIME = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,6})?"
_ZONE = "(?:Z|[+-](?:(?:[01][0-9]|2[0-2]):[0-9]{2}|23:[0-5][0-9]))"
_DATE_TIME = f"{_DATE}(?:[T ]{_TIME}{_ZONE}?)?"
"""Exactly the texts `inferred._text_kind` calls a date or a date-time: its shapes (:data:`inferred._TAIL`)
whose fields `fromisoformat` (Python 3.11) accepts - year 1 to 9999, a day of the month (29 February in leap
years: by 4, not by 100 unless by 400), hour < 24, minute and second < 60, and a zone offset strictly inside 24
hours (its minutes are not checked on their own: `+05:99` is 6:39). ASCII digits only: `fromisoformat` reads
the UTF-8 bytes."""


def text_kind(s: Column, naive: str = "timestamp") -> Column:
    """`inferred._text_kind` as a Spark expression: `date`, `timestamp`, `naive` or `text` (NULL: `text`)."""
    _check_naive(naive)
    return _let(s, lambda v: _kind(v, naive, quote=""))


def _token_kind(token: Column, naive: str) -> Column:
    """:func:`text_kind` of a string token written without escapes (its text is the token within the quotes)."""
    return _kind(token, naive, quote='"')


def _kind(s: Column, naive: str, quote: str) -> Column:
    """The kind of `s` (between `quote`s): the cheap positional test first, as Python does, then one regex;
    a date has 10 characters, a zone ends with `Z` or is `+HH:MM` / `-HH:MM`."""
    q = len(quote)
    n = F.char_length(s) - 2 * q

    def at(pos: int | Column) -> Column:
        return F.substr(s, pos + q if isinstance(pos, Column) else F.lit(pos + q), F.lit(1))

    candidate = ((n == 10) | (n >= 19)) & (at(5) == "-") & (at(8) == "-")
    valid = F.coalesce(candidate & s.rlike(f"^{quote}{_DATE_TIME}{quote}\\z"), F.lit(False))
    zoned = (at(n) == "Z") | at(n - 5).isin("+", "-")
    return (F.when(~valid, F.lit("text")).when(n == 10, F.lit("date"))
            .when(zoned, F.lit("timestamp")).otherwise(F.lit(naive)))
