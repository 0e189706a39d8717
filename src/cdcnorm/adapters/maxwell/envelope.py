"""What one Maxwell message is (reference §1, §2): a data row, a bootstrap marker or row, or a DDL event, with
the envelope's key names made canonical and its encryption undone.

Recognition: `type` in lower-case kebab form and `data` an object (Canal's `data` is an array), or a DDL event
(`type` `database-*` / `table-*` with `sql`), or `{"encrypted": {...}}` alone (`encrypt=all`).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from cdcnorm.adapters.maxwell.crypto import decrypt
from cdcnorm.containers import loads_exact
from cdcnorm.errors import DecodeError

ROW_TYPES = {"insert": "INSERT", "update": "UPDATE", "delete": "DELETE", "bootstrap-insert": "SNAPSHOT"}
MARKERS = frozenset({"bootstrap-start", "bootstrap-complete"})
DDL_TYPES = frozenset({"database-create", "database-alter", "database-drop", "table-create", "table-alter",
                       "table-drop"})

CAMEL = {"serverId": "server_id", "threadId": "thread_id", "schemaId": "schema_id", "pushTs": "push_ts",
         "primaryKey": "primary_key", "primaryKeyColumns": "primary_key_columns"}
"""`output_naming_strategy=underscore_to_camelcase` spellings of the envelope keys (FieldNames.java)."""

_SNIFF_TYPE = re.compile(rb'"type"\s*:\s*"(?:insert|update|delete|bootstrap-(?:start|insert|complete)|'
                         rb'(?:table|database)-(?:create|alter|drop))"')
_SNIFF_DATA = re.compile(rb'"data"\s*:\s*\{')


def sniff(head: bytes) -> bool:
    """The first JSON object of a file (or a message) is a Maxwell message: its envelope, not its columns, is
    looked at (a column may be called `payload` or `source`)."""
    first = head.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)[0]
    if not first.startswith(b"{"):
        return False
    try:
        msg = orjson.loads(first)
    except orjson.JSONDecodeError:  # a line longer than the head: its start only
        return bool(_SNIFF_TYPE.search(first[:4096])) and bool(_SNIFF_DATA.search(first[:4096])) \
            and b'"isDdl"' not in first
    if not isinstance(msg, dict):
        return False
    if set(msg) == {"encrypted"}:
        return isinstance(msg["encrypted"], dict) and {"iv", "bytes"} <= set(msg["encrypted"])
    t = msg.get("type")
    if t in ROW_TYPES or t in MARKERS:
        return isinstance(msg.get("data"), dict) or isinstance(msg.get("encrypted"), dict)
    return t in DDL_TYPES and isinstance(msg.get("sql"), str)


def canonical_keys(msg: dict[str, Any], strategy: str) -> dict[str, Any]:
    """The envelope with underscore key names, whatever `output_naming_strategy` wrote."""
    if strategy == "underscore" or not any(k in CAMEL for k in msg):
        return msg
    return {CAMEL.get(k, k): v for k, v in msg.items()}


def parse(value: bytes | dict[str, Any], key: str | None, strategy: str) -> dict[str, Any]:
    """One message as a dict with underscore envelope keys and `data` / `old` in the clear."""
    msg = loads_exact(value) if isinstance(value, bytes | bytearray | str) else value
    if not isinstance(msg, dict):
        raise DecodeError("bad_event", "a Maxwell message is one JSON object")
    if "encrypted" in msg:
        plain = loads_exact(decrypt(msg["encrypted"], key).strip())
        if not isinstance(plain, dict):
            raise DecodeError("bad_message", "the decrypted Maxwell message is not a JSON object")
        if set(msg) == {"encrypted"}:  # encrypt=all: the whole message
            msg = plain
        else:  # encrypt=data: `data` and `old` only
            msg = {**{k: v for k, v in msg.items() if k != "encrypted"}, **plain}
    return canonical_keys(msg, strategy)


def kind_of(msg: dict[str, Any]) -> str:
    """`row`, `marker` or `ddl`; anything else is refused."""
    t = msg.get("type")
    if t in ROW_TYPES:
        return "row"
    if t in MARKERS:
        return "marker"
    if t in DDL_TYPES:
        return "ddl"
    raise DecodeError("unknown_op", f"type {str(t)[:30]!r} is not a Maxwell message type (insert, update, delete, "
                                    "bootstrap-*, database-*, table-*)")
