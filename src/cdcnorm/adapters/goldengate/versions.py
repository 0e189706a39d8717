"""Schema versions of GoldenGate tables: the columns a user declared (`column_types`) or the Avro op
formatter's schema, so `apply` knows a table's columns, their order and types before every column was seen
(a compressed image lacks some; a column added later is absent from earlier images).

GoldenGate's JSON data carries no DDL and no schema; its Avro schemas (one per table version, `generateSchema`)
do. One version is sent once per stream and table.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from cdcnorm.adapters.goldengate.avro import MISSING
from cdcnorm.canonical.record import Change, SchemaColumn, SchemaVersion

_AVRO_TYPES = {"long": "bigint", "int": "int", "double": "double", "float": "float", "boolean": "boolean",
               "string": "string", "bytes": "binary"}
_LOGICAL = {"timestamp-micros": "timestamp", "timestamp-millis": "timestamp", "date": "date"}


def _id(prefix: str, columns: list[tuple[str, str | None, str | None]]) -> str:
    return prefix + hashlib.blake2b(orjson.dumps(columns), digest_size=8).hexdigest()


def declared(columns: list[tuple[str, str]]) -> tuple[str, list[tuple[str, str | None, str | None]]]:
    """(version id, columns) of declared column types, in declaration order."""
    cols: list[tuple[str, str | None, str | None]] = [(n, t, t.lower()) for n, t in columns]
    return _id("declared:", cols), cols


def merged_id(avro_id: str, columns: list[tuple[str, str | None, str | None]]) -> str:
    """The id of an Avro version whose text columns a user declared as other types."""
    return _id(avro_id + "+declared:", columns)


def _avro_canonical(t: Any) -> tuple[str, str | None]:
    """(the Avro type as text, its canonical type) of a column's Avro type (nullable unions unwrapped)."""
    if isinstance(t, list):
        rest = [x for x in t if x != "null"]
        t = rest[0] if len(rest) == 1 else rest
    text = orjson.dumps(t).decode()
    if isinstance(t, dict):
        logical = t.get("logicalType")
        if logical == "decimal":
            return text, f"decimal({t.get('precision')},{t.get('scale', 0)})"
        if logical in _LOGICAL:
            return text, _LOGICAL[logical]
        return text, _AVRO_TYPES.get(t.get("type"))  # type: ignore[arg-type]
    return text, _AVRO_TYPES.get(t) if isinstance(t, str) else None


def avro(schema: Any) -> tuple[str, list[tuple[str, str | None, str | None]]] | None:
    """(version id, columns) of an Avro op formatter schema: the columns of its image record."""
    fields = {f.get("name"): f.get("type") for f in schema.get("fields") or () if isinstance(f, dict)}
    rec = None  # the image record is defined once (usually in `before`); the other field names it
    for image in (fields.get("before"), fields.get("after")):
        for x in image if isinstance(image, list) else [image]:
            if isinstance(x, dict) and isinstance(x.get("fields"), list):
                rec = rec or x
    if not isinstance(rec, dict) or not isinstance(rec.get("fields"), list):
        return None
    cols = [(f["name"], *_avro_canonical(f["type"])) for f in rec["fields"]
            if isinstance(f, dict) and not str(f.get("name", "")).endswith(MISSING)]
    return _id("avro:", cols), cols


class Sent:
    """The versions one adapter sent: each once per (stream, table, version)."""

    def __init__(self) -> None:
        self.seen: set[tuple] = set()

    def version(self, change: Change, version: str, cols: list[tuple[str, str | None, str | None]]) -> \
            SchemaVersion | None:
        key = (change.stream, change.database, change.schema, change.table, version)
        if key in self.seen:
            return None
        self.seen.add(key)
        pks = change.primary_keys or []
        columns = [SchemaColumn(name=n, vendor_type=vt, canonical_type=ct, ordinal=i + 1,
                                pk_position=pks.index(n) + 1 if n in pks else None, nullable=None)
                   for i, (n, vt, ct) in enumerate(cols)]
        return SchemaVersion(vendor=change.vendor, stream=change.stream, schema_version=version, columns=columns,
                             source_db=change.source_db, database=change.database, schema=change.schema,
                             table=change.table, first_seen=change.source_ts or change.capture_ts)
