"""The canonical row a Debezium data event becomes: op, table identity, typed images, missing columns, keys,
order, identity and transaction (reference §2, §3, §5).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cdcnorm.adapters.debezium import mongo, positions
from cdcnorm.adapters.debezium.columns import UNTYPED, RowType, decode_image
from cdcnorm.adapters.debezium.keys import Key, key_values
from cdcnorm.adapters.debezium.unavailable import is_unavailable
from cdcnorm.canonical.record import Change, image_hash
from cdcnorm.errors import DecodeError

OPS = {"c": "INSERT", "u": "UPDATE", "d": "DELETE", "r": "SNAPSHOT", "t": "TRUNCATE"}
STREAMING = frozenset({"false", "none", ""})
SOURCE_DB = {"mysql": "mysql", "mariadb": "mariadb", "postgresql": "postgresql", "sqlserver": "sqlserver",
             "oracle": "oracle", "mongodb": "mongodb", "db2": "db2", "informix": "informix", "vitess": "mysql",
             "spanner": "spanner", "jdbc": None}
MYSQL_FAMILY = frozenset({"mysql", "mariadb"})
NEWKEY, OLDKEY = "__debezium.newkey", "__debezium.oldkey"


@dataclass(slots=True)
class Event:
    """One data event and what came with it: its format, stream, row type, message key and Kafka headers."""

    payload: dict[str, Any]
    fmt: str
    stream: str
    row: RowType
    key: Key | None
    headers: frozenset[str]
    option_pks: list[str] | None = None
    unavailable: Callable[[Any], bool] = is_unavailable
    link_by_position: bool = True


def is_snapshot(src: dict[str, Any]) -> bool:
    """Any `snapshot` marker but `false` (`true`, `first`, `last`, `*_in_data_collection`, `incremental`; old
    versions: a boolean)."""
    return str(src.get("snapshot")).lower() not in STREAMING


def table_of(connector: str, src: dict[str, Any]) -> tuple[str | None, str | None, str | None]:
    """(database, schema, table) from `source` (never the topic, which routing may rename)."""
    db = src.get("db") or None
    if connector == "mongodb":
        return db, None, src.get("collection") or None
    if connector in MYSQL_FAMILY:
        return db, None, src.get("table") or None
    return db, src.get("schema") or None, src.get("table") or None


def canonical_op(vendor_op: Any, src: dict[str, Any]) -> str:
    if vendor_op == "c" and is_snapshot(src):
        return "SNAPSHOT"  # old MySQL connectors sent snapshot rows as creates
    try:
        return OPS[vendor_op]
    except (KeyError, TypeError):
        raise DecodeError("unknown_op", f"op {str(vendor_op)[:20]!r} is not a Debezium operation "
                                        "(c, r, u, d, t, m)") from None


def _images(ev: Event, connector: str, flags: list[str]) -> tuple[Any, Any, list[str], list[str]]:
    p = ev.payload
    if connector == "mongodb":
        before, after = mongo.document(p.get("before"), "before"), mongo.document(p.get("after"), "after")
        if after is None and p.get("op") == "u" and p.get("patch") is not None:
            raise DecodeError("unsupported_format", "a MongoDB legacy oplog update carries only its `patch` (the "
                                                    "update operators), not the document: the row after it is "
                                                    "unknown. Capture with change streams (`capture.mode` "
                                                    "change_streams_update_full) to get the full document")
        if before is None and p.get("op") == "d" and ev.key is None:
            before = mongo.document(p.get("filter"), "filter")  # legacy oplog deletes name the _id there
        return before, after, [], []
    before, miss_b = decode_image(p.get("before"), ev.row, "before", flags, ev.unavailable)
    after, miss_a = decode_image(p.get("after"), ev.row, "after", flags, ev.unavailable)
    return before, after, miss_b, miss_a


def _keys(ev: Event, connector: str, before: Any, after: Any) -> tuple[list[str] | None, dict[str, Any] | None]:
    if ev.key is not None:
        pks, values = key_values(ev.key, connector)
    elif connector == "mongodb":
        pks, values = ["_id"], None
    else:
        pks, values = ev.option_pks, None
    if not pks:
        return None, None
    image = after if after is not None else before
    if image is not None and all(k in image for k in pks):
        return pks, {k: image[k] for k in pks}
    return pks, values


def data_change(ev: Event) -> Change:
    """The canonical row of one data event (op c, r, u, d, t)."""
    p = ev.payload
    src = p["source"]
    connector = positions.connector_of(src) or ""
    vendor_op = p.get("op")
    op = canonical_op(vendor_op, src)
    database, schema, table = table_of(connector, src)
    flags: list[str] = [] if ev.row.typed or connector == "mongodb" else [UNTYPED]
    before, after, miss_b, miss_a = _images(ev, connector, flags) if op != "TRUNCATE" else (None, None, [], [])
    pks, key = _keys(ev, connector, before, after) if op != "TRUNCATE" else (None, None)
    missing = miss_a
    if op == "DELETE":
        before, missing = _delete_image(before, miss_b, pks, key, connector)
    elif op in ("INSERT", "SNAPSHOT") and after is None:
        raise DecodeError("bad_event", f"a `{vendor_op}` event without an `after` image")
    elif op == "UPDATE" and after is None:
        raise DecodeError("bad_event", "a `u` event without an `after` image")
    if op == "UPDATE" and before is not None and pks and connector == "postgresql":
        before = _key_only(before, pks)[0]
    if op == "DELETE" and NEWKEY in ev.headers or op == "INSERT" and OLDKEY in ev.headers:
        flags.append("key_change")
    pos = positions.position(connector, src)
    tx_id, tx_seq = positions.tx_of(p, connector)
    source_ts = positions.source_time(src)
    if op == "SNAPSHOT":
        sort = (0, *pos.sort)
        ident: tuple = ("r", *(pos.ident or ()), image_hash(after).hex())
    elif pos.ident is None:
        flags.append("unknown_position")
        sort = (1, *pos.sort)
        ident = (op, "row", source_ts.isoformat() if source_ts else None, _key_tuple(pks, key),
                 image_hash(before).hex(), image_hash(after).hex())
    else:
        sort = (1, *pos.sort, 0 if op == "DELETE" else 1)  # a key change's delete and create share a position
        ident = (op, *pos.ident)
        if connector == "mongodb":  # one transaction's operations can share the oplog timestamp
            ident = (*ident, _key_tuple(pks, key))
    changed = mongo.update_columns(p.get("updateDescription")) if connector == "mongodb" and op == "UPDATE" else None
    if op == "UPDATE" and changed is None and connector != "mongodb" and before is not None and after is not None \
            and not miss_b and set(before) == set(after):
        changed = [k for k in after if after[k] != before[k]]
    pair = role = None
    if ev.link_by_position and op in ("DELETE", "INSERT") and pos.ident is not None and "key_change" not in flags:
        # without the key headers, a key change is a delete and a create at one position (post_process)
        pair, role = "\x1f".join(map(str, (ev.stream, database, schema, table, pos.text))), op.lower()
    return Change(
        vendor="debezium", format=ev.fmt, stream=ev.stream, op=op, sort_parts=sort, id_parts=ident,
        source_db=SOURCE_DB.get(connector, connector), database=database, schema=schema, table=table,
        vendor_op=str(vendor_op), flags=flags, primary_keys=pks, key=key, before=before, after=after,
        changed_columns=changed, missing_columns=missing if op != "TRUNCATE" else None,
        schema_version=ev.row.version if ev.row.typed else None, source_ts=source_ts,
        capture_ts=positions.capture_time(p), tx_id=tx_id, tx_seq=tx_seq, position=pos.text, pair=pair,
        pair_role=role,
    )


def _key_tuple(pks: list[str] | None, key: dict[str, Any] | None) -> tuple:
    return tuple((key or {}).get(k) for k in pks or ())


def _key_only(image: dict[str, Any], pks: list[str]) -> tuple[dict[str, Any], list[str]]:
    """A PostgreSQL old image under REPLICA IDENTITY DEFAULT holds the key only (other columns null): the other
    columns were not captured."""
    others = [k for k in image if k not in pks]
    if others and all(image[k] is None for k in others) and all(k in image for k in pks):
        return {k: image[k] for k in pks}, others
    return image, []


def _delete_image(before: Any, missing: list[str], pks: list[str] | None, key: dict[str, Any] | None,
                  connector: str) -> tuple[dict[str, Any], list[str] | None]:
    """The before image of a delete: the old row; PostgreSQL's key-only image keeps the key only; without any
    image (MongoDB without pre-images, REPLICA IDENTITY NOTHING) the message key."""
    if before is not None:
        if pks and connector in ("postgresql", "oracle"):
            before, others = _key_only(before, pks)
            return before, [*missing, *others]
        return before, missing
    if key:
        return dict(key), None
    raise DecodeError("bad_event", "a `d` event without a before image or a message key names no row; "
                                   "read the topic with its keys or give the table's `keys` option")
