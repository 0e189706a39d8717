"""The rows a Replicate message becomes: change rows of a data (DT) message, the DDL row and the schema version
of a metadata (MD) message.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import orjson

from cdcnorm.adapters.replicate.catalog import diff, type_label
from cdcnorm.adapters.replicate.envelope import Envelope
from cdcnorm.adapters.replicate.masks import DecodedMask, resolve
from cdcnorm.adapters.replicate.naming import VENDOR, Context, is_control, place
from cdcnorm.adapters.replicate.positions import data_positions, ddl_positions, instant
from cdcnorm.adapters.replicate.values import canonical_type, converters, typed_with
from cdcnorm.canonical.record import Change, SchemaColumn, SchemaVersion, split_key_change
from cdcnorm.errors import DecodeError

OPS: dict[str, str] = {"REFRESH": "SNAPSHOT", "INSERT": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE"}
"""Replicate `headers.operation` -> canonical op."""


@dataclass(slots=True)
class DataMessage:
    """One data message with its resolved metadata and table, between parsing and building changes."""

    env: Envelope
    entry: dict[str, Any] | None
    data: dict[str, Any] | None
    before: dict[str, Any] | None
    headers: dict[str, Any]
    image: dict[str, Any]
    schema: str | None
    table: str | None
    stream: str
    ctx: Context


def sections(record: Any) -> tuple[dict | None, dict | None, dict[str, Any]]:
    """(data, beforeData, headers) of a data record; custom formats may flatten headers to `headers_<x>`."""
    if not isinstance(record, dict):
        raise DecodeError("bad_message", "the data message is not an object")
    data, before, headers = record.get("data"), record.get("beforeData"), record.get("headers")
    for name, part in (("data", data), ("beforeData", before), ("headers", headers)):
        if part is not None and not isinstance(part, dict):
            raise DecodeError("bad_message", f"`{name}` of the data message must be an object")
    if len(record) == 3 and headers is not None and "data" in record and "beforeData" in record:
        return data, before, headers  # the documented shape: no flattened `headers_<x>` to merge (read only)
    flat = {k[len("headers_") :]: v for k, v in record.items() if k.startswith("headers_")}
    return data, before, {**flat, **(headers or {})}


def data_changes(r: DataMessage, source_db: str | None) -> list[Change]:
    """The change rows of one data message: typed images, masks, positions; a key change becomes two rows."""
    vendor_op = r.headers.get("operation")
    op = OPS.get(vendor_op.upper()) if isinstance(vendor_op, str) else None
    if op is None:
        raise DecodeError(
            "unknown_op",
            f"headers.operation {vendor_op!r} is not REFRESH, INSERT, UPDATE or "
            "DELETE; the message cannot be applied",
        )
    if op != "DELETE" and r.data is None:
        raise DecodeError("bad_message", f"a {vendor_op} message without `data` has no row to apply")
    flags: list[str] = []
    entry = r.entry
    if entry is None or entry.get("origin") == "registry":
        flags.append("no_schema")
    if entry is not None:
        names, types, pks, ordered, ncols, masks, convs = _plan(entry)
        pks = list(pks)
    else:
        names, types, pks = {i + 1: k for i, k in enumerate(r.image)}, {}, []
        ordered, ncols, masks, convs = [n for _, n in sorted(names.items())], max(names, default=0), None, {}
    data = typed_with(r.data, types, convs, flags)
    before = typed_with(r.before, types, convs, flags)
    changed = _resolve(r.headers.get("changeMask"), names, ncols, masks)
    present = _resolve(r.headers.get("columnMask"), names, ncols, masks)
    if changed.beyond or present.beyond:
        flags.append("mask_bits_beyond_columns")
    main = data if op != "DELETE" or data is not None else before
    missing = _missing(present.columns, ordered, main, op, flags)
    sort_parts, id_parts, tx_seq = data_positions(r.headers, op, vendor_op, main, pks)
    database, schema = place(source_db, r.schema)
    tx_last = r.headers.get("transactionLastEvent")
    change = Change(
        vendor=VENDOR,
        format=r.env.fmt,
        stream=r.stream,
        op=op,
        vendor_op=vendor_op,
        sort_parts=sort_parts,
        id_parts=id_parts,
        source_db=source_db,
        database=database,
        schema=schema,
        table=r.table,
        flags=flags,
        primary_keys=pks or None,
        schema_version=(entry or {}).get("schema_id") or r.env.schema_id,
        source_ts=instant(r.headers.get("timestamp")),
        capture_ts=r.ctx.capture_ts,
        tx_id=r.headers.get("transactionId") or None,
        tx_seq=tx_seq,
        tx_last=tx_last if isinstance(tx_last, bool) else None,
        position=r.headers.get("streamPosition") or None,
        missing_columns=missing,
    )
    if is_control(r.table, r.ctx.topic):
        change.op, change.primary_keys, change.missing_columns = "CONTROL", None, None
        change.id_parts = ("CONTROL", *id_parts)
        change.content = {"data": data, "beforeData": before}
        return [change]
    if op in ("INSERT", "SNAPSHOT"):
        change.after = data
    elif op == "UPDATE":
        change.after, change.before = data, before
    else:
        change.before = main
    if op in ("INSERT", "UPDATE"):
        change.changed_columns = None if changed.columns is None else list(changed.columns)
    return split_key_change(change)


def ddl_change(
    entry: dict[str, Any],
    previous: dict[str, Any],
    fmt: str,
    stream: str,
    source_db: str | None,
    capture_ts: dt.datetime | None,
) -> Change:
    """The DDL row of a new version of a known table: what changed since the `previous` entry."""
    database, schema = place(source_db, entry.get("schema"))
    sort_parts, id_parts = ddl_positions(entry)
    return Change(
        vendor=VENDOR,
        format=fmt,
        stream=stream,
        op="DDL",
        vendor_op="MD",
        sort_parts=sort_parts,
        id_parts=id_parts,
        source_db=source_db,
        database=database,
        schema=schema,
        table=entry["table"],
        ddl_changes=diff(previous, entry),
        schema_version=entry.get("schema_id"),
        source_ts=instant(entry.get("timestamp")),
        capture_ts=capture_ts,
        content={
            "tableVersion": entry.get("table_version"),
            "previousTableVersion": previous.get("table_version"),
            "previousSchemaId": previous.get("schema_id"),
        },
    )


def schema_version(
    entry: dict[str, Any], stream: str, schema: str | None, table: str | None, source_db: str | None
) -> SchemaVersion:
    """The schema version row of a catalog entry (an MD message or a registry schema)."""
    database, schema = place(source_db, schema)
    return SchemaVersion(
        vendor=VENDOR,
        stream=stream,
        schema_version=entry.get("schema_id") or f"v{entry.get('table_version')}",
        columns=[
            SchemaColumn(
                name=c["name"],
                vendor_type=type_label(c),
                canonical_type=canonical_type(c),
                ordinal=c["ordinal"],
                pk_position=c.get("pk_position") or None,
                nullable=c.get("nullable"),
            )
            for c in entry["columns"]
        ],
        source_db=source_db,
        database=database,
        schema=schema,
        table=table,
        first_seen=instant(entry.get("timestamp")),
        definition=orjson.dumps(entry, default=str).decode(),
    )


_Plan = tuple[dict[int, str], dict[str, Any], list[str], list[str], int, dict[Any, DecodedMask], dict[str, Any]]
_PLANS: dict[int, tuple[dict[str, Any], _Plan]] = {}


def _plan(entry: dict[str, Any]) -> _Plan:
    """What a catalog entry's messages need of its columns, computed once per entry instead of per message:
    (name by ordinal, type by name, key columns by pk position, names in ordinal order, highest ordinal, and
    a cache of the masks resolved against these columns, the value converters by name)."""
    cached = _PLANS.get(id(entry))
    if cached is not None and cached[0] is entry:
        return cached[1]
    names = {c["ordinal"]: c["name"] for c in entry["columns"]}
    types = {c["name"]: c.get("type") for c in entry["columns"]}
    pks = [c["name"] for c in sorted(entry["columns"], key=lambda c: c["pk_position"]) if c["pk_position"]]
    plan = (names, types, pks, [n for _, n in sorted(names.items())], max(names, default=0), {}, converters(types))
    if len(_PLANS) >= 4096:
        _PLANS.clear()
    _PLANS[id(entry)] = (entry, plan)
    return plan


def _resolve(mask: Any, names: dict[int, str], ncols: int, cache: dict[Any, DecodedMask] | None) -> DecodedMask:
    """`resolve`, remembered per table version: a table's messages carry a handful of distinct masks. The result
    may be shared between messages: it is only read (the changed columns a row keeps are copied)."""
    if cache is None or not isinstance(mask, str | bytes):
        return resolve(mask, names, ncols)
    hit = cache.get(mask)
    if hit is None:
        hit = resolve(mask, names, ncols)  # raises for a bad mask: nothing is cached then
        if len(cache) < 1024:
            cache[mask] = hit
    return hit


def _missing(
    present: list[str] | None, ordered: list[str], image: dict[str, Any] | None, op: str, flags: list[str]
) -> list[str] | None:
    """Columns not captured: columnMask bit 0 AND a null value (checklist 5). A value under a 0 bit is kept
    and flagged `column_mask_conflict`. Without a column mask: [] for REFRESH (full load reads whole rows),
    else unknown. `ordered`: the table's column names in ordinal order."""
    if present is None:
        return [] if op == "SNAPSHOT" else None
    captured = set(present)
    absent = [n for n in ordered if n not in captured]
    image = image or {}
    if any(image.get(n) is not None for n in absent):
        flags.append("column_mask_conflict")
    return [n for n in absent if image.get(n) is None]
