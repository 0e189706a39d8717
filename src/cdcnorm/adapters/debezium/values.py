"""Debezium column values -> exact canonical Python values, driven by the Kafka Connect schema of each column.

Why one decoder per schema field: a JSON-converter schema or an Avro writer schema repeats for every message of
a table, so each field is compiled once (cached on the hashable :class:`Field`) into a small closure, and the
per-value path is one call without a ladder of type checks.

What each Connect / Debezium type becomes (docs/canonical.md, "Values and their types"):

| schema (`name` or type) | value on the wire | canonical value | canonical type |
|---|---|---|---|
| `int8`..`int64` | number (Protobuf: text) | `int`, exact beyond 2^53 | tinyint / smallint / int / bigint |
| `float32`, `float64` | number | `float` as given (float32 artefacts kept) | float / double |
| `boolean`, `string` | as is | as is | boolean / string |
| `bytes` | base64 text (JSON), raw bytes (Avro) | `bytes` | binary |
| `string` of a binary source column (`binary.handling.mode` base64 / base64-url-safe / hex) | text | `bytes` | binary |
| `org.apache.kafka.connect.data.Decimal` | base64 two's complement unscaled (or a JSON number with `decimal.format=NUMERIC`) | `Decimal` with the schema's scale | decimal(p,s) |
| `io.debezium.data.VariableScaleDecimal` | `{scale, value}` | `Decimal` | decimal (no precision: variant) |
| `string` / `float64` of a DECIMAL source column (`decimal.handling.mode` string / double) | text / number | `Decimal` / `float` | decimal(p,s) / double |
| `io.debezium.time.Date`, Connect `Date` | days | `date` | date |
| `io.debezium.time.Time` / `MicroTime` / `NanoTime`, Connect `Time` | ms / µs / ns of the day | `HH:MM:SS.ffffff` (9 digits when ns) | time |
| `io.debezium.time.Timestamp` / `MicroTimestamp` / `NanoTimestamp`, Connect `Timestamp` | ms / µs / ns | naive `datetime` (wall clock) | timestamp_ntz |
| `io.debezium.time.ZonedTimestamp` | ISO text with offset | UTC `datetime` | timestamp |
| `io.debezium.time.IsoDate` / `IsoTime` / `IsoTimestamp` (`isostring`) | ISO text + `Z` (wall clock) | `date` / `HH:MM:SS.ffffff` / naive `datetime` | date / time / timestamp_ntz |
| `io.debezium.time.ZonedTime`, `Interval` | text | the text | time / interval |
| `io.debezium.time.MicroDuration` | µs (a month = 30.4375 days) | ISO duration `PT1H2M3.5S` | interval |
| `io.debezium.time.Year` | number | `int` | int |
| `io.debezium.data.Json` | JSON text | nested dict / list (numbers exact); text that is not JSON stays text | json |
| `Uuid`, `Xml`, `Ltree`, `Enum`, `EnumSet` | text | `str` | string |
| `io.debezium.data.Bits` | base64 | `bytes` (BIT(1) is a `boolean` field) | binary |
| `io.debezium.data.geometry.*` | struct {wkb, srid[, x, y]} | dict, `wkb` as bytes | struct<...> |
| struct / array / map | nested | dict / list / dict, members decoded | struct<...> / array<...> / map<...> |

Values that a canonical value cannot hold exactly follow the canonical conventions: a decimal beyond 38 digits
stays an exact `Decimal` here and the emitter stores its text flagged `decimal_as_string`; a timestamp with
nanoseconds beyond the microsecond, a ZonedTimestamp with a non-zero UTC offset (Oracle, SQL Server keep the
source's offset, which a UTC instant would lose) and a timestamp outside Python's range are kept as text and
flagged `timestamp_as_string`. Decoders take the row's flag list as an optional second argument for that.
"""

from __future__ import annotations

import binascii
import datetime as dt
import decimal
import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

import pydantic

from cdcnorm.adapters.datastream.types import interval_str
from cdcnorm.errors import DecodeError, UsageError

TOAST = "__debezium_unavailable_value"
"""The connector's default `unavailable.value.placeholder` (unchanged TOASTed / LOB values)."""
TS_FLAG = "timestamp_as_string"
UNTYPED_FLAG = "untyped_values"
"""Flag of a row decoded without a schema: values as parsed from the JSON or as the user declared, best effort."""

Decoder = Callable[..., Any]
"""`decoder(value, flags=None)`: one wire value -> canonical value; appends the flags the value causes."""

_UTC = dt.UTC
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=_UTC)
_EPOCH_NAIVE = dt.datetime(1970, 1, 1)
_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_date_from_ordinal = dt.date.fromordinal
_TD = dt.timedelta
_PG_INFINITY_US = 9223372036825200000
_PG_NEG_INFINITY_US = -9223372036832400000
_INT_RANGE = {"int8": 1 << 7, "int16": 1 << 15, "int32": 1 << 31, "int64": 1 << 63}
_FLOAT_EXACT = 1 << 53


class Modes(pydantic.BaseModel):
    """The connector and converter settings that decide how a value is written (what the schema cannot say)."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    decimal_handling: Literal["precise", "double", "string"] = "precise"
    """`decimal.handling.mode`"""
    time_precision: Literal["adaptive", "adaptive_time_microseconds", "connect", "isostring"] = "adaptive"
    """`time.precision.mode`"""
    binary_handling: Literal["bytes", "base64", "base64-url-safe", "hex"] = "bytes"
    """`binary.handling.mode` (JSON shows `bytes` as base64 text too)"""
    decimal_format: Literal["base64", "numeric"] = "base64"
    """JsonConverter `decimal.format`"""


@dataclass(frozen=True)
class Field:
    """One Kafka Connect schema node: its type, logical name, parameters and members."""

    name: str | None
    type: str
    """Connect type: int8..int64, float32, float64, boolean, string, bytes, struct, array, map"""
    logical: str | None = None
    """schema `name`, e.g. `io.debezium.time.MicroTimestamp`"""
    parameters: tuple[tuple[str, str], ...] = ()
    optional: bool = True
    fields: tuple[Field, ...] = ()
    items: Field | None = None
    keys: Field | None = None
    values: Field | None = None
    default: Any = field(default=None, compare=False, hash=False)

    def __hash__(self) -> int:  # schemas are deep and hashed per lookup: compute once
        try:
            return self.__dict__["_hash"]
        except KeyError:
            h = hash((self.name, self.type, self.logical, self.parameters, self.optional, self.fields, self.items,
                      self.keys, self.values))
            object.__setattr__(self, "_hash", h)
            return h

    def __getstate__(self) -> dict:  # a cached hash is per process (string hashing is salted)
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    @property
    def params(self) -> dict[str, str]:
        return dict(self.parameters)


# -- schemas ---------------------------------------------------------------------------------------------------
def _params(raw: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, dict):
        return ()
    return tuple(sorted((str(k), str(v)) for k, v in raw.items()))


def connect_field(schema: dict) -> Field:
    """A JsonConverter schema node (`{"type", "optional", "name", "parameters", "field", "fields", ...}`)."""
    typ = schema["type"]
    typ = _CONNECT_ALIASES.get(typ, typ)
    if typ not in _CONNECT_TYPES:
        raise ValueError(f"unknown Connect type {typ!r}")
    return Field(
        name=schema.get("field"),
        type=typ,
        logical=schema.get("name"),
        parameters=_params(schema.get("parameters")),
        optional=bool(schema.get("optional", False)),
        fields=tuple(connect_field(f) for f in schema.get("fields") or ()) if typ == "struct" else (),
        items=connect_field(schema["items"]) if typ == "array" else None,
        keys=connect_field(schema["keys"]) if typ == "map" else None,
        values=connect_field(schema["values"]) if typ == "map" else None,
        default=schema.get("default"),
    )


_CONNECT_TYPES = frozenset(
    ("int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string", "bytes", "struct", "array", "map"))
_CONNECT_ALIASES = {"double": "float64", "float": "float32"}
"""Flink CDC's Debezium-like JSON names its float columns `double` / `float`."""
_AVRO_PRIMITIVE = {"boolean": "boolean", "int": "int32", "long": "int64", "float": "float32", "double": "float64",
                   "bytes": "bytes", "string": "string"}
_AVRO_LOGICAL = {"date": "org.apache.kafka.connect.data.Date", "time-millis": "org.apache.kafka.connect.data.Time",
                 "timestamp-millis": "org.apache.kafka.connect.data.Timestamp"}
DECIMAL = "org.apache.kafka.connect.data.Decimal"


def avro_field(avro_schema: Any, name: str | None = None, names: dict[str, Any] | None = None) -> Field:
    """A Confluent AvroConverter schema node: a union with null is optional; `connect.name`,
    `connect.parameters`, `connect.type` (int8 / int16) and the Avro logical types give the Connect meaning.

    A named type is written once and referenced by name after that (two NUMERIC columns share one
    `io.debezium.data.VariableScaleDecimal` record): read a whole record in one call, or pass one `names`
    dict to the calls for the fields of one schema. Raises ValueError for what Connect cannot have written.
    """
    return _avro(avro_schema, name, {} if names is None else names, None)


def _avro(s: Any, name: str | None, named: dict[str, Any], space: str | None, default: Any = None) -> Field:
    if isinstance(s, list):
        branches = [b for b in s if b != "null"]
        if len(branches) != 1:
            raise ValueError(f"a union of {len(branches)} non-null types has no Connect type")
        inner = _avro(branches[0], name, named, space, default)
        return Field(inner.name, inner.type, inner.logical, inner.parameters, len(branches) < len(s), inner.fields,
                     inner.items, inner.keys, inner.values, default)
    if isinstance(s, str):
        if s in _AVRO_PRIMITIVE:
            return Field(name, _AVRO_PRIMITIVE[s], optional=False, default=default)
        ref = named.get(f"{space}.{s}") or named.get(s)
        if ref is None:
            raise ValueError(f"unknown Avro type {s!r}")
        return _avro(ref, name, named, space, default)
    if not isinstance(s, dict):
        raise ValueError(f"not an Avro schema: {s!r}")
    typ = s.get("type")
    if isinstance(typ, dict | list):
        return _avro(typ, name, named, space, s.get("default", default))
    ns = space
    if typ in ("record", "enum", "fixed") and "name" in s:
        full = s["name"] if "." in s["name"] else ".".join(filter(None, (s.get("namespace") or space, s["name"])))
        ns = full.rpartition(".")[0] or None
        s = named[full] = {**s, "name": full}  # a reference resolves it in its own namespace
        named.setdefault(full.rpartition(".")[2], s)
    params = dict(_params(s.get("connect.parameters")))
    logical = s.get("connect.name")
    avro_logical = s.get("logicalType")
    if avro_logical == "decimal" and logical is None:
        logical = DECIMAL
        params.setdefault("scale", str(s.get("scale", 0)))
        if s.get("precision") is not None:
            params.setdefault("connect.decimal.precision", str(s["precision"]))
    elif avro_logical in _AVRO_LOGICAL and logical is None:
        logical = _AVRO_LOGICAL[avro_logical]
    dflt = s.get("connect.default", default)
    ptuple = tuple(sorted(params.items()))
    if typ == "record":
        members = tuple(_avro(f["type"], f["name"], named, ns, f.get("default")) for f in s.get("fields") or ())
        return Field(name, "struct", logical, ptuple, False, members, default=dflt)
    if typ == "array":
        return Field(name, "array", logical, ptuple, False, items=_avro(s["items"], None, named, space), default=dflt)
    if typ == "map":
        return Field(name, "map", logical, ptuple, False, keys=Field(None, "string", optional=False),
                     values=_avro(s["values"], None, named, space), default=dflt)
    if typ == "enum":
        return Field(name, "string", logical, ptuple, False, default=dflt)
    if typ == "fixed":
        return Field(name, "bytes", logical, ptuple, False, default=dflt)
    if typ in _AVRO_PRIMITIVE:
        ctype = s.get("connect.type") if s.get("connect.type") in ("int8", "int16") else _AVRO_PRIMITIVE[typ]
        return Field(name, ctype, logical, ptuple, False, default=dflt)
    raise ValueError(f"unknown Avro type {typ!r}")


# -- scalar decoders ---------------------------------------------------------------------------------------------
def _bad(what: str, v: Any) -> DecodeError:
    return DecodeError("bad_value", f"{str(v)[:60]!r} is not {what}")


def _flag(flags: list | None, name: str = TS_FLAG) -> None:
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
                raise _bad(f"an {width}", v) from None
        else:
            raise _bad(f"an {width}", v)
        if not -limit <= n < limit:
            raise _bad(f"an {width}", v)
        return n

    def dec(v: Any, fl: list | None = None) -> int:
        return v if type(v) is int else slow(v)

    return dec


def _float_dec(v: Any, fl: list | None = None) -> float:
    if type(v) is float or v is None:
        return v
    if isinstance(v, bool):
        raise _bad("a number", v)
    try:
        return float(v)  # int, Decimal, and the texts 'NaN' / 'Infinity' of a Protobuf or string dump
    except (TypeError, ValueError):
        raise _bad("a number", v) from None


def _bool_dec(v: Any, fl: list | None = None) -> bool:
    if type(v) is bool or v is None:
        return v
    if type(v) is int and v in (0, 1):
        return bool(v)
    if type(v) is str and v.lower() in ("true", "false"):
        return v.lower() == "true"
    raise _bad("a boolean", v)


def _same(v: Any, fl: list | None = None) -> Any:
    return v


def _str_dec(v: Any, fl: list | None = None) -> str | None:
    if type(v) is str or v is None:
        return v
    raise _bad("a string", v)


# bytes
_URLSAFE = str.maketrans("-_", "+/")


def _b64(v: str) -> bytes:
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
        return lambda v: _b64(v.translate(_URLSAFE))
    return _b64


def _bytes_decoder(mode: str = "bytes") -> Decoder:
    text = _text_to_bytes(mode)

    def dec(v: Any, fl: list | None = None) -> bytes:
        if type(v) is str:
            return text(v)
        if type(v) is bytes or v is None:
            return v
        if isinstance(v, bytearray | memoryview):
            return bytes(v)
        raise _bad("bytes", v)

    return dec


# decimals
def _unscaled(v: Any) -> int:
    raw = _b64(v) if type(v) is str else v
    if not isinstance(raw, bytes | bytearray):
        raise _bad("a Base64 decimal", v)
    return int.from_bytes(raw, "big", signed=True)


_EXACT = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
"""Arithmetic that never rounds (the default context rounds to 28 digits; decimal(65,30) needs 65)."""
_PAD = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN,
                       traps=[decimal.Rounded, decimal.InvalidOperation])
"""Quantizing that may only add trailing zeros: dropping a digit (even a zero) raises."""
_QUANTUM: dict[int, Decimal] = {}


def _scaled(n: int, scale: int) -> Decimal:
    return Decimal(n) if scale == 0 else Decimal(n).scaleb(-scale, _EXACT)


def _rescale(d: Decimal, scale: int | None) -> Decimal:
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
            raise _bad("a decimal", v) from None
    else:
        raise _bad("a decimal", v)
    if not d.is_finite():
        raise _bad("a finite decimal", v)
    return _rescale(d, scale)


def _decimal_decoder(scale: int, numeric: bool) -> Decoder:
    """Connect Decimal: Base64 unscaled bytes (JSON), raw bytes or a Decimal (Avro), or a number."""
    def dec(v: Any, fl: list | None = None) -> Decimal:
        t = type(v)
        if t is str and not numeric or t is bytes:
            return _scaled(_unscaled(v), scale)
        return _number(v, scale)

    return dec


def _variable_decimal(v: Any, fl: list | None = None) -> Decimal:
    if type(v) is not dict:
        return _number(v, None)  # already a number (a decimal-preserving reader, a console dump)
    scale, value = v.get("scale"), v.get("value")
    if type(scale) is not int or value is None:
        raise _bad("a VariableScaleDecimal {scale, value}", v)
    return _scaled(_unscaled(value), scale)


def _decimal_text(v: Any, fl: list | None = None) -> Decimal | str:
    """`decimal.handling.mode=string`: the exact text; PostgreSQL's 'NaN' / 'Infinity' stay text."""
    if type(v) is not str:
        return _number(v, None)
    try:
        d = Decimal(v)
    except InvalidOperation:
        raise _bad("a decimal", v) from None
    return d if d.is_finite() else v


# time
def _odd_time(v: Any, fl: list | None, unit: int, naive: bool) -> dt.datetime | str:
    """A timestamp that is not an in-range integer: digit text (Protobuf), PostgreSQL's infinity, out of range."""
    if v is None:
        return None
    if type(v) is str and re.fullmatch(r"-?\d+", v.strip()):
        return _epoch_decoder(unit, naive)(int(v), fl)
    if type(v) is not int:
        if isinstance(v, dt.datetime):  # fastavro's timestamp-millis
            return v.astimezone(_UTC).replace(tzinfo=None) if naive and v.tzinfo else v
        raise _bad("an epoch timestamp", v)
    _flag(fl)
    us = v * 1_000_000 // unit
    if us >= _PG_INFINITY_US:
        return "infinity"
    if us <= _PG_NEG_INFINITY_US:
        return "-infinity"
    return str(v)


def _epoch_decoder(unit: int, naive: bool) -> Decoder:
    """Epoch integers in 1/unit seconds -> naive (wall clock) or UTC datetime; nanoseconds beyond the
    microsecond -> ISO text with 9 digits, flagged."""
    base = _EPOCH_NAIVE if naive else _EPOCH
    if unit == 1000:
        def ms(v: Any, fl: list | None = None) -> Any:
            if type(v) is int:
                try:
                    return base + _TD(milliseconds=v)
                except OverflowError:
                    pass
            return _odd_time(v, fl, unit, naive)
        return ms
    if unit == 1_000_000:
        def us(v: Any, fl: list | None = None) -> Any:
            if type(v) is int:
                try:
                    return base + _TD(microseconds=v)
                except OverflowError:
                    pass
            return _odd_time(v, fl, unit, naive)
        return us

    def ns(v: Any, fl: list | None = None) -> Any:
        if type(v) is int:
            micros, rest = divmod(v, 1000)
            try:
                ts = base + _TD(microseconds=micros)
            except OverflowError:
                return _odd_time(v, fl, unit, naive)
            if not rest:
                return ts
            _flag(fl)
            text = ts.replace(tzinfo=None).isoformat(timespec="microseconds") + f"{rest:03d}"
            return text if naive else text + "Z"
        return _odd_time(v, fl, unit, naive)
    return ns


def _date_dec(v: Any, fl: list | None = None) -> dt.date | str:
    if type(v) is int:
        try:
            return _date_from_ordinal(v + _EPOCH_ORDINAL)
        except (OverflowError, ValueError):
            _flag(fl)
            return str(v)
    if type(v) is dt.date or v is None:  # fastavro's `date`
        return v
    if type(v) is str and re.fullmatch(r"-?\d+", v.strip()):
        return _date_dec(int(v), fl)
    raise _bad("a day count", v)


def _clock(us: int) -> str:
    """Micros -> '[-]HH:MM:SS.ffffff' (hours may exceed 24), as the Datastream adapter writes times."""
    if us < 0:
        return "-" + _clock(-us)
    secs, frac = divmod(us, 1_000_000)
    mins, sec = divmod(secs, 60)
    hours, mins = divmod(mins, 60)
    return "%02d:%02d:%02d.%06d" % (hours, mins, sec, frac)  # noqa: UP031 - faster than an f-string here


def _time_decoder(unit: int) -> Decoder:
    """Time of day in 1/unit seconds -> 'HH:MM:SS.ffffff' (MySQL TIME may be negative or beyond 24 h)."""
    def dec(v: Any, fl: list | None = None) -> str:
        if type(v) is not int:
            if v is None:
                return None
            if isinstance(v, dt.time):  # fastavro's time-millis
                return v.isoformat(timespec="microseconds")
            if type(v) is str and re.fullmatch(r"-?\d+", v.strip()):
                v = int(v)
            else:
                raise _bad("a time of day count", v)
        if unit == 1_000_000_000:
            micros, rest = divmod(v, 1000)
            return _clock(micros) + (f"{rest:03d}" if rest else "")
        return _clock(v * (1_000_000 // unit))

    return dec


_FRACTION = re.compile(r"\.(\d+)")
_FAR_YEAR = re.compile(r"(?:[+-]\d{4,}|\d{5,})-\d\d-\d\d")


def _zoned_odd(v: Any, fl: list | None) -> Any:
    if type(v) is not str:
        if v is None:
            return None
        if isinstance(v, dt.datetime) and v.tzinfo is not None:
            return v.astimezone(_UTC)
        raise _bad("an ISO timestamp with offset", v)
    if v in ("infinity", "-infinity") or _FAR_YEAR.match(v):  # PostgreSQL's infinity, BC years, years > 9999
        _flag(fl)
        return v
    raise _bad("an ISO timestamp with offset", v)


def _zoned_timestamp(v: Any, fl: list | None = None) -> Any:
    """ISO-8601 with an offset and 0-9 fraction digits -> UTC datetime; kept as text (flagged) when its
    nanoseconds or a non-zero offset would be lost."""
    try:
        ts = dt.datetime.fromisoformat(v)
    except (TypeError, ValueError):
        return _zoned_odd(v, fl)
    if ts.tzinfo is _UTC and len(v) <= 27:  # 'Z' or '+00:00' with at most 6 fraction digits
        return ts
    if ts.tzinfo is None:
        raise _bad("an ISO timestamp with offset", v)
    m = _FRACTION.search(v, 19)
    if m and len(m[1]) > 6 and m[1][6:].strip("0") or ts.utcoffset():
        _flag(fl)
        return v
    return ts.astimezone(_UTC)


def _micro_duration(v: Any, fl: list | None = None) -> str:
    if type(v) is not int:
        v = _INT64(v)
        if v is None:
            return None
    sign = -1 if v < 0 else 1
    hours, rest = divmod(abs(v), 3_600_000_000)
    return interval_str({"hours": sign * hours, "micros": sign * rest})


_JSON = json.JSONDecoder(parse_float=Decimal).decode


def _json_dec(v: Any, fl: list | None = None) -> Any:
    """JSON text -> nested value with exact numbers; text that is not JSON stays text (as other vendors)."""
    if type(v) is not str:
        return v
    try:
        return _JSON(v)
    except ValueError:
        return v


# -- composite decoders ----------------------------------------------------------------------------------------
def _struct_decoder(f: Field, modes: Modes) -> Decoder:
    members = {m.name: _decoder(m, modes) for m in f.fields}
    convs = {k: d for k, d in members.items() if d is not _same}

    def dec(v: Any, fl: list | None = None) -> dict:
        if type(v) is not dict:
            if v is None:
                return None
            raise _bad("an object", v)
        if not convs:
            return v
        get = convs.get
        out = {}
        for k, x in v.items():
            d = get(k)
            out[k] = x if d is None or x is None else d(x, fl)
        return out

    return dec


def _array_decoder(f: Field, modes: Modes) -> Decoder:
    item = _decoder(f.items, modes) if f.items is not None else _same

    def dec(v: Any, fl: list | None = None) -> list:
        if type(v) is not list:
            if v is None:
                return None
            raise _bad("an array", v)
        if item is _same:
            return v
        return [None if x is None else item(x, fl) for x in v]

    return dec


def _map_decoder(f: Field, modes: Modes) -> Decoder:
    key = _decoder(f.keys, modes) if f.keys is not None else _same
    val = _decoder(f.values, modes) if f.values is not None else _same

    def dec(v: Any, fl: list | None = None) -> dict:
        if type(v) is dict:  # JsonConverter: an object when the keys are strings
            items = v.items()
        elif type(v) is list:  # JsonConverter: [[key, value], ...] for other keys
            items = v
        elif v is None:
            return None
        else:
            raise _bad("a map", v)
        out = {}
        for pair in items:
            k, x = pair
            k = k if k is None else key(k, fl)
            out[k if type(k) is str else json.dumps(k, default=str)] = None if x is None else val(x, fl)
        return out

    return dec


# -- the type table ----------------------------------------------------------------------------------------------
_TIME_UNITS = {"io.debezium.time.Time": 1000, "io.debezium.time.MicroTime": 1_000_000,
               "io.debezium.time.NanoTime": 1_000_000_000, "org.apache.kafka.connect.data.Time": 1000}
_TS_UNITS = {"io.debezium.time.Timestamp": 1000, "io.debezium.time.MicroTimestamp": 1_000_000,
             "io.debezium.time.NanoTimestamp": 1_000_000_000, "org.apache.kafka.connect.data.Timestamp": 1000}
_DATES = frozenset(("io.debezium.time.Date", "org.apache.kafka.connect.data.Date"))
_TEXTS = frozenset(("io.debezium.data.Uuid", "io.debezium.data.Xml", "io.debezium.data.Ltree",
                    "io.debezium.data.Enum", "io.debezium.data.EnumSet", "io.debezium.time.ZonedTime",
                    "io.debezium.time.Interval", "io.debezium.data.Tsvector"))
_INT64 = _int_decoder("int64")
_PLAIN = {"int8": _int_decoder("int8"), "int16": _int_decoder("int16"), "int32": _int_decoder("int32"),
          "int64": _INT64, "float32": _float_dec, "float64": _float_dec, "boolean": _bool_dec,
          "string": _same}
_BINARY_SOURCE = frozenset(("BINARY", "VARBINARY", "BLOB", "TINYBLOB", "MEDIUMBLOB", "LONGBLOB", "BYTEA", "IMAGE",
                            "RAW", "LONG RAW", "BFILE"))
_DECIMAL_SOURCE = frozenset(("DECIMAL", "NUMERIC", "NUMBER", "DEC", "FIXED", "MONEY", "SMALLMONEY"))


def _source_type(f: Field) -> str | None:
    """The column's source type from `column.propagate.source.type` (`DECIMAL UNSIGNED` -> `DECIMAL`)."""
    t = f.params.get("__debezium.source.column.type")
    return t.upper().removesuffix(" UNSIGNED").removesuffix(" ZEROFILL").strip() if t else None


def _scale(f: Field) -> int:
    p = f.params
    raw = p.get("scale", p.get("__debezium.source.column.scale", "0"))
    try:
        return int(raw)
    except ValueError:
        raise DecodeError("bad_schema", f"a Decimal schema with scale {raw!r}") from None


def _decoder(f: Field, modes: Modes) -> Decoder:
    name = f.logical
    if name is not None:
        if name == DECIMAL:
            return _decimal_decoder(_scale(f), modes.decimal_format == "numeric")
        if name in _TS_UNITS:
            return _epoch_decoder(_TS_UNITS[name], naive=True)
        if name in _DATES:
            return _date_dec
        if name in _TIME_UNITS:
            return _time_decoder(_TIME_UNITS[name])
        if name == "io.debezium.time.ZonedTimestamp":
            return _zoned_timestamp
        if name in _ISO:
            return _ISO[name]
        if name == "io.debezium.data.VariableScaleDecimal":
            return _variable_decimal
        if name == "io.debezium.time.MicroDuration":
            return _micro_duration
        if name == "io.debezium.data.Json":
            return _json_dec
        if name in _TEXTS:
            return _str_dec
        if name == "io.debezium.data.Bits" and f.type == "bytes":
            return _bytes_decoder()
    typ = f.type
    if typ == "struct":
        return _struct_decoder(f, modes)
    if typ == "array":
        return _array_decoder(f, modes)
    if typ == "map":
        return _map_decoder(f, modes)
    if typ == "bytes":
        return _bytes_decoder()
    source = _source_type(f)
    if typ == "string" and source is not None:
        if source in _BINARY_SOURCE and modes.binary_handling != "bytes":
            return _bytes_decoder(modes.binary_handling)
        if source in _DECIMAL_SOURCE:
            return _decimal_text
    dec = _PLAIN.get(typ)
    if dec is None:
        raise DecodeError("bad_schema", f"unknown Connect type {typ!r}")
    return dec


@functools.lru_cache(maxsize=4096)
def value_decoder(field: Field, modes: Modes) -> Decoder:
    """The decoder of one field's values: `decoder(value, flags=None)`, None -> None.

    `flags` (the row's flag list) receives `timestamp_as_string` when a value had to stay text.
    Raises DecodeError(`bad_value` / `bad_base64` / `bad_hex`) for a value that does not match the schema.
    """
    return _decoder(field, modes)


def _latin1(v: Any) -> Any:
    if type(v) is not str:
        return v
    try:
        return v.encode("latin-1")
    except UnicodeEncodeError:
        raise _bad("Avro JSON bytes (code points 0-255)", v) from None


def _avro_native(f: Field) -> Callable[[Any], Any] | None:
    """Avro's JSON encoding -> the values a binary Avro reader gives (None: nothing to change)."""
    conv: Callable[[Any], Any] | None = None
    if f.type == "bytes":
        conv = _latin1
    elif f.type == "struct":
        members = {m.name: c for m in f.fields if (c := _avro_native(m)) is not None}
        if members:
            def conv(v: Any) -> Any:
                return {k: (members[k](x) if k in members else x) for k, x in v.items()} if type(v) is dict else v
    elif f.type in ("array", "map"):
        inner = _avro_native(f.items if f.type == "array" else f.values)  # type: ignore[arg-type]
        if inner is not None:
            if f.type == "array":
                def conv(v: Any) -> Any:
                    return [inner(x) for x in v] if type(v) is list else v
            else:
                def conv(v: Any) -> Any:
                    return {k: inner(x) for k, x in v.items()} if type(v) is dict else v
    if not f.optional:
        return conv
    inner_conv = conv

    def unwrap(v: Any) -> Any:  # a union value is {"<branch type name>": value}
        if type(v) is dict and len(v) == 1:
            v = next(iter(v.values()))
        return v if inner_conv is None or v is None else inner_conv(v)

    return unwrap


@functools.lru_cache(maxsize=1024)
def avro_json_decoder(field: Field, modes: Modes) -> Decoder:
    """The decoder of values in Avro's JSON encoding (kafka-avro-console-consumer output), for a field read
    by :func:`avro_field`: a union value is wrapped in its branch's type name (`{"long": 1}`) and bytes are
    text whose code points are the bytes (not Base64)."""
    native, dec = _avro_native(field), value_decoder(field, modes)
    if native is None:
        return dec
    return lambda v, fl=None: dec(native(v), fl)


# -- schema version types --------------------------------------------------------------------------------------
_PLAIN_CANONICAL = {"int8": "tinyint", "int16": "smallint", "int32": "int", "int64": "bigint", "float32": "float",
                    "float64": "double", "boolean": "boolean", "string": "string", "bytes": "binary"}
_LOGICAL_CANONICAL = {
    **dict.fromkeys(_TS_UNITS, "timestamp_ntz"), **dict.fromkeys(_DATES, "date"),
    **dict.fromkeys(_TIME_UNITS, "time"), "io.debezium.time.ZonedTime": "time",
    "io.debezium.time.IsoDate": "date", "io.debezium.time.IsoTime": "time", "io.debezium.time.IsoTimestamp": "timestamp_ntz",
    "io.debezium.time.ZonedTimestamp": "timestamp", "io.debezium.time.Year": "int",
    "io.debezium.time.MicroDuration": "interval", "io.debezium.time.Interval": "interval",
    "io.debezium.data.Json": "json", "io.debezium.data.VariableScaleDecimal": "decimal",
    **dict.fromkeys(_TEXTS - {"io.debezium.time.ZonedTime", "io.debezium.time.Interval"}, "string"),
}


def _precision(f: Field) -> str | None:
    p = f.params
    return p.get("connect.decimal.precision") or p.get("__debezium.source.column.length")


def _canonical(f: Field, modes: Modes) -> str:
    name = f.logical
    if name == DECIMAL:
        p = _precision(f)
        return f"decimal({p},{_scale(f)})" if p else "decimal"
    if name in _LOGICAL_CANONICAL:
        return _LOGICAL_CANONICAL[name]
    if name == "io.debezium.data.Bits":
        return "binary" if f.type == "bytes" else _PLAIN_CANONICAL.get(f.type, "variant")
    if f.type == "struct":
        return "struct<" + ",".join(f"{m.name}:{_canonical(m, modes)}" for m in f.fields) + ">"
    if f.type == "array":
        return f"array<{_canonical(f.items, modes) if f.items else 'variant'}>"
    if f.type == "map":
        return f"map<string,{_canonical(f.values, modes) if f.values else 'variant'}>"
    source = _source_type(f)
    if f.type == "string" and source is not None:
        if source in _BINARY_SOURCE and modes.binary_handling != "bytes":
            return "binary"
        if source in _DECIMAL_SOURCE:
            p = f.params.get("__debezium.source.column.length")
            s = f.params.get("__debezium.source.column.scale", "0")
            return f"decimal({p},{s})" if p else "decimal"
    return _PLAIN_CANONICAL.get(f.type, "variant")


def _vendor(f: Field) -> str:
    name = f.logical or f.type
    if f.logical == DECIMAL:
        p = _precision(f)
        name += f"({p},{_scale(f)})" if p else f"(,{_scale(f)})"
    elif f.type == "array" and f.items is not None:
        name = f"array<{_vendor(f.items)}>"
    elif f.type == "map" and f.values is not None:
        name = f"map<{_vendor(f.keys) if f.keys else 'string'},{_vendor(f.values)}>"
    p = f.params
    source = p.get("__debezium.source.column.type")
    if source:
        size = ",".join(x for x in (p.get("__debezium.source.column.length"),
                                    p.get("__debezium.source.column.scale")) if x)
        name += f" ({source}{f'({size})' if size else ''})"
    return name


def column_types(field: Field, modes: Modes) -> tuple[str, str]:
    """(vendor type, canonical type) of a column for schema versions: the Connect type or logical name (with
    the Decimal's precision and scale, and the source column type when the connector propagates it), and the
    canonical type name `apply` maps onto Spark. A Decimal without a known precision is `decimal` (variant in
    `apply`: no value is rounded)."""
    return _vendor(field), _canonical(field, modes)


# -- schemaless values -----------------------------------------------------------------------------------------
_DECLARED = re.compile(r"^\s*([a-z_]+)\s*(?:\(\s*(\d+)\s*(?:,\s*(-?\d+)\s*)?\))?\s*$")


def untyped_decoder(declared: str | None, modes: Modes) -> Decoder:
    """The decoder of a schemaless column whose canonical type the user declared (None: the value as parsed).

    The JSON alone cannot tell a Base64 decimal from text, nor micro- from milliseconds: the declared type,
    read under the connector's modes, says which. Values are best effort (rows flagged `untyped_values`).

    | declared | modes | the JSON value is read as |
    |---|---|---|
    | `decimal(p,s)` | precise, decimal_format base64 | Base64 of the unscaled integer (a number: as written) |
    | `decimal(p,s)` | precise + numeric, double, string | the number or decimal text, at scale s when exact |
    | `decimal` (no scale) | precise | a `{scale, value}` VariableScaleDecimal, or a number / text |
    | `timestamp_ntz(n)` | adaptive, adaptive_time_microseconds | n <= 3: ms (Timestamp), n <= 6: µs (MicroTimestamp), else ns |
    | `timestamp_ntz` | adaptive, adaptive_time_microseconds | µs (PostgreSQL's default precision; MySQL DATETIME(0-3) is ms: declare `timestamp_ntz(3)`) |
    | `timestamp_ntz[(n)]` | connect | ms |
    | `timestamp` | any | ISO text with offset (ZonedTimestamp); an integer as `timestamp_ntz` but UTC |
    | `date` | any | days since the epoch; text as an ISO date |
    | `time(n)` / `time` | adaptive | n <= 3: ms, n <= 6 or none: µs, else ns |
    | `time[(n)]` | adaptive_time_microseconds / connect | µs / ms |
    | `binary` | binary_handling | bytes, base64: Base64; base64-url-safe; hex |
    | `json` | any | JSON text parsed to nested values |
    | `interval` | any | µs (MicroDuration) -> ISO duration; text kept |
    | `boolean`, `tinyint`..`bigint`, `float`, `double`, `string` | any | that type (integers exact) |

    Temporal text (`time_precision=isostring`: '2011-01-11T16:40:30.123456789Z', '2005-05-12Z', '10:30:45Z') is
    read as the IsoTimestamp / IsoDate / IsoTime of a schema in every mode. Raises UsageError for a declared
    type outside this table.
    """
    if declared is None:
        return _same
    m = _DECLARED.match(declared.lower())
    if m is None:
        raise UsageError(f"declared column type {declared!r} is not a canonical type name")
    kind, n, s = m[1], int(m[2]) if m[2] else None, m[3]
    if kind in ("decimal", "numeric"):
        if s is None and n is None:
            return _variable_decimal if modes.decimal_handling == "precise" else _decimal_text
        scale = int(s or 0)
        if modes.decimal_handling == "precise":
            return _decimal_decoder(scale, modes.decimal_format == "numeric")
        return lambda v, fl=None: _rescale(d, scale) if type(d := _decimal_text(v)) is Decimal else d
    if kind in ("timestamp_ntz", "timestamp"):
        naive = kind == "timestamp_ntz"
        if modes.time_precision == "connect":
            unit = 1000
        else:
            unit = 1000 if n is not None and n <= 3 else 1_000_000 if n is None or n <= 6 else 1_000_000_000
        epoch = _epoch_decoder(unit, naive)
        text = _iso_ntz if naive else _zoned_timestamp
        return lambda v, fl=None: text(v, fl) if type(v) is str else epoch(v, fl)
    if kind == "date":
        return _iso_date
    if kind == "time":
        if modes.time_precision == "connect":
            unit = 1000
        elif modes.time_precision == "adaptive_time_microseconds":
            unit = 1_000_000
        else:
            unit = 1000 if n is not None and n <= 3 else 1_000_000 if n is None or n <= 6 else 1_000_000_000
        tdec = _time_decoder(unit)
        return lambda v, fl=None: _iso_time(v) if type(v) is str else tdec(v, fl)
    if kind in ("binary", "bytes"):
        return _bytes_decoder(modes.binary_handling)
    if kind in ("json", "variant"):
        return _json_dec if kind == "json" else _same
    if kind == "interval":
        return lambda v, fl=None: v if type(v) is str else _micro_duration(v)
    if kind in _UNTYPED_PLAIN:
        return _UNTYPED_PLAIN[kind]
    raise UsageError(f"declared column type {declared!r} is not one cdcnorm can decode Debezium values as")


_UNTYPED_PLAIN = {"boolean": _bool_dec, "tinyint": _PLAIN["int8"], "smallint": _PLAIN["int16"],
                  "int": _PLAIN["int32"], "bigint": _PLAIN["int64"], "float": _float_dec, "double": _float_dec,
                  "string": _same, "uuid": _same}


def _iso_ntz(v: Any, fl: list | None = None) -> dt.datetime | str | None:
    """`time.precision.mode=isostring` text (`IsoTimestamp`, the wall clock written with a `Z`) -> naive
    datetime; nanoseconds beyond the microsecond, and years outside 1..9999, stay text, flagged."""
    if type(v) is not str:
        if v is None or type(v) is dt.datetime and v.tzinfo is None:
            return v
        raise _bad("an ISO timestamp", v)
    try:
        ts = dt.datetime.fromisoformat(v)
    except ValueError:
        return _zoned_odd(v, fl)
    m = _FRACTION.search(v, 19)
    if m and len(m[1]) > 6 and m[1][6:].strip("0"):
        _flag(fl)
        return v
    return ts.astimezone(_UTC).replace(tzinfo=None) if ts.tzinfo else ts


def _iso_date(v: Any, fl: list | None = None) -> dt.date | str | None:
    """`IsoDate` text ('2005-05-12Z') -> date; a day count as `io.debezium.time.Date`."""
    if type(v) is not str:
        return _date_dec(v, fl)
    try:
        return dt.date.fromisoformat(v[:-1] if v.endswith("Z") else v)
    except ValueError:
        return _zoned_odd(v, fl)


_ISO_TIME = re.compile(r"(-?\d{2,}:\d{2}:\d{2})(?:\.(\d{1,9}))?Z?")


def _iso_time(v: Any, fl: list | None = None) -> str | None:
    """`IsoTime` text ('10:30:45.123456789Z', a wall-clock time) -> 'HH:MM:SS.ffffff' (9 digits when ns), as
    the other time types; other text (a ZonedTime with an offset) is kept."""
    if type(v) is not str:
        if v is None:
            return None
        raise _bad("an ISO time", v)
    m = _ISO_TIME.fullmatch(v)
    if m is None:
        return v
    frac = m[2] or ""
    return f"{m[1]}.{frac.ljust(9, '0') if frac[6:].strip('0') else frac[:6].ljust(6, '0')}"


_ISO = {"io.debezium.time.IsoDate": _iso_date, "io.debezium.time.IsoTime": _iso_time,
        "io.debezium.time.IsoTimestamp": _iso_ntz}


# -- unavailable values ----------------------------------------------------------------------------------------
def unavailable_checker(placeholder: str = TOAST) -> Callable[[Any, Field | None], bool]:
    """The test for a connector's `unavailable.value.placeholder`: its text (string columns), its UTF-8 bytes
    (bytea: Base64 in JSON, raw in Avro) and a one-element array of it. A `hex:` placeholder names bytes
    (e.g. `hex:deadbeef`); string columns then carry those bytes as text (Oracle) or the default placeholder
    (SQL Server), so both count."""
    hexed = placeholder.startswith("hex:")
    raw = bytes.fromhex(placeholder[4:]) if hexed else placeholder.encode()
    text = raw.decode("utf-8", "replace") if hexed else placeholder
    b64 = binascii.b2a_base64(raw, newline=False).decode()
    texts = frozenset((text, b64, TOAST) if hexed else (text, b64))

    def check(value: Any, field: Field | None = None) -> bool:
        t = type(value)
        if t is str:
            if field is not None and field.type == "string":
                return value == text or hexed and value == TOAST
            return value in texts
        if t is bytes:
            return value == raw
        if t is list:
            return len(value) == 1 and (value[0] in texts if type(value[0]) is str else value[0] == raw)
        return False

    return check


is_unavailable = unavailable_checker()
"""is_unavailable(value, field=None): the default placeholder (`__debezium_unavailable_value`) in any form."""
