"""Datastream unified types -> typed Python values (the value half of the Datastream adapter).

Why a compiler: an Avro file carries one writer schema; each payload field's unified type is known once per
file, so it is turned into a small converter function once and applied to every record. Records are read
with every `logicalType` stripped (fastavro applies logical conversions from the *writer* schema and raises
on PostgreSQL's +-infinity sentinels), so each converter sees the raw Avro value and decides exactly:

* decimal bytes -> exact `Decimal` with the writer's scale (any precision, also 65,30);
* timestamp-micros/millis -> UTC-aware datetime; the PostgreSQL infinity sentinels -> 'infinity' strings;
* time-micros / time-interval-micros -> 'HH:MM:SS.ffffff' strings (VARIANT has no TIME type);
* `timestampTz` -> UTC datetime, or the original local time with its offset as a string when non-zero;
* `json` strings -> nested dict/list (numbers exact), `number` strings -> int or Decimal;
* `varchar` records (2020) -> their value; `multidimensionalArray_*` records -> (nested) lists;
* `float` (float32) -> the shortest decimal that round-trips it (45.67, not 45.66999816894531);
* MySQL DATE arrives as timestamp-micros at midnight UTC and stays that timestamp: the schema cannot tell it
  from DATETIME, so guessing a `date` would be wrong for DATETIME values at midnight.

JSON events carry no types: JSON numbers become int or exact Decimal and strings stay strings (the schema
version summarises them: cdcnorm.canonical.inferred).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from cdcnorm.canonical.durations import duration_str, interval_str

UTC = dt.UTC
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_NAIVE = dt.datetime(1970, 1, 1)
_ONE_US = dt.timedelta(microseconds=1)
PG_INFINITY_US = 9223372036825200000
PG_NEG_INFINITY_US = -9223372036832400000
TS_FLAG = "timestamp_as_string"

Conv = Callable[[Any, list], Any]
"""A converter: (raw Avro value, row flags) -> typed value; it appends flags it causes."""


@dataclass(slots=True)
class FieldType:
    """What one Avro type means: its converter (None = identity) and the names stored in schema versions."""

    conv: Conv | None
    canonical: str
    vendor: str
    nullable: bool = False


def _flag(flags: list, name: str) -> None:
    if name not in flags:
        flags.append(name)


# -- scalar values --------------------------------------------------------------------------------------------
def micros_to_ts(us: int, flags: list) -> dt.datetime | str:
    """Epoch micros -> UTC datetime; sentinels/out-of-range values -> strings flagged timestamp_as_string."""
    try:
        return EPOCH + dt.timedelta(microseconds=us)
    except OverflowError:
        _flag(flags, TS_FLAG)
        if us >= PG_INFINITY_US:
            return "infinity"
        if us <= PG_NEG_INFINITY_US:
            return "-infinity"
        return str(us)


def millis_to_ts(ms: int) -> dt.datetime:
    return EPOCH + dt.timedelta(milliseconds=ms)


def float32(v: float) -> float:
    """The shortest decimal that round-trips a float32 (45.66999816894531 -> 45.67), as Java's Float.toString."""
    if v != v or v in (float("inf"), float("-inf")):
        return v
    packed = struct.pack("<f", v)
    for digits in range(6, 10):
        candidate = float(f"{v:.{digits}g}")
        if struct.pack("<f", candidate) == packed:
            return candidate
    return v


def number_text(s: str) -> int | Decimal | str:
    """A unified NUMBER string (e.g. BIGINT UNSIGNED '18446744073709551615') -> int or exact Decimal."""
    text = s.strip()
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    try:
        d = Decimal(text)
    except InvalidOperation:
        return s
    return d if d.is_finite() else s


def parse_json_text(s: Any) -> Any:
    """A json-typed column value -> nested Python (exact decimals); unparseable text stays a string."""
    if not isinstance(s, str | bytes):
        return s
    try:
        return json.loads(s, parse_float=Decimal)
    except ValueError:
        return s


_MILLIS_TEXT = re.compile(r"-?\d+")
_NANOS = re.compile(r"(\.\d{6})\d+")


def parse_ts(value: Any) -> dt.datetime | None:
    """Envelope timestamps in every observed form -> UTC datetime; None when absent or a sentinel.

    Avro: epoch millis (int) or a datetime; JSON: '2024-03-31T16:23:07.938Z', '2021-12-25 05:42:04.408',
    '2025-11-05T18:23:46.698000Z', '2019-11-07T02:15:39', or an epoch-millis number or digit string. A string
    without a zone is UTC (Datastream writes UTC). Raises ValueError for anything else. A time before the
    epoch (e.g. `-1` ms) is not a capture time but an "unset" sentinel: None, never 1969-12-31T23:59:59.999.
    """
    if type(value) is str:  # envelope times repeat (a read time per file, many events per millisecond)
        ts = _TS_CACHE.get(value, _MISS)
        if ts is _MISS:
            if len(_TS_CACHE) >= _TS_CACHE_MAX:
                _TS_CACHE.clear()
            ts = _TS_CACHE[value] = _parse_ts(value)
    else:
        ts = _parse_ts(value)
    return None if ts is not None and ts < EPOCH else ts


_TS_CACHE: dict[str, dt.datetime | None] = {}
_TS_CACHE_MAX = 4096
_MISS: Any = object()


def _parse_ts(value: Any) -> dt.datetime | None:
    if type(value) is str and 20 <= len(value) <= 27 and value[-1] == "Z" and value[10] == "T":
        # Datastream's own form ('2024-03-31T16:23:07.938Z'): at most 6 fraction digits, no blanks, UTC, so
        # the general path below would only strip, test two patterns and convert UTC to UTC
        try:
            ts = dt.datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            if ts.tzinfo is UTC:
                return ts
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    if isinstance(value, bool):
        raise ValueError(f"not a timestamp: {value!r}")
    if isinstance(value, int | Decimal | float):
        return millis_to_ts(int(value))
    if isinstance(value, str):
        text = value.strip()
        if _MILLIS_TEXT.fullmatch(text):
            return millis_to_ts(int(text))
        if _NANOS.search(text):
            text = _NANOS.sub(r"\1", text)  # nanoseconds: keep micros
        ts = dt.datetime.fromisoformat(text)
        return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)
    raise ValueError(f"not a timestamp: {value!r}")


def parse_ns(value: Any) -> int | None:
    """An ISO timestamp with up to 9 fractional digits -> epoch nanoseconds (Spanner commit timestamps)."""
    if value is None or value == "":
        return None
    if isinstance(value, int):
        return value * 1_000_000
    text = str(value).strip()
    m = re.match(r"(.*?\d{2}:\d{2}:\d{2})(?:\.(\d+))?(.*)$", text)
    if not m:
        ts = _parse_ts(text)
        return None if ts is None else (ts - EPOCH) // _ONE_US * 1000
    head, frac, tail = m.groups()
    base = _parse_ts(head + tail)
    assert base is not None
    nanos = int((frac or "0")[:9].ljust(9, "0"))
    return (base - EPOCH) // dt.timedelta(seconds=1) * 1_000_000_000 + nanos


def hex_to_bytes(value: Any) -> bytes:
    """MySQL BYTES columns arrive as lowercase hex strings; PostgreSQL text form may carry a '\\x' prefix."""
    if isinstance(value, bytes):
        return value
    text = str(value)
    if text[:2] in ("\\x", "0x", "0X"):
        text = text[2:]
    return bytes.fromhex(text)


# -- Avro schema compilation --------------------------------------------------------------------------------
def strip_logical_types(schema: Any) -> Any:
    """The writer schema without `logicalType` keys: records are then read as raw Avro values."""
    if isinstance(schema, dict):
        return {k: strip_logical_types(v) for k, v in schema.items() if k != "logicalType"}
    if isinstance(schema, list):
        return [strip_logical_types(x) for x in schema]
    return schema


_PRIMITIVE_CANONICAL = {
    "null": "null", "boolean": "boolean", "int": "int", "long": "bigint", "float": "float", "double": "double",
    "bytes": "binary", "string": "string",
}


class AvroTypes:
    """Compiles Avro (writer) types into :class:`FieldType` converters; remembers named types."""

    def __init__(self) -> None:
        self.named: dict[str, Any] = {}
        self._compiled: dict[str, FieldType] = {}

    def field(self, schema: Any) -> FieldType:
        """Compile one field type (unions with null unwrap to the nullable inner type)."""
        if isinstance(schema, list):
            branches = [b for b in schema if b != "null"]
            nullable = len(branches) < len(schema)
            if len(branches) == 1:
                ft = self.field(branches[0])
                return FieldType(_null_safe(ft.conv), ft.canonical, ft.vendor, nullable)
            for b in branches:  # register named branches so later references resolve
                self.field(b)
            vendor = "union<" + ",".join(self._vendor_name(b) for b in branches) + ">"
            return FieldType(None, "variant", vendor, nullable)
        if isinstance(schema, str):
            if schema in self._compiled:
                return self._compiled[schema]
            if schema in self.named:
                return self._named(schema, self.named[schema])
            if schema in _PRIMITIVE_CANONICAL:
                return FieldType(float32_conv if schema == "float" else None, _PRIMITIVE_CANONICAL[schema], schema)
            return FieldType(None, "variant", schema)
        return self._complex(schema)

    def _vendor_name(self, schema: Any) -> str:
        if isinstance(schema, str):
            return schema
        if isinstance(schema, dict):
            return schema.get("logicalType") or schema.get("name") or schema.get("type", "?")
        return "union"

    def _complex(self, s: dict) -> FieldType:
        typ, logical = s.get("type"), s.get("logicalType")
        if isinstance(typ, dict | list):  # {"type": {...}} wrapper
            return self.field(typ)
        if logical:
            ft = _logical(s, typ, logical)
            if ft is not None:
                return ft
        if typ in ("record", "error"):
            return self._named(s["name"], s)
        if typ == "enum":
            self.named[s["name"]] = s
            return FieldType(None, "string", f"enum:{s['name']}")
        if typ == "fixed":
            self.named[s["name"]] = s
            return FieldType(None, "binary", f"fixed({s.get('size')})")
        if typ == "array":
            item = self.field(s["items"])
            conv = item.conv
            return FieldType(
                (lambda v, fl: [conv(x, fl) for x in v]) if conv else None,  # type: ignore[misc]
                f"array<{item.canonical}>", f"array<{item.vendor}>",
            )
        if typ == "map":
            val = self.field(s["values"])
            conv = val.conv
            return FieldType(
                (lambda v, fl: {k: conv(x, fl) for k, x in v.items()}) if conv else None,  # type: ignore[misc]
                f"map<string,{val.canonical}>", f"map<{val.vendor}>",
            )
        return self.field(typ) if isinstance(typ, str) else FieldType(None, "variant", str(typ))

    def _named(self, name: str, s: dict) -> FieldType:
        """Named records: the unified-type records and PostgreSQL arrays get their own meaning."""
        if name in self._compiled:
            return self._compiled[name]
        self.named[name] = s
        short = name.rsplit(".", 1)[-1]
        if short.startswith("multidimensionalArray"):
            return self._array_record(name, s)
        fields = s.get("fields", [])
        # Placeholder first, so recursive references resolve while compiling the fields.
        holder = FieldType(None, "struct", short)
        self._compiled[name] = holder
        sub = {f["name"]: self.field(f["type"]) for f in fields}
        special = _record_special(short, sub)
        if special is not None:
            holder.conv, holder.canonical, holder.vendor = special.conv, special.canonical, special.vendor
            return holder
        convs = [(k, ft.conv) for k, ft in sub.items()]

        def record(v: dict, fl: list) -> dict:
            return {k: (c(v.get(k), fl) if c and v.get(k) is not None else v.get(k)) for k, c in convs}

        holder.conv = record if any(c for _, c in convs) else None
        return holder

    def _array_record(self, name: str, s: dict) -> FieldType:
        holder = FieldType(None, "array", name.rsplit(".", 1)[-1])
        self._compiled[name] = holder
        elem_schema = next((f["type"] for f in s.get("fields", []) if f["name"] == "elementValue"), "null")
        elem = self.field(elem_schema)
        econv = elem.conv

        def node(v: Any, fl: list) -> Any:
            if v is None:
                return None
            nested = v.get("nestedArray")
            if nested is not None:
                return [node(x, fl) for x in nested]
            value = v.get("elementValue")
            return econv(value, fl) if econv and value is not None else value

        def top(v: Any, fl: list) -> Any:
            if v is not None and v.get("nestedArray") is None and v.get("elementValue") is None:
                return []
            return node(v, fl)

        holder.conv, holder.canonical = top, f"array<{elem.canonical}>"
        return holder


def _null_safe(conv: Conv | None) -> Conv | None:
    if conv is None:
        return None
    return lambda v, fl: None if v is None else conv(v, fl)


def float32_conv(v: Any, _fl: list) -> Any:
    return float32(v) if isinstance(v, float) else v


def _decimal_conv(scale: int) -> Conv:
    def conv(v: Any, _fl: list) -> Decimal:
        # From text, never scaleb(): context arithmetic would round to 28 digits (decimal(65,30) needs 65).
        return Decimal(f"{int.from_bytes(v, 'big', signed=True)}E-{scale}")

    return conv


def _logical(s: dict, typ: Any, logical: str) -> FieldType | None:
    """Avro logical types (standard and Datastream's custom ones) -> FieldType, or None if unknown."""
    if logical == "decimal" and typ in ("bytes", "fixed"):
        p, sc = s.get("precision"), int(s.get("scale", 0) or 0)
        return FieldType(_decimal_conv(sc), f"decimal({p},{sc})", f"decimal({p},{sc})")
    if typ == "long" and logical in ("timestamp-micros", "timestamp-millis", "timestamp-nanos"):
        div = {"timestamp-micros": 1, "timestamp-millis": None, "timestamp-nanos": 1000}[logical]
        if div is None:
            return FieldType(lambda v, fl: micros_to_ts(v * 1000, fl), "timestamp", logical)
        return FieldType(lambda v, fl: micros_to_ts(v // div, fl), "timestamp", logical)
    if typ == "long" and logical in ("local-timestamp-micros", "local-timestamp-millis"):
        mul = 1 if logical.endswith("micros") else 1000
        return FieldType(lambda v, _fl: _EPOCH_NAIVE + dt.timedelta(microseconds=v * mul), "timestamp_ntz", logical)
    if logical == "date" and typ == "int":
        return FieldType(lambda v, _fl: dt.date(1970, 1, 1) + dt.timedelta(days=v), "date", logical)
    if logical in ("time-micros", "time-interval-micros") and typ == "long":
        return FieldType(lambda v, _fl: duration_str(v), "time", logical)
    if logical == "time-millis" and typ == "int":
        return FieldType(lambda v, _fl: duration_str(v * 1000), "time", logical)
    if logical == "json" and typ == "string":
        return FieldType(lambda v, _fl: parse_json_text(v), "json", logical)
    if logical == "number" and typ == "string":
        return FieldType(lambda v, _fl: number_text(v), "decimal", logical)
    if logical == "varchar" and typ == "string":
        n = s.get("length")
        return FieldType(None, "string", f"varchar({n})" if n is not None else "varchar")
    if logical == "uuid" and typ == "string":
        return FieldType(None, "string", logical)
    return None


def _record_special(short: str, sub: dict[str, FieldType]) -> FieldType | None:
    """The unified-type records: timestampTz, datetime, interval, varchar (2020), Json."""
    if short == "timestampTz" and "timestamp" in sub:
        return FieldType(_timestamp_tz, "timestamp", "timestampTz")
    if short == "datetime" and {"date", "time"} <= sub.keys():
        return FieldType(_datetime_record, "timestamp_ntz", "datetime")
    if short == "interval" and {"months", "hours", "micros"} <= sub.keys():
        return FieldType(lambda v, _fl: interval_str(v), "interval", "interval")
    if short == "varchar" and "value" in sub:
        return FieldType(lambda v, _fl: v.get("value"), "string", "varchar")
    if short.lower() == "json" and len(sub) >= 1:
        key = "value" if "value" in sub else next(iter(sub))
        return FieldType(lambda v, _fl: parse_json_text(v.get(key)), "json", short)
    return None


def _timestamp_tz(v: dict, fl: list) -> dt.datetime | str:
    """Instant in UTC; a non-zero offset would be lost in a timestamp, so keep local time + offset as text."""
    us, offset_ms = v.get("timestamp"), v.get("offset") or 0
    if us is None:
        return None  # type: ignore[return-value]
    ts = micros_to_ts(us, fl)
    if isinstance(ts, str) or not offset_ms:
        return ts
    tz = dt.timezone(dt.timedelta(milliseconds=offset_ms))
    _flag(fl, TS_FLAG)
    return ts.astimezone(tz).isoformat(timespec="microseconds")


def _datetime_record(v: dict, _fl: list) -> dt.datetime:
    return _EPOCH_NAIVE + dt.timedelta(days=v.get("date") or 0, microseconds=v.get("time") or 0)
