"""A message's `mysqlType` map -> the table's row type: one decoder per column and the schema version it names.

Why cached per map: every message of a table repeats the same `mysqlType` (case aside), so the row type is built
once per distinct map and the per-row path is a loop of decoder calls. The schema version is a hash of the
columns' canonical types and the key, so `INT` in one message and `int(11)` in the next are one version.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from cdcnorm.adapters.canal.mysql_types import ColumnType, Decoder, column_type
from cdcnorm.canonical.record import SchemaColumn
from cdcnorm.errors import DecodeError

_CACHE_MAX = 4096


@dataclass(frozen=True, slots=True)
class RowType:
    """The columns `mysqlType` names, their decoders, and the schema version they make with the key."""

    types: dict[str, ColumnType]
    decoders: dict[str, Decoder]
    version: str | None
    columns: list[SchemaColumn]


_EMPTY = RowType({}, {}, None, [])
_cache: dict[tuple, RowType] = {}


def row_type(mysql_types: Any, pks: list[str] | None, zone: str) -> RowType:
    """The row type of a message (`mysqlType` absent: no typed column, every value kept as its text)."""
    if not isinstance(mysql_types, dict) or not mysql_types:
        return _EMPTY
    key = (tuple(mysql_types.items()), tuple(pks or ()), zone)
    try:
        return _cache[key]
    except KeyError:
        pass
    except TypeError:  # a type that is not text: not cached
        return _build(mysql_types, pks, zone)
    if len(_cache) >= _CACHE_MAX:
        _cache.clear()
    found = _cache[key] = _build(mysql_types, pks, zone)
    return found


def _build(mysql_types: dict[str, Any], pks: list[str] | None, zone: str) -> RowType:
    types = {str(name): column_type(t if isinstance(t, str) else None, zone) for name, t in mysql_types.items()}
    keys = list(pks or ())
    columns = [SchemaColumn(name=n, vendor_type=str(mysql_types[n]) if mysql_types[n] is not None else None,
                            canonical_type=t.canonical, ordinal=i + 1,
                            pk_position=keys.index(n) + 1 if n in keys else None)
               for i, (n, t) in enumerate(types.items())]
    text = repr([(n, t.canonical, t.text) for n, t in types.items()] + keys)
    version = "canal:" + hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
    return RowType(types, {n: t.decode for n, t in types.items()}, version, columns)


def decode_image(raw: Any, rt: RowType, what: str) -> tuple[dict[str, Any], bool]:
    """A row map of strings -> typed values; also whether some value kept its text for want of a type."""
    if not isinstance(raw, dict):
        raise DecodeError("bad_event", f"an element of `{what}` is not an object of column values")
    decoders = rt.decoders
    out: dict[str, Any] = {}
    untyped = False
    for name, v in raw.items():
        if v is None:
            out[name] = None
            continue
        dec = decoders.get(name)
        if dec is None or not isinstance(v, str):
            untyped = True  # a column `mysqlType` does not name (reference §7: be tolerant), or a non-string value
            out[name] = v
            continue
        try:
            out[name] = dec(v)
        except (ValueError, OverflowError) as exc:
            raise DecodeError("bad_value", f"column {name!r} ({rt.types[name].text}) in `{what}`: {exc}") from None
    return out, untyped
