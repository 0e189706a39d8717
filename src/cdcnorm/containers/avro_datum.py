"""A schemaless Avro datum read straight from its bytes by a reader built once per schema, for the common shapes.

Why: a Replicate Avro data message is one small datum (a `DataRecord`: two nullable records of columns and a
record of headers); `fastavro.schemaless_reader` reads each field through a file object and dispatches on the
schema per field and per logical value, about a quarter of the record's CPU in the decode kernel. Here the
schema is turned once into nested closures over the bytes (records, enums, `["null", T]` unions, the primitive
types, and decimal/date/timestamp logical types) that give exactly the values fastavro gives. (Reading a
container's records this way gained nothing: fastavro's loop over a block is already its fast case.)

What it does not cover exactly it leaves to fastavro: :func:`datum_reader` returns None for a schema with any
other type (maps, arrays, fixed, other unions or logical types, ambiguous names), and the reader raises
:class:`NotRead` for any datum that is not plainly valid (a short or long datum, a non-canonical or over-long
varint, a boolean byte other than 0/1, an enum or union index out of range, text that is not UTF-8, a decimal
wider than its precision, a date or time Python cannot hold), so the caller reads that one with fastavro,
which gives its own value or error.
"""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Callable
from decimal import Context
from typing import Any

Read = Callable[[bytes, int], "tuple[Any, int]"]
"""(datum bytes, position) -> (value, position after it)."""

_DOUBLE = struct.Struct("<d").unpack_from
_FLOAT = struct.Struct("<f").unpack_from
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_DAYS_SHIFT = dt.date(1970, 1, 1).toordinal()
_TD = dt.timedelta


class NotRead(Exception):
    """This datum is not read here (damaged or unusual): read it with fastavro."""


def _long(b: bytes, p: int) -> tuple[int, int]:
    """Zigzag varint of at most 10 bytes whose last byte is not a padding zero (the canonical form)."""
    c = b[p]
    if c < 0x80:
        return (c >> 1) ^ -(c & 1), p + 1
    acc, shift = c & 0x7F, 7
    p += 1
    while True:
        c = b[p]
        p += 1
        acc |= (c & 0x7F) << shift
        if c < 0x80:
            break
        shift += 7
        if shift > 63:
            raise NotRead
    if c == 0 or acc >> 64:
        raise NotRead
    return (acc >> 1) ^ -(acc & 1), p


def _span(b: bytes, p: int) -> tuple[int, int]:
    """(start, end) of a length-prefixed value."""
    n, p = _long(b, p)
    end = p + n
    if n < 0 or end > len(b):
        raise NotRead
    return p, end


def _string(b: bytes, p: int) -> tuple[str, int]:
    p, end = _span(b, p)
    try:
        return b[p:end].decode(), end
    except UnicodeDecodeError:
        raise NotRead from None


def _bytes(b: bytes, p: int) -> tuple[bytes, int]:
    p, end = _span(b, p)
    return b[p:end], end


def _boolean(b: bytes, p: int) -> tuple[bool, int]:
    c = b[p]
    if c > 1:
        raise NotRead
    return c == 1, p + 1


def _double(b: bytes, p: int) -> tuple[float, int]:
    if p + 8 > len(b):
        raise NotRead
    return _DOUBLE(b, p)[0], p + 8


def _float(b: bytes, p: int) -> tuple[float, int]:
    if p + 4 > len(b):
        raise NotRead
    return _FLOAT(b, p)[0], p + 4


def _null(b: bytes, p: int) -> tuple[None, int]:
    return None, p


_PRIMITIVES: dict[str, Read] = {"long": _long, "int": _long, "string": _string, "bytes": _bytes,
                                "boolean": _boolean, "double": _double, "float": _float, "null": _null}


def _decimal(precision: int, scale: int) -> Read:
    ctx, limit = Context(prec=precision), 10**precision  # fastavro: ctx.create_decimal(unscaled).scaleb(-scale)

    def read(b: bytes, p: int) -> tuple[Any, int]:
        p, end = _span(b, p)
        unscaled = int.from_bytes(b[p:end], "big", signed=True)
        if not -limit < unscaled < limit:  # wider than its precision: fastavro rounds it, let it
            raise NotRead
        return ctx.create_decimal(unscaled).scaleb(-scale, ctx), end

    return read


def _timestamp(unit: int) -> Read:
    def read(b: bytes, p: int) -> tuple[dt.datetime, int]:
        v, p = _long(b, p)
        try:
            return _EPOCH + _TD(microseconds=v * unit), p
        except OverflowError:
            raise NotRead from None

    return read


def _date(b: bytes, p: int) -> tuple[dt.date, int]:
    v, p = _long(b, p)
    try:
        return dt.date.fromordinal(v + _DAYS_SHIFT), p
    except (ValueError, OverflowError):
        raise NotRead from None


class _Unsupported(Exception):
    """The schema has a shape this reader does not cover: fastavro reads every datum of it."""


def _nullable_long(b: bytes, p: int) -> tuple[int | None, int]:
    c = b[p]
    if c == 0:
        return None, p + 1
    if c != 2:
        raise NotRead
    c = b[p + 1]
    if c < 0x80:  # one-byte values (most counters, flags and small ids): no call
        return (c >> 1) ^ -(c & 1), p + 2
    return _long(b, p + 1)


def _nullable_span(b: bytes, p: int) -> tuple[int, int] | None:
    """(start, end) of a nullable length-prefixed value, None for null."""
    c = b[p]
    if c == 0:
        return None
    if c != 2:
        raise NotRead
    n = b[p + 1]
    if n < 0x80 and not n & 1:  # a length below 64: one byte
        start = p + 2
        end = start + (n >> 1)
    else:
        start, end = _span(b, p + 1)
    if end > len(b):
        raise NotRead
    return start, end


def _nullable_string(b: bytes, p: int) -> tuple[str | None, int]:
    span = _nullable_span(b, p)
    if span is None:
        return None, p + 1
    return b[span[0]:span[1]].decode(), span[1]  # UnicodeDecodeError: the reader's NotRead


def _nullable_bytes(b: bytes, p: int) -> tuple[bytes | None, int]:
    span = _nullable_span(b, p)
    if span is None:
        return None, p + 1
    return b[span[0]:span[1]], span[1]


_NULLABLE: dict[Read, Read] = {_long: _nullable_long, _string: _nullable_string, _bytes: _nullable_bytes}
"""`["null", T]` of the most frequent types, without a second call per value."""


def _nullable(read: Read) -> Read:
    if read in _NULLABLE:
        return _NULLABLE[read]

    def either(b: bytes, p: int) -> tuple[Any, int]:
        c = b[p]
        if c == 0:
            return None, p + 1
        if c == 2:
            return read(b, p + 1)
        raise NotRead  # another index, or one written in more than one byte

    return either


def _compile(t: Any, named: dict[str, Read | None], namespace: str) -> Read:
    if isinstance(t, str):
        if t in _PRIMITIVES:
            return _PRIMITIVES[t]
        found = named.get(t) or named.get(f"{namespace}.{t}" if namespace else t)
        if found is None:
            raise _Unsupported(t)
        return found
    if isinstance(t, list):
        if len(t) == 2 and t[0] == "null" and t[1] != "null":
            return _nullable(_compile(t[1], named, namespace))
        raise _Unsupported("union")
    if not isinstance(t, dict):
        raise _Unsupported(repr(t))
    kind, logical = t.get("type"), t.get("logicalType")
    if logical is not None:
        if logical == "decimal" and kind == "bytes" and isinstance(t.get("precision"), int):
            return _decimal(t["precision"], t.get("scale", 0))
        if logical in ("timestamp-micros", "timestamp-millis") and kind == "long":
            return _timestamp(1 if logical == "timestamp-micros" else 1000)
        if logical == "date" and kind == "int":
            return _date
        raise _Unsupported(logical)
    if kind in ("record", "enum"):
        name = t["name"]
        space = t.get("namespace", namespace) if "." not in name else name.rsplit(".", 1)[0]
        full = name if "." in name else (f"{space}.{name}" if space else name)
        short = full.rsplit(".", 1)[-1]
        if full in named or (short in named and named[short] is not named.get(full)):
            raise _Unsupported(f"name {name} defined twice")
        if kind == "enum":
            symbols = list(t["symbols"])

            def enum(b: bytes, p: int) -> tuple[str, int]:
                i, p = _long(b, p)
                if not 0 <= i < len(symbols):
                    raise NotRead
                return symbols[i], p

            named[full] = named[short] = enum
            return enum
        fields: list[tuple[str, Read]] = []

        def record(b: bytes, p: int) -> tuple[dict[str, Any], int]:
            out = {}
            for field, read in fields:
                out[field], p = read(b, p)
            return out, p

        named[full] = named[short] = record
        names = [f["name"] for f in t["fields"]]
        if len(set(names)) != len(names):
            raise _Unsupported("a field named twice")
        fields.extend((f["name"], _compile(f["type"], named, space)) for f in t["fields"])
        return record
    if isinstance(kind, str) and kind in _PRIMITIVES:
        return _PRIMITIVES[kind]
    raise _Unsupported(str(kind))


def _reader_at(schema: Any) -> Read | None:
    """The (bytes, position) -> (value, next position) reader of one datum of this schema, or None."""
    try:
        return _compile(schema, {}, schema.get("namespace", "") if isinstance(schema, dict) else "")
    except (_Unsupported, KeyError, TypeError, AttributeError):
        return None


def datum_reader(schema: dict[str, Any]) -> Callable[[bytes], Any] | None:
    """The reader of datums of this (unparsed, JSON) writer schema, or None when fastavro must read them all.

    The reader returns the datum's value, or raises :class:`NotRead` (any exception of its own becomes that):
    then read the datum with fastavro, which decides."""
    read = _reader_at(schema)
    if read is None:
        return None

    def whole(data: bytes) -> Any:
        try:
            value, end = read(data, 0)
        except NotRead:
            raise
        except Exception:  # noqa: BLE001 - IndexError (short datum) and the like: fastavro decides
            raise NotRead from None
        if end != len(data):
            raise NotRead
        return value

    return whole


_READERS: dict[str, Callable[[bytes], Any] | None] = {}


def datum_reader_of(schema_text: str) -> Callable[[bytes], Any] | None:
    """:func:`datum_reader` of a schema given as JSON text, remembered per text (module-level: the adapter and
    its catalog stay picklable). None also for text that is not a JSON object."""
    try:
        return _READERS[schema_text]
    except KeyError:
        pass
    import orjson

    try:
        doc = orjson.loads(schema_text)
    except orjson.JSONDecodeError:
        doc = None
    if len(_READERS) >= 1024:
        _READERS.clear()
    reader = _READERS[schema_text] = datum_reader(doc) if isinstance(doc, dict) else None
    return reader
