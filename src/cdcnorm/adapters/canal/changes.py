"""The canonical rows of one canal-json row message: one per element of `data` (reference §3, §4).

Images: INSERT / INIT give the after image, DELETE the before image; an UPDATE's before image is its row
overlaid with the `old` entry of the same index (a key present with `null` was NULL; an absent key is taken
from the row). `old` is known to miss changes (a NULL -> value change is not listed), so `changed_columns`
lists the columns `old` names and the row is flagged `changed_columns_partial`: nothing claims a column did not
change. A primary-key change is an ordinary UPDATE whose `old` holds the key: it becomes the canonical DELETE +
INSERT pair.

Order and identity (docs/adapters/canal.md): the sort key is (`es`, TiCDC commit ts, Kafka topic/partition
or file, offset or record index, index in `data`); the event id is made of what a redelivery repeats: TiCDC's
commit ts with the row's key when present, else `type`, `es`, `gtid`, the row's index in `data` and a hash of
the row as sent (plus the batch `id` when the `batch_id_identity` option says redeliveries keep it). Never `ts`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import orjson

from cdcnorm.adapters.canal.envelope import ROW_TYPES, int_or_none, ms_time, text_or_none, tidb
from cdcnorm.adapters.canal.rows import RowType, decode_image, row_type
from cdcnorm.canonical.record import Change, split_key_change
from cdcnorm.errors import DecodeError

VENDOR = "canal"
PARTIAL = "changed_columns_partial"
UNTYPED = "untyped_values"
UNKNOWN_POSITION = "unknown_position"


@dataclass(frozen=True, slots=True)
class Place:
    """Where a message was read: Kafka `topic/partition` and offset, or the file and the record's index."""

    group: str
    offset: int


@dataclass(frozen=True, slots=True)
class Context:
    """What every message of one adapter shares: format, stream, options."""

    fmt: str
    stream: str
    source_db: str
    zone: str
    batch_id_identity: bool
    database: str | None
    table: str | None


def table_of(msg: dict[str, Any], ctx: Context) -> tuple[str | None, str]:
    table = text_or_none(msg.get("table")) or ctx.table
    if table is None:
        raise DecodeError("missing_table", "a canal-json message without `table`: give the `table` option "
                                           "(and `database`) for a producer that leaves it out")
    return text_or_none(msg.get("database")) or ctx.database, table


def row_changes(msg: dict[str, Any], ctx: Context, place: Place) -> tuple[list[Change], RowType]:
    """The canonical rows of a DML / INIT message, and the row type its `mysqlType` names."""
    vtype = msg["type"]
    op = ROW_TYPES[vtype]
    data = msg.get("data")
    if not isinstance(data, list) or not data:
        raise DecodeError("bad_event", f"a {vtype} message whose `data` is not a non-empty array of rows")
    database, table = table_of(msg, ctx)
    pk_names = msg.get("pkNames")
    pks = [str(k) for k in pk_names] if isinstance(pk_names, list) and pk_names else None
    rt = row_type(msg.get("mysqlType"), pks, ctx.zone)
    olds = msg.get("old")
    olds = olds if isinstance(olds, list) else None
    es = int_or_none(msg.get("es"))
    ext = tidb(msg)
    commit_ts = int_or_none(ext.get("commitTs"))
    gtid = text_or_none(msg.get("gtid"))
    batch = int_or_none(msg.get("id")) if ctx.batch_id_identity else None
    source_ts, capture_ts = ms_time(es), ms_time(msg.get("ts"))
    source_db = "tidb" if ext else ctx.source_db
    tx_id = str(commit_ts) if commit_ts is not None else gtid
    position = f"commitTs:{commit_ts}" if commit_ts is not None else (f"gtid:{gtid}" if gtid else None)
    out: list[Change] = []
    n = len(data)
    for i, raw in enumerate(data):
        flags: list[str] = []
        row, untyped = decode_image(raw, rt, "data")
        before = after = changed = old = None
        if op == "DELETE":
            before = row
        else:
            after = row
        if op == "UPDATE":
            old = olds[i] if olds is not None and i < len(olds) else None
            if isinstance(old, dict):
                typed_old, untyped_old = decode_image(old, rt, "old")
                before = {**row, **typed_old}
                changed = [c for c in row if c in old] + [c for c in old if c not in row]
                flags.append(PARTIAL)
                untyped = untyped or untyped_old
        if untyped or not rt.decoders:
            flags.append(UNTYPED)
        digest = _digest(raw, old if op == "UPDATE" else None)
        if commit_ts is not None:
            key = tuple(row.get(k) for k in pks) if pks else (i,)
            ident: tuple = (op, "commitTs", commit_ts, key, digest)
        elif op == "SNAPSHOT":  # a full-sync row: its key and content at the sync's time, however it was batched
            ident = (op, es, tuple(row.get(k) for k in pks) if pks else (n, i), digest)
        else:
            if gtid is None:
                flags.append(UNKNOWN_POSITION)
            ident = (op, es, gtid, batch, n, i, digest)
        change = Change(
            vendor=VENDOR, format=ctx.fmt, stream=ctx.stream, op=op, sort_parts=(
                0 if op == "SNAPSHOT" else 1, es or 0, commit_ts or 0, place.group, place.offset, i),
            id_parts=ident, source_db=source_db, database=database, table=table, vendor_op=vtype, flags=flags,
            primary_keys=pks, before=before, after=after, changed_columns=changed,
            missing_columns=[c for c in rt.decoders if c not in raw] if rt.decoders else None,
            schema_version=rt.version,
            source_ts=source_ts, capture_ts=capture_ts, tx_id=tx_id, tx_seq=None, position=position,
        )
        out.extend(split_key_change(change) if before is not None and after is not None else (change,))
    return out, rt


def _digest(raw: dict[str, Any], old: Any) -> str:
    """The row as sent (its strings, and its `old` entry): what a redelivery repeats, hashed once (cheaper
    than hashing the typed images, and blind to the `mysqlType` spelling)."""
    data = orjson.dumps([raw, old], option=orjson.OPT_SORT_KEYS)
    return hashlib.blake2b(data, digest_size=16).hexdigest()
