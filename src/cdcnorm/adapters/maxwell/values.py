"""Column values typed from the MySQL types a user declares (`column_types`), as Maxwell encodes them (reference
§8): integers and BIT as numbers (BIGINT UNSIGNED beyond int64), DECIMAL / DOUBLE as numbers parsed exactly,
binary columns Base64, ENUM text, SET an array, JSON nested, GEOMETRY WKT, DATETIME / TIMESTAMP
`YYYY-MM-DD hh:mm:ss[.f]` without a zone (TIMESTAMP in UTC), TIME text, zero dates kept as written.

Maxwell's row events carry no types: a table without declared types keeps its JSON values (numbers exact),
flagged `untyped_values`.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from cdcnorm.errors import DecodeError

Decoder = Callable[[Any, list[str]], Any]
STRING_AS_TIMESTAMP = "timestamp_as_string"

_DATETIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$")
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")


def _same(v: Any, flags: list[str]) -> Any:
    return v


def _integer(v: Any, flags: list[str]) -> Any:
    if type(v) is int:
        return v
    if isinstance(v, Decimal) and v == v.to_integral_value():
        return int(v)
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v)
    raise ValueError("an integer")


def _decimal(v: Any, flags: list[str]) -> Any:
    if isinstance(v, Decimal):
        return v
    if type(v) is int or isinstance(v, str):
        try:
            return Decimal(v)
        except InvalidOperation:
            pass
    raise ValueError("a decimal number")


def _double(v: Any, flags: list[str]) -> Any:
    if isinstance(v, Decimal | int) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, float):
        return v
    raise ValueError("a number")


def _binary(v: Any, flags: list[str]) -> Any:
    if not isinstance(v, str):
        raise ValueError("Base64 text")
    try:
        return base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("Base64 text") from None


def _naive(v: Any, flags: list[str]) -> Any:
    """DATETIME text -> a naive datetime; a zero or invalid date stays the text, flagged."""
    if not isinstance(v, str):
        raise ValueError("`YYYY-MM-DD hh:mm:ss` text")
    m = _DATETIME.match(v)
    if m is None:
        raise ValueError("`YYYY-MM-DD hh:mm:ss` text")
    y, mo, d, h, mi, s, frac = m.groups()
    try:
        return dt.datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), int((frac or "0").ljust(6, "0")))
    except ValueError:  # 0000-00-00 00:00:00 and other invalid dates MySQL keeps
        if STRING_AS_TIMESTAMP not in flags:
            flags.append(STRING_AS_TIMESTAMP)
        return v


def _instant(v: Any, flags: list[str]) -> Any:
    """TIMESTAMP text (UTC) -> an instant."""
    naive = _naive(v, flags)
    return naive.replace(tzinfo=dt.UTC) if isinstance(naive, dt.datetime) else naive


def _date(v: Any, flags: list[str]) -> Any:
    if not isinstance(v, str) or (m := _DATE.match(v)) is None:
        raise ValueError("`YYYY-MM-DD` text")
    try:
        return dt.date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        if STRING_AS_TIMESTAMP not in flags:
            flags.append(STRING_AS_TIMESTAMP)
        return v


_INTEGERS = ("tinyint", "smallint", "mediumint", "int", "integer", "bigint", "year", "bit", "serial")
_BINARY = ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob")
_TEXT = ("char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "time", "geometry", "point",
         "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection", "string")

DECODERS: dict[str, tuple[Decoder, str]] = {
    **{t: (_integer, "bigint") for t in _INTEGERS},
    **{t: (_binary, "binary") for t in _BINARY},
    **{t: (_same, "string") for t in _TEXT},
    "decimal": (_decimal, "decimal"), "numeric": (_decimal, "decimal"), "dec": (_decimal, "decimal"),
    "float": (_double, "double"), "double": (_double, "double"), "real": (_double, "double"),
    "datetime": (_naive, "timestamp_ntz"), "timestamp": (_instant, "timestamp"), "date": (_date, "date"),
    "json": (_same, "variant"), "set": (_same, "array<string>"), "bool": (_integer, "bigint"),
    "boolean": (_integer, "bigint"),
}
"""MySQL type (lower case, without parameters) -> (decoder, canonical type)."""


def base(mysql_type: str) -> str:
    """`decimal(10,2) unsigned` -> `decimal`."""
    return re.split(r"[\s(]", mysql_type.strip().lower(), maxsplit=1)[0]


def canonical_type(mysql_type: str | None) -> str | None:
    if not mysql_type:
        return None
    found = DECODERS.get(base(mysql_type))
    return found[1] if found else None


def row_decoders(declared: dict[str, str]) -> dict[str, Decoder]:
    """Column -> decoder for one table's declared types; an unknown type keeps the JSON value."""
    return {col: DECODERS.get(base(t), (_same, None))[0] for col, t in declared.items()}


def decode_image(image: Any, decoders: dict[str, Decoder] | None, what: str, flags: list[str]) -> dict | None:
    """A `data` / `old` object with declared columns typed (others as the JSON gives them)."""
    if image is None:
        return None
    if not isinstance(image, dict):
        raise DecodeError("bad_event", f"Maxwell's `{what}` must be an object")
    if not decoders:
        return image
    out = {}
    for col, v in image.items():
        dec = decoders.get(col)
        if dec is None or v is None:
            out[col] = v
            continue
        try:
            out[col] = dec(v, flags)
        except ValueError as exc:
            raise DecodeError("bad_value", f"`{what}.{col}` = {str(v)[:40]!r} is not {exc} as its declared "
                                           "type needs") from None
    return out
