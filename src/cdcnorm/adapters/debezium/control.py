"""Heartbeats, transaction boundaries and schema changes as canonical rows (reference §6, §10).

Transaction BEGIN / END arrive on their own topic, maybe in another run than their data: they become
TX_BEGIN / TX_COMMIT rows with `event_count` and the per-collection counts in `after`, and whether a
transaction is complete is a lake-level check, never assumed by one run.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from cdcnorm.adapters.ddl import parse_ddl
from cdcnorm.adapters.debezium import positions
from cdcnorm.adapters.debezium.changes import SOURCE_DB, table_of
from cdcnorm.adapters.numbers import lenient_int
from cdcnorm.canonical.record import Change, SchemaColumn, SchemaVersion
from cdcnorm.errors import DecodeError

VENDOR = "debezium"
_PG_TX = re.compile(r"^\d+:\d+$")


def heartbeat(payload: dict[str, Any], fmt: str, stream: str) -> Change:
    """A heartbeat `{ts_ms}`: the connector was alive at that time (nothing changed)."""
    ts = lenient_int(payload.get("ts_ms"))
    at = positions.capture_time(payload)
    return Change(vendor=VENDOR, format=fmt, stream=stream, op="HEARTBEAT", sort_parts=(1, ts or 0),
                  id_parts=("HEARTBEAT", ts), vendor_op="heartbeat", capture_ts=at, content={"ts_ms": ts})


def tx_group(tx_id: str) -> str:
    """PostgreSQL's `txId:LSN` (the LSN differs per event, BEGIN and END included) groups by its txId."""
    return tx_id.split(":", 1)[0] if _PG_TX.match(tx_id) else tx_id


def transaction(payload: dict[str, Any], fmt: str, stream: str) -> Change:
    """A transaction-topic BEGIN / END -> TX_BEGIN / TX_COMMIT with its counts."""
    status, raw_id = payload.get("status"), payload.get("id")
    if raw_id in (None, ""):
        raise DecodeError("bad_event", "a transaction BEGIN/END without an `id`")
    full = str(raw_id)
    collections = payload.get("data_collections")
    counts = None
    if isinstance(collections, list):
        counts = [{"data_collection": c.get("data_collection"), "event_count": lenient_int(c.get("event_count"))}
                  for c in collections if isinstance(c, dict)]
    content = {"status": status, "id": full, "event_count": lenient_int(payload.get("event_count")),
               "data_collections": counts}
    ts = lenient_int(payload.get("ts_ms"))
    end = status == "END"
    return Change(vendor=VENDOR, format=fmt, stream=stream, op="TX_COMMIT" if end else "TX_BEGIN",
                  sort_parts=(1, ts or 0, 1 if end else 0), id_parts=("TX", status, full), vendor_op=status,
                  tx_id=tx_group(full), tx_last=True if end else None, position=full,
                  capture_ts=positions.capture_time(payload), content=content)


_JDBC = {-7: "boolean", 16: "boolean", -6: "tinyint", 5: "smallint", 4: "int", -5: "bigint", 6: "double",
         8: "double", 7: "float", 91: "date", 92: "string", 93: "timestamp_ntz", 2014: "timestamp",
         2013: "string", -2: "binary", -3: "binary", -4: "binary", 2004: "binary"}


_TEXT_TYPES = (("bigint", "bigint"), ("smallint", "smallint"), ("tinyint", "tinyint"), ("int", "int"),
               ("double", "double"), ("float", "float"), ("real", "float"), ("bool", "boolean"),
               ("datetime", "timestamp_ntz"), ("timestamptz", "timestamp"), ("timestamp", "timestamp_ntz"),
               ("date", "date"), ("time", "time"), ("json", "json"), ("blob", "binary"), ("binary", "binary"),
               ("bytea", "binary"))
_DECIMAL_TEXT = re.compile(r"^(?:decimal|numeric|number)\s*\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)", re.I)


def _canonical_of_text(text: str | None) -> str:
    """The canonical type of a DDL type text (a CREATE TABLE without structured `tableChanges`)."""
    t = (text or "").strip().lower()
    m = _DECIMAL_TEXT.match(t)
    if m:
        return f"decimal({m[1]},{m[2] or 0})"  # wider than 38 digits: `apply` keeps exact text at this scale
    for prefix, canonical in _TEXT_TYPES:
        if t.startswith(prefix):
            return canonical
    return "string"


def _canonical(col: dict[str, Any]) -> str:
    jdbc = lenient_int(col.get("jdbcType"))
    if jdbc is None:
        return _canonical_of_text(col.get("typeExpression") or col.get("typeName"))
    if jdbc in (2, 3):
        p, s = lenient_int(col.get("length")), lenient_int(col.get("scale")) or 0
        return f"decimal({p},{s})" if p else "string"
    return _JDBC.get(jdbc, "string")


def _vendor_type(col: dict[str, Any]) -> str | None:
    text = col.get("typeExpression") or col.get("typeName")
    length, scale = col.get("length"), col.get("scale")
    if text and length is not None and "(" not in text and col.get("typeName") not in ("INT", "BIGINT"):
        return f"{text}({length}{f',{scale}' if scale is not None else ''})"
    return text


def _split_id(text: str) -> tuple[str | None, str | None, str | None]:
    """A tableChanges `id` `"db"."table"` / `"db"."schema"."table"` -> its parts."""
    parts = [p.strip('"') for p in re.findall(r'"[^"]*"|[^.]+', text or "")]
    if len(parts) == 3:
        return parts[0], parts[1], parts[2]
    if len(parts) == 2:
        return parts[0], None, parts[1]
    return None, None, parts[0] if parts else None


def schema_change(payload: dict[str, Any], fmt: str, stream: str) -> tuple[list[Change], list[SchemaVersion]]:
    """A schema-change topic event -> one DDL row per changed table (structured columns from `tableChanges`)
    and the schema version each table change describes."""
    src = payload.get("source") if isinstance(payload.get("source"), dict) else {}
    connector = positions.connector_of(src) or ""
    source_db = SOURCE_DB.get(connector, connector or None)
    ddl = payload.get("ddl") or None
    info = parse_ddl(ddl, source_db)
    pos = positions.position(connector, src) if connector else positions.UNKNOWN
    digest = hashlib.blake2b((ddl or "").encode(), digest_size=8).hexdigest()
    changes, versions = [], []
    table_changes = [t for t in payload.get("tableChanges") or () if isinstance(t, dict)]
    db_default = payload.get("databaseName") or src.get("db") or None
    targets = table_changes or [None]
    for i, tc in enumerate(targets):
        if tc is not None:
            database, schema, table = _split_id(str(tc.get("id") or ""))
        else:
            database, schema, table = table_of(connector, src) if connector else (db_default, None, None)
        database = database or db_default
        if source_db in ("mysql", "mariadb") and schema is not None:
            database, schema = database, None
        version = None
        if tc is not None and isinstance(tc.get("table"), dict):
            version = _version(tc, stream, source_db, database, schema, table)
        elif tc is None and info.columns:  # no structured tableChanges: the CREATE TABLE text itself
            version = _version({"table": {"primaryKeyColumnNames": info.primary_key or [], "columns": [
                {"name": n, "typeExpression": t, "position": i + 1} for i, (n, t) in enumerate(info.columns)]}},
                stream, source_db, database, schema, table)
        if version is not None:
            version.first_seen = positions.source_time(src) or positions.capture_time(payload)
            versions.append(version)
        changes.append(Change(
            vendor=VENDOR, format=fmt, stream=stream, op="DDL", sort_parts=(1, *pos.sort, i),
            id_parts=("DDL", *(pos.ident or (lenient_int(src.get("ts_ms")),)), digest, i),
            source_db=source_db, database=database, schema=schema, table=table,
            vendor_op=str(tc.get("type")) if tc is not None else "DDL", ddl=ddl, ddl_changes=info.changes,
            schema_version=version.schema_version if version else None, source_ts=positions.source_time(src),
            capture_ts=positions.capture_time(payload), position=pos.text,
        ))
    return changes, versions


def _version(tc: dict[str, Any], stream: str, source_db: str | None, database: str | None, schema: str | None,
             table: str | None) -> SchemaVersion:
    t = tc["table"]
    pks = [str(k) for k in t.get("primaryKeyColumnNames") or ()]
    cols = [c for c in t.get("columns") or () if isinstance(c, dict)]
    cols.sort(key=lambda c: lenient_int(c.get("position")) or 0)
    columns = [SchemaColumn(name=str(c.get("name")), vendor_type=_vendor_type(c), canonical_type=_canonical(c),
                            ordinal=lenient_int(c.get("position")) or i + 1,
                            pk_position=pks.index(c.get("name")) + 1 if c.get("name") in pks else None,
                            nullable=c.get("optional") if isinstance(c.get("optional"), bool) else None)
               for i, c in enumerate(cols)]
    text = repr([(c.name, c.vendor_type, c.canonical_type, c.pk_position, c.nullable) for c in columns])
    return SchemaVersion(vendor=VENDOR, stream=stream, schema_version="ddl:" + hashlib.blake2b(
        text.encode(), digest_size=8).hexdigest(), columns=columns, source_db=source_db, database=database,
        schema=schema, table=table)
