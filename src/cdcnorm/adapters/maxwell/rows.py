"""The canonical row a Maxwell data message becomes (reference §3, §6): op, images, keys, changed and missing
columns, order, identity and transaction.

Images: `data` is the row after an insert / update and the deleted row of a delete; `old` holds the previous
values of the changed columns only, so the before image of an update is `data` overlaid with `old`. A column
`old` names that `data` lacks became NULL (`output_nulls=false` drops NULL columns from `data`; with
`output_nulls` on it was not captured). With
`output_nulls` off, a column absent from both is unknown, never NULL: it is in neither image, and a
NULL -> value change is missing from `old` (so `changed_columns`, the columns `old` names, may be incomplete:
the update is flagged `changed_columns_partial`, as Canal's are).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from cdcnorm.adapters.maxwell import positions
from cdcnorm.adapters.maxwell.envelope import ROW_TYPES
from cdcnorm.adapters.maxwell.values import Decoder, decode_image
from cdcnorm.canonical.record import Change
from cdcnorm.errors import DecodeError

PARTIAL = "changed_columns_partial"
"""An update whose `old` can miss a NULL -> value change (`output_nulls` off)."""

VENDOR, SOURCE_DB = "maxwell", "mysql"
UNTYPED = "untyped_values"


def json_hash(image: Any) -> bytes:
    """BLAKE2b-128 of a JSON image as sent (keys sorted; numbers by their exact text): the row part of an id."""
    return hashlib.blake2b(orjson.dumps(image, default=str, option=orjson.OPT_SORT_KEYS), digest_size=16).digest()


@dataclass(slots=True)
class Table:
    """What the options say about one table: its primary-key columns and declared column types."""

    keys: list[str] | None
    decoders: dict[str, Decoder] | None
    columns: list[str] | None


def _keys(msg: dict[str, Any], table: Table, msg_key: list[str] | None) -> list[str] | None:
    cols = msg.get("primary_key_columns")
    if isinstance(cols, list) and cols and all(isinstance(c, str) for c in cols):
        return list(cols)
    return msg_key or table.keys


def data_change(msg: dict[str, Any], fmt: str, stream: str, table: Table, delivery: tuple,
                msg_key: list[str] | None, output_nulls: bool,
                hash_row: Callable[[Any], bytes] = json_hash) -> Change:
    """One `insert` / `update` / `delete` / `bootstrap-insert` message -> its canonical row.

    Rows without a position are identified by their JSON images as sent (before typing: declaring column
    types later keeps the ids)."""
    vendor_op = msg["type"]
    op = ROW_TYPES[vendor_op]
    flags: list[str] = [] if table.decoders else [UNTYPED]
    data = decode_image(msg.get("data"), table.decoders, "data", flags)
    if data is None:
        raise DecodeError("bad_event", f"a Maxwell `{vendor_op}` without its `data` object")
    old = decode_image(msg.get("old"), table.decoders, "old", flags) if op == "UPDATE" else None
    pks = _keys(msg, table, msg_key)
    before = after = changed = None
    if op == "DELETE":
        before = data
    elif op == "UPDATE":
        after = dict(data)
        if not output_nulls:  # changed, and absent from `data`: it became NULL (Maxwell dropped it)
            for col in old or ():
                if col not in after:
                    after[col] = None
        before = {**after, **(old or {})}
        changed = list(old or ())
        if not output_nulls:
            flags.append(PARTIAL)
    else:
        after = data
    image = before if op == "DELETE" else after
    missing = None
    if table.columns is not None:
        missing = [c for c in table.columns if c not in image]
    elif output_nulls:  # every column is in `data`: only one `old` names and `data` lacks was not captured
        missing = [c for c in old or () if c not in image]
    key = {k: image.get(k) for k in pks} if pks and all(k in image for k in pks) else None
    key_values = tuple(image.get(k) for k in pks or ())
    tx_id, tx_seq, tx_last = positions.tx_fields(msg)
    if op == "SNAPSHOT":  # bootstrap rows: no position; `ts` is the wall-clock time of the bootstrap
        sort: tuple = (0, *delivery)
        ident: tuple = ("bootstrap", key_values, hash_row(msg.get("data")).hex())
        text, source_ts, capture_ts = None, None, positions.seconds(msg.get("ts"))
    else:
        w = positions.where(msg, delivery)
        sort = (1, *w.sort)
        ident = (op, *w.ident)
        if w.needs_row:
            raw_old = msg.get("old") if op == "UPDATE" else None
            ident = (*ident, key_values, hash_row(msg.get("data")).hex(), hash_row(raw_old).hex() if raw_old else None)
        if w.unknown:
            flags.append("unknown_position")
        text, source_ts, capture_ts = w.text, positions.seconds(msg.get("ts")), positions.millis(msg.get("push_ts"))
    return Change(
        vendor=VENDOR, format=fmt, stream=stream, op=op, sort_parts=sort, id_parts=ident, source_db=SOURCE_DB,
        database=msg.get("database") or None, table=msg.get("table") or None, vendor_op=vendor_op, flags=flags,
        primary_keys=pks, key=key, before=before, after=after, changed_columns=changed, missing_columns=missing,
        source_ts=source_ts, capture_ts=capture_ts, tx_id=tx_id if op != "SNAPSHOT" else None,
        tx_seq=tx_seq if op != "SNAPSHOT" else None, tx_last=tx_last if op != "SNAPSHOT" else None, position=text,
    )
