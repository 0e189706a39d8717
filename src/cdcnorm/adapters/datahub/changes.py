"""Canonical rows of one DataHub record, Blob or TUPLE alike: one sort/id recipe, and schema versions once per task.

Identity and order (all rows): `sort_parts = (1, sequenceId as an integer, image (before 0, after 1),
eventTime)`; `id_parts = (sequenceId, canonical op, image)` for data rows, plus the vendor op (and, with no
sequenceId, eventTime and DDL text) for the others. A paired UPDATE's event id is the pair id computed by both
halves at decode time, so a redelivered pair gets the same id.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
from dataclasses import dataclass, field
from typing import Any

import orjson

from cdcnorm.adapters.datahub.pairing import column_digests, pair_id
from cdcnorm.adapters.datahub.vocabulary import VENDOR
from cdcnorm.canonical.record import Change, SchemaColumn, SchemaVersion
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


def _change(b: Base, op: str, image_order: int, id_parts: tuple, **fields: Any) -> Change:
    """A row with the fields every row of the record shares, ordered by `(1, seq, image order, eventTime)`."""
    return Change(
        vendor=VENDOR,
        format=b.fmt,
        stream=b.stream,
        op=op,
        sort_parts=(1, b.seq, image_order, b.source_ts),
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
        position=b.seq_raw,
        **fields,
    )


def dml_change(b: Base, op: str, role: str, image: dict, missing: list[str] | None) -> Change:
    """INSERT/DELETE, or one UPDATE half carrying the pair id and its column digests for Spark pairing."""
    c = _change(
        b,
        op,
        _ROLE_ORDER[role],
        (b.seq, op, role),
        before=image if role == "before" else None,
        after=image if role == "after" else None,
        missing_columns=missing,
    )
    if op == "UPDATE":
        if b.seq is None:
            raise DecodeError("missing_field", "UPDATE half without a sequence id: it cannot be paired")
        c.pair = pair_id(b.stream, b.database, b.schema, b.table, b.seq)
        c.pair_role = role
        c.changed_columns = column_digests(image)
    return c


def event_change(b: Base, op: str, **extra: Any) -> Change:
    """DDL, TRUNCATE, heartbeat, transaction and control rows."""
    ident = (b.seq, op, b.vendor_op)
    if b.seq is None:
        ident += (b.source_ts, extra.get("ddl"))
    return _change(b, op, 0, ident, **extra)
