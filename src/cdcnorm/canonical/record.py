"""Python-side records adapters build while decoding; `emit` turns them into Arrow batches.

Adapters stay declarative: they fill a :class:`Change` with typed Python values (Decimal, datetime, date,
bytes, dict, list) and say how it orders (`sort_parts`) and what identifies it (`id_parts`). Encoding of
VARIANT values, keys, sort keys and event ids is shared machinery, never copied into an adapter.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from cdcnorm.canonical import tuple_codec


@dataclass(slots=True)
class Change:
    """One canonical change row before encoding.

    `sort_parts` orders the row within its (vendor, stream, table): by convention the first element is 0 for
    snapshot rows and 1 for log rows, followed by the vendor position compared numerically. `id_parts` are the
    stable fields the event id is hashed from (never a delivery uuid, file name, offset or read time).
    """

    vendor: str
    format: str
    stream: str
    op: str
    sort_parts: tuple
    id_parts: tuple
    source_db: str | None = None
    database: str | None = None
    schema: str | None = None
    table: str | None = None
    vendor_op: str | None = None
    flags: list[str] = field(default_factory=list)
    primary_keys: list[str] | None = None
    key: dict[str, Any] | None = None
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    changed_columns: list[str] | None = None
    missing_columns: list[str] | None = None
    ddl: str | None = None
    ddl_changes: list[dict[str, str | None]] | None = None
    schema_version: str | None = None
    source_ts: dt.datetime | None = None
    capture_ts: dt.datetime | None = None
    tx_id: str | None = None
    tx_seq: int | None = None
    tx_last: bool | None = None
    position: str | None = None
    pair: str | None = None
    pair_role: str | None = None
    content: Any = None
    """Opaque extra content for CONTROL/HEARTBEAT rows; stored in `after` when `after` is empty."""


@dataclass(slots=True)
class SchemaColumn:
    """A column of a table schema version as the vendor described it."""

    name: str
    vendor_type: str | None
    canonical_type: str | None
    ordinal: int
    pk_position: int | None = None
    nullable: bool | None = None


@dataclass(slots=True)
class SchemaVersion:
    """One version of a table's schema, stored in `LAKE/schemas/`."""

    vendor: str
    stream: str
    schema_version: str
    columns: list[SchemaColumn]
    source_db: str | None = None
    database: str | None = None
    schema: str | None = None
    table: str | None = None
    first_seen: dt.datetime | None = None
    definition: str | None = None
    """The vendor's own schema document (e.g. Replicate's metadata with its Avro data schema), as JSON text."""


def image_hash(image: dict[str, Any] | None) -> bytes:
    """BLAKE2b-128 of a typed image, column order ignored: identifies a row that has no vendor position (a
    snapshot / REFRESH row). A value the tuple codec cannot encode (a raw JSON object) counts by its JSON text."""
    items: list[Any] = []
    for k in sorted(image or {}):
        items += [k, image[k]]
    try:
        data = tuple_codec.encode(tuple(items))
    except (TypeError, ValueError, OverflowError):
        data = orjson.dumps(items, default=str, option=orjson.OPT_SORT_KEYS)
    return hashlib.blake2b(data, digest_size=16).digest()


def key_of(row: dict[str, Any] | None, primary_keys: list[str] | None) -> dict[str, Any] | None:
    """The key object of an image: primary-key column -> value, or None without keys or image."""
    if not primary_keys or row is None:
        return None
    return {k: row.get(k) for k in primary_keys}


def split_key_change(change: Change) -> list[Change]:
    """Apply the canonical key-change rule to an UPDATE carrying both images.

    When the before and after images have different primary-key values the update becomes a DELETE of the
    old key and an INSERT of the new key, same position and transaction, both flagged `key_change`. Any
    other change is returned unchanged.
    """
    pks = change.primary_keys
    if change.op != "UPDATE" or not pks or change.before is None or change.after is None:
        return [change]
    old_key, new_key = key_of(change.before, pks), key_of(change.after, pks)
    if old_key == new_key:
        return [change]
    flags = [*change.flags, "key_change"]
    delete = replace(
        change, op="DELETE", flags=flags, key=old_key, after=None, changed_columns=None,
        sort_parts=(*change.sort_parts, 0), id_parts=(*change.id_parts, "key_change_delete"),
    )
    insert = replace(
        change, op="INSERT", flags=list(flags), key=new_key, before=None,
        sort_parts=(*change.sort_parts, 1), id_parts=(*change.id_parts, "key_change_insert"),
    )
    return [delete, insert]
