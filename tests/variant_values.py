"""VARIANT bytes read back exactly, with each value's variant type: two encoders' outputs compared by value and type.

Why not `VariantVal.toPython()`: it rounds decimals beyond 28 digits and drops the variant type (int8 vs int64,
decimal scale); and two encoders may order the metadata dictionary differently (equal values, different bytes).
"""

from __future__ import annotations

import struct
from decimal import Decimal
from typing import Any


def _uint(data: bytes, pos: int, size: int) -> int:
    return int.from_bytes(data[pos:pos + size], "little")


def _keys(metadata: bytes) -> list[str]:
    header = metadata[0]
    size = ((header >> 6) & 3) + 1
    n = _uint(metadata, 1, size)
    offsets = [_uint(metadata, 1 + size * (i + 1), size) for i in range(n + 1)]
    base = 1 + size * (n + 2)
    return [metadata[base + offsets[i]:base + offsets[i + 1]].decode() for i in range(n)]


def read(value: bytes, metadata: bytes) -> Any:
    """The value as a tree of (type, value) pairs: objects are dicts (key order ignored), arrays lists."""
    return _read(value, 0, _keys(metadata))


def _read(data: bytes, pos: int, keys: list[str]) -> Any:
    header = data[pos]
    basic, info = header & 3, header >> 2
    if basic == 1:  # short string
        return ("string", data[pos + 1:pos + 1 + info].decode())
    if basic == 2:  # object
        large, id_size, off_size = (info >> 4) & 1, ((info >> 2) & 3) + 1, (info & 3) + 1
        n_size = 4 if large else 1
        n = _uint(data, pos + 1, n_size)
        ids_at = pos + 1 + n_size
        offs_at = ids_at + n * id_size
        vals_at = offs_at + (n + 1) * off_size
        return {keys[_uint(data, ids_at + i * id_size, id_size)]:
                _read(data, vals_at + _uint(data, offs_at + i * off_size, off_size), keys) for i in range(n)}
    if basic == 3:  # array
        large, off_size = (info >> 2) & 1, (info & 3) + 1
        n_size = 4 if large else 1
        n = _uint(data, pos + 1, n_size)
        offs_at = pos + 1 + n_size
        vals_at = offs_at + (n + 1) * off_size
        return [_read(data, vals_at + _uint(data, offs_at + i * off_size, off_size), keys) for i in range(n)]
    body = pos + 1
    if info == 0:
        return ("null", None)
    if info in (1, 2):
        return ("boolean", info == 1)
    if info in (3, 4, 5, 6):
        width = {3: 1, 4: 2, 5: 4, 6: 8}[info]
        return (f"int{width * 8}", int.from_bytes(data[body:body + width], "little", signed=True))
    if info == 7:
        return ("double", struct.unpack("<d", data[body:body + 8])[0])
    if info in (8, 9, 10):
        width = {8: 4, 9: 8, 10: 16}[info]
        scale = data[body]
        unscaled = int.from_bytes(data[body + 1:body + 1 + width], "little", signed=True)
        sign, digits = (1 if unscaled < 0 else 0), tuple(int(d) for d in str(abs(unscaled)))
        return (f"decimal{width * 8}", Decimal((sign, digits, -scale)))
    if info in (11,):
        return ("date", int.from_bytes(data[body:body + 4], "little", signed=True))
    if info in (12, 13):
        return ("timestamp" if info == 12 else "timestamp_ntz", int.from_bytes(data[body:body + 8], "little",
                                                                              signed=True))
    if info == 15:
        n = _uint(data, body, 4)
        return ("binary", bytes(data[body + 4:body + 4 + n]))
    if info == 16:
        n = _uint(data, body, 4)
        return ("string", data[body + 4:body + 4 + n].decode())
    raise ValueError(f"variant type {info} is not read here")


def exact(v: Any) -> Any:
    """A collected VARIANT (`VariantVal` or None) as `read` gives it; decimals keep their scale as text."""
    if v is None:
        return None
    return _text_decimals(read(bytes(v.value), bytes(v.metadata)))


def _text_decimals(t: Any) -> Any:
    if isinstance(t, dict):
        return {k: _text_decimals(x) for k, x in t.items()}
    if isinstance(t, list):
        return [_text_decimals(x) for x in t]
    kind, value = t
    return (kind, str(value)) if kind.startswith("decimal") else t
