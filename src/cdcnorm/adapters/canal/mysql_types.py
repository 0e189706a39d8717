"""Canal's `mysqlType` text -> a canonical type and a decoder for the string each value arrives as (reference §7).

Why by `mysqlType` and never by `sqlType`: Canal sends every value as a string, and `sqlType` (a
`java.sql.Types` code) does not tell text from binary (VARBINARY is 2004 in one message and -3 in the next).
The type text arrives as written in the DDL (`INT`, `DECIMAL(8, 0)`, `TINYINT(2) unsigned zerofill`,
`ENUM('a','b')`) or normalised (`int(11)`), its case flipping between messages: it is parsed case-blind, its
ENUM / SET labels kept as written. One decoder per distinct text, cached.

| `mysqlType` | value as it arrives | canonical value | canonical type |
|---|---|---|---|
| TINYINT / SMALLINT / MEDIUMINT / INT / BIGINT (`unsigned`, `zerofill`), BOOL | digits (zero-padded with zerofill) | `int` | tinyint..bigint, one wider when unsigned (BIGINT UNSIGNED: decimal(20,0)) |
| DECIMAL / NUMERIC (with or without precision) | decimal text | `Decimal`, exact | decimal(p,s) / decimal |
| FLOAT / DOUBLE / REAL | decimal text | `float` | float / double |
| DATE, DATETIME | `2024-05-01`, `2024-05-01 10:00:00.123` | `date`, naive `datetime`; zero dates null | date, timestamp_ntz |
| TIMESTAMP | wall clock in the Canal server's zone | UTC `datetime` (the `time_zone` option) | timestamp |
| TIME | `[-]HH:MM:SS[.f]` | `HH:MM:SS.ffffff` | time |
| YEAR | digits | `int` | int |
| ENUM('a','b') | the index (`"1"`), or the label from other producers | the label (`0`: `''`) | string |
| SET('a','b') | the bitmask (`"3"`), or the labels | the labels joined by `,` | string |
| BINARY / VARBINARY / *BLOB / BIT(n>1) / geometry | the bytes as an ISO-8859-1 string | `bytes` | binary |
| BIT(1) | `0` / `1` | `bool` | boolean |
| JSON | JSON text | parsed (numbers exact); text that is not JSON stays text | json |
| CHAR / VARCHAR / *TEXT and anything else | text | `str` | string |
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any
from zoneinfo import ZoneInfo

from cdcnorm.canonical.durations import duration_str
from cdcnorm.containers import loads_exact

Decoder = Callable[[str], Any]

_TYPE = re.compile(r"\s*([A-Za-z_]+(?:\s+(?:precision|varying))?)\s*(?:\((.*)\))?(.*)$", re.S)
_LABEL = re.compile(r"'((?:[^']|'')*)'")
_TIME = re.compile(r"^(-)?(\d+):(\d\d):(\d\d)(?:\.(\d{1,6}))?$")
_INTEGRAL = {"tinyint": ("tinyint", "smallint"), "smallint": ("smallint", "int"), "mediumint": ("int", "int"),
             "int": ("int", "bigint"), "integer": ("int", "bigint"), "bigint": ("bigint", "decimal(20,0)"),
             "bool": ("tinyint", "tinyint"), "boolean": ("tinyint", "tinyint"), "serial": ("decimal(20,0)",) * 2}
_DECIMAL = frozenset({"decimal", "numeric", "dec", "fixed"})
_FLOAT = {"float": "float", "double": "double", "real": "double", "double precision": "double"}
_BINARY = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "geometry", "point",
                     "linestring", "polygon", "multipoint", "multilinestring", "multipolygon",
                     "geometrycollection", "geomcollection"})
_UTC = dt.UTC


@dataclass(frozen=True, slots=True)
class ColumnType:
    """A parsed `mysqlType`: its normalised text, canonical type and value decoder."""

    text: str
    canonical: str
    decode: Decoder


def _int(v: str) -> int:
    return int(v)


def _decimal(v: str) -> Decimal:
    try:
        d = Decimal(v)
    except InvalidOperation:
        raise ValueError(f"{v[:40]!r} is not a decimal") from None
    if not d.is_finite():
        raise ValueError(f"{v[:40]!r} is not a decimal")
    return d


def _date(v: str) -> dt.date | None:
    if v.startswith("0000") or v[5:7] == "00" or v[8:10] == "00":
        return None  # MySQL's zero date: no day, not a value (Debezium reads it as null too)
    return dt.date.fromisoformat(v)


def _datetime(v: str) -> dt.datetime | None:
    if v.startswith("0000") or v[5:7] == "00" or v[8:10] == "00":
        return None
    return dt.datetime.fromisoformat(v)


def _timestamp(zone: str) -> Decoder:
    tz = _UTC if zone.upper() == "UTC" else ZoneInfo(zone)

    def decode(v: str) -> dt.datetime | None:
        wall = _datetime(v)
        return None if wall is None else wall.replace(tzinfo=tz).astimezone(_UTC)

    return decode


def _time(v: str) -> str:
    m = _TIME.match(v)
    if m is None:
        raise ValueError(f"{v[:40]!r} is not a TIME")
    us = ((int(m[2]) * 60 + int(m[3])) * 60 + int(m[4])) * 1_000_000 + int((m[5] or "0").ljust(6, "0"))
    return duration_str(-us if m[1] else us)


def _latin1(v: str) -> bytes:
    try:
        return v.encode("latin-1")
    except UnicodeEncodeError:
        raise ValueError("a binary value with characters beyond ISO-8859-1: the producer did not send its "
                         "bytes as Canal does (one character per byte)") from None


def _json(v: str) -> Any:
    try:
        return loads_exact(v)
    except Exception:  # noqa: BLE001 - text that is not JSON stays text
        return v


def _enum(labels: tuple[str, ...]) -> Decoder:
    def decode(v: str) -> str:
        if v.isdigit() and labels:
            i = int(v)
            if i == 0:
                return ""  # MySQL's "invalid value" index
            if i <= len(labels):
                return labels[i - 1]
            raise ValueError(f"ENUM index {v} beyond its {len(labels)} labels")
        return v

    return decode


def _set(labels: tuple[str, ...]) -> Decoder:
    def decode(v: str) -> str:
        if v.isdigit() and labels:
            mask = int(v)
            if mask >> len(labels):
                raise ValueError(f"SET bitmask {v} beyond its {len(labels)} labels")
            return ",".join(label for i, label in enumerate(labels) if mask >> i & 1)
        return v

    return decode


def _bit(width: int) -> Decoder:
    size = max(1, (width + 7) // 8)

    def decode(v: str) -> bytes:
        return int(v).to_bytes(size, "big") if v.isdigit() else _latin1(v)

    return decode


def _bool(v: str) -> bool:
    if v in ("1", "0"):
        return v == "1"
    return bool(_latin1(v).strip(b"\x00"))


def _text(v: str) -> str:
    return v


def _labels(args: str | None) -> tuple[str, ...]:
    return tuple(m.replace("''", "'") for m in _LABEL.findall(args or ""))


@functools.lru_cache(maxsize=4096)
def column_type(text: str | None, zone: str = "UTC") -> ColumnType:
    """The canonical type and decoder of one `mysqlType` text (None / unknown: text kept as is)."""
    m = _TYPE.match(text or "")
    if m is None:
        return ColumnType((text or "").strip().lower(), "string", _text)
    base = " ".join(m[1].lower().split())
    args, modifiers = m[2], m[3].lower()
    unsigned = "unsigned" in modifiers or "zerofill" in modifiers  # ZEROFILL implies UNSIGNED in MySQL
    norm = base + (f"({args.replace(' ', '')})" if args and base not in ("enum", "set") else "")
    norm += " unsigned" if unsigned else ""
    if base in _INTEGRAL:
        return ColumnType(norm, _INTEGRAL[base][1 if unsigned else 0], _int)
    if base in _DECIMAL:
        parts = [p.strip() for p in (args or "").split(",") if p.strip()]
        if parts and all(p.isdigit() for p in parts):
            return ColumnType(norm, f"decimal({parts[0]},{parts[1] if len(parts) > 1 else 0})", _decimal)
        return ColumnType(norm, "decimal", _decimal)
    if base in _FLOAT:
        return ColumnType(norm, _FLOAT[base], float)
    if base == "date":
        return ColumnType(norm, "date", _date)
    if base == "datetime":
        return ColumnType(norm, "timestamp_ntz", _datetime)
    if base == "timestamp":
        return ColumnType(norm, "timestamp", _timestamp(zone))
    if base == "time":
        return ColumnType(norm, "time", _time)
    if base == "year":
        return ColumnType(norm, "int", _int)
    if base == "enum":
        return ColumnType(f"enum({args})" if args else "enum", "string", _enum(_labels(args)))
    if base == "set":
        return ColumnType(f"set({args})" if args else "set", "string", _set(_labels(args)))
    if base == "bit":
        width = int(args) if args and args.strip().isdigit() else 1
        return ColumnType(norm, "boolean", _bool) if width == 1 else ColumnType(norm, "binary", _bit(width))
    if base in _BINARY:
        return ColumnType(norm, "binary", _latin1)
    if base == "json":
        return ColumnType(norm, "json", _json)
    return ColumnType(norm, "string", _text)
