"""Canonical rows of one DataHub record, Blob or TUPLE alike: one sort/id recipe, and schema versions once per task.

Identity and order: CDC rows `sort_parts = (1, sequenceId as an integer, image (before 0, after 1),
eventTime)`; `id_parts = (sequenceId, canonical op, image)` for data rows, plus the vendor op (and, with no
sequenceId, eventTime and DDL text) for the others. A paired UPDATE's event id is the pair id computed by both
halves at decode time, so a redelivered pair gets the same id, whether it came as two messages or as one
message carrying both images (:func:`whole_update`).

Full-load (snapshot) rows carry the sentinel sequenceId `-1` (:func:`~cdcnorm.adapters.datahub.scalars.is_unset`):
they become `SNAPSHOT` rows ordered `(0, row hash)`, before every CDC row of their table, and are identified by
`("SNAPSHOT", key values, row hash)` like Replicate's REFRESH rows, since the sentinel identifies nothing. Any
other data row without a usable sequenceId is identified the same way, by its key values and row hash.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
from dataclasses import dataclass, field
from typing import Any

import orjson

from cdcnorm.adapters.datahub.pairing import column_digests, pair_id, role_of
from cdcnorm.adapters.datahub.vocabulary import VENDOR
from cdcnorm.canonical.record import Change, SchemaColumn, SchemaVersion, image_hash, key_of
from cdcnorm.errors import DecodeError

_ROLE_ORDER = {"before": 0, "after": 1}


@dataclass(slots=True)
class Base:
    """Fields every row of one record shares."""

    fmt: str
    stream: str
    source_db: str | None
    database: str | None
    schema: str | None
    table: str | None
    seq: Any
    seq_raw: str | None
    vendor_op: str
    source_ts: dt.datetime | None
    capture_ts: dt.datetime | None = None
    pks: list[str] | None = None
    schema_version: str | None = None
    flags: list[str] = field(default_factory=list)
    full_load: bool = False
    """the record carries the full-load sentinel sequenceId (`-1`): a snapshot row, `seq` is None"""


def _version_id(columns: list[tuple[str, str | None]], pks: list[str] | None) -> str:
    return _version_hash(tuple(columns), tuple(pks or ()))


@functools.lru_cache(maxsize=4096)
def _version_hash(columns: tuple, pks: tuple) -> str:
    """Schema version id: a hash of the column (name, type) list and the primary key."""
    data = orjson.dumps([[list(c) for c in columns], list(pks)])
    return hashlib.blake2b(data, digest_size=8).hexdigest()


class SchemaVersions:
    """The schema versions one task has emitted, so each table version is emitted once per task."""

    def __init__(self) -> None:
        self._seen: set[tuple] = set()

    def version(self, b: Base, columns: list[tuple[str, str | None]], canon: dict[str, str]) -> list:
        """The table's schema version (set on the rows); returned for emission once per task."""
        vid = _version_id(columns, b.pks)
        b.schema_version = vid
        seen_key = (b.stream, b.database, b.schema, b.table, vid)
        if seen_key in self._seen:
            return []
        if len(self._seen) > 100_000:
            self._seen.clear()
        self._seen.add(seen_key)
        pk_pos = {k: i + 1 for i, k in enumerate(b.pks or [])}
        cols = [
            SchemaColumn(n, t, canon.get((t or "").upper()), i + 1, pk_pos.get(n))
            for i, (n, t) in enumerate(columns)
        ]
        return [
            SchemaVersion(
                VENDOR,
                b.stream,
                vid,
                cols,
                b.source_db,
                b.database,
                b.schema,
                b.table,
                first_seen=b.source_ts,
            )
        ]


def _change(b: Base, op: str, sort_parts: tuple, id_parts: tuple, **fields: Any) -> Change:
    """A row with the fields every row of the record shares."""
    return Change(
        vendor=VENDOR,
        format=b.fmt,
        stream=b.stream,
        op=op,
        sort_parts=sort_parts,
        id_parts=id_parts,
        source_db=b.source_db,
        database=b.database,
        schema=b.schema,
        table=b.table,
        vendor_op=b.vendor_op,
        flags=list(b.flags),
        primary_keys=b.pks,
        schema_version=b.schema_version,
        source_ts=b.source_ts,
        capture_ts=b.capture_ts,
        position=None if b.full_load else b.seq_raw,
        **fields,
    )


def _log_order(b: Base, image_order: int) -> tuple:
    """CDC order: `(1, sequenceId, image order, eventTime)`."""
    return (1, b.seq, image_order, b.source_ts)


def row_hash(image: dict | None) -> str:
    """Stable hash of a typed image (column order does not matter): identifies rows without a position."""
    return image_hash(image).hex()


def _key_values(b: Base, image: dict | None) -> tuple:
    key = key_of(image, b.pks)
    return tuple(key.values()) if key else ()


def dml_change(b: Base, op: str, role: str, image: dict, missing: list[str] | None) -> Change:
    """INSERT/DELETE, a full-load SNAPSHOT, or one UPDATE half carrying the pair id and its column digests."""
    if op == "INSERT" and b.full_load:
        h = row_hash(image)
        return _change(b, "SNAPSHOT", (0, h), ("SNAPSHOT", _key_values(b, image), h), after=image,
                       missing_columns=missing)
    if op == "UPDATE" and b.seq is None:
        raise DecodeError("missing_field", "UPDATE half without a sequence id: it cannot be paired")
    ident = (b.seq, op, role) if b.seq is not None else (op, role, _key_values(b, image), row_hash(image))
    c = _change(
        b,
        op,
        _log_order(b, _ROLE_ORDER[role]),
        ident,
        before=image if role == "before" else None,
        after=image if role == "after" else None,
        missing_columns=missing,
    )
    if op == "UPDATE":
        c.pair = pair_id(b.stream, b.database, b.schema, b.table, b.seq)
        c.pair_role = role
        c.changed_columns = column_digests(image)
    return c


def whole_update(b: Base, before: dict, after: dict, missing_before: list[str] | None,
                 missing_after: list[str] | None) -> list[Change]:
    """A one-message UPDATE (both images in one message) as the two halves a two-message UPDATE gives.

    Both halves carry the same pair id as the two messages would, so :func:`~.pairing.pair_updates` turns them
    into one UPDATE with the same event id, key-change rule and changed columns, and absorbs a separately
    delivered half of the same change; their pair role marks them whole, so the one-message images win.
    Without a usable sequenceId the pair id is derived from the two images instead.
    """
    seq = b.seq if b.seq is not None else ("UPDATE", row_hash(before), row_hash(after))
    pair = pair_id(b.stream, b.database, b.schema, b.table, seq)
    rows = []
    for role, image, missing in (("before", before, missing_before), ("after", after, missing_after)):
        c = _change(
            b,
            "UPDATE",
            _log_order(b, _ROLE_ORDER[role]),
            (seq, "UPDATE", role),
            before=image if role == "before" else None,
            after=image if role == "after" else None,
            missing_columns=missing,
        )
        c.pair, c.pair_role, c.changed_columns = pair, role_of(role, whole=True), column_digests(image)
        rows.append(c)
    return rows


def event_change(b: Base, op: str, **extra: Any) -> Change:
    """DDL, TRUNCATE, heartbeat, transaction and control rows.

    Without a sequenceId the eventTime and DDL text identify the row; when the eventTime is unknown too (a
    full-load heartbeat or marker), so does a hash of the payload it keeps (e.g. its systemTime).
    """
    ident = (b.seq, op, b.vendor_op)
    if b.seq is None:
        ident += (b.source_ts, extra.get("ddl"))
        if b.source_ts is None:
            ident += (row_hash(extra.get("content")),)
    return _change(b, op, _log_order(b, 0), ident, **extra)
