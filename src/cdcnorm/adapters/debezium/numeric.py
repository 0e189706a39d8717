"""Decimals: Connect `Decimal` (Base64 or raw unscaled bytes, or a number), Debezium's `VariableScaleDecimal`
and the text of `decimal.handling.mode=string`, all decoded to exact `Decimal` values.

Why exact arithmetic here: a source DECIMAL(65,30) has more digits than Python's default context keeps, and a
number written as JSON must equal the same number written as Base64 bytes.
"""

from __future__ import annotations

import decimal
from decimal import Decimal, InvalidOperation
from typing import Any

from cdcnorm.adapters.debezium.scalars import Decoder, b64, bad_value


def _unscaled(v: Any) -> int:
    raw = b64(v) if type(v) is str else v
    if not isinstance(raw, bytes | bytearray):
        raise bad_value("a Base64 decimal", v)
    return int.from_bytes(raw, "big", signed=True)


_EXACT = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
"""Arithmetic that never rounds (the default context rounds to 28 digits; decimal(65,30) needs 65)."""
_PAD = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN,
                       traps=[decimal.Rounded, decimal.InvalidOperation])
"""Quantizing that may only add trailing zeros: dropping a digit (even a zero) raises."""
_QUANTUM: dict[int, Decimal] = {}


def _scaled(n: int, scale: int) -> Decimal:
    return Decimal(n) if scale == 0 else Decimal(n).scaleb(-scale, _EXACT)


def rescale(d: Decimal, scale: int | None) -> Decimal:
    """A number given as written, at the schema's scale when no digit is lost (so it equals the Base64 form)."""
    if scale is None:
        return d
    q = _QUANTUM.get(scale)
    if q is None:
        q = _QUANTUM[scale] = Decimal(1).scaleb(-scale, _EXACT)
    try:
        return d.quantize(q, context=_PAD)
    except decimal.DecimalException:  # more fraction digits than the scale: kept as written
        return d


def _number(v: Any, scale: int | None) -> Decimal | None:
    """A decimal written as a number (`decimal.format=NUMERIC`, Flink CDC) or as decimal text."""
    t = type(v)
    if v is None:
        return None
    if t is Decimal:
        d = v
    elif t is int:
        d = Decimal(v)
    elif t is float:
        d = Decimal(repr(v))  # the shortest text that reads back as this float: the number as written
    elif t is str:
        try:
            d = Decimal(v.strip())
        except InvalidOperation:
            raise bad_value("a decimal", v) from None
    else:
        raise bad_value("a decimal", v)
    if not d.is_finite():
        raise bad_value("a finite decimal", v)
    return rescale(d, scale)


def decimal_decoder(scale: int, numeric: bool) -> Decoder:
    """Connect Decimal: Base64 unscaled bytes (JSON), raw bytes or a Decimal (Avro), or a number."""
    def dec(v: Any, fl: list | None = None) -> Decimal:
        t = type(v)
        if t is str and not numeric or t is bytes:
            return _scaled(_unscaled(v), scale)
        return _number(v, scale)

    return dec


def variable_decimal(v: Any, fl: list | None = None) -> Decimal:
    if type(v) is not dict:
        return _number(v, None)  # already a number (a decimal-preserving reader, a console dump)
    scale, value = v.get("scale"), v.get("value")
    if type(scale) is not int or value is None:
        raise bad_value("a VariableScaleDecimal {scale, value}", v)
    return _scaled(_unscaled(value), scale)


def decimal_text(v: Any, fl: list | None = None) -> Decimal | str:
    """`decimal.handling.mode=string`: the exact text; PostgreSQL's 'NaN' / 'Infinity' stay text."""
    if type(v) is not str:
        return _number(v, None)
    try:
        d = Decimal(v)
    except InvalidOperation:
        raise bad_value("a decimal", v) from None
    return d if d.is_finite() else v
