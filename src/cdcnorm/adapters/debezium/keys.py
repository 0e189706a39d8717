"""Primary keys of a Debezium event: from the Kafka message key when the input has it, else from the `keys`
option per table; else none (such rows are kept, but `apply` cannot merge them: no apply without a key).

A key is `{"schema", "payload"}` or the payload alone (JSON converter), or Avro; MongoDB keys are
`{"id": "<_id as Extended JSON>"}` and name the document's `_id`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from cdcnorm.adapters.debezium import mongo
from cdcnorm.adapters.debezium.columns import RowType, connect_row_type, decode_image
from cdcnorm.adapters.debezium.values import Modes
from cdcnorm.containers import loads_exact


@dataclass(slots=True)
class Key:
    """A message key: the raw key object and, with a schema, its row type."""

    payload: dict[str, Any]
    row: RowType | None = None


def parse_key(raw: Any, modes: Modes) -> Key | None:
    """A message key from its bytes / text / parsed JSON; None when absent or not an object (truncate events
    have a null key)."""
    if raw is None:
        return None
    doc = raw
    if isinstance(raw, bytes | bytearray | str):
        text = raw.strip() if isinstance(raw, str) else bytes(raw).strip()
        if not text or text in ("null", b"null"):
            return None
        try:
            doc = loads_exact(text)
        except (orjson.JSONDecodeError, ValueError):
            return None
    if isinstance(doc, dict) and "payload" in doc and set(doc) <= {"schema", "payload"}:
        schema = doc.get("schema")
        payload = doc.get("payload")
        if not isinstance(payload, dict):
            return None
        row = None
        if isinstance(schema, dict):
            row = connect_row_type(schema, orjson.dumps(schema, option=orjson.OPT_SORT_KEYS), modes, image=False)
        return Key(payload, row)
    return Key(doc) if isinstance(doc, dict) else None


def key_values(key: Key, connector: str) -> tuple[list[str], dict[str, Any]]:
    """(primary-key columns, typed key values) of a message key."""
    if connector == "mongodb" and set(key.payload) == {"id"}:
        return ["_id"], {"_id": mongo.key_value(key.payload["id"])}
    if key.row is not None:
        typed, _ = decode_image(key.payload, key.row, "key", [])
        return list(key.payload), typed or {}
    return list(key.payload), dict(key.payload)


def per_table(option: dict[str, Any], names: tuple[str | None, ...]) -> Any:
    """A per-table option's entry, looked up as `db.schema.table`, `db.table`, `schema.table`, then `table`."""
    if not option:
        return None
    database, schema, table = names
    for candidate in (f"{database}.{schema}.{table}", f"{database}.{table}", f"{schema}.{table}", table):
        if candidate in option:
            return option[candidate]
    return None


def option_keys(keys: dict[str, list[str]], names: tuple[str | None, ...]) -> list[str] | None:
    """The `keys` option's columns for a table (:func:`per_table`)."""
    found = per_table(keys, names)
    return list(found) if found else None
