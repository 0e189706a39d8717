"""Debezium column values -> exact canonical Python values, driven by the Kafka Connect schema of each column.

Why one decoder per schema field: a JSON-converter schema or an Avro writer schema repeats for every message of
a table, so each field is compiled once (cached on the hashable :class:`Field`) into a small closure, and the
per-value path is one call without a ladder of type checks.

This module is that compilation: it picks a decoder by logical name and Connect type, nests struct / array /
map decoders, reads Avro's JSON encoding, and names each column's vendor and canonical types for schema
versions. Schema nodes come from `fields.py`; the decoders it picks live in `scalars.py` (plain types),
`numeric.py` (decimals) and `temporal.py` (dates, times, durations).

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

import functools
import json
from collections.abc import Callable
from typing import Any, Literal

import pydantic

from cdcnorm.adapters.debezium.fields import DECIMAL, Field
from cdcnorm.adapters.debezium.numeric import decimal_decoder, decimal_text, variable_decimal
from cdcnorm.adapters.debezium.scalars import (
    PLAIN,
    Decoder,
    bad_value,
    bytes_decoder,
    json_dec,
    same,
    str_dec,
)
from cdcnorm.adapters.debezium.temporal import (
    DATES,
    ISO_DECODERS,
    TIME_UNITS,
    TS_UNITS,
    date_dec,
    epoch_decoder,
    micro_duration,
    time_decoder,
    zoned_timestamp,
)
from cdcnorm.errors import DecodeError


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


# -- composite decoders ----------------------------------------------------------------------------------------
def _struct_decoder(f: Field, modes: Modes) -> Decoder:
    members = {m.name: _decoder(m, modes) for m in f.fields}
    convs = {k: d for k, d in members.items() if d is not same}

    def dec(v: Any, fl: list | None = None) -> dict:
        if type(v) is not dict:
            if v is None:
                return None
            raise bad_value("an object", v)
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
    item = _decoder(f.items, modes) if f.items is not None else same

    def dec(v: Any, fl: list | None = None) -> list:
        if type(v) is not list:
            if v is None:
                return None
            raise bad_value("an array", v)
        if item is same:
            return v
        return [None if x is None else item(x, fl) for x in v]

    return dec


def _map_decoder(f: Field, modes: Modes) -> Decoder:
    key = _decoder(f.keys, modes) if f.keys is not None else same
    val = _decoder(f.values, modes) if f.values is not None else same

    def dec(v: Any, fl: list | None = None) -> dict:
        if type(v) is dict:  # JsonConverter: an object when the keys are strings
            items = v.items()
        elif type(v) is list:  # JsonConverter: [[key, value], ...] for other keys
            items = v
        elif v is None:
            return None
        else:
            raise bad_value("a map", v)
        out = {}
        for pair in items:
            k, x = pair
            k = k if k is None else key(k, fl)
            out[k if type(k) is str else json.dumps(k, default=str)] = None if x is None else val(x, fl)
        return out

    return dec


# -- the type table ----------------------------------------------------------------------------------------------
_TEXTS = frozenset(("io.debezium.data.Uuid", "io.debezium.data.Xml", "io.debezium.data.Ltree",
                    "io.debezium.data.Enum", "io.debezium.data.EnumSet", "io.debezium.time.ZonedTime",
                    "io.debezium.time.Interval", "io.debezium.data.Tsvector"))
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
            return decimal_decoder(_scale(f), modes.decimal_format == "numeric")
        if name in TS_UNITS:
            return epoch_decoder(TS_UNITS[name], naive=True)
        if name in DATES:
            return date_dec
        if name in TIME_UNITS:
            return time_decoder(TIME_UNITS[name])
        if name == "io.debezium.time.ZonedTimestamp":
            return zoned_timestamp
        if name in ISO_DECODERS:
            return ISO_DECODERS[name]
        if name == "io.debezium.data.VariableScaleDecimal":
            return variable_decimal
        if name == "io.debezium.time.MicroDuration":
            return micro_duration
        if name == "io.debezium.data.Json":
            return json_dec
        if name in _TEXTS:
            return str_dec
        if name == "io.debezium.data.Bits" and f.type == "bytes":
            return bytes_decoder()
    typ = f.type
    if typ == "struct":
        return _struct_decoder(f, modes)
    if typ == "array":
        return _array_decoder(f, modes)
    if typ == "map":
        return _map_decoder(f, modes)
    if typ == "bytes":
        return bytes_decoder()
    source = _source_type(f)
    if typ == "string" and source is not None:
        if source in _BINARY_SOURCE and modes.binary_handling != "bytes":
            return bytes_decoder(modes.binary_handling)
        if source in _DECIMAL_SOURCE:
            return decimal_text
    dec = PLAIN.get(typ)
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
        raise bad_value("Avro JSON bytes (code points 0-255)", v) from None


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
    by :func:`~cdcnorm.adapters.debezium.fields.avro_field`: a union value is wrapped in its branch's type name
    (`{"long": 1}`) and bytes are text whose code points are the bytes (not Base64)."""
    native, dec = _avro_native(field), value_decoder(field, modes)
    if native is None:
        return dec
    return lambda v, fl=None: dec(native(v), fl)


# -- schema version types --------------------------------------------------------------------------------------
_PLAIN_CANONICAL = {"int8": "tinyint", "int16": "smallint", "int32": "int", "int64": "bigint", "float32": "float",
                    "float64": "double", "boolean": "boolean", "string": "string", "bytes": "binary"}
_LOGICAL_CANONICAL = {
    **dict.fromkeys(TS_UNITS, "timestamp_ntz"), **dict.fromkeys(DATES, "date"),
    **dict.fromkeys(TIME_UNITS, "time"), "io.debezium.time.ZonedTime": "time",
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
