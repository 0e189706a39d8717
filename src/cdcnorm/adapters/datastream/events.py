"""One Datastream event (the JSON or Avro envelope around a payload) -> one canonical change: the op rule and
the ordering and identity recipes; a field that breaks them raises DecodeError naming it."""

from __future__ import annotations

from cdcnorm.adapters.datastream import source_metadata as smd
from cdcnorm.adapters.datastream import types as dtypes
from cdcnorm.adapters.datastream.payload import (
    binary_set,
    columns_id,
    decode_binary,
    key_of,
    payload_hash,
    raw_or_json,
)
from cdcnorm.adapters.datastream.spec import SPEC
from cdcnorm.canonical.record import Change
from cdcnorm.errors import DecodeError

OPS = {
    "INSERT": "INSERT", "CREATE": "INSERT", "READ": "INSERT", "UPDATE": "UPDATE", "UPDATE-INSERT": "UPDATE",
    "DELETE": "DELETE", "UPDATE-DELETE": "DELETE",
}
"""Datastream change_type -> canonical op (backfill rows become SNAPSHOT before this is consulted)."""

RANK = {"UPDATE-DELETE": 0}
"""Rank within one position: a key change's UPDATE-DELETE sorts before its UPDATE-INSERT (rank 1)."""

PAIR_ROLES = {"UPDATE-DELETE": "delete", "UPDATE-INSERT": "insert"}
"""The two halves of a primary-key change, paired by `post_process`."""
PAIR_SEP = "\x1f"
"""Between the parts of a pair id (`DatastreamAdapter.emitted_half_pair` builds the same id from lake rows)."""


def pair_of(ct: str, position: str | None, stream: str, database: str | None, schema: str | None,
            table: str | None) -> tuple[str | None, str | None]:
    """(`_pair`, `_pair_role`) of a key-change half at a known position; (None, None) for any other row."""
    if ct not in PAIR_ROLES or position is None:
        return None, None
    return PAIR_SEP.join((stream, database or "", schema or "", table or "", position)), PAIR_ROLES[ct]


def missing_field(ev: dict) -> str | None:
    """Which required envelope field is missing or of the wrong type, if any."""
    if not isinstance(ev.get("read_method"), str) or not ev["read_method"]:
        return "field read_method is missing or not a string"
    if not isinstance(ev.get("source_metadata"), dict):
        return "field source_metadata is missing or not an object"
    if not isinstance(ev.get("payload"), dict):
        return "field payload is missing or not an object"
    return None


def to_change(ev: dict, where: str, fmt: str, stream: str, binary_columns: list[str],
              avro_schema_id: str | None, raw: bytes | None, flags: list[str]) -> Change:
    """One Datastream event -> one canonical change (`raw`: the record's bytes, None for Avro records).

    sort_parts (the emitter appends the event id):
        backfill rows: (0, source_ts, (key values...))
        CDC rows:      (1, <position parts>, source_ts, rank) with rank 0 for UPDATE-DELETE, 1 otherwise;
        position parts per source: see :mod:`cdcnorm.adapters.datastream.source_metadata`.

    id_parts (hashed with vendor, stream, database, schema, table) - never `uuid`, which is shared by every
    event of a PostgreSQL backfill file, nor file names or read times:
        CDC rows:      (change_type, readable position, (key values...)) + payload hash when the table has no key
        backfill rows: (change_type, (key values...), Oracle row_id or None, payload hash)
    The same change read from an Avro and a JSON copy therefore gets one id (CDC rows); identical rows of a
    keyless table read by one backfill share an id (the source gives nothing to tell them apart).
    """
    problem = missing_field(ev)
    if problem:
        raise DecodeError("bad_event", f"{where}: {problem}; not a usable Datastream event", raw=raw_or_json(raw, ev))
    sm, payload, read_method = ev["source_metadata"], ev["payload"], str(ev["read_method"])
    try:
        source_ts = dtypes.parse_ts(ev.get("source_timestamp"))
        capture_ts = dtypes.parse_ts(ev.get("read_timestamp"))
    except (ValueError, TypeError) as exc:
        raise DecodeError("bad_event", f"{where}: source_timestamp/read_timestamp cannot be parsed ({exc})",
                          raw=raw_or_json(raw, ev)) from None
    source_db = smd.source_db(read_method, sm)
    database, schema, table = smd.ident(source_db, sm)
    table = table or smd.text(ev.get("object"))
    raw_ct = sm.get("change_type") if sm.get("change_type") is not None else sm.get("mod_type")  # Spanner
    change_type = "" if raw_ct is None else str(raw_ct)
    ct = change_type.strip().upper()
    backfill = smd.is_backfill(read_method, ct, sm)
    if ct in ("DELETE", "UPDATE-DELETE"):
        op = "DELETE"
    elif backfill:
        op = "SNAPSHOT"
    elif ct == "":
        op = "DELETE" if sm.get("is_deleted") is True else "INSERT"
        if op == "DELETE":
            flags.append("delete_by_is_deleted")
    elif ct in OPS:
        op = OPS[ct]
    else:
        raise DecodeError("unknown_op", f"{where}: change_type {change_type!r} is not a Datastream change type "
                          f"({', '.join(OPS)}); report it", raw=raw_or_json(raw, ev))
    try:
        payload = decode_binary(payload, binary_set(binary_columns, database, schema, table))
    except ValueError as exc:
        raise DecodeError("bad_hex", f"{where}: {exc}; fix the binary_columns option",
                          raw=raw_or_json(raw, ev)) from None
    if source_db in smd.UNVERIFIED_SOURCES:
        flags.append("unverified_source")
    if ct == "UPDATE-DELETE":
        flags.append("key_change")
    pks = smd.primary_keys(sm, source_db)
    key = key_of(payload, pks)
    key_values = tuple(key.values()) if key else ()
    sort_keys = ev.get("sort_keys") or []
    position_parts, position = ((), None) if backfill else smd.position(
        source_db, sm, sort_keys if isinstance(sort_keys, list) else [])
    if backfill:
        sort_parts: tuple = (0, source_ts, key_values)
        id_parts: tuple = (ct, key_values, smd.text(sm.get("row_id")), payload_hash(payload))
    else:
        sort_parts = (1, *position_parts, source_ts, RANK.get(ct, 1))
        id_parts = (ct, position if position is not None else source_ts, key_values)
        if not key:
            id_parts = (*id_parts, payload_hash(payload))
    pair, pair_role = pair_of(ct, position, stream, database, schema, table)
    return Change(
        vendor=SPEC.name, format=fmt, stream=stream, op=op, sort_parts=sort_parts, id_parts=id_parts,
        source_db=source_db, database=database, schema=schema, table=table,
        vendor_op=change_type if raw_ct is not None else None, flags=flags,
        primary_keys=pks, key=key, before=payload if op == "DELETE" else None,
        after=None if op == "DELETE" else payload, changed_columns=None, missing_columns=[],
        schema_version=smd.text(ev.get("schema_key")) or avro_schema_id or columns_id("json-", payload),
        source_ts=source_ts, capture_ts=capture_ts,
        tx_id=smd.text(sm.get("tx_id") if sm.get("tx_id") is not None else sm.get("server_transaction_id")),
        position=position, pair=pair, pair_role=pair_role,
    )
