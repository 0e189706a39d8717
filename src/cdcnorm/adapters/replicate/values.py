"""Replicate column values (JSON strings and numbers, or Avro values) as exact Python values: one type table
that value decoding and schema versions (canonical types) both read.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from cdcnorm.errors import DecodeError

_UTC = dt.UTC


class _KeepString(Exception):
    """A temporal value whose precision would be lost: keep its text, flag `timestamp_as_string`."""


def _int(v: Any) -> int:
    if isinstance(v, bool):
        raise ValueError("a boolean is not an integer")
    if isinstance(v, int):
        return v
    if isinstance(v, Decimal | float) and v == int(v):
        return int(v)
    if isinstance(v, str):
        return int(v.strip())
    raise ValueError(f"not an integer: {v!r}")


def _decimal(v: Any) -> Decimal:
    if isinstance(v, bool):
        raise ValueError("a boolean is not a number")
    d = v if isinstance(v, Decimal) else Decimal(repr(v) if isinstance(v, float) else str(v).strip())
    if not d.is_finite():
        raise ValueError(f"not a finite number: {v!r}")
    return d


def _float(v: Any) -> float:
    if isinstance(v, bool):
        raise ValueError("a boolean is not a number")
    return float(v)


def _bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, int) and v in (0, 1):
        return bool(v)
    if isinstance(v, str) and v.strip().lower() in ("true", "false", "1", "0"):
        return v.strip().lower() in ("true", "1")
    raise ValueError(f"not a boolean: {v!r}")


def _hex_bytes(v: Any) -> bytes:
    if isinstance(v, bytes | bytearray):
        return bytes(v)
    try:
        return bytes.fromhex(v)
    except (TypeError, ValueError):
        raise DecodeError(
            "bad_hex",
            f"BYTES/BLOB value {str(v)[:60]!r} is not a hex string; the message is "
            "damaged — fix it and re-process it",
        ) from None


_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_TIME = r"(\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?"
_TIME_RE = re.compile(_TIME)
_DATETIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[ T]" + _TIME + ")?")


def _micros(frac: str | None) -> int:
    frac = frac or ""
    if len(frac) > 6 and frac[6:].strip("0"):
        raise _KeepString
    return int((frac + "000000")[:6])


def _temporal(pattern: re.Pattern[str], v: Any, build: Callable[[re.Match[str]], Any]) -> Any:
    """A date / time from its text; text of another shape, or an impossible value, is kept as text."""
    m = pattern.fullmatch(str(v).strip())
    if m is None:
        raise _KeepString
    try:
        return build(m)
    except ValueError:
        raise _KeepString from None


_ZEROS = str.maketrans("123456789", "000000000")
_DATE_SHAPE = "0000-00-00"
_DATETIME_SHAPES = frozenset(("0000-00-00 00:00:00.000000", "0000-00-00T00:00:00.000000", "0000-00-00 00:00:00",
                              "0000-00-00T00:00:00"))
"""The texts whose every digit is an ASCII digit at these places: `fromisoformat` reads exactly the fields the
regular expressions below read (any other text, or a value it refuses, takes the regular expression's path)."""


def _date(v: Any) -> dt.date:
    if isinstance(v, dt.datetime):
        return v.date()
    if isinstance(v, dt.date):
        return v
    if type(v) is str and v.translate(_ZEROS) == _DATE_SHAPE:  # the usual `2024-05-01`: no regex, no int()s
        try:
            return dt.date.fromisoformat(v)
        except ValueError:
            pass
    return _temporal(_DATE, v, lambda m: dt.date(int(m[1]), int(m[2]), int(m[3])))


def _time(v: Any) -> dt.time:
    if isinstance(v, dt.time):
        return v
    return _temporal(_TIME_RE, v, lambda m: dt.time(int(m[1]), int(m[2]), int(m[3]), _micros(m[4])))


def _datetime(v: Any) -> dt.datetime:
    """DATETIME is the source's zone-less value (Avro `timestamp-micros` is read as UTC, so made naive)."""
    if isinstance(v, dt.datetime):
        if v.tzinfo is _UTC:  # fastavro's timestamps: astimezone(UTC) of these is the value itself
            return v.replace(tzinfo=None)
        return v.astimezone(_UTC).replace(tzinfo=None) if v.tzinfo else v
    if type(v) is str and v.translate(_ZEROS) in _DATETIME_SHAPES:  # `2024-05-01 11:56:26.332000`: no regex
        try:
            return dt.datetime.fromisoformat(v)
        except ValueError:
            pass
    return _temporal(
        _DATETIME,
        v,
        lambda m: dt.datetime(
            int(m[1]), int(m[2]), int(m[3]), int(m[4] or 0), int(m[5] or 0), int(m[6] or 0), _micros(m[7])
        ),
    )


def _same(v: Any) -> Any:
    return v


TYPES: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "BOOLEAN": ("boolean", _bool),
    "BYTES": ("binary", _hex_bytes),
    "BLOB": ("binary", _hex_bytes),
    "DATE": ("date", _date),
    "TIME": ("time", _time),
    "DATETIME": ("timestamp_ntz", _datetime),
    "INT1": ("tinyint", _int),
    "INT2": ("smallint", _int),
    "INT4": ("int", _int),
    "INT8": ("bigint", _int),
    "UINT1": ("smallint", _int),
    "UINT2": ("int", _int),
    "UINT4": ("bigint", _int),
    "UINT8": ("decimal(20,0)", _int),
    "NUMERIC": ("decimal", _decimal),
    "REAL4": ("float", _float),
    "REAL8": ("double", _float),
    "STRING": ("string", _same),
    "WSTRING": ("string", _same),
    "CLOB": ("string", _same),
    "NCLOB": ("string", _same),
}
"""Replicate data type -> (canonical type, converter from the JSON/Avro value to the exact Python value)."""

AVRO_TYPES: dict[str, str] = {
    "boolean": "boolean",
    "int": "int",
    "long": "bigint",
    "float": "float",
    "double": "double",
    "string": "string",
    "bytes": "binary",
    "int:date": "date",
    "int:time-millis": "time",
    "long:time-micros": "time",
    "long:timestamp-micros": "timestamp_ntz",
    "long:timestamp-millis": "timestamp_ntz",
}
"""Avro type of a Schema Registry DataRecord field (no MD available) -> canonical type."""


def canonical_type(col: dict[str, Any]) -> str | None:
    """Canonical type of a catalog column (from its Replicate type, else its Avro type)."""
    t = col.get("type")
    if t is None:
        avro = col.get("avro_type") or ""
        return avro.split(":", 1)[1] if avro.startswith("bytes:decimal") else AVRO_TYPES.get(avro)
    if t == "NUMERIC" and col.get("precision"):
        return f"decimal({col['precision']},{col.get('scale') or 0})"
    return TYPES[t][0] if t in TYPES else None


def typed(
    image: dict[str, Any] | None, types: dict[str, str | None], flags: list[str]
) -> dict[str, Any] | None:
    """Exact Python values from the metadata types (JSON strings -> Decimal/date/bytes/...)."""
    if image is None:
        return None
    return {k: _convert(k, types.get(k), v, flags) for k, v in image.items()}


def converters(types: dict[str, str | None]) -> dict[str, Callable[[Any], Any] | None]:
    """Per column, the converter `typed` applies to its non-null values (None: kept as is, a datetime made
    naive); computed once per table version for :func:`typed_with`."""
    return {k: (None if spec is None else spec[1]) for k, spec in ((k, TYPES.get(t or "")) for k, t in types.items())}


def typed_with(
    image: dict[str, Any] | None, types: dict[str, str | None], convs: dict[str, Callable[[Any], Any] | None],
    flags: list[str],
) -> dict[str, Any] | None:
    """:func:`typed` with the converters of `types` looked up once (`convs = converters(types)`).

    Why: the per-value type lookup and call of `typed` were a tenth of a Replicate record's CPU. A value its
    converter refuses goes through `typed`'s own step, so the flags and errors are `typed`'s.
    """
    if image is None:
        return None
    out = {}
    conv, natural = convs.get, _NATURAL.get
    for k, v in image.items():
        if v is not None:
            fn = conv(k)
            if fn is None:
                if isinstance(v, dt.datetime):
                    v = _datetime(v)
            elif fn is not _same and natural(fn) is not type(v):
                if fn is _datetime and type(v) is dt.datetime and v.tzinfo is _UTC:  # fastavro's timestamps
                    out[k] = v.replace(tzinfo=None)
                    continue
                try:
                    v = fn(v)
                except Exception:  # noqa: BLE001 - typed's step gives the flag or the error
                    v = _convert(k, types.get(k), v, flags)
        out[k] = v
    return out


_NATURAL: dict[Callable[[Any], Any], type] = {_int: int, _float: float, _bool: bool, _date: dt.date, _hex_bytes: bytes}
"""The exact type each converter returns its input of unchanged (an Avro value, a JSON number or boolean): no call."""


def _convert(name: str, vendor_type: str | None, value: Any, flags: list[str]) -> Any:
    if value is None:
        return None
    spec = TYPES.get(vendor_type or "")
    if spec is None:
        return _datetime(value) if isinstance(value, dt.datetime) else value
    try:
        return spec[1](value)
    except _KeepString:
        if "timestamp_as_string" not in flags:
            flags.append("timestamp_as_string")
        return str(value)
    except (ValueError, TypeError, ArithmeticError, InvalidOperation):
        raise DecodeError(
            "bad_value",
            f"column {name} ({vendor_type}) has value {str(value)[:60]!r}, which is not "
            f"a valid {vendor_type}; fix the message and re-process it",
        ) from None

