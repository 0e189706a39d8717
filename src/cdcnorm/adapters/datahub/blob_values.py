"""Blob `dataColumn` values: DataWorks' six Blob field types turned into typed Python values."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from cdcnorm.adapters.datahub.scalars import EPOCH
from cdcnorm.errors import DecodeError

BLOB_TYPES: dict[str, str] = {
    "LONG": "bigint",
    "DOUBLE": "double",
    "FLOAT": "float",
    "BOOLEAN": "boolean",
    "STRING": "string",
    "DATE": "timestamp",
    "BYTES": "binary",
}
"""DataWorks Blob field type -> canonical type (DATE: epoch milliseconds; BYTES: standard Base64). FLOAT is not one
of the six documented types; it is read like DOUBLE should a writer use it."""


def millis_to_datetime(value: Any, what: str) -> dt.datetime | None:
    """Epoch milliseconds (JSON number or digit string) -> aware UTC datetime."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, bool):
            raise ValueError
        ms = int(value) if not isinstance(value, float) or value.is_integer() else None
        if ms is None:
            raise ValueError
        return EPOCH + dt.timedelta(milliseconds=ms)
    except (TypeError, ValueError, OverflowError):
        raise DecodeError("bad_value", f"{what}: {value!r} is not epoch milliseconds") from None


def _blob_long(value: Any, column: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
        return int(value)
    raise DecodeError("bad_value", f"column {column!r}: {value!r} is not a LONG (64-bit integer)")


def _blob_bytes(value: Any, column: str) -> bytes:
    """Standard Base64 as Java's Base64.getEncoder() writes it; padding may be missing, nothing else may."""
    if not isinstance(value, str):
        raise DecodeError("bad_base64", f"column {column!r}: BYTES value {value!r} is not a Base64 string")
    s = value.strip()
    try:
        return base64.b64decode(s + "=" * (-len(s) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise DecodeError(
            "bad_base64",
            f"column {column!r}: {value[:80]!r} is not valid standard Base64 "
            "(BYTES values must be Base64 of the raw bytes)",
        ) from None


def _blob_number(value: Any, column: str, t: str) -> float:
    """DOUBLE / FLOAT: a JSON number, or its text as real output sends it ("1.100000")."""
    if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):  # Decimal: 1e400
        raise DecodeError("bad_value", f"column {column!r}: {value!r} is not a {t}")
    try:
        return float(value)
    except ValueError:
        raise DecodeError("bad_value", f"column {column!r}: {value!r} is not a {t}") from None


def _blob_double(value: Any, column: str) -> float:
    return _blob_number(value, column, "DOUBLE")


def _blob_float(value: Any, column: str) -> float:
    return _blob_number(value, column, "FLOAT")


def _blob_boolean(value: Any, column: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise DecodeError("bad_value", f"column {column!r}: {value!r} is not a BOOLEAN")


def _blob_date(value: Any, column: str) -> dt.datetime | None:
    return millis_to_datetime(value, f"column {column!r} (DATE)")


_CONVERTERS: dict[str, Callable[[Any, str], Any]] = {
    "LONG": _blob_long, "DOUBLE": _blob_double, "FLOAT": _blob_float, "BOOLEAN": _blob_boolean, "DATE": _blob_date,
    "BYTES": _blob_bytes,
}
"""Upper-cased DataWorks type -> (value, column) -> typed value; the other types keep the value as it is."""


def blob_value(value: Any, vtype: str | None, column: str) -> Any:
    """A Blob `dataColumn` value as the typed Python value of its DataWorks type; unknown types stay raw."""
    if value is None:
        return None
    convert = _CONVERTERS.get((vtype or "").upper())
    return value if convert is None else convert(value, column)


def column_converters(columns: tuple[tuple[str, str | None], ...]) -> dict[str, Callable[[Any, str], Any]]:
    """Per column name, the converter :func:`blob_value` applies to its non-null values (columns whose values stay
    as they are are left out). Remembered per column list: every message of a table repeats it."""
    convs = _PLANS.get(columns)
    if convs is None:
        convs = {}
        for name, vtype in columns:  # a repeated name: the last type wins, as in dict(columns)
            convs.pop(name, None)
            convert = _CONVERTERS.get((vtype or "").upper())
            if convert is not None:
                convs[name] = convert
        if len(_PLANS) >= 1024:
            _PLANS.clear()
        _PLANS[columns] = convs
    return convs


_PLANS: dict[tuple, dict[str, Callable[[Any, str], Any]]] = {}


def typed_image(values: dict, convs: dict[str, Callable[[Any, str], Any]]) -> dict:
    """`{k: blob_value(v, type of k, k)}` with the converters of :func:`column_converters` (one lookup a value)."""
    image = {}
    conv = convs.get
    for k, v in values.items():
        if v is not None:
            convert = conv(k)
            if convert is not None:
                v = convert(v, k)
        image[k] = v
    return image
