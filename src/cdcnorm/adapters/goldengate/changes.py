"""The canonical rows one GoldenGate operation becomes (reference §2, §4, §7).

| op_type (default letters) | row |
|---|---|
| `I` | INSERT, `after` (GoldenGate has no snapshot marker: an initial load arrives as `I`) |
| `U` | UPDATE; a primary-key change (the key differs between `before` and `after`) becomes the canonical DELETE of the old key + INSERT of the new key, flagged `key_change` |
| `D` | DELETE, `before` |
| `T` | TRUNCATE of the table |

What a record cannot know, said rather than guessed: `"before": {}` (or no / null `before`) on an update means
the before image is unknown, not an empty row - `before` stays null, the row is flagged `before_unknown`, and a
key change cannot be seen. A compressed update carries the key and the changed columns only: a column absent
from an image was not captured (never NULL); with the table's columns known (declared types, Avro `_isMissing`)
the absent ones are listed in `missing_columns`, else `missing_columns` is null (unknown). `apply` keeps the
previous value of every column an image lacks.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from cdcnorm.adapters.goldengate.positions import instant, pos_order
from cdcnorm.adapters.goldengate.values import TableTypes
from cdcnorm.canonical.record import Change, image_hash, key_of, split_key_change
from cdcnorm.errors import DecodeError

VENDOR = "goldengate"


@dataclass(slots=True)
class Op:
    """One GoldenGate operation, whatever formatter wrote it. `before` / `after` are None when absent or null;
    `before_empty` tells a `"before": {}`. `missing_*` come from Avro's `_isMissing` (None: not said)."""

    table: str
    op_type: str
    op_ts: Any = None
    current_ts: Any = None
    pos: Any = None
    primary_keys: list[str] | None = None
    tokens: dict[str, Any] | None = None
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    missing_before: list[str] | None = None
    missing_after: list[str] | None = None
    typed: bool = False
    """Values already typed by a schema (Avro): not flagged `untyped_values`."""
    row: bool = False
    """Row-modeled: the one image is in `after` (the before image of a delete)."""


@dataclass(slots=True)
class Tx:
    """The transaction an operation belongs to, when the input says (Kafka handler `mode=tx`)."""

    id: str
    seq: int
    last: bool


@dataclass
class Context:
    """What the adapter's options fix for every operation."""

    fmt: str
    stream: str
    ops: dict[str, str]
    tz: dt.tzinfo
    current_tz: dt.tzinfo
    keys: dict[str, list[str]] = field(default_factory=dict)
    types: dict[str, TableTypes] = field(default_factory=dict)
    tx_token: str | None = None
    source_db: str | None = None


def split_table(name: str) -> tuple[str | None, str | None, str]:
    """`CATALOG.SCHEMA.TABLE`, `SCHEMA.TABLE` or `TABLE` -> (database, schema, table)."""
    parts = name.split(".")
    if len(parts) >= 3:
        return ".".join(parts[:-2]), parts[-2], parts[-1]
    if len(parts) == 2:
        return None, parts[0], parts[1]
    return None, None, name


def per_table(option: dict[str, Any], name: str, schema: str | None, table: str) -> Any:
    """A per-table option's entry: the record's full name, then `SCHEMA.TABLE`, then `TABLE`."""
    if not option:
        return None
    for candidate in (name, f"{schema}.{table}" if schema else None, table):
        if candidate is not None and candidate in option:
            return option[candidate]
    return None


def _has_key(image: dict[str, Any] | None, pks: list[str]) -> bool:
    return image is not None and all(k in image for k in pks)


def changes_of(op: Op, ctx: Context, tx: Tx | None = None) -> list[Change]:
    """The canonical rows of one operation (one, or two for a primary-key change)."""
    kind = ctx.ops.get(op.op_type)
    if kind is None:
        letters = ", ".join(f"{k}={v}" for k, v in ctx.ops.items())
        raise DecodeError("unknown_op", f"op_type {str(op.op_type)[:40]!r} is none of the configured letters "
                                        f"({letters}; options insert_op_key .. truncate_op_key)")
    database, schema, table = split_table(op.table)
    flags: list[str] = []
    types: TableTypes | None = ctx.types.get(op.table)
    if types is None and ctx.types:
        types = per_table(ctx.types, op.table, schema, table)
    if not op.typed and types is None and kind != "TRUNCATE":
        flags.append("untyped_values")
    before, after = op.before, op.after
    if op.row and kind == "DELETE":
        before, after = after, None
    if types is not None:
        before = types.image(before, flags) if before else before
        after = types.image(after, flags) if after else after
    pks = op.primary_keys or per_table(ctx.keys, op.table, schema, table)
    pks = list(pks) if pks else None
    missing: list[str] | None = None
    if kind == "TRUNCATE":
        before = after = None
    elif kind == "INSERT":
        if after is None:
            raise DecodeError("bad_event", "an insert without an `after` image")
        before = None
        missing = _missing(after, op.missing_after, types)
    elif kind == "DELETE":
        if not before:
            raise DecodeError("bad_event", "a delete without a `before` image names no row")
        after = None
        missing = _missing(before, op.missing_before, types)
    else:
        if after is None:
            raise DecodeError("bad_event", "an update without an `after` image")
        if not before:
            before = None
            flags.append("before_unknown")
        missing = _missing(after, op.missing_after, types)
    changed = None
    if kind == "UPDATE" and before is not None and set(before) == set(after):
        changed = [k for k in after if after[k] != before[k]]
    source_ts = instant(op.op_ts, ctx.tz)
    pos = op.pos.strip() if isinstance(op.pos, str) and op.pos.strip() else None
    key = key_of(before if kind == "DELETE" else after, pks) if kind != "TRUNCATE" else None
    if pos is not None:
        # a row formatter's delete-insert for a key update: a D and an I at one pos, the delete first
        sort: tuple = (1, *pos_order(pos), 0 if kind == "DELETE" else 1)
        ident: tuple = (pos, kind)
    else:
        flags.append("unknown_position")
        us = (source_ts - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1) if source_ts else 0
        sort = (1, 2, us, 0, "", 0 if kind == "DELETE" else 1)
        ident = (kind, "row", source_ts.isoformat() if source_ts else None,
                 tuple((key or {}).values()), image_hash(before).hex(), image_hash(after).hex())
    tx_id = tx_seq = tx_last = None
    if ctx.tx_token and op.tokens and op.tokens.get(ctx.tx_token) not in (None, ""):
        tx_id = str(op.tokens[ctx.tx_token])
    if tx is not None:
        tx_id, tx_seq, tx_last = tx_id or tx.id, tx.seq, tx.last
    change = Change(
        vendor=VENDOR, format=ctx.fmt, stream=ctx.stream, op=kind, sort_parts=sort, id_parts=ident,
        source_db=ctx.source_db, database=database, schema=schema, table=table, vendor_op=str(op.op_type),
        flags=flags, primary_keys=pks, key=key, before=before, after=after, changed_columns=changed,
        missing_columns=missing, source_ts=source_ts, capture_ts=instant(op.current_ts, ctx.current_tz),
        tx_id=tx_id, tx_seq=tx_seq, tx_last=tx_last, position=pos,
    )
    if op.row and pos is not None and kind in ("DELETE", "INSERT"):
        # a row formatter's pkUpdateHandling=delete-insert: linked as a key change when both are there
        change.pair, change.pair_role = "\x1f".join(map(str, (ctx.stream, database, schema, table, pos))), kind.lower()
    if kind == "UPDATE" and pks and _has_key(before, pks) and _has_key(after, pks):
        return split_key_change(change)
    return [change]


def _missing(image: dict[str, Any], said: list[str] | None, types: TableTypes | None) -> list[str] | None:
    """Columns the image lacks: as Avro's `_isMissing` says, else the declared columns it does not hold, else
    unknown (None)."""
    if said is not None:
        return said
    if types is not None:
        return [c for c in types.columns if c not in image]
    return None
