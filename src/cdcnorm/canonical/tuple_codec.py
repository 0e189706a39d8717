"""Order-preserving binary encoding of tuples, modelled on FoundationDB's tuple layer.

Why this module is long: it is one order-preserving encoding, its decoder and the type codes they share; the
encoder and decoder must change together.

Why: the canonical change record carries two binary columns that Spark compares by unsigned
lexicographic byte order:

* ``sort_key`` -- within one table, ascending bytes must equal source change order;
* ``key_bytes`` -- primary-key values packed into one comparable/hashable value, because
  VARIANT columns cannot be grouped or joined on.

For tuples ``a`` and ``b`` whose elements have the same types position-wise,
``encode(a) < encode(b)`` iff ``a < b`` and ``encode(a) == encode(b)`` iff ``a == b``; a tuple
sorts before every longer tuple it is a prefix of; ``decode(encode(a)) == a``.

Format (one type-code byte per element, so mixed types order deterministically; codes follow
FDB where FDB defines the type, 0x40-0x4F is FDB's user range)::

    0x00        None (inside a nested tuple: 0x00 0xFF, since 0x00 alone ends the tuple)
    0x01        bytes: data with 0x00 escaped as 0x00 0xFF, terminated by 0x00
    0x02        str: UTF-8 (surrogatepass), escaped and terminated like bytes
    0x05        nested tuple/list: encoded elements, terminated by 0x00
    0x0A        Decimal('-Infinity')
    0x0B-0x1D   int and finite Decimal (see below)
    0x1E        Decimal('Infinity')
    0x1F        Decimal('NaN')
    0x21        float: IEEE-754 double, sign bit flipped (positive) or all bits flipped (negative)
    0x26/0x27   False/True
    0x30        uuid.UUID: 16 bytes big-endian
    0x40        datetime.date: days since 1970-01-01, 4 bytes offset binary (+2**31)
    0x41        naive datetime.datetime: micros since 1970-01-01T00:00, 8 bytes offset binary
    0x42        aware datetime.datetime: UTC micros since the epoch, 8 bytes offset binary
    0x43        naive datetime.time: micros since midnight, 8 bytes offset binary
    0x44        aware datetime.time: micros since midnight minus the UTC offset, 8 bytes offset binary
    0x45        datetime.timedelta: total micros as an integer (the int encoding above)

So the type order is None < bytes < str < tuple < numbers (int/Decimal) < float < bool < UUID <
date < naive datetime < aware datetime < naive time < aware time < timedelta. (time and timedelta
are extras: some sources have TIME/INTERVAL key columns.)

Integers (arbitrary precision): FDB's encoding. 0x14 is zero; 0x14+n / 0x14-n prefix an
n-byte (1 <= n <= 8) big-endian magnitude, stored as ones' complement when negative. Longer
values use 0x1D (positive) / 0x0B (negative) followed by the byte length n (complemented for
negatives) and the magnitude. FDB caps n at 255; to support *any* size, a length byte of 0xFF
(0x00 for negatives) is followed by n as a 64-bit big-endian integer (complemented for negatives),
so only integers of 255 bytes or more (which FDB cannot encode anyway) differ from FDB's bytes. Replicate's 35-digit
``changeSequence`` values therefore compare numerically.

Decimals share the integer space so that numerically equal ints and Decimals encode equally
(an int key ``5`` joins a NUMERIC key ``Decimal('5.00')``) and so that ints and Decimals of any
scale interleave correctly. A finite Decimal ``x`` is written as the integer ``floor(x)``; if
``x`` is not integral, 0xFF, then the ASCII decimal digits of ``x - floor(x)`` (trailing zeros
dropped), then 0x00. 0xFF is greater than every type code and than the 0x00 that ends a nested
tuple, so ``n`` followed by anything sorts before ``n + fraction``. Consequences:

* The scale is not preserved: ``Decimal('1.5')`` and ``Decimal('1.50')`` encode equal (same
  number, so the same key), and an integral Decimal decodes as ``int``. Both still compare
  equal to the original in Python.
* ``-0`` and ``Decimal('-0.00')`` encode as ``0``. Decimal NaN sorts after +Infinity; sNaN is
  rejected.
* The cost is proportional to the number of digits, so absurd exponents such as
  ``Decimal('1E+100000000')`` are expensive. Database NUMERIC values are fine.

Floats are a separate type from ints/Decimals (numeric ``1.0`` does not join ``1``), because
binary floats are not exact decimals. ``-0.0`` is normalised to ``0.0`` (SQL and Spark treat
them as equal keys; Python does too) and every NaN to one canonical positive NaN that sorts after
``inf``. bool is its own type, not the integer 0/1. Lists encode as nested tuples and decode as
tuples. Aware datetimes and times decode in UTC where possible (equal to the original, which
Python compares by UTC instant); sub-microsecond precision (e.g. pandas.Timestamp nanoseconds)
is dropped. Aware times are encoded exactly, whereas Python compares them with whole-minute
offsets, so times whose offsets have seconds can differ in bytes but compare equal in Python.

Performance: this runs per row inside ``mapInArrow``, so encoding dispatches on ``type(value)``
through a dict and uses ``bytes.replace``, ``int.to_bytes`` and precompiled ``struct`` formats.
It has no loops over individual bytes.
"""

from __future__ import annotations

import datetime as _dt
import operator
import struct
import uuid
from collections.abc import Callable, Sequence
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, Context, Decimal
from typing import Any

__all__ = ["decode", "encode"]

# --------------------------------------------------------------------------- type codes
_NULL = 0x00
_BYTES = 0x01
_STRING = 0x02
_NESTED = 0x05
_NEG_INT_BIG = 0x0B
_INT_ZERO = 0x14
_POS_INT_BIG = 0x1D
_DEC_NEG_INF = 0x0A
_DEC_POS_INF = 0x1E
_DEC_NAN = 0x1F
_DOUBLE = 0x21
_FALSE = 0x26
_TRUE = 0x27
_UUID = 0x30
_DATE = 0x40
_NAIVE_DATETIME = 0x41
_AWARE_DATETIME = 0x42
_NAIVE_TIME = 0x43
_AWARE_TIME = 0x44
_TIMEDELTA = 0x45
_FRACTION = 0xFF  # marks a Decimal's fractional digits after its floor integer

_ESCAPE_FROM = b"\x00"
_ESCAPE_TO = b"\x00\xff"

_POS_HDR = [bytes((_INT_ZERO + n,)) for n in range(9)]
_NEG_HDR = [bytes((_INT_ZERO - n,)) for n in range(9)]
_MASK = [(1 << (8 * n)) - 1 for n in range(9)]
_U64_MAX = (1 << 64) - 1

_BQ = struct.Struct(">BQ")
_BI = struct.Struct(">BI")
_Q = struct.Struct(">Q")
_I = struct.Struct(">I")
_D = struct.Struct(">d")

_NAN_BYTES = _BQ.pack(_DOUBLE, 0xFFF8000000000000)
_SIGN64 = 1 << 63
_SIGN32 = 1 << 31

_EPOCH_NAIVE = _dt.datetime(1970, 1, 1)
_UTC = _dt.UTC
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_UTC)
_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_ONE_MICRO = _dt.timedelta(microseconds=1)
# Instants the UTC datetime range cannot hold are decoded with the largest allowed offset.
_MAX_OFFSET = _dt.timedelta(hours=24) - _ONE_MICRO

# Decimal digits 0..9 (from DecimalTuple.digits) -> ASCII, and -> ASCII of the 9-complement
# (used for negative fractions).
_DIGITS_TO_ASCII = bytes(range(0x30, 0x3A)) + bytes(246)
_DIGITS_TO_ASCII_9C = bytes(range(0x39, 0x2F, -1)) + bytes(246)

# Exact arithmetic for rebuilding decoded Decimals (no rounding at any size).
_EXACT = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN)


# --------------------------------------------------------------------------- encoding
def encode(items: Sequence[Any]) -> bytes:
    """Encode a tuple of values into order-preserving bytes.

    Args:
        items: A tuple or list of supported values (see the module docstring).

    Returns:
        Bytes whose unsigned lexicographic order matches the tuple order.

    Raises:
        TypeError: If ``items`` is a str/bytes (almost surely a missing tuple) or an element
            has an unsupported type.
        ValueError: For a signalling-NaN Decimal.
    """
    if isinstance(items, (str, bytes, bytearray, memoryview)):
        raise TypeError(f"encode() expects a tuple or list of values, got {type(items).__name__}")
    out: list[bytes] = []
    _encode_items(items, out, False)
    return b"".join(out)


def _encode_items(items: Sequence[Any], out: list[bytes], nested: bool) -> None:
    """Append each element's encoding, dispatching on the exact type first for speed.

    str and int (most sort keys, ids and keys) are inlined: a function call per element is a large share of
    the cost of a row.
    """
    encoders = _ENCODERS
    small = _SMALL_INTS
    append = out.append
    for value in items:
        t = type(value)
        if t is str:
            try:
                raw = value.encode()
            except UnicodeEncodeError:
                raw = value.encode("utf-8", "surrogatepass")
            append(b"\x02" + raw.replace(_ESCAPE_FROM, _ESCAPE_TO) + b"\x00")
        elif t is int:
            append(small.get(value) or _int_bytes(value))
        else:
            enc = encoders.get(t)
            if enc is None:
                enc = _resolve_encoder(value)
            enc(value, out, nested)


def _int_bytes(v: int) -> bytes:
    """FDB integer encoding, extended to lengths >= 255 bytes."""
    if v > 0:
        n = (v.bit_length() + 7) >> 3
        if n <= 8:
            return _POS_HDR[n] + v.to_bytes(n, "big")
        if n < 0xFF:
            return bytes((_POS_INT_BIG, n)) + v.to_bytes(n, "big")
        return bytes((_POS_INT_BIG, 0xFF)) + _Q.pack(n) + v.to_bytes(n, "big")
    if v == 0:
        return b"\x14"
    n = ((-v).bit_length() + 7) >> 3
    if n <= 8:
        return _NEG_HDR[n] + (v + _MASK[n]).to_bytes(n, "big")
    body = (v + (1 << (8 * n)) - 1).to_bytes(n, "big")
    if n < 0xFF:
        return bytes((_NEG_INT_BIG, n ^ 0xFF)) + body
    return bytes((_NEG_INT_BIG, 0x00)) + _Q.pack(n ^ _U64_MAX) + body


_SMALL_INTS = {i: _int_bytes(i) for i in range(-256, 4096)}


def _enc_none(value: None, out: list[bytes], nested: bool) -> None:
    out.append(b"\x00\xff" if nested else b"\x00")


def _enc_bytes(value: bytes, out: list[bytes], nested: bool) -> None:
    out.append(b"\x01" + bytes(value).replace(_ESCAPE_FROM, _ESCAPE_TO) + b"\x00")


def _enc_str(value: str, out: list[bytes], nested: bool) -> None:
    raw = value.encode("utf-8", "surrogatepass")
    out.append(b"\x02" + raw.replace(_ESCAPE_FROM, _ESCAPE_TO) + b"\x00")


def _enc_nested(value: Sequence[Any], out: list[bytes], nested: bool) -> None:
    out.append(b"\x05")
    _encode_items(value, out, True)
    out.append(b"\x00")


def _enc_int(value: int, out: list[bytes], nested: bool) -> None:
    out.append(_int_bytes(value))


def _enc_bool(value: bool, out: list[bytes], nested: bool) -> None:
    out.append(b"\x27" if value else b"\x26")


def _enc_float(value: float, out: list[bytes], nested: bool) -> None:
    if value != value:  # NaN: one canonical value, after +inf
        out.append(_NAN_BYTES)
        return
    if value == 0.0:
        value = 0.0  # -0.0 == 0.0 as a key
    (u,) = _Q.unpack(_D.pack(value))
    out.append(_BQ.pack(_DOUBLE, u ^ _U64_MAX if u & _SIGN64 else u | _SIGN64))


def _enc_decimal(value: Decimal, out: list[bytes], nested: bool) -> None:
    if not value.is_finite():
        if value.is_snan():
            raise ValueError("cannot encode a signalling NaN Decimal")
        if value.is_nan():
            out.append(b"\x1f")
        else:
            out.append(b"\x0a" if value.is_signed() else b"\x1e")
        return
    sign, digits, exp = value.as_tuple()
    if exp >= 0:
        out.append(_int_bytes(int(value)))
        return
    n_int = len(digits) + exp  # digits before the point; <= 0 means leading fraction zeros
    frac = bytes(digits[n_int:] if n_int > 0 else digits).rstrip(b"\x00")
    if not frac:
        out.append(_int_bytes(int(value)))
        return
    if n_int < 0:
        frac = bytes(-n_int) + frac
    trunc = int(value)  # exact, rounds toward zero
    if sign:
        # floor = trunc - 1 and fraction = 1 - 0.<frac>: 9-complement every digit, +1 on the last
        # (which is non-zero, so the result stays a normalised digit string).
        comp = frac.translate(_DIGITS_TO_ASCII_9C)
        out.append(_int_bytes(trunc - 1) + b"\xff" + comp[:-1] + bytes((comp[-1] + 1, 0)))
    else:
        out.append(_int_bytes(trunc) + b"\xff" + frac.translate(_DIGITS_TO_ASCII) + b"\x00")


def _enc_uuid(value: uuid.UUID, out: list[bytes], nested: bool) -> None:
    out.append(b"\x30" + value.bytes)


def _enc_date(value: _dt.date, out: list[bytes], nested: bool) -> None:
    out.append(_BI.pack(_DATE, value.toordinal() - _EPOCH_ORDINAL + _SIGN32))


def _enc_datetime(value: _dt.datetime, out: list[bytes], nested: bool) -> None:
    if value.tzinfo is _UTC:  # the common case: one subtraction and one division, all in C
        out.append(_BQ.pack(_AWARE_DATETIME, (value - _EPOCH_UTC) // _ONE_MICRO + _SIGN64))
        return
    if value.tzinfo is None:
        td = value - _EPOCH_NAIVE
        code = _NAIVE_DATETIME
    elif value.utcoffset() is not None:
        td = value - _EPOCH_UTC
        code = _AWARE_DATETIME
    else:  # has a tzinfo that declines to give an offset: naive by Python's definition
        td = value.replace(tzinfo=None) - _EPOCH_NAIVE
        code = _NAIVE_DATETIME
    micros = (td.days * 86400 + td.seconds) * 1_000_000 + td.microseconds
    out.append(_BQ.pack(code, micros + _SIGN64))


def _enc_time(value: _dt.time, out: list[bytes], nested: bool) -> None:
    micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
    offset = value.utcoffset()
    if offset is None:
        out.append(_BQ.pack(_NAIVE_TIME, micros + _SIGN64))
    else:
        micros -= offset // _ONE_MICRO
        out.append(_BQ.pack(_AWARE_TIME, micros + _SIGN64))


def _enc_timedelta(value: _dt.timedelta, out: list[bytes], nested: bool) -> None:
    out.append(b"\x45" + _int_bytes((value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds))


_Encoder = Callable[[Any, "list[bytes]", bool], None]

_ENCODERS: dict[type, _Encoder] = {
    type(None): _enc_none,
    bytes: _enc_bytes,
    bytearray: _enc_bytes,
    memoryview: _enc_bytes,
    str: _enc_str,
    tuple: _enc_nested,
    list: _enc_nested,
    int: _enc_int,
    bool: _enc_bool,
    float: _enc_float,
    Decimal: _enc_decimal,
    uuid.UUID: _enc_uuid,
    _dt.date: _enc_date,
    _dt.datetime: _enc_datetime,
    _dt.time: _enc_time,
    _dt.timedelta: _enc_timedelta,
}

# Subclass fallbacks, most specific first (bool before int, datetime before date).
_FALLBACKS: tuple[tuple[type, _Encoder], ...] = (
    (bool, _enc_bool),
    (int, _enc_int),
    (float, _enc_float),
    (str, _enc_str),
    ((bytes, bytearray, memoryview), _enc_bytes),  # type: ignore[misc]
    (Decimal, _enc_decimal),
    (_dt.datetime, _enc_datetime),
    (_dt.date, _enc_date),
    (_dt.time, _enc_time),
    (_dt.timedelta, _enc_timedelta),
    (uuid.UUID, _enc_uuid),
    ((tuple, list), _enc_nested),  # type: ignore[misc]
)


def _resolve_encoder(value: Any) -> _Encoder:
    """Find the encoder for a subclass (IntEnum, pandas.Timestamp, ...) or an ``__index__`` type."""
    for base, enc in _FALLBACKS:
        if isinstance(value, base):
            return enc
    try:
        operator.index(value)  # numpy integers and other exact integer types
    except TypeError:
        raise TypeError(f"tuple_codec cannot encode values of type {type(value).__name__}") from None
    return lambda v, out, nested: out.append(_int_bytes(operator.index(v)))


# --------------------------------------------------------------------------- decoding
def decode(data: bytes | bytearray | memoryview) -> tuple[Any, ...]:
    """Decode bytes produced by :func:`encode` back into a tuple.

    Meant for tests, debugging and readable display; it is not on the hot path.

    Args:
        data: Encoded bytes.

    Returns:
        The decoded tuple. Nested lists come back as tuples, integral Decimals as ints, and
        aware datetimes in UTC.

    Raises:
        ValueError: If ``data`` is not a valid encoding.
    """
    data = bytes(data)
    try:
        items, _ = _decode_items(data, 0, False)
    except (IndexError, struct.error) as exc:
        raise ValueError(f"truncated tuple encoding: {exc}") from None
    return items


def _need(data: bytes, end: int) -> None:
    if end > len(data):
        raise ValueError("truncated tuple encoding")


def _find_terminator(data: bytes, pos: int) -> int:
    """Index of the 0x00 ending an escaped byte string that starts at ``pos``."""
    end = data.find(b"\x00", pos)
    while end >= 0 and data[end + 1 : end + 2] == b"\xff":
        end = data.find(b"\x00", end + 2)
    if end < 0:
        raise ValueError("unterminated byte string in tuple encoding")
    return end


def _decode_items(data: bytes, pos: int, nested: bool) -> tuple[tuple[Any, ...], int]:
    items: list[Any] = []
    n = len(data)
    while pos < n:
        code = data[pos]
        pos += 1
        if code == _NULL:
            if nested:
                if data[pos : pos + 1] == b"\xff":
                    items.append(None)
                    pos += 1
                    continue
                return tuple(items), pos
            items.append(None)
        elif code in (_BYTES, _STRING):
            end = _find_terminator(data, pos)
            raw = data[pos:end].replace(_ESCAPE_TO, _ESCAPE_FROM)
            items.append(raw if code == _BYTES else raw.decode("utf-8", "surrogatepass"))
            pos = end + 1
        elif code == _NESTED:
            value, pos = _decode_items(data, pos, True)
            items.append(value)
        elif _NEG_INT_BIG <= code <= _POS_INT_BIG:
            value, pos = _decode_number(data, pos, code)
            items.append(value)
        elif code == _DOUBLE:
            _need(data, pos + 8)
            (u,) = _Q.unpack_from(data, pos)
            (value,) = _D.unpack(_Q.pack(u ^ _SIGN64 if u & _SIGN64 else u ^ _U64_MAX))
            items.append(value)
            pos += 8
        elif code in (_FALSE, _TRUE):
            items.append(code == _TRUE)
        elif code == _UUID:
            _need(data, pos + 16)
            items.append(uuid.UUID(bytes=data[pos : pos + 16]))
            pos += 16
        elif code == _DATE:
            _need(data, pos + 4)
            (days,) = _I.unpack_from(data, pos)
            items.append(_dt.date.fromordinal(days - _SIGN32 + _EPOCH_ORDINAL))
            pos += 4
        elif code in (_NAIVE_DATETIME, _AWARE_DATETIME):
            _need(data, pos + 8)
            (u,) = _Q.unpack_from(data, pos)
            items.append(_decode_datetime(u - _SIGN64, code == _AWARE_DATETIME))
            pos += 8
        elif code in (_NAIVE_TIME, _AWARE_TIME):
            _need(data, pos + 8)
            (u,) = _Q.unpack_from(data, pos)
            items.append(_decode_time(u - _SIGN64, code == _AWARE_TIME))
            pos += 8
        elif code == _TIMEDELTA:
            if not _NEG_INT_BIG <= data[pos] <= _POS_INT_BIG:
                raise ValueError(f"malformed timedelta at offset {pos}")
            micros, pos = _decode_number(data, pos + 1, data[pos])
            items.append(_dt.timedelta(microseconds=micros))
        elif code == _DEC_NEG_INF:
            items.append(Decimal("-Infinity"))
        elif code == _DEC_POS_INF:
            items.append(Decimal("Infinity"))
        elif code == _DEC_NAN:
            items.append(Decimal("NaN"))
        else:
            raise ValueError(f"unknown type code 0x{code:02x} at offset {pos - 1}")
    if nested:
        raise ValueError("unterminated nested tuple in tuple encoding")
    return tuple(items), pos


def _decode_number(data: bytes, pos: int, code: int) -> tuple[int | Decimal, int]:
    """Decode an int (codes 0x0B-0x1D) and, if present, the Decimal fraction after it."""
    if code in (_POS_INT_BIG, _NEG_INT_BIG):
        negative = code == _NEG_INT_BIG
        length_byte = data[pos] ^ 0xFF if negative else data[pos]
        pos += 1
        if length_byte == 0xFF:
            _need(data, pos + 8)
            (size,) = _Q.unpack_from(data, pos)
            if negative:
                size ^= _U64_MAX
            pos += 8
        else:
            size = length_byte
    else:
        negative = code < _INT_ZERO
        size = abs(code - _INT_ZERO)
    _need(data, pos + size)
    value = int.from_bytes(data[pos : pos + size], "big")
    if negative:
        value -= (1 << (8 * size)) - 1
    pos += size
    if data[pos : pos + 1] != b"\xff":
        return value, pos
    end = data.find(b"\x00", pos + 1)
    digits = data[pos + 1 : end] if end >= 0 else b""
    if not digits or not digits.isdigit():
        raise ValueError(f"malformed Decimal fraction at offset {pos}")
    fraction = Decimal("0." + digits.decode("ascii"))
    return _EXACT.add(Decimal(value), fraction), end + 1


def _decode_datetime(micros: int, aware: bool) -> _dt.datetime:
    delta = _dt.timedelta(microseconds=micros)
    if not aware:
        return _EPOCH_NAIVE + delta
    try:
        return _EPOCH_UTC + delta
    except OverflowError:
        # An aware value near datetime.min/max whose UTC instant falls outside year 1..9999.
        offset = -_MAX_OFFSET if micros > 0 else _MAX_OFFSET
        return (_EPOCH_NAIVE + (delta + offset)).replace(tzinfo=_dt.timezone(offset))


_DAY_MICROS = 86_400_000_000
_MINUTE_MICROS = 60_000_000


def _decode_time(micros: int, aware: bool) -> _dt.time:
    if not aware:
        return _time_of(micros, None)
    if 0 <= micros < _DAY_MICROS:
        return _time_of(micros, _dt.UTC)
    # The UTC-adjusted value left the day (e.g. 01:00+05:00): keep it exact with an offset instead, in
    # whole minutes where possible because Python compares aware times with minute-granular offsets.
    if micros < 0:
        offset = -(micros // _MINUTE_MICROS) * _MINUTE_MICROS
    else:
        offset = ((_DAY_MICROS - 1 - micros) // _MINUTE_MICROS) * _MINUTE_MICROS
    if abs(offset) >= _DAY_MICROS:
        offset = -micros if micros < 0 else _DAY_MICROS - 1 - micros
    return _time_of(micros + offset, _dt.timezone(_dt.timedelta(microseconds=offset)))


def _time_of(micros: int, tz: _dt.tzinfo | None) -> _dt.time:
    seconds, us = divmod(micros, 1_000_000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return _dt.time(hour, minute, second, us, tzinfo=tz)
