"""Row images of one table schema: per-column value decoders and the schema version's columns, built once per
distinct schema (a JSON converter schema text, an Avro writer schema) and reused for every message that repeats it.

Values themselves are decoded by :mod:`~cdcnorm.adapters.debezium.values` (every Kafka Connect and Debezium
logical type, per the connector's modes). Without a schema a value is what the JSON says, or what the user
declared for its column (`column_types`, read by :mod:`~cdcnorm.adapters.debezium.untyped`), and the row is
flagged `untyped_values`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from cdcnorm.adapters.debezium.fields import avro_field, connect_field
from cdcnorm.adapters.debezium.unavailable import is_unavailable
from cdcnorm.adapters.debezium.untyped import UNTYPED_FLAG, untyped_decoder
from cdcnorm.adapters.debezium.values import Modes, column_types, value_decoder
from cdcnorm.errors import DecodeError

UNTYPED = UNTYPED_FLAG
"""The flag of a row decoded without a schema (values as the JSON gives them, or as declared)."""


@dataclass(slots=True)
class RowType:
    """How to decode the images of one table schema."""

    decoders: dict[str, Callable[[Any], Any]]
    columns: list[tuple[str, str | None, str | None, bool | None]]
    """(name, vendor type, canonical type, nullable) in schema order (schemaless: the declared columns)."""
    version: str
    """Identifier of the schema (hash of its text): the `schema_version` of the rows and of the version row."""
    typed: bool = True


def _version(text: bytes) -> str:
    return hashlib.blake2b(text, digest_size=8).hexdigest()


def _row_type(fields: list[tuple[str, Any]], modes: Modes, text: bytes) -> RowType:
    decoders: dict[str, Callable[[Any], Any]] = {}
    columns: list[tuple[str, str, str, bool]] = []
    for name, field in fields:
        decoders[name] = value_decoder(field, modes)
        vendor_type, canonical = column_types(field, modes)
        columns.append((name, vendor_type, canonical, bool(getattr(field, "optional", True))))
    return RowType(decoders, columns, _version(text))


_CACHE: dict[tuple, RowType | None] = {}


def _mkey(modes: Modes) -> Modes:
    return modes


def _remember(key: tuple, build: Callable[[], RowType | None]) -> RowType | None:
    try:
        return _CACHE[key]
    except KeyError:
        pass
    if len(_CACHE) > 2048:
        _CACHE.clear()
    found = _CACHE[key] = build()
    return found


def _image_struct(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The row struct of an envelope schema (its `after` field, else `before`)."""
    by_name = {f.get("field"): f for f in schema.get("fields") or () if isinstance(f, dict)}
    for name in ("after", "before"):
        f = by_name.get(name)
        if f and f.get("type") == "struct":
            return f
    return None


def connect_row_type(schema: dict[str, Any] | None, key: bytes | None, modes: Modes,
                     image: bool = True) -> RowType | None:
    """The row type of a JSON-converter schema: an envelope's row (`image`) or a key struct; None without."""
    if not schema or key is None:
        return None

    def build() -> RowType | None:
        struct = _image_struct(schema) if image else schema
        if not struct or struct.get("type") != "struct":
            return None
        try:
            fields = [(f["field"], connect_field(f)) for f in struct.get("fields") or ()]
        except (KeyError, TypeError, ValueError) as exc:
            raise DecodeError("bad_schema", f"the message's schema cannot be read ({type(exc).__name__}: {exc})"
                              ) from None
        return _row_type(fields, modes, key)

    return _remember(("connect", key, image, _mkey(modes)), build)


def _avro_record(t: Any) -> dict[str, Any] | None:
    if isinstance(t, list):
        for branch in t:
            if isinstance(branch, dict) and branch.get("type") == "record":
                return branch
        return None
    return t if isinstance(t, dict) and t.get("type") == "record" else None


def avro_row_type(schema: Any, key: bytes, modes: Modes, image: bool = True) -> RowType | None:
    """The row type of an Avro envelope's row record (`image`), or of an Avro key record; `key` identifies the
    schema (a registry id, a container's schema text)."""

    def build() -> RowType | None:
        record = schema if not image else None
        if image:
            for f in (schema or {}).get("fields") or ():
                if f.get("name") in ("after", "before"):
                    record = _avro_record(f.get("type"))
                    if record:
                        break
        if not isinstance(record, dict):
            return None
        fields = [(f["name"], avro_field(f["type"], f["name"])) for f in record.get("fields") or ()]
        return _row_type(fields, modes, key)

    return _remember(("avro", key, image, _mkey(modes)), build)


def untyped_row_type(declared: dict[str, str] | None, modes: Modes) -> RowType:
    """Decoders for schemaless images: declared columns decoded as declared, the rest kept as parsed."""
    items = tuple(sorted((declared or {}).items()))

    def build() -> RowType:
        decoders = {name: untyped_decoder(t, modes) for name, t in items}
        return RowType(decoders, [(name, None, t, None) for name, t in items], _version(orjson.dumps(items)),
                       typed=False)

    found = _remember(("untyped", items, _mkey(modes)), build)
    assert found is not None
    return found


def declared_columns(names: list[str], rt: RowType) -> list[tuple[str, str | None, str | None, bool | None]]:
    """Schema-version columns of a schemaless row: its columns in image order, with the declared canonical type
    (`column_types`), or none (the lake keeps such a column as VARIANT)."""
    declared = {name: canonical for name, _, canonical, _ in rt.columns}
    return [(name, None, declared.get(name), None) for name in names]


def declared_version(columns: list[tuple[str, str | None, str | None, bool | None]]) -> str:
    """The version id of declared columns: a new column (schema change) is a new version."""
    return "declared:" + _version(orjson.dumps([[n, t] for n, _, t, _ in columns]))


def decode_image(image: Any, rt: RowType, what: str, flags: list[str] | None = None,
                 unavailable: Callable[[Any], bool] = is_unavailable) -> tuple[dict[str, Any] | None, list[str]]:
    """(typed image, columns whose value was not captured) of one row image; the placeholders of unchanged
    TOASTed / LOB values are missing columns, never values. `flags` receives the flags a value causes."""
    if image is None:
        return None, []
    if not isinstance(image, dict):
        raise DecodeError("bad_event", f"the event's `{what}` image is not an object")
    out: dict[str, Any] = {}
    missing: list[str] = []
    decoders = rt.decoders
    for name, v in image.items():
        if v is None:
            out[name] = None
        elif unavailable(v):
            missing.append(name)
        else:
            dec = decoders.get(name)
            out[name] = dec(v, flags) if dec is not None else v
    return out, missing
