"""Blob `dataColumn` values: DataWorks' six Blob field types turned into typed Python values."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import re
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


def blob_value(value: Any, vtype: str | None, column: str) -> Any:
    """A Blob `dataColumn` value as the typed Python value of its DataWorks type; unknown types stay raw."""
    if value is None:
        return None
    t = (vtype or "").upper()
    if t == "LONG":
        return _blob_long(value, column)
    if t in ("DOUBLE", "FLOAT"):  # a JSON number, or its text as real output sends it ("1.100000")
        if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):  # Decimal: 1e400
            raise DecodeError("bad_value", f"column {column!r}: {value!r} is not a {t}")
        try:
            return float(value)
        except ValueError:
            raise DecodeError("bad_value", f"column {column!r}: {value!r} is not a {t}") from None
    if t == "BOOLEAN":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise DecodeError("bad_value", f"column {column!r}: {value!r} is not a BOOLEAN")
    if t == "DATE":
        return millis_to_datetime(value, f"column {column!r} (DATE)")
    if t == "BYTES":
        return _blob_bytes(value, column)
    return value


