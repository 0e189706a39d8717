"""JSON column values read as the canonical type a user declared (`column_types`).

Why declared: the JSON formatter writes NUMBER as a JSON number, every date and time as text without a zone
(`YYYY-MM-DD HH:MM:SS[.fffffffff]`; older releases `YYYY-MM-DD:HH:MM:SS`), binary as text; the JSON alone
cannot tell a DATE from a VARCHAR holding the same text. Undeclared columns keep the value the JSON gives
(numbers exact, as int or Decimal), and their rows are flagged `untyped_values`. With
`treatAllColumnsAsStrings`, numbers arrive as text: the declared type reads them too. Values a schema typed
already (Avro) pass through.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import re
from collections.abc import Callable
from decimal import Context, Decimal, InvalidOperation
from typing import Any

from cdcnorm.adapters.goldengate.positions import parse_local
from cdcnorm.errors import DecodeError, UsageError

Decoder = Callable[[Any, list[str]], Any]
"""(JSON value, the row's flags to extend) -> the canonical value."""
_DECLARED = re.compile(r"^\s*([a-z_]+)\s*(?:\(\s*(\d+)\s*(?:,\s*(-?\d+)\s*)?\))?\s*$")
_UTC = dt.UTC


def _bad(v: Any, what: str) -> DecodeError:
    return DecodeError("bad_value", f"{str(v)[:80]!r} is not a {what}")


def _same(v: Any, fl: list[str]) -> Any:
    return v


def _integer(v: Any, fl: list[str]) -> int:
    if type(v) is int:
        return v
    try:
        d = Decimal(str(v).strip())
    except (InvalidOperation, ValueError):
        raise _bad(v, "whole number") from None
    if d != d.to_integral_value():
        raise _bad(v, "whole number")
    return int(d)


def _double(v: Any, fl: list[str]) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        raise _bad(v, "number") from None


def _boolean(v: Any, fl: list[str]) -> bool:
    if type(v) is bool:
        return v
    text = str(v).strip().lower()
    if text in ("1", "true", "y", "t"):
        return True
    if text in ("0", "false", "n", "f"):
        return False
    raise _bad(v, "boolean")


def _decimal(scale: int | None) -> Decoder:
    def dec(v: Any, fl: list[str]) -> Decimal:
        try:
            d = v if type(v) is Decimal else Decimal(str(v).strip())
        except (InvalidOperation, ValueError):
            raise _bad(v, "decimal") from None
        if scale is None or not d.is_finite():
            return d
        sign, digits, exp = d.as_tuple()
        if exp >= -scale:  # at the declared scale exactly (more fraction digits than declared: kept as written)
            ctx = Context(prec=len(digits) + max(exp, 0) + scale + 1)
            return d.quantize(Decimal(1).scaleb(-scale), context=ctx)
        return d

    return dec


def _timestamp(tz: dt.tzinfo | None) -> Decoder:
    """A naive time (`timestamp_ntz`), or read in the zone as an instant (`timestamp`); a time with digits
    beyond microseconds is kept as its text, flagged."""
    def ts(v: Any, fl: list[str]) -> Any:
        if isinstance(v, dt.datetime):  # typed already (Avro's timestamp logical type)
            return v if tz is None or v.tzinfo is not None else v.replace(tzinfo=tz).astimezone(_UTC)
        found = parse_local(v.strip()) if isinstance(v, str) else None
        if found is None:
            raise _bad(v, "GoldenGate date-time")
        value, exact = found
        if not exact:
            if "timestamp_as_string" not in fl:
                fl.append("timestamp_as_string")
            return v
        return value if tz is None else value.replace(tzinfo=tz).astimezone(_UTC)

    return ts


def _date(v: Any, fl: list[str]) -> dt.date:
    if type(v) is dt.date:
        return v
    if isinstance(v, str):
        text = v.strip()
        if len(text) == 10:
            try:
                return dt.date.fromisoformat(text)
            except ValueError:
                pass
        found = parse_local(text)
        if found is not None and found[0].time() == dt.time(0):
            return found[0].date()
    raise _bad(v, "date (an Oracle DATE with a time of day: declare timestamp_ntz)")


def _binary(encoding: str) -> Decoder:
    def raw(v: Any, fl: list[str]) -> bytes:
        if isinstance(v, bytes):  # typed already (Avro bytes)
            return v
        if not isinstance(v, str):
            raise _bad(v, f"{encoding} binary text")
        try:
            return bytes.fromhex(v) if encoding == "hex" else base64.b64decode(v, validate=True)
        except (ValueError, binascii.Error):
            raise _bad(v, f"{encoding} binary text") from None

    return raw


def _string(v: Any, fl: list[str]) -> str:
    return v if isinstance(v, str) else str(v)


_PLAIN: dict[str, Decoder] = {
    "tinyint": _integer, "smallint": _integer, "int": _integer, "integer": _integer, "bigint": _integer,
    "long": _integer, "float": _double, "double": _double, "boolean": _boolean, "string": _string,
    "date": _date, "json": _same, "variant": _same,
}


def declared_decoder(declared: str, tz: dt.tzinfo, binary_encoding: str) -> Decoder:
    """The decoder of a column declared as a canonical type; UsageError for a type cdcnorm cannot read."""
    m = _DECLARED.match(declared.lower())
    if m is None:
        raise UsageError(f"declared column type {declared!r} is not a canonical type name")
    kind = m[1]
    if kind in ("decimal", "numeric"):
        return _decimal(int(m[3]) if m[3] is not None else (0 if m[2] else None))
    if kind == "timestamp_ntz":
        return _timestamp(None)
    if kind == "timestamp":
        return _timestamp(tz)
    if kind in ("binary", "bytes"):
        return _binary(binary_encoding)
    if kind in _PLAIN:
        return _PLAIN[kind]
    raise UsageError(f"declared column type {declared!r} is not one cdcnorm can decode GoldenGate values as")


class TableTypes:
    """The declared columns of one table: their decoders, in declaration order."""

    __slots__ = ("columns", "declared", "decoders")

    def __init__(self, declared: dict[str, str], tz: dt.tzinfo, binary_encoding: str):
        self.columns = list(declared)
        self.declared = list(declared.items())
        self.decoders = {c: declared_decoder(t, tz, binary_encoding) for c, t in declared.items()}

    def image(self, raw: dict[str, Any], flags: list[str]) -> dict[str, Any]:
        """An image with declared columns decoded (NULL stays NULL); undeclared columns as the JSON gives them."""
        decoders = self.decoders
        out = {}
        for k, v in raw.items():
            d = decoders.get(k)
            out[k] = v if v is None or d is None else d(v, flags)
        return out
