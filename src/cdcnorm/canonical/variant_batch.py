"""VARIANT encoding of a whole batch's keys or row images at once: column by column through numpy and Arrow.

Why: encoding each row image on its own (`variant.encode_lenient`, called from `BatchBuilder.change`) cost one
Python call per value plus the object's offsets and joins per row, about 7 µs of a Datastream JSON record's 40
(key and image). The rows of one table share their key set, hence one metadata dictionary, one field-id list
and one value order (the plan of `variant._flat_plan`), so only the values differ: `BatchBuilder.flush` hands
each VARIANT column to :func:`encode_column`, which groups the rows by key set and encodes each *column* of a
group at once - texts, ints, floats, booleans, dates and UTC or naive timestamps from Arrow arrays, decimals from
their text through one Arrow cast to decimal128 - as header bytes and little-endian payloads built with numpy, then each
row's object header, field ids and offsets from the per-column lengths; one Arrow kernel joins the parts per row.
Measured in docs/benchmarks.md ("Decode kernel"): the gain is smaller than the per-value cost suggests,
since each of the ~40 Arrow/numpy steps per column has a fixed cost and a per-element cost of its own.

Output is byte-identical to `variant.encode_lenient` (tests/test_variant_batch.py checks it against random
images): anything the column paths do not cover exactly - a column of mixed types, bytes, a NaN float, a decimal
NaN or Infinity, a decimal with a positive exponent, an int beyond 64 bits, a datetime neither UTC nor naive, a nested
value, a row over 64 KiB, a group of fewer than 1,024 rows - is encoded by the per-value or per-row encoder for
just those values or rows.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal
from operator import attrgetter
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdcnorm.canonical import variant as V

Lenient = Callable[[Any], "tuple[bytes, bytes, bool]"]
"""The per-row encoder (value -> (value bytes, metadata, widened)); raises what the row cannot hold."""

_BIN = pa.binary()
_UTC = dt.UTC
_TZ = attrgetter("tzinfo")
_NULL_HEAD = 0
_MIN_GROUP = 1024
"""Groups of fewer rows are encoded row by row. The column path has a fixed cost of about 0.14 ms per column
(some 20 to 40 Arrow and numpy calls): on the bench's widest image (11 columns) 16-row groups cost 98.8 µs a
row against 6.4 row by row, 1,024-row groups 5.6 against 7.1 (docs/benchmarks.md, "Decode kernel")."""


class Encoded:
    """A batch column's VARIANT values and metadata (None for null rows), the rows whose numbers became exact
    strings (`widened`) and the rows that could not be encoded at all (`failed`: row -> exception)."""

    __slots__ = ("values", "metadata", "widened", "failed")

    def __init__(self, n: int) -> None:
        self.values: list[Any] = [None] * n
        self.metadata: list[Any] = [None] * n
        self.widened: list[int] = []
        self.failed: dict[int, Exception] = {}


def encode_column(images: list[Any] | tuple[Any, ...], lenient: Lenient) -> Encoded:
    """Encode one VARIANT column of a batch: None stays null, flat dicts go by key set, the rest row by row."""
    n = len(images)
    out = Encoded(n)
    groups: dict[tuple, list[int]] = {}
    single: list[int] = []
    for i, image in enumerate(images):
        if image is None:
            continue
        if type(image) is dict and image:
            keys = tuple(image)
            rows = groups.get(keys)
            if rows is None:
                groups[keys] = [i]
            else:
                rows.append(i)
        else:
            single.append(i)
    for keys, rows in groups.items():
        plan = V._FLAT_CACHE.get(keys) or V._flat_plan(keys) if len(rows) >= _MIN_GROUP else None
        if plan is None or not _encode_group(images, rows, plan, out):
            single.extend(rows)
    for i in single:
        try:
            out.values[i], out.metadata[i], widened = lenient(images[i])
        except Exception as exc:  # noqa: BLE001 - the row is quarantined by the caller, not the batch
            out.failed[i] = exc
            continue
        if widened:
            out.widened.append(i)
    return out


def _encode_group(images: Any, rows: list[int], plan: V._FlatPlan, out: Encoded) -> bool:
    """Encode rows sharing one key set; False when a value is not a scalar (the caller goes row by row)."""
    getter, metadata, prefix, header, _pack_h, _pack_i = plan
    k = len(rows)
    tuples = list(map(getter, [images[i] for i in rows]))
    columns = list(zip(*tuples, strict=True))
    widened = np.zeros(k, np.bool_)
    encoded = []
    for col in columns:
        enc = _column(col, widened)
        if enc is None:
            return False
        encoded.append(enc)
    lengths = np.stack([pc.binary_length(e).to_numpy(zero_copy_only=False) for e in encoded]).astype(np.int64)
    offsets = np.zeros((len(encoded) + 1, k), np.int64)
    np.cumsum(lengths, axis=0, out=offsets[1:])
    total = offsets[-1]
    big = total > 0xFFFF  # 3- and 4-byte offsets (objects over 64 KiB): row by row
    heads = _heads(offsets, total, prefix, header)
    joined = pc.binary_join_element_wise(heads, *encoded, b"").to_pylist()
    values, metas = out.values, out.metadata
    for i, value in zip(rows, joined, strict=True):
        values[i] = value
        metas[i] = metadata
    out.widened.extend(rows[j] for j in np.flatnonzero(widened & ~big).tolist())
    for j in np.flatnonzero(big).tolist():
        i = rows[j]
        try:
            values[i], metas[i], wide = V.encode_lenient(images[i])
        except Exception as exc:  # noqa: BLE001 - e.g. beyond Spark's size limit: that row fails alone
            values[i] = metas[i] = None
            out.failed[i] = exc
            continue
        if wide:
            out.widened.append(i)
    return True


def _heads(offsets: np.ndarray, total: np.ndarray, prefix: bytes, header: int) -> pa.Array:
    """Per row: the object's header byte (its offset width), the field count and ids, then the offsets."""
    k = offsets.shape[1]
    pre = np.frombuffer(prefix, np.uint8)
    blocks = []
    for width in (1, 2):  # every row both ways (a few bytes each), then each row takes the one its size needs
        offs = np.ascontiguousarray(offsets.T.astype("<u1" if width == 1 else "<u2"))
        head = np.full((k, 1), header | ((width - 1) << 2), np.uint8)
        block = np.concatenate([head, np.broadcast_to(pre, (k, len(pre))), offs.view(np.uint8)], axis=1)
        row = block.shape[1]
        blocks.append(pa.BinaryArray.from_buffers(
            _BIN, k, [None, pa.py_buffer(np.arange(0, (k + 1) * row, row, dtype=np.int32)),
                      pa.py_buffer(np.ascontiguousarray(block))]))
    return pc.if_else(pa.array(total > 0xFF), blocks[1], blocks[0])


# -- one column of a group ---------------------------------------------------------------------------------------
def _column(col: tuple, widened: np.ndarray) -> pa.BinaryArray | None:
    """The column's per-value encodings (null values as VARIANT null), or None when a value is not a scalar."""
    types = set(map(type, col))
    types.discard(type(None))
    if len(types) == 1:
        (t,) = types
        fast = _TYPED.get(t)
        if fast is not None:
            try:
                enc = fast(col, widened)
            except (pa.ArrowException, OverflowError, ValueError, TypeError):
                enc = None
            if isinstance(enc, _SlowRows):
                return _per_value(col, enc.rows, widened, enc.base)
            if enc is not None:
                return enc
    elif not types:
        return pa.array([V._NULL] * len(col), _BIN)
    if not types.issubset(V._SCALARS):
        return None
    return _per_value(col, range(len(col)), widened)


def _per_value(col: tuple, rows: Any, widened: np.ndarray, base: pa.Array | None = None) -> pa.BinaryArray | None:
    """Values one by one (`rows` of them; the others from `base`), numbers beyond decimal(38) as exact text."""
    scalars = V._SCALARS
    parts: list[bytes | None] = [None] * len(col)
    for j in rows:
        v = col[j]
        enc = scalars[type(v)]
        try:
            parts[j] = enc(v)
        except V.VariantEncodeError:
            if enc is V._enc_decimal:
                parts[j] = V._enc_str(format(v, "f") if v.is_finite() else str(v))
            elif enc is V._enc_int:
                parts[j] = V._enc_str(str(v))
            else:
                return None  # e.g. a lone surrogate: the row encoder decides (and fails that row alone)
            widened[j] = True
    arr = pa.array(parts, _BIN)
    return arr if base is None else pc.coalesce(arr, base)


def _fixed(head: np.ndarray, width: np.ndarray, payload: np.ndarray, scale: np.ndarray | None = None) -> pa.BinaryArray:
    """Per value: a header byte, a scale byte where `scale` is given and the width is not 0 (decimals), then
    the first `width` bytes of its `payload` row (an int64 array is taken as 8 little-endian bytes)."""
    n = len(head)
    if payload.ndim == 1:
        payload = np.ascontiguousarray(payload.astype("<i8")).view(np.uint8).reshape(n, 8)
    has_scale = np.zeros(n, np.int64) if scale is None else (width > 0).astype(np.int64)
    lengths = 1 + has_scale + width.astype(np.int64)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = np.zeros(int(offsets[-1]), np.uint8)
    starts = offsets[:-1]
    data[starts] = head
    if scale is not None:
        data[(starts + 1)[width > 0]] = scale[width > 0]
    base = starts + 1 + has_scale
    for b in range(payload.shape[1]):
        mask = width > b
        if not mask.any():
            break
        data[base[mask] + b] = payload[mask, b]
    return pa.BinaryArray.from_buffers(_BIN, n, [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)])


def _ints(col: tuple, _widened: np.ndarray) -> pa.BinaryArray:
    arr = pa.array(col, pa.int64())  # OverflowError beyond 64 bits: the per-value path widens those
    null = arr.is_null().to_numpy(zero_copy_only=False)
    v = arr.fill_null(0).to_numpy()
    width = np.where((v >= -128) & (v <= 127), 1, np.where((v >= -0x8000) & (v <= 0x7FFF), 2,
                     np.where((v >= -0x8000_0000) & (v <= 0x7FFF_FFFF), 4, 8)))
    head = np.select([width == 1, width == 2, width == 4], [V._H_INT8, V._H_INT16, V._H_INT32], V._H_INT64)
    head[null], width[null] = _NULL_HEAD, 0
    return _fixed(head.astype(np.uint8), width, v)


def _bools(col: tuple, _widened: np.ndarray) -> pa.BinaryArray:
    arr = pa.array(col, pa.bool_())
    head = np.where(arr.fill_null(False).to_numpy(zero_copy_only=False), V._TRUE[0], V._FALSE[0])
    head[arr.is_null().to_numpy(zero_copy_only=False)] = _NULL_HEAD
    return _fixed(head.astype(np.uint8), np.zeros(len(col), np.int64), np.zeros(len(col), np.int64))


def _strs(col: tuple, _widened: np.ndarray) -> pa.BinaryArray | None:
    return _texts(pa.array(col, pa.string()))  # raises on a lone surrogate: the per-value path finds that row


def _texts(arr: pa.StringArray) -> pa.BinaryArray | None:
    """Each text as `variant._enc_str` encodes it (a 1-byte header below 64 bytes, else 5), nulls as null."""
    n = len(arr)
    null = arr.is_null().to_numpy(zero_copy_only=False)
    lengths = pc.binary_length(arr).fill_null(0).to_numpy().astype(np.int64)
    if n and lengths.max() > V.SIZE_LIMIT:
        return None  # the per-value encoder raises for it
    long = lengths >= 64
    head = np.where(null, _NULL_HEAD, np.where(long, V._H_LONG_STR, (lengths << 2) | 1)).astype(np.uint8)
    heads = _fixed(head, np.where(long & ~null, 4, 0), lengths)
    return pc.binary_join_element_wise(heads, arr.cast(_BIN), b"", null_handling="replace", null_replacement=b"")


def _decimals(col: tuple, widened: np.ndarray) -> Any:
    """Decimals from their text, exactly as `variant._enc_decimal` reads them. Plain notation (`-12.50`): scale =
    digits after the point, unscaled = the digits, decimal4/8/16 by magnitude, beyond decimal(38) the exact text
    (`widened`). Exponent notation (`3.44E-8`, the general path): scale = minus the exponent, decimal4/8/16 by
    precision. Positive exponents, NaN, Infinity and exponent forms beyond decimal(38) go per value. The unscaled
    integers come from one Arrow cast to decimal128, whose 16 little-endian bytes per value are the payload."""
    n = len(col)
    texts = pa.array(list(map(str, col)), pa.string())
    null = pc.equal(texts, "None").to_numpy(zero_copy_only=False)  # no Decimal's text is "None"
    special = pc.match_substring_regex(texts, "[nN]").to_numpy(zero_copy_only=False) & ~null
    sci = pc.match_substring(texts, "E").to_numpy(zero_copy_only=False) & ~null & ~special
    plain = ~(null | special | sci)
    if sci.any():
        parts = pc.split_pattern(pc.if_else(pa.array(sci), texts, "0E0"), "E", max_splits=1)
        mantissa = pc.if_else(pa.array(sci), pc.list_element(parts, 0), texts)
        exp = pc.cast(pc.replace_substring(pc.list_element(parts, 1), "+", ""), pa.int64()).to_numpy()
    else:
        mantissa, exp = texts, np.zeros(n, np.int64)
    dot = pc.find_substring(mantissa, ".").to_numpy()
    fraction = np.where(dot < 0, 0, pc.utf8_length(mantissa).to_numpy() - dot - 1)
    signed = pc.replace_substring(mantissa, ".", "", max_replacements=1)
    digits = pc.utf8_ltrim(signed, "-")
    exponent = exp - fraction
    precision = np.maximum(pc.utf8_length(digits).to_numpy(), -exponent)
    sci_ok = sci & (exponent <= 0) & (precision <= 38)
    scale = np.where(sci, -exponent, fraction)
    significant = pc.utf8_length(pc.utf8_ltrim(digits, "0")).to_numpy()
    wide = plain & ((significant > 38) | (scale > 38))  # _enc_decimal refuses it: the lenient rule's text
    exact = (plain & ~wide) | sci_ok
    unscaled = pc.cast(pc.if_else(pa.array(exact), signed, "0"), pa.decimal128(38, 0))
    raw = np.frombuffer(unscaled.buffers()[1], np.uint8, 16 * n).reshape(n, 16)
    lo = raw[:, :8].copy().view("<i8").ravel()
    fits = raw[:, 8:].copy().view("<i8").ravel() == (lo >> 63)  # the high half only extends the sign
    small = (lo > -(10**9)) & (lo < 10**9)  # comparisons, not abs(): abs(-2**63) overflows int64
    medium = (lo > -(10**18)) & (lo < 10**18)
    plain_ok = plain & ~wide
    dec4 = (plain_ok & fits & (scale <= 9) & small) | (sci_ok & (precision <= 9))
    dec8 = ~dec4 & ((plain_ok & fits & (scale <= 18) & medium) | (sci_ok & (precision <= 18)))
    dec16 = exact & ~(dec4 | dec8)
    width = np.select([dec4, dec8, dec16], [4, 8, 16], 0)
    head = np.select([dec4, dec8, dec16], [V._H_DEC4, V._H_DEC8, V._H_DEC16], _NULL_HEAD).astype(np.uint8)
    enc = _fixed(head, width, raw, np.where(exact, scale, 0).astype(np.uint8))
    if wide.any():
        text = _texts(pc.if_else(pa.array(wide), texts, pa.scalar(None, pa.string())))
        if text is None:
            return None
        enc = pc.if_else(pa.array(wide), text, enc)
        widened |= wide
    slow = (special | sci) & ~sci_ok
    return _SlowRows(np.flatnonzero(slow), enc) if slow.any() else enc


def _timestamps(col: tuple, _widened: np.ndarray) -> pa.BinaryArray | None:
    """UTC timestamps (`timestamp`) or naive ones (`timestamp_ntz`, e.g. Replicate's DATETIME), one kind a column."""
    zones = {_TZ(v) for v in col if v is not None}
    if zones == {_UTC}:
        arr, head_byte = pa.array(col, pa.timestamp("us", tz="UTC")), V._H_TS
    elif zones == {None}:  # naive: the wall time's microseconds since 1970-01-01, as `(v - epoch) // 1 µs`
        arr, head_byte = pa.array(col, pa.timestamp("us")), V._H_TS_NTZ
    else:
        return None  # other zones, or a mix: per value
    null = arr.is_null().to_numpy(zero_copy_only=False)
    micros = arr.cast(pa.int64()).fill_null(0).to_numpy()
    head = np.full(len(col), head_byte, np.uint8)
    head[null] = _NULL_HEAD
    return _fixed(head, np.where(null, 0, 8), micros)


def _floats(col: tuple, _widened: np.ndarray) -> pa.BinaryArray | None:
    """Doubles as 8 little-endian bytes; a column holding a NaN goes per value (its bits as Python keeps them)."""
    arr = pa.array(col, pa.float64())
    null = arr.is_null().to_numpy(zero_copy_only=False)
    v = arr.fill_null(0.0).to_numpy()
    if np.isnan(v).any():
        return None
    head = np.full(len(col), V._H_DOUBLE, np.uint8)
    head[null] = _NULL_HEAD
    return _fixed(head, np.where(null, 0, 8), np.ascontiguousarray(v.astype("<f8")).view(np.uint8).reshape(-1, 8))


def _dates(col: tuple, _widened: np.ndarray) -> pa.BinaryArray:
    arr = pa.array(col, pa.date32())
    null = arr.is_null().to_numpy(zero_copy_only=False)
    days = arr.cast(pa.int32()).fill_null(0).to_numpy()
    head = np.full(len(col), V._H_DATE, np.uint8)
    head[null] = _NULL_HEAD
    return _fixed(head, np.where(null, 0, 4), days)


class _SlowRows:
    """A column encoded except for some rows (`rows`), which the per-value encoder must do."""

    def __init__(self, rows: np.ndarray, base: pa.BinaryArray) -> None:
        self.rows, self.base = rows, base


_TYPED: dict[type, Callable[[tuple, np.ndarray], Any]] = {
    int: _ints, bool: _bools, str: _strs, Decimal: _decimals, dt.datetime: _timestamps, dt.date: _dates,
    float: _floats,
}
"""Column encoders for a column of one type (and nulls); None or an exception sends it to the per-value path."""
