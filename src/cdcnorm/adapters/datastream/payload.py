"""Row images as the recipes need them: keys, a payload hash, sorted-key JSON, and hex binary columns as bytes."""

from __future__ import annotations

import hashlib
from decimal import Decimal
from typing import Any

import orjson

from cdcnorm.adapters.datastream import types as dtypes


def _json_default(v: Any) -> Any:
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, bytes | bytearray | memoryview):
        return "0x" + bytes(v).hex()
    return str(v)


def dumps(v: Any) -> bytes:
    """Sorted-key JSON (Decimal as text, bytes as hex): the stable text of a payload or of a whole record."""
    return orjson.dumps(v, default=_json_default, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)


def raw_or_json(raw: bytes | None, obj: Any) -> bytes:
    """What a quarantine row keeps: the record's own bytes, else (decoded Avro) the record as JSON."""
    return raw if raw is not None else dumps(obj)


def payload_hash(payload: Any) -> str:
    """BLAKE2b-128 of the payload as sorted-key JSON: identifies a row image without a position."""
    return hashlib.blake2b(dumps(payload), digest_size=16).hexdigest()


def columns_id(prefix: str, payload: dict) -> str:
    """A schema version for rows that name none: derived from the column names."""
    return prefix + hashlib.sha1("\x1f".join(payload).encode()).hexdigest()[:16]


def _keyable(v: Any) -> Any:
    """Key values must be tuple-encodable: a MongoDB {'$oid': x} id becomes x, other objects their JSON text."""
    if isinstance(v, dict):
        if len(v) == 1 and "$oid" in v:
            return str(v["$oid"])
        return dumps(v).decode()
    if isinstance(v, list):
        return dumps(v).decode()
    return v


def key_of(payload: dict, pks: list[str] | None) -> dict | None:
    """Key object; a key column absent from the payload is matched case-insensitively (SQL Server samples)."""
    if not pks:
        return None
    lower = None
    key = {}
    for k in pks:
        if k in payload:
            key[k] = _keyable(payload[k])
            continue
        lower = lower or {c.lower(): c for c in payload}
        col = lower.get(k.lower())
        key[k] = _keyable(payload[col]) if col is not None else None
    return key


def binary_set(binary_columns: list[str], database: str | None, schema: str | None,
               table: str | None) -> set[str]:
    """Columns of this table named in `binary_columns` ('table.col', 'db.table.col', 'db.schema.table.col')."""
    if not binary_columns or not table:
        return set()
    quals = {table, f"{database}.{table}", f"{schema}.{table}", f"{database}.{schema}.{table}"}
    return {s.rsplit(".", 1)[1] for s in binary_columns if "." in s and s.rsplit(".", 1)[0] in quals}


def decode_binary(payload: dict, wanted: set[str]) -> dict:
    """Turn the hex strings of the `wanted` columns into bytes (MySQL binary columns arrive as hex text)."""
    if not wanted:
        return payload
    out = dict(payload)
    for col in wanted & payload.keys():
        value = payload[col]
        if value is None or isinstance(value, bytes):
            continue
        try:
            out[col] = dtypes.hex_to_bytes(value)
        except ValueError:
            raise ValueError(f"column {col} is listed in binary_columns but holds non-hex text") from None
    return out
