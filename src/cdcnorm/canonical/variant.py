"""Pure-Python encoder for Spark's VARIANT binary format.

CDC payloads are decoded in Python inside ``mapInArrow``; going through JSON text and
``parse_json`` would turn long decimals into doubles and cannot express timestamps, dates or
binary.  This module writes the binary (value, metadata) pair directly, following the
Parquet/Spark Variant encoding spec, so Spark receives the exact types.

A VARIANT column crosses Arrow as ``struct<value: binary not null, metadata: binary not null>``
where the *metadata child field* carries the Arrow field metadata ``{"variant": "true"}``; that
tag is how PySpark recognises the struct as a variant (see ``arrow_field``).

Why this module is long: it is one binary format's encoder and decoder, each a mirror of the other, with the
spec's type table; splitting them would separate the two halves that must change together.
"""

from __future__ import annotations

import datetime as _dt
import struct
from collections.abc import Iterable, Iterator
from decimal import Context, Decimal
from itertools import accumulate
from operator import itemgetter
from typing import Any

import pyarrow as pa

__all__ = [
    "SIZE_LIMIT",
    "VARIANT_ARROW_TYPE",
    "VariantEncodeError",
    "arrow_field",
    "encode",
    "encode_lenient",
    "encode_many",
    "to_arrow_array",
]

#: Spark refuses (VARIANT_CONSTRUCTOR_SIZE_LIMIT) a value or metadata larger than this.
SIZE_LIMIT = 128 * 1024 * 1024

#: Arrow type Spark uses for VariantType; the tag on ``metadata`` marks it as a variant.
VARIANT_ARROW_TYPE = pa.struct(
    [
        pa.field("value", pa.binary(), nullable=False),
        pa.field("metadata", pa.binary(), nullable=False, metadata={"variant": "true"}),
    ]
)


class VariantEncodeError(ValueError):
    """Raised for values the variant format cannot represent, so callers can fall back."""


# Header bytes: basic_type in the low 2 bits, type id / value_header in the high 6 bits.
_NULL = b"\x00"
_TRUE = b"\x04"
_FALSE = b"\x08"
_H_INT8, _H_INT16, _H_INT32, _H_INT64, _H_DOUBLE = 3 << 2, 4 << 2, 5 << 2, 6 << 2, 7 << 2
_H_DEC4, _H_DEC8, _H_DEC16 = 8 << 2, 9 << 2, 10 << 2
_H_DATE, _H_TS, _H_TS_NTZ = 11 << 2, 12 << 2, 13 << 2
_H_BINARY, _H_LONG_STR = 15 << 2, 16 << 2
_OBJECT, _ARRAY = 2, 3
_EMPTY_OBJECT = b"\x02\x00\x00"  # 1-byte sizes, 0 fields, single offset 0
_EMPTY_ARRAY = b"\x03\x00\x00"
# Byte-identical to what Spark writes for a scalar; an empty dictionary needs no sorted flag.
_EMPTY_METADATA = b"\x01\x00\x00"
_META_SORTED = 0x11  # version 1 | sorted_strings

_pack_i16 = struct.Struct("<Bh").pack
_pack_i32 = struct.Struct("<Bi").pack
_pack_i64 = struct.Struct("<Bq").pack
_pack_double = struct.Struct("<Bd").pack
_pack_dec4 = struct.Struct("<BBi").pack
_pack_dec8 = struct.Struct("<BBq").pack
_pack_len = struct.Struct("<BI").pack
_pack_u32 = struct.Struct("<I").pack

# Every int8 and short-string header precomputed: the common cases become a tuple index.
_INT8 = tuple(struct.pack("<Bb", _H_INT8, i) for i in range(-128, 128))
_SHORT_STR_HEADER = tuple(bytes(((n << 2) | 1,)) for n in range(64))

_UTC = _dt.UTC
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_UTC)
_EPOCH_NTZ = _dt.datetime(1970, 1, 1)
_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_ONE_MICRO = _dt.timedelta(microseconds=1)
_MAX_DEC16 = 10**38
# Enough precision that scaleb() on a <= 38-digit decimal is exact, whatever the caller's context.
_EXACT = Context(prec=40, Emax=999_999, Emin=-999_999)


# --------------------------------------------------------------------------- scalars


def _enc_null(_: None) -> bytes:
    return _NULL


def _enc_bool(v: bool) -> bytes:
    return _TRUE if v else _FALSE


def _enc_int(v: int) -> bytes:
    if -128 <= v <= 127:
        return _INT8[v + 128]
    if -0x8000 <= v <= 0x7FFF:
        return _pack_i16(_H_INT16, v)
    if -0x8000_0000 <= v <= 0x7FFF_FFFF:
        return _pack_i32(_H_INT32, v)
    if -0x8000_0000_0000_0000 <= v <= 0x7FFF_FFFF_FFFF_FFFF:
        return _pack_i64(_H_INT64, v)
    if -_MAX_DEC16 < v < _MAX_DEC16:
        # Beyond int64 the only exact numeric type left is decimal(38, 0).
        return bytes((_H_DEC16, 0)) + int(v).to_bytes(16, "little", signed=True)
    raise VariantEncodeError(f"integer {v} does not fit in decimal(38,0)")


def _enc_float(v: float) -> bytes:
    return _pack_double(_H_DOUBLE, v)


_POW9, _POW18 = 10**9, 10**18


def _enc_decimal(v: Decimal) -> bytes:
    # Fast path from the plain string form ("-1234.50", "7"): no digit tuple, no Decimal arithmetic.
    # Exponent notation, NaN and Infinity take the general path below.
    s = str(v)
    if "E" not in s and "n" not in s and "N" not in s:
        dot = s.find(".")
        if dot < 0:
            scale, unscaled = 0, int(s)
        else:
            scale, unscaled = len(s) - dot - 1, int(s[:dot] + s[dot + 1 :])
        mag = -unscaled if unscaled < 0 else unscaled
        if scale <= 9 and mag < _POW9:
            return _pack_dec4(_H_DEC4, scale, unscaled)
        if scale <= 18 and mag < _POW18:
            return _pack_dec8(_H_DEC8, scale, unscaled)
        if scale <= 38 and mag < _MAX_DEC16:
            return bytes((_H_DEC16, scale)) + unscaled.to_bytes(16, "little", signed=True)
    return _enc_decimal_general(v)


def _enc_decimal_general(v: Decimal) -> bytes:
    _, digits, exponent = v.as_tuple()
    if not isinstance(exponent, int):
        raise VariantEncodeError(f"decimal {v} is not finite")
    if exponent > 0:
        # Variant scales are non-negative: 1E+3 becomes unscaled 1000 at scale 0.
        scale = 0
        precision = len(digits) + exponent
        if precision > 38:
            raise VariantEncodeError(f"decimal {v} has more than 38 digits")
        unscaled = int(v)
    else:
        scale = -exponent
        precision = max(len(digits), scale)
        if precision > 38:
            raise VariantEncodeError(f"decimal {v} needs precision {precision} > 38")
        unscaled = int(v.scaleb(scale, _EXACT))
    # Readers check both digits and scale against the width (e.g. decimal4 needs scale <= 9).
    if precision <= 9:
        return _pack_dec4(_H_DEC4, scale, unscaled)
    if precision <= 18:
        return _pack_dec8(_H_DEC8, scale, unscaled)
    return bytes((_H_DEC16, scale)) + unscaled.to_bytes(16, "little", signed=True)


def _enc_str(v: str) -> bytes:
    try:
        data = v.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise VariantEncodeError(f"string is not valid unicode: {exc}") from exc
    n = len(data)
    if n < 64:
        return _SHORT_STR_HEADER[n] + data
    if n > SIZE_LIMIT:
        raise VariantEncodeError(f"string longer than Spark's {SIZE_LIMIT}-byte variant limit")
    return _pack_len(_H_LONG_STR, n) + data


def _enc_bytes(v: bytes | bytearray | memoryview) -> bytes:
    data = v.tobytes() if isinstance(v, memoryview) else bytes(v)
    if len(data) > SIZE_LIMIT:
        raise VariantEncodeError(f"binary longer than Spark's {SIZE_LIMIT}-byte variant limit")
    return _pack_len(_H_BINARY, len(data)) + data


def _enc_datetime(v: _dt.datetime) -> bytes:
    if v.tzinfo is _UTC:
        return _pack_i64(_H_TS, (v - _EPOCH) // _ONE_MICRO)
    # "Aware" per Python's own rule: tzinfo set *and* utcoffset() not None.
    if v.utcoffset() is None:
        return _pack_i64(_H_TS_NTZ, (v - _EPOCH_NTZ) // _ONE_MICRO)
    return _pack_i64(_H_TS, (v - _EPOCH) // _ONE_MICRO)


def _enc_date(v: _dt.date) -> bytes:
    return _pack_i32(_H_DATE, v.toordinal() - _EPOCH_ORDINAL)


# Exact-type dispatch; subclasses go through _resolve (slower, but still correct).
_SCALARS: dict[type, Any] = {
    type(None): _enc_null,
    bool: _enc_bool,
    int: _enc_int,
    float: _enc_float,
    Decimal: _enc_decimal,
    str: _enc_str,
    bytes: _enc_bytes,
    bytearray: _enc_bytes,
    memoryview: _enc_bytes,
    _dt.datetime: _enc_datetime,
    _dt.date: _enc_date,
}
_OBJ_KIND = object()
_ARR_KIND = object()
_KINDS: dict[type, Any] = {**_SCALARS, dict: _OBJ_KIND, list: _ARR_KIND, tuple: _ARR_KIND}
# Order matters: bool before int, datetime before date.
_SUBCLASS_ORDER = (
    (bool, _enc_bool),
    (int, _enc_int),
    (float, _enc_float),
    (Decimal, _enc_decimal),
    (str, _enc_str),
    ((bytes, bytearray, memoryview), _enc_bytes),
    (_dt.datetime, _enc_datetime),
    (_dt.date, _enc_date),
    (dict, _OBJ_KIND),
    ((list, tuple), _ARR_KIND),
)


def _resolve(v: Any) -> Any:
    for types, kind in _SUBCLASS_ORDER:
        if isinstance(v, types):
            return kind
    raise VariantEncodeError(f"cannot encode {type(v).__name__} as variant")


# --------------------------------------------------------------------------- containers


def _width(n: int) -> int:
    """Smallest unsigned little-endian width (1..4 bytes) that holds ``n``."""
    if n <= 0xFF:
        return 1
    if n <= 0xFFFF:
        return 2
    if n <= 0xFF_FFFF:
        return 3
    if n <= 0xFFFF_FFFF:
        return 4
    raise VariantEncodeError("variant component larger than 4 GiB")


def _pack_uints(values: list[int], width: int) -> bytes:
    """Pack unsigned ints at a fixed width in one C call instead of a per-item loop."""
    if width == 1:
        return bytes(values)
    if width == 2:
        return struct.pack(f"<{len(values)}H", *values)
    packed = struct.pack(f"<{len(values)}I", *values)
    if width == 4:
        return packed
    trimmed = bytearray(packed)
    del trimmed[3::4]  # drop each high byte: 4-byte LE -> 3-byte LE
    return bytes(trimmed)


def _finish_object(ids: list[int], parts: list[bytes]) -> bytes:
    n = len(ids)
    offsets = list(accumulate(map(len, parts), initial=0))
    off_w = _width(offsets[-1])
    id_w = _width(ids[-1])  # ids ascend with the key order, so the last is the largest
    large = n > 0xFF
    header = _OBJECT | ((off_w - 1) << 2) | ((id_w - 1) << 4) | (large << 6)
    count = _pack_u32(n) if large else bytes((n,))
    return b"".join((bytes((header,)), count, _pack_uints(ids, id_w), _pack_uints(offsets, off_w), *parts))


def _finish_array(parts: list[bytes]) -> bytes:
    n = len(parts)
    offsets = list(accumulate(map(len, parts), initial=0))
    off_w = _width(offsets[-1])
    large = n > 0xFF
    header = _ARRAY | ((off_w - 1) << 2) | (large << 4)
    count = _pack_u32(n) if large else bytes((n,))
    return b"".join((bytes((header,)), count, _pack_uints(offsets, off_w), *parts))


def _collect_keys(root: Any) -> set[str]:
    """All object keys in the tree; iterative so nesting depth is not bound by recursion."""
    keys: set[Any] = set()
    seen: set[int] = set()  # shared sub-trees are walked once; also stops cycles
    pending = [root]
    kind_of = _KINDS.get
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, dict):
            keys.update(node)
            children: Iterable[Any] = node.values()
        else:
            children = node
        # Only containers are queued: scalars cost one type lookup here.
        for child in children:
            kind = kind_of(type(child))
            if kind is None:
                kind = _resolve(child)
            if kind is _OBJ_KIND or kind is _ARR_KIND:
                pending.append(child)
    for key in keys:
        if not isinstance(key, str):
            raise VariantEncodeError(f"object keys must be str, got {type(key).__name__}")
    return keys


def _utf16_order(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


_Dictionary = tuple[dict[str, int], list[str], bytes]
_DICT_CACHE: dict[frozenset[str], _Dictionary] = {}
_DICT_CACHE_MAX = 4096  # entries
_DICT_CACHE_KEYS = 256  # larger key sets are rare and cheap relative to their value; not cached


def _dictionary(keys: set[str]) -> _Dictionary:
    """Key -> id map, keys by id and metadata bytes; cached because CDC rows repeat the same key sets."""
    frozen = frozenset(keys)
    hit = _DICT_CACHE.get(frozen)
    if hit is not None:
        return hit
    ordered = sorted(keys)  # code-point order == UTF-8 byte order
    header = _META_SORTED
    if not all(k.isascii() or max(k) <= "\uffff" for k in ordered):
        # Spark compares keys with Java String.compareTo (UTF-16 units) when it builds objects
        # and when it binary-searches fields; that differs from byte order only when a key
        # has a supplementary character.  Follow Spark so lookups work, and drop the
        # sorted_strings flag if the dictionary is then not in byte order.
        utf16 = sorted(keys, key=_utf16_order)
        if utf16 != ordered:
            ordered = utf16
            header = 0x01
    try:
        encoded = [k.encode("utf-8") for k in ordered]
    except UnicodeEncodeError as exc:
        raise VariantEncodeError(f"object key is not valid unicode: {exc}") from exc
    n = len(encoded)
    offsets = list(accumulate(map(len, encoded), initial=0))
    width = _width(max(offsets[-1], n))
    metadata = b"".join((bytes((header | ((width - 1) << 6),)), _pack_uints([n, *offsets], width), *encoded))
    result = ({k: i for i, k in enumerate(ordered)}, ordered, metadata)
    if n <= _DICT_CACHE_KEYS:
        if len(_DICT_CACHE) >= _DICT_CACHE_MAX:
            _DICT_CACHE.clear()
        _DICT_CACHE[frozen] = result
    return result


def _encode_tree(root: Any, key_ids: dict[str, int], keys_by_id: list[str]) -> bytes:
    """Post-order encode with an explicit stack, so deep nesting cannot hit RecursionError.

    Each frame is (field ids or None for an array, child iterator, encoded children, id(container)).
    Scalars are encoded inline; only a nested container suspends the current frame.
    """
    kind_of = _KINDS.get
    stack: list[tuple[list[int] | None, Iterator[Any], list[bytes], int]] = []
    active: set[int] = set()  # containers currently open: meeting one again means a cycle
    node, kind = root, None
    while True:
        if node is not None:
            # Open a container (root, or the child we descended into).
            ident = id(node)
            if ident in active:
                raise VariantEncodeError("circular reference in value")
            active.add(ident)
            if kind is _ARR_KIND or isinstance(node, (list, tuple)):
                frame = (None, iter(node), [], ident)
            else:
                # Fields go in key order; ids follow key order by construction of the dictionary.
                ids = sorted(map(key_ids.__getitem__, node))
                frame = (ids, iter([node[k] for k in map(keys_by_id.__getitem__, ids)]), [], ident)
            node = None
        ids, children, parts, ident = frame
        for child in children:
            kind = kind_of(type(child))
            if kind is None:
                kind = _resolve(child)
            if kind is _OBJ_KIND or kind is _ARR_KIND:
                stack.append(frame)
                node = child
                break
            parts.append(kind(child))
        else:
            active.discard(ident)
            if ids is None:
                result = _finish_array(parts) if parts else _EMPTY_ARRAY
            else:
                result = _finish_object(ids, parts) if parts else _EMPTY_OBJECT
            if not stack:
                return result
            frame = stack.pop()
            frame[2].append(result)


# --------------------------------------------------------------------------- public API


# --------------------------------------------------------------------------- flat objects (the hot path)
# A CDC row image is almost always a flat dict of scalars with the same keys, in the same order, row after row.
# Per key tuple we precompute everything that depends on the keys only (dictionary, field ids, the getter that
# returns the values in key order), so a row costs one scalar encoding per value and one join.

_FlatPlan = tuple[Any, bytes, bytes, int, Any, Any]
_FLAT_CACHE: dict[tuple[Any, ...], _FlatPlan] = {}


def _flat_plan(keys: tuple[Any, ...]) -> _FlatPlan | None:
    """Everything about an object with exactly these keys except its values; None when not str keys."""
    n = len(keys)
    if not 0 < n <= _DICT_CACHE_KEYS or any(type(k) is not str for k in keys):
        return None
    _, ordered, metadata = _dictionary(set(keys))
    if len(ordered) != n:
        return None
    getter = itemgetter(*ordered) if n > 1 else (lambda d, _k=ordered[0]: (d[_k],))
    id_w = _width(n - 1)
    large = n > 0xFF
    prefix = (_pack_u32(n) if large else bytes((n,))) + _pack_uints(list(range(n)), id_w)
    header = _OBJECT | ((id_w - 1) << 4) | (large << 6)
    plan = (getter, metadata, prefix, header, struct.Struct(f"<{n + 1}H").pack, struct.Struct(f"<{n + 1}I").pack)
    if len(_FLAT_CACHE) >= _DICT_CACHE_MAX:
        _FLAT_CACHE.clear()
    _FLAT_CACHE[keys] = plan
    return plan


def _lenient(values: tuple[Any, ...]) -> tuple[list[bytes], bool] | None:
    """Scalars one by one; a number beyond decimal(38) becomes its exact string (then `widened` is True).

    None when a value is not a scalar (a nested dict/list after the wide number): not a flat object."""
    parts = []
    widened = False
    for v in values:
        enc = _SCALARS.get(type(v))
        if enc is None:
            return None
        try:
            parts.append(enc(v))
        except VariantEncodeError:
            if enc is _enc_decimal:
                parts.append(_enc_str(format(v, "f") if v.is_finite() else str(v)))
            elif enc is _enc_int:
                parts.append(_enc_str(str(v)))
            else:
                raise
            widened = True
    return parts, widened


def _encode_flat(value: dict, lenient: bool) -> tuple[bytes, bytes, bool] | None:
    """A flat dict of exact-type scalars; None for anything else (nested values, subclasses, odd keys)."""
    keys = tuple(value)
    plan = _FLAT_CACHE.get(keys)
    if plan is None:
        plan = _flat_plan(keys)
        if plan is None:
            return None
    getter, metadata, prefix, header, pack_h, pack_i = plan
    values = getter(value)
    scalars = _SCALARS
    widened = False
    try:
        parts = [scalars[type(v)](v) for v in values]
    except KeyError:
        return None
    except VariantEncodeError:
        if not lenient:
            raise
        lenient_parts = _lenient(values)
        if lenient_parts is None:
            return None
        parts, widened = lenient_parts
    offsets = list(accumulate(map(len, parts), initial=0))
    total = offsets[-1]
    if total <= 0xFF:
        packed, off_w = bytes(offsets), 1
    elif total <= 0xFFFF:
        packed, off_w = pack_h(*offsets), 2
    else:
        off_w = _width(total)
        packed = pack_i(*offsets)
        if off_w == 3:
            trimmed = bytearray(packed)
            del trimmed[3::4]
            packed = bytes(trimmed)
    encoded = b"".join((_HEADERS[header | ((off_w - 1) << 2)], prefix, packed, *parts))
    if total > 0xFFFF and len(encoded) > SIZE_LIMIT:
        raise VariantEncodeError(f"variant larger than Spark's {SIZE_LIMIT}-byte limit")
    return encoded, metadata, widened


_HEADERS = tuple(bytes((i,)) for i in range(256))


def encode_lenient(value: Any) -> tuple[bytes, bytes, bool]:
    """Like `encode`, but in a flat object a number beyond decimal(38) becomes its exact string.

    Returns ``(value_bytes, metadata_bytes, widened)``; ``widened`` says a number was stored as a string, so
    the caller can flag the row. Nested or unusual values go through `encode` unchanged (and may raise).
    """
    if type(value) is dict:
        flat = _encode_flat(value, True)
        if flat is not None:
            return flat
    encoded, metadata = encode(value)
    return encoded, metadata, False


def encode(value: Any) -> tuple[bytes, bytes]:
    """Encode one Python value as a variant.

    Mapping: None -> variant null; bool; int -> int8/16/32/64 (wider -> decimal(38,0));
    float -> double; Decimal -> decimal4/8/16 keeping its scale; str -> string;
    bytes/bytearray/memoryview -> binary; aware datetime -> timestamp (UTC micros);
    naive datetime -> timestamp_ntz; date -> date; dict (str keys) -> object;
    list/tuple -> array.

    Args:
        value: The Python value; containers may nest to any depth.

    Returns:
        ``(value_bytes, metadata_bytes)`` as Spark stores them.

    Raises:
        VariantEncodeError: The value (or a nested one) has no exact variant form, e.g. a
            non-finite Decimal, more than 38 digits, a non-str key, a cycle or > 128 MiB.
    """
    enc = _SCALARS.get(type(value))
    if enc is not None:
        return enc(value), _EMPTY_METADATA
    if type(value) is dict:
        flat = _encode_flat(value, False)
        if flat is not None:
            return flat[0], flat[1]
    kind = _KINDS.get(type(value)) or _resolve(value)
    if kind is not _OBJ_KIND and kind is not _ARR_KIND:
        return kind(value), _EMPTY_METADATA  # a scalar subclass, e.g. an IntEnum member
    keys = _collect_keys(value)
    if keys:
        key_ids, keys_by_id, metadata = _dictionary(keys)
    else:
        key_ids, keys_by_id, metadata = {}, [], _EMPTY_METADATA
    encoded = _encode_tree(value, key_ids, keys_by_id)
    if len(encoded) > SIZE_LIMIT or len(metadata) > SIZE_LIMIT:
        raise VariantEncodeError(f"variant larger than Spark's {SIZE_LIMIT}-byte limit")
    return encoded, metadata


def encode_many(values: Iterable[Any]) -> tuple[list[bytes | None], list[bytes | None]]:
    """Encode a column of values.

    A top-level ``None`` becomes SQL NULL (``(None, None)``), which is what a missing column
    value should be; it is *not* the variant null that ``encode(None)`` produces.  Nested
    ``None`` inside containers is always variant null.

    Args:
        values: One Python value per row.

    Returns:
        Two parallel lists: value bytes and metadata bytes, ``None`` for SQL NULL rows.

    Raises:
        VariantEncodeError: Any row cannot be encoded (see ``encode``).
    """
    out_values: list[bytes | None] = []
    out_metadata: list[bytes | None] = []
    add_value, add_metadata = out_values.append, out_metadata.append
    for item in values:
        if item is None:
            add_value(None)
            add_metadata(None)
        else:
            encoded, metadata = encode(item)
            add_value(encoded)
            add_metadata(metadata)
    return out_values, out_metadata


def arrow_field(name: str, nullable: bool = True) -> pa.Field:
    """Arrow field that Spark reads as a VARIANT column (e.g. for a mapInArrow output schema).

    Args:
        name: Column name.
        nullable: Whether the column may hold SQL NULLs.

    Returns:
        A struct field of ``VARIANT_ARROW_TYPE``; the ``{"variant": "true"}`` tag sits on its
        ``metadata`` child, exactly as Spark itself emits it.
    """
    return pa.field(name, VARIANT_ARROW_TYPE, nullable=nullable)


def to_arrow_array(values: Iterable[Any]) -> pa.StructArray:
    """Build a VARIANT Arrow column from Python values.

    ``None`` rows become null struct slots (SQL NULL), with empty child bytes underneath so
    the non-nullable children hold no nulls.  Keep batches well under 2 GiB of encoded data,
    since Spark's layout uses 32-bit binary offsets.

    Args:
        values: One Python value per row.

    Returns:
        A ``pyarrow.StructArray`` of type ``VARIANT_ARROW_TYPE``.

    Raises:
        VariantEncodeError: Any row cannot be encoded (see ``encode``).
    """
    encoded_values: list[bytes] = []
    encoded_metadata: list[bytes] = []
    is_null: list[bool] = []
    for item in values:
        if item is None:
            encoded_values.append(b"")
            encoded_metadata.append(b"")
            is_null.append(True)
        else:
            encoded, metadata = encode(item)
            encoded_values.append(encoded)
            encoded_metadata.append(metadata)
            is_null.append(False)
    children = [pa.array(encoded_values, pa.binary()), pa.array(encoded_metadata, pa.binary())]
    mask = pa.array(is_null, pa.bool_()) if any(is_null) else None
    return pa.StructArray.from_arrays(children, fields=list(VARIANT_ARROW_TYPE), mask=mask)
