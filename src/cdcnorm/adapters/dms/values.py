"""Typed values: CSV text and message JSON read as the canonical type a table definition declares.

DMS CSV is text only and its messages type little (decimals and times arrive as strings), so a column's type
comes from the user's table definition (`tables` option) or a `create-table` control record; an undeclared
column keeps the value as written (CSV text, the JSON value).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

import orjson

from cdcnorm.errors import DecodeError, UsageError

Decoder = Callable[[Any], Any]
UTC = dt.UTC
_DECLARED = re.compile(r"^\s*([a-z_]+)\s*(?:\(\s*(\d+)\s*(?:,\s*(-?\d+)\s*)?\))?\s*$")
_TRUE = frozenset({"1", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "f", "false", "n", "no"})


def _bad(kind: str, v: Any) -> DecodeError:
    return DecodeError("bad_value", f"{str(v)[:80]!r} is not a {kind} value")


def _int(v: Any) -> int:
    if type(v) is int:
        return v
    try:
        return int(v)
    except (TypeError, ValueError):
        raise _bad("integer", v) from None


def _float(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        raise _bad("floating-point", v) from None


def _bool(v: Any) -> bool:
    if type(v) is bool:
        return v
    text = str(v).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise _bad("boolean", v)


def _decimal(scale: int | None) -> Decoder:
    quantum = Decimal(1).scaleb(-scale) if scale is not None else None

    def dec(v: Any) -> Decimal:
        try:
            d = v if type(v) is Decimal else Decimal(str(v))
        except InvalidOperation:
            raise _bad("decimal", v) from None
        if quantum is not None and d.as_tuple().exponent != -scale:
            d = d.quantize(quantum)
        return d

    return dec


def timestamp_text(v: Any, aware: bool) -> dt.datetime:
    """`yyyy-MM-dd HH:mm:ss[.ffffff]` (DMS's CSV and timestamp-column text) or ISO with `T` / `Z` / offset."""
    if isinstance(v, dt.datetime):
        return v if aware == (v.tzinfo is not None) else (v.replace(tzinfo=UTC) if aware else v.replace(tzinfo=None))
    try:
        t = dt.datetime.fromisoformat(str(v))
    except ValueError:
        raise _bad("timestamp", v) from None
    if aware:
        return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)
    return t.astimezone(UTC).replace(tzinfo=None) if t.tzinfo is not None else t


def _date(v: Any) -> dt.date:
    if isinstance(v, dt.date) and not isinstance(v, dt.datetime):
        return v
    text = str(v)
    try:
        return dt.date.fromisoformat(text[:10]) if len(text) >= 10 and text[10:].strip(" T0:.Z") == "" \
            else dt.date.fromisoformat(text)
    except ValueError:
        raise _bad("date", v) from None


def binary_decoder(hex_prefix: bool) -> Decoder:
    """DMS writes binary / LOB values as hex, `0x`-prefixed unless `NoHexPrefix`."""
    def dec(v: Any) -> bytes:
        if isinstance(v, bytes | bytearray):
            return bytes(v)
        text = str(v)
        if hex_prefix and text[:2] in ("0x", "0X"):
            text = text[2:]
        try:
            return bytes.fromhex(text)
        except ValueError:
            raise DecodeError("bad_hex", f"{text[:80]!r} is not hex") from None
    return dec


def _json(v: Any) -> Any:
    if not isinstance(v, str):
        return v
    try:
        return orjson.loads(v)
    except orjson.JSONDecodeError:
        raise _bad("JSON", v) from None


def _text(v: Any) -> str:
    return v if type(v) is str else str(v)


TEXT = _text
"""The decoder of a text column (an empty field stays a value for it alone)."""

_PLAIN: dict[str, Decoder] = {
    "int": _int, "bigint": _int, "smallint": _int, "tinyint": _int, "double": _float, "float": _float,
    "boolean": _bool, "date": _date, "json": _json, "string": _text, "uuid": _text,
    "timestamp": lambda v: timestamp_text(v, True), "timestamp_ntz": lambda v: timestamp_text(v, False),
}


def decoder(declared: str | None, hex_prefix: bool = True) -> Decoder | None:
    """The decoder of a declared canonical type (None: keep the value as written).

    Raises UsageError for a type name outside the list the `tables` option documents.
    """
    if declared is None:
        return None
    m = _DECLARED.match(declared.lower())
    if m is None:
        raise UsageError(f"declared column type {declared!r} is not a canonical type name")
    kind = m[1]
    if kind in ("decimal", "numeric"):
        return _decimal(int(m[3] or 0) if m[2] else None)
    if kind in ("binary", "bytes"):
        return binary_decoder(hex_prefix)
    found = _PLAIN.get(kind)
    if found is None:
        raise UsageError(f"declared column type {declared!r} is not one cdcnorm can decode DMS values as")
    return found


DMS_TYPES: dict[str, str] = {
    "INT1": "tinyint", "INT2": "smallint", "INT4": "int", "INT8": "bigint", "INT32": "int", "INT64": "bigint",
    "INT16": "smallint", "INT8U": "int", "UINT1": "int", "UINT2": "int", "UINT4": "bigint", "UINT8": "decimal(20,0)",
    "REAL4": "float", "REAL8": "double", "BOOLEAN": "boolean", "STRING": "string", "WSTRING": "string",
    "CLOB": "string", "NCLOB": "string", "BLOB": "binary", "BYTES": "binary", "DATE": "date",
    "TIME": "string", "DATETIME": "timestamp_ntz", "TIMESTAMP": "timestamp_ntz",
}
"""DMS's internal data types (a `create-table` record's `table-def`) -> canonical types."""


def dms_type(col: dict[str, Any]) -> str:
    """The canonical type of a `table-def` column (`NUMERIC` with its precision / scale)."""
    t = str(col.get("type") or "").upper()
    if t in ("NUMERIC", "DECIMAL"):
        p, s = col.get("precision"), col.get("scale")
        return f"decimal({p},{s or 0})" if p is not None else "decimal"
    return DMS_TYPES.get(t, "string")
