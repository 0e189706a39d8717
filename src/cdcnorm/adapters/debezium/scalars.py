"""Decoders of Kafka Connect's plain types (integers, floats, booleans, strings, bytes, JSON text) and what every
decoder shares: the `Decoder` signature, the refusal of a value that does not match its schema, row flags.

Why on their own: the temporal and numeric decoders build on these, and the dispatch on a schema picks them
by Connect type.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from cdcnorm.errors import DecodeError

TS_FLAG = "timestamp_as_string"
"""Flag of a value kept as text because a canonical timestamp cannot hold it."""
Decoder = Callable[..., Any]
"""`decoder(value, flags=None)`: one wire value -> canonical value; appends the flags the value causes."""
_INT_RANGE = {"int8": 1 << 7, "int16": 1 << 15, "int32": 1 << 31, "int64": 1 << 63}
_FLOAT_EXACT = 1 << 53


def bad_value(what: str, v: Any) -> DecodeError:
    return DecodeError("bad_value", f"{str(v)[:60]!r} is not {what}")


def flag(flags: list | None, name: str = TS_FLAG) -> None:
    if flags is not None and name not in flags:
        flags.append(name)


def _int_decoder(width: str) -> Decoder:
    limit = _INT_RANGE[width]

    def slow(v: Any) -> int | None:
        if v is None:
            return None
        if (type(v) is float and v.is_integer() and abs(v) < _FLOAT_EXACT
                or type(v) is Decimal and v.is_finite() and v == v.to_integral_value()):
            n = int(v)  # a float beyond 2^53 has lost digits already: refused below
        elif type(v) is str:
            try:
                n = int(v.strip())
            except ValueError:
                raise bad_value(f"an {width}", v) from None
        else:
            raise bad_value(f"an {width}", v)
        if not -limit <= n < limit:
            raise bad_value(f"an {width}", v)
        return n

    def dec(v: Any, fl: list | None = None) -> int:
        return v if type(v) is int else slow(v)

    return dec


def float_dec(v: Any, fl: list | None = None) -> float:
    if type(v) is float or v is None:
        return v
    if isinstance(v, bool):
        raise bad_value("a number", v)
    try:
        return float(v)  # int, Decimal, and the texts 'NaN' / 'Infinity' of a Protobuf or string dump
    except (TypeError, ValueError):
        raise bad_value("a number", v) from None


def bool_dec(v: Any, fl: list | None = None) -> bool:
    if type(v) is bool or v is None:
        return v
    if type(v) is int and v in (0, 1):
        return bool(v)
    if type(v) is str and v.lower() in ("true", "false"):
        return v.lower() == "true"
    raise bad_value("a boolean", v)


def same(v: Any, fl: list | None = None) -> Any:
    return v


def str_dec(v: Any, fl: list | None = None) -> str | None:
    if type(v) is str or v is None:
        return v
    raise bad_value("a string", v)


# bytes
_URLSAFE = str.maketrans("-_", "+/")


def b64(v: str) -> bytes:
    try:
        return binascii.a2b_base64(v, strict_mode=True)
    except (binascii.Error, ValueError):
        raise DecodeError("bad_base64", f"{v[:60]!r} is not Base64") from None


def _text_to_bytes(mode: str) -> Callable[[str], bytes]:
    """How a binary column's text was written: `binary.handling.mode` (JsonConverter's `bytes` are base64)."""
    if mode == "hex":
        def hex_(v: str) -> bytes:
            try:
                return bytes.fromhex(v)
            except ValueError:
                raise DecodeError("bad_hex", f"{v[:60]!r} is not hex") from None
        return hex_
    if mode == "base64-url-safe":
        return lambda v: b64(v.translate(_URLSAFE))
    return b64


def bytes_decoder(mode: str = "bytes") -> Decoder:
    text = _text_to_bytes(mode)

    def dec(v: Any, fl: list | None = None) -> bytes:
        if type(v) is str:
            return text(v)
        if type(v) is bytes or v is None:
            return v
        if isinstance(v, bytearray | memoryview):
            return bytes(v)
        raise bad_value("bytes", v)

    return dec


_JSON = json.JSONDecoder(parse_float=Decimal).decode


def json_dec(v: Any, fl: list | None = None) -> Any:
    """JSON text -> nested value with exact numbers; text that is not JSON stays text (as other vendors)."""
    if type(v) is not str:
        return v
    try:
        return _JSON(v)
    except ValueError:
        return v


PLAIN = {"int8": _int_decoder("int8"), "int16": _int_decoder("int16"), "int32": _int_decoder("int32"),
         "int64": _int_decoder("int64"), "float32": float_dec, "float64": float_dec, "boolean": bool_dec,
         "string": same}
"""The decoder of each plain Connect type by its name (`bytes` has its own: it depends on a mode)."""
