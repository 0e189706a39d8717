"""The tuple encoding of :mod:`cdcnorm.canonical.tuple_codec` as Spark Column expressions.

Why: when Spark parses the records itself, the bytes hashed into event ids and the ``sort_key`` column must be
computed in the JVM, byte for byte what ``tuple_codec.encode`` gives for the same values in Python. Only Spark
built-ins are used (no Python UDF), so the encoding runs inside Spark's own (generated or interpreted) code.

An element is ``(kind, column)``, or ``("tuple", [elements])`` for a nested tuple. Kinds and the Python value
each column stands for:

=================  ==========================  ==========================================================
kind               Spark type                  Python value (its encoding)
=================  ==========================  ==========================================================
``str``            StringType                  str (0x02, UTF-8 with 0x00 escaped as 0x00 0xFF, 0x00)
``bytes``          BinaryType                  bytes (0x01, escaped and terminated like str)
``int``            Long/Integer/Short/Byte     int (FDB integer: 0x14 +/- byte count, magnitude)
``bool``           BooleanType                 bool (0x26 / 0x27)
``ts``             TimestampType               aware UTC datetime (0x42, micros, 8 bytes offset binary)
``ts_ntz``         TimestampNTZType            naive datetime (0x41, micros, 8 bytes offset binary)
``date``           DateType                    date (0x40, days, 4 bytes offset binary)
``decimal``        DecimalType(p, s) only      Decimal (its floor as an int, then 0xFF digits 0x00)
``array<KIND>``    ARRAY of KIND               list: a nested tuple (0x05 ... 0x00) of its elements
``tuple``          a list of elements          tuple: a nested tuple of those elements
=================  ==========================  ==========================================================

A NULL value encodes as Python's None: 0x00, or 0x00 0xFF inside a nested tuple (a NULL array too).

Rows the expressions cannot encode exactly are NULL in :func:`encode` and False in :func:`encodable`; the
caller hands those rows to the Python decoder. They are values Python holds differently or the codec
writes beyond 64 bits: a string that is not valid UTF-8, a timestamp or date outside Python's years 1..9999,
a decimal whose floor does not fit a long.

Cost (``benchmarks/tuple_expr_cost.py``): with generated code about 65 ns of JVM CPU per element (0.45 µs per
row of str, int, timestamp and a tuple of 3 ints, where ``tuple_codec.encode`` takes 2.3 µs in CPython); Spark's
interpreter takes about 7 times that. Numbers are built as one long whose hex digits are the encoding
(``unhex(hex(x))``), since every string operation on the way costs about 100 ns.

The encoding of a list of elements is the concatenation of the elements' encodings, so
``F.concat(encode(a), encode(b))`` equals ``encode(a + b)``: a ``sort_key`` is
``encode(sort_parts + [("str", event_id)])``.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

__all__ = ["Element", "element", "encodable", "encode", "nested", "none"]

Element = tuple[str, "Column | list[Element]"]
"""``(kind, column)``, or ``("tuple", [elements])``."""

_LONG_MIN = -(1 << 63)
_LONG_MAX = (1 << 63) - 1
_INT_ZERO = 0x14

# Python's datetime range (years 1..9999) in micros / days since the epoch: the values a Python record can hold.
_MICROS_MIN = -62_135_596_800_000_000  # 0001-01-01T00:00:00
_MICROS_MAX = 253_402_300_799_999_999  # 9999-12-31T23:59:59.999999
_DAYS_MIN = -719_162  # 0001-01-01
_DAYS_MAX = 2_932_896  # 9999-12-31

_ESCAPE_NUL = r"\G((?:..)*?)00"  # the next 0x00 byte of a hex string: a "00" at an even offset
"""Each match starts where the previous one ended and consumes whole hex pairs, so "A00B" (0xA0 0x0B) is not a
0x00 byte."""

_SCALARS = ("str", "bytes", "int", "bool", "ts", "ts_ntz", "date", "decimal")


def _bin(data: bytes) -> Column:
    """A binary literal (built per call: a Column needs the active session)."""
    return F.lit(bytearray(data))


def _none(nested: bool) -> Column:
    return _bin(b"\x00\xff" if nested else b"\x00")


def encode(items: list[Element]) -> Column:
    """Binary column: ``tuple_codec.encode(tuple(values))`` of each row; NULL where :func:`encodable` is False."""
    if not items:
        return _bin(b"")
    return F.concat(*(_element(kind, value, False) for kind, value in items))


def element(kind: str, value: Column, nested: bool = False) -> Column:
    """One element's encoding, top level or (`nested`) inside a nested tuple: for elements whose kind varies by
    row, chosen with `F.when` (a NULL value encodes as None)."""
    return _element(kind, value, nested)


def none(nested: bool = False) -> Column:
    """Python's None as an element."""
    return _none(nested)


def nested(body: Column) -> Column:
    """A nested tuple around already encoded nested elements (`element(..., nested=True)`, concatenated)."""
    return F.concat(_bin(b"\x05"), body, _bin(b"\x00"))


def encodable(items: list[Element]) -> Column:
    """Boolean column, never NULL: True where :func:`encode` is exact for the row (else decode it in Python)."""
    result = _element_ok("tuple", list(items))
    return F.lit(True) if result is None else result


# --------------------------------------------------------------------------- encoding
def _element(kind: str, value, nested: bool) -> Column:
    if kind == "tuple":
        if not isinstance(value, list):
            raise TypeError("a tuple element takes a list of elements")
        return F.concat(_bin(b"\x05"), *(_element(k, v, True) for k, v in value), _bin(b"\x00"))
    inner = _array_kind(kind)
    if inner is not None:
        # Concatenated one by one, not by array_join (strings only, and it skips the NULL of an inexact element).
        items = F.aggregate(value, _bin(b""), lambda acc, x: F.concat(acc, _element(inner, x, True)))
        body = F.concat(_bin(b"\x05"), items, _bin(b"\x00"))
    elif kind in _SCALARS:
        body = _SCALAR_BODY[kind](value)
    else:
        raise ValueError(f"unknown tuple element kind {kind!r}")
    return F.when(value.isNull(), _none(nested)).otherwise(body)


def _array_kind(kind: str) -> str | None:
    if kind.startswith("array<") and kind.endswith(">"):
        return kind[6:-1]
    return None


def _escaped(raw: Column) -> Column:
    """``raw`` with every 0x00 byte written as 0x00 0xFF."""
    return F.unhex(F.regexp_replace(F.hex(raw), _ESCAPE_NUL, "$100FF"))


def _str_body(value: Column) -> Column:
    # A 0x00 byte of valid UTF-8 is always the character U+0000, so the pre-filter searches the string itself.
    raw = value.cast("binary")
    escaped = F.when(value.contains("\x00"), _escaped(raw)).otherwise(raw)
    return F.when(F.is_valid_utf8(value), F.concat(_bin(b"\x02"), escaped, _bin(b"\x00")))


def _bytes_body(value: Column) -> Column:
    return F.concat(_bin(b"\x01"), _escaped(value), _bin(b"\x00"))  # bytes keys are rare: no fast path


def _bytes_of(number: Column) -> Column:
    """The big-endian bytes of a long from its highest non-zero byte (Spark's ``hex`` of a long is unsigned and
    without leading zeros; ``unhex`` reads an odd count of digits as if a 0 led)."""
    return F.unhex(F.hex(number))


def _int_body(value: Column) -> Column:
    """The FDB integer encoding of a long; NULL for NULL.

    A positive value of n bytes is 0x14+n and its n big-endian bytes; a negative one 0x14-n and the ones'
    complement of its magnitude in n bytes, i.e. ``value + 256**n - 1``. Up to 7 bytes the header and the body
    fit one positive long, ``value + (0x14+n) * 256**n`` or ``value + (0x14-n+1) * 256**n - 1``, whose bytes are
    the encoding (the header is never 0): two string operations, where building hex digits piece by piece
    takes about eight. Magnitudes of 8 bytes get a separate header byte; ``Long.MIN_VALUE - 1`` wraps to
    ``Long.MAX_VALUE``, whose 8 bytes are the ones' complement of 2**63.
    """
    v = value.cast("long")
    positive = negative = None
    for n in range(1, 8):
        limit = 1 << (8 * n)
        pos_offset = F.lit((_INT_ZERO + n) << (8 * n))
        neg_offset = F.lit(((_INT_ZERO - n + 1) << (8 * n)) - 1)
        if positive is None:
            positive, negative = F.when(v < limit, pos_offset), F.when(v > -limit, neg_offset)
        else:
            positive, negative = positive.when(v < limit, pos_offset), negative.when(v > -limit, neg_offset)
    big = 1 << 56
    below = F.coalesce(F.try_subtract(v, F.lit(1)), F.lit(_LONG_MAX))
    return (F.when(v == 0, _bin(bytes((_INT_ZERO,))))
            .when((v > -big) & (v < big), _bytes_of(v + F.when(v > 0, positive).otherwise(negative)))
            .when(v > 0, F.concat(_bin(bytes((_INT_ZERO + 8,))), _bytes_of(v)))
            .when(v < 0, F.concat(_bin(bytes((_INT_ZERO - 8,))), _bytes_of(below))))


def _bool_body(value: Column) -> Column:
    return F.when(value, _bin(b"\x27")).otherwise(_bin(b"\x26"))


def _offset_binary(code: int, micros: Column) -> Column:
    """``code`` and ``micros + 2**63`` as 8 big-endian bytes (flipping the sign bit adds 2**63).

    Only for micros in Python's range, where the top byte is 0x7F or 0x80, never 0: ``_bytes_of`` gives 8.
    """
    return F.concat(_bin(bytes((code,))), _bytes_of(micros.bitwiseXOR(F.lit(_LONG_MIN))))


def _ts_micros(value: Column) -> Column:
    return F.unix_micros(value)


def _ntz_days(value: Column) -> Column:
    return F.unix_date(value.cast("date"))


def _ntz_micros(value: Column) -> Column:
    """The wall-clock micros of a naive value, from its date and time fields.

    Not ``timestampdiff`` nor a cast to TIMESTAMP: both go through the session time zone (a wall time in a DST
    gap moves by an hour); a TIMESTAMP_NTZ's fields and date do not.
    """
    of_day = (F.hour(value).cast("long") * 3_600_000_000 + F.minute(value).cast("long") * 60_000_000
              + (F.extract(F.lit("SECOND"), value) * 1_000_000).cast("long"))
    return F.try_multiply(_ntz_days(value).cast("long"), F.lit(86_400_000_000)) + of_day


def _in_range(micros: Column) -> Column:
    return micros.between(_MICROS_MIN, _MICROS_MAX)


def _in_day_range(days: Column) -> Column:
    return days.between(_DAYS_MIN, _DAYS_MAX)


def _ts_body(value: Column) -> Column:
    micros = _ts_micros(value)
    return F.when(_in_range(micros), _offset_binary(0x42, micros))


def _ts_ntz_body(value: Column) -> Column:
    return F.when(_in_day_range(_ntz_days(value)), _offset_binary(0x41, _ntz_micros(value)))


def _date_body(value: Column) -> Column:
    days = F.unix_date(value)
    biased = days.cast("long") + F.lit(1 << 31)
    # In Python's range the top byte is 0x7F or 0x80, never 0: `_bytes_of` gives 4 bytes.
    return F.when(_in_day_range(days), F.concat(_bin(b"\x40"), _bytes_of(biased)))


def _floor_fits(value: Column) -> Column:
    """Whether a decimal's floor fits a long.

    A range test, not ``try_cast(...) IS NOT NULL``: Spark's optimizer rewrites that to ``floor IS NOT NULL``
    (a cast passes NULL through, so it treats the cast as never making one), which is True for any value.
    """
    return F.floor(value).between(F.lit(_LONG_MIN), F.lit(_LONG_MAX))


def _decimal_body(value: Column) -> Column:
    """The floor as an int, then, if the value is not integral, 0xFF, the digits of ``value - floor``, 0x00.

    The digits come from the exact decimal string: those after the point without trailing zeros; for a
    negative value ``1 - 0.digits``, i.e. every digit 9-complemented and the last (non-zero) one plus 1.
    """
    digits = F.regexp_extract(value.cast("string"), r"\.([0-9]*[1-9])", 1)
    complement = F.translate(digits, "0123456789", "9876543210")
    size = F.length(digits)
    negative_fraction = F.concat(complement.substr(F.lit(1), size - 1),
                                 F.translate(F.substring(complement, -1, 1), "012345678", "123456789"))
    fraction = F.when(value < 0, negative_fraction).otherwise(digits)
    tail = F.when(size == 0, _bin(b"")).otherwise(F.concat(_bin(b"\xff"), fraction.cast("binary"), _bin(b"\x00")))
    return F.when(_floor_fits(value), F.concat(_int_body(F.floor(value).try_cast("long")), tail))


_SCALAR_BODY = {
    "str": _str_body,
    "bytes": _bytes_body,
    "int": _int_body,
    "bool": _bool_body,
    "ts": _ts_body,
    "ts_ntz": _ts_ntz_body,
    "date": _date_body,
    "decimal": _decimal_body,
}


# --------------------------------------------------------------------------- exactness
_EXACT_KINDS = frozenset({"bytes", "int", "bool"})
"""Kinds every value of which encodes exactly."""


def _always_exact(kind: str) -> bool:
    inner = _array_kind(kind)
    return _always_exact(inner) if inner is not None else kind in _EXACT_KINDS


def _element_ok(kind: str, value) -> Column | None:
    """The condition under which an element encodes exactly; None when it always does."""
    if kind == "tuple":
        if not isinstance(value, list):
            raise TypeError("a tuple element takes a list of elements")
        checks = [c for k, v in value if (c := _element_ok(k, v)) is not None]
        return _all(checks)
    inner = _array_kind(kind)
    if inner is not None:
        if _always_exact(inner):
            return None
        check = F.forall(value, lambda x: _element_ok(inner, x))
    elif kind == "str":
        check = F.is_valid_utf8(value)
    elif kind == "ts":
        check = _in_range(_ts_micros(value))
    elif kind == "ts_ntz":
        check = _in_day_range(_ntz_days(value))
    elif kind == "date":
        check = _in_day_range(F.unix_date(value))
    elif kind == "decimal":
        check = _floor_fits(value)
    elif kind in _EXACT_KINDS:
        return None
    else:
        raise ValueError(f"unknown tuple element kind {kind!r}")
    return value.isNull() | check


def _all(checks: list[Column]) -> Column | None:
    if not checks:
        return None
    result = checks[0]
    for check in checks[1:]:
        result = result & check
    return result
