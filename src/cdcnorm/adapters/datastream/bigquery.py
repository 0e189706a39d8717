"""Rows exported from Datastream-managed BigQuery tables (merge or append-only mode) -> canonical changes: they
carry a `datastream_metadata` struct instead of the event envelope (documented format, unverified)."""

from __future__ import annotations

from cdcnorm.adapters.datastream import types as dtypes
from cdcnorm.adapters.datastream.events import OPS, RANK, pair_of
from cdcnorm.adapters.datastream.payload import columns_id, key_of, payload_hash, raw_or_json
from cdcnorm.adapters.datastream.source_metadata import Ident, number_or_text, text
from cdcnorm.adapters.datastream.spec import SPEC
from cdcnorm.canonical.record import Change
from cdcnorm.errors import DecodeError

FMT_BIGQUERY = SPEC.formats[2]


def meta_key_of(row: dict) -> str | None:
    """The row's `datastream_metadata` column as it is spelt (exports may change its case)."""
    return next((k for k in row if str(k).lower() == "datastream_metadata"), None)


def table_of(bigquery_table: str | None, path: str | None) -> Ident:
    """(database, schema, table) of an export: the `bigquery_table` option, else the parent folder name."""
    name = bigquery_table
    if not name and path:
        parts = path.rstrip("/").split("/")
        name = parts[-2] if len(parts) >= 2 else None
    if not name:
        return None, None, None
    bits = name.split(".")
    if len(bits) == 1:
        return None, None, bits[0]
    if len(bits) == 2:
        return bits[0], None, bits[1]
    return bits[0], ".".join(bits[1:-1]), bits[-1]


def to_change(row: dict, meta_key: str, where: str, stream: str, table: Ident, primary_keys: list[str] | None,
              raw: bytes | None, flags: list[str]) -> Change:
    """One export row -> one canonical change, flagged `unverified_source`.

    Append-only rows: sort_parts (1, source_ts, change_sequence_number as int if numeric, rank), id_parts
    (change_type, source_ts, change_sequence_number, (key values...)) + payload hash without a key. Merge-mode
    rows are current state: sort_parts (0, source_ts, (key values...)), id_parts ('merge', key values, hash).
    """
    flags = [*flags, "unverified_source"]
    md = {str(k).lower(): v for k, v in (row.get(meta_key) or {}).items()}
    payload = {k: v for k, v in row.items() if k != meta_key}
    try:
        source_ts = dtypes.parse_ts(md.get("source_timestamp"))
    except (ValueError, TypeError) as exc:
        raise DecodeError("bad_event", f"{where}: datastream_metadata.source_timestamp cannot be parsed ({exc})",
                          raw=raw_or_json(raw, row)) from None
    database, schema, table_name = table
    pks = list(primary_keys) if primary_keys else None
    key = key_of(payload, pks)
    key_values = tuple(key.values()) if key else ()
    ct = str(md.get("change_type") or "").strip().upper()
    csn = md.get("change_sequence_number")
    csn_key = number_or_text(csn)
    sort_keys = md.get("sort_keys") or []
    position = ":".join(str(x) for x in sort_keys[1:]) if len(sort_keys) > 1 else text(csn)
    if "change_type" not in md:  # merge mode: current-state rows
        op = "DELETE" if md.get("is_deleted") is True else "SNAPSHOT"
        if op == "DELETE":
            flags.append("delete_by_is_deleted")
        sort_parts: tuple = (0, source_ts, key_values)
        id_parts: tuple = ("merge", key_values, payload_hash(payload))
        position = None
    elif ct in OPS:
        op = OPS[ct]
        if ct == "UPDATE-DELETE":
            flags.append("key_change")
        sort_parts = (1, source_ts, csn_key, RANK.get(ct, 1))
        id_parts = (ct, source_ts, csn_key, key_values) + (() if key else (payload_hash(payload),))
    else:
        raise DecodeError("unknown_op", f"{where}: change_type {md.get('change_type')!r} is not a Datastream "
                          "change type", raw=raw_or_json(raw, row))
    pair, pair_role = pair_of(ct, position, stream, database, schema, table_name)
    return Change(
        vendor=SPEC.name, format=FMT_BIGQUERY, stream=stream, op=op, sort_parts=sort_parts, id_parts=id_parts,
        database=database, schema=schema, table=table_name, vendor_op=md.get("change_type"), flags=flags,
        primary_keys=pks, key=key, before=payload if op == "DELETE" else None,
        after=None if op == "DELETE" else payload, missing_columns=[], schema_version=columns_id("bigquery-", payload),
        source_ts=source_ts, position=position, pair=pair, pair_role=pair_role,
    )
