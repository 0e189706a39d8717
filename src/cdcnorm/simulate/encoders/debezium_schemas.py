"""Debezium's vocabulary for the simulator: connectors, topics, column types and values, and the Connect
schemas of the envelope, source block, transaction, heartbeat and schema-change records.

Written from docs/reference (debezium.md) and the documented event shapes, never from the decoder: the
encoder (`encoders/debezium.py`) builds its records from these.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from cdcnorm.simulate.encoders.kafka_connect import DECIMAL, decimal_schema, schema, struct
from cdcnorm.simulate.history import EPOCH, Col, TableDef
from cdcnorm.simulate.jsonx import plain

VERSION = "3.0.1.Final"
DATABASE, PG_SCHEMA = "shop", "public"
PREFIX = {"mysql": "sim-mysql", "postgresql": "sim-pg"}
MYSQL_SERVER_ID, MYSQL_UUID = 223344, "5f1c2a0e-3b7d-11ef-9a4e-0242ac120002"
UNAVAILABLE = "__debezium_unavailable_value"
"""`unavailable.value.placeholder`: an unchanged TOASTed value PostgreSQL did not log."""
SNAPSHOT_ALLOWED = "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"


def connector_of(t: TableDef) -> str:
    """`mysql` for the history's MySQL tables, `postgresql` for the others."""
    return "mysql" if t.flavour == "mysql" else "postgresql"


def topic_of(t: TableDef) -> str:
    """`<prefix>.<db>.<table>` (MySQL) or `<prefix>.<schema>.<table>` (PostgreSQL)."""
    c = connector_of(t)
    return f"{PREFIX[c]}.{DATABASE if c == 'mysql' else PG_SCHEMA}.{t.name}"


def collection_of(t: TableDef) -> str:
    """The data collection a transaction names: `db.table` (MySQL), `schema.table` (PostgreSQL)."""
    return f"{DATABASE if connector_of(t) == 'mysql' else PG_SCHEMA}.{t.name}"


def replica_identity_full(t: TableDef) -> bool:
    """PostgreSQL `REPLICA IDENTITY`: DEFAULT for the customers template (no old row on `u`, only the key on
    `d`), FULL for the others. MySQL always has the full before image (`binlog_row_image=FULL`)."""
    return t.template != "customers"


# -- column types and values ---------------------------------------------------------------------------------
def column_schema(conn: str, col: Col, string_decimals: bool) -> dict[str, Any]:
    """The Connect schema Debezium gives a column (`time.precision.mode=adaptive_time_microseconds`)."""
    base, opt = col.base, col.nullable
    if base == "decimal":
        return schema("string", opt) if string_decimals else decimal_schema(*col.precision_scale, opt)
    if base == "date":
        return schema("int32", opt, "io.debezium.time.Date", 1)
    if base == "timestamp":  # MySQL DATETIME(6) -> MicroTimestamp; PostgreSQL timestamptz -> ZonedTimestamp
        if conn == "mysql":
            return schema("int64", opt, "io.debezium.time.MicroTimestamp", 1)
        return schema("string", opt, "io.debezium.time.ZonedTimestamp", 1)
    return schema({"int": "int32", "bigint": "int64", "double": "float64", "boolean": "boolean",
                   "string": "string", "binary": "bytes"}[base], opt)


def zoned(ts: dt.datetime) -> str:
    """ZonedTimestamp text: ISO-8601 in UTC with `Z`, trailing zeros of the fraction dropped (as Java prints)."""
    text = ts.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
    if ts.microsecond:
        text += "." + f"{ts.microsecond:06d}".rstrip("0")
    return text + "Z"


def column_value(conn: str, col: Col, v: Any, string_decimals: bool) -> Any:
    if v is None or v == UNAVAILABLE:
        return v
    base = col.base
    if base == "decimal":
        return plain(v) if string_decimals else v
    if base == "date":
        return (v - dt.date(1970, 1, 1)).days
    if base == "timestamp":
        return (v - EPOCH) // dt.timedelta(microseconds=1) if conn == "mysql" else zoned(v)
    return v


_FALLBACK = {"int32": 0, "int64": 0, "float64": 0.0, "boolean": False, "string": "", "bytes": b""}


def fallback(s: dict[str, Any]) -> Any:
    """What Debezium puts in a required column it has no value for (a PostgreSQL key-only before image)."""
    if s.get("name") == "io.debezium.time.ZonedTimestamp":
        return "1970-01-01T00:00:00Z"
    return _FALLBACK[s["type"]]


def vendor_type(conn: str, col: Col, string_decimals: bool) -> str:
    s = column_schema(conn, col, string_decimals)
    if s.get("name") == DECIMAL:
        p = s["parameters"]
        return f"{DECIMAL}(precision={p['connect.decimal.precision']},scale={p['scale']})"
    return s.get("name") or s["type"]


# -- the connectors' fixed schemas ---------------------------------------------------------------------------
def _opt(type_: str) -> dict[str, Any]:
    return schema(type_, True)


def source_schema(conn: str) -> dict[str, Any]:
    """`io.debezium.connector.<mysql|postgresql>.Source` (field order of 3.0)."""
    common = [("version", schema("string")), ("connector", schema("string")), ("name", schema("string")),
              ("ts_ms", schema("int64")),
              ("snapshot", schema("string", True, "io.debezium.data.Enum", 1, {"allowed": SNAPSHOT_ALLOWED},
                                  "false")),
              ("db", schema("string")), ("sequence", _opt("string")), ("ts_us", _opt("int64")),
              ("ts_ns", _opt("int64"))]
    if conn == "mysql":
        rest = [("table", _opt("string")), ("server_id", schema("int64")), ("gtid", _opt("string")),
                ("file", schema("string")), ("pos", schema("int64")), ("row", schema("int32")),
                ("thread", _opt("int64")), ("query", _opt("string"))]
    else:
        rest = [("schema", schema("string")), ("table", schema("string")), ("txId", _opt("int64")),
                ("lsn", _opt("int64")), ("xmin", _opt("int64"))]
    return struct(f"io.debezium.connector.{conn}.Source", common + rest)


TX_BLOCK = struct("event.block", [("id", schema("string")), ("total_order", schema("int64")),
                                  ("data_collection_order", schema("int64"))], optional=True, version=1)
TX_KEY = struct("io.debezium.connector.common.TransactionMetadataKey", [("id", schema("string"))])
TX_VALUE = struct("io.debezium.connector.common.TransactionMetadataValue", [
    ("status", schema("string")), ("id", schema("string")), ("event_count", _opt("int64")),
    ("data_collections", schema("array", True, items=struct(
        "event.collection", [("data_collection", schema("string")), ("event_count", schema("int64"))]))),
    ("ts_ms", schema("int64"))])
HEARTBEAT_KEY = struct("io.debezium.connector.common.ServerNameKey", [("serverName", schema("string"))])
HEARTBEAT_VALUE = struct("io.debezium.connector.common.Heartbeat", [("ts_ms", schema("int64"))])
_COLUMN = struct("io.debezium.connector.schema.Column", [
    ("name", schema("string")), ("jdbcType", schema("int32")), ("nativeType", _opt("int32")),
    ("typeName", schema("string")), ("typeExpression", _opt("string")), ("charsetName", _opt("string")),
    ("length", _opt("int32")), ("scale", _opt("int32")), ("position", schema("int32")),
    ("optional", _opt("boolean")), ("autoIncremented", _opt("boolean")), ("generated", _opt("boolean")),
    ("comment", _opt("string")), ("defaultValueExpression", _opt("string")),
    ("enumValues", schema("array", True, items=schema("string")))])
_CHANGE = struct("io.debezium.connector.schema.Change", [
    ("type", schema("string")), ("id", schema("string")),
    ("table", struct("io.debezium.connector.schema.Table", [
        ("defaultCharsetName", _opt("string")),
        ("primaryKeyColumnNames", schema("array", True, items=schema("string"))),
        ("columns", schema("array", items=_COLUMN)), ("comment", _opt("string"))], optional=True)),
    ("comment", _opt("string"))])
SCHEMA_CHANGE_KEY = struct("io.debezium.connector.mysql.SchemaChangeKey", [("databaseName", schema("string"))])
SCHEMA_CHANGE_VALUE = struct("io.debezium.connector.mysql.SchemaChangeValue", [
    ("source", source_schema("mysql")), ("ts_ms", schema("int64")), ("databaseName", _opt("string")),
    ("schemaName", _opt("string")), ("ddl", _opt("string")), ("tableChanges", schema("array", items=_CHANGE))])

_MYSQL_DDL = {"int": ("INT", 4), "bigint": ("BIGINT", -5), "double": ("DOUBLE", 8), "boolean": ("BOOLEAN", 16),
              "string": ("VARCHAR", 12), "date": ("DATE", 91), "timestamp": ("DATETIME", 93),
              "binary": ("VARBINARY", -3), "decimal": ("DECIMAL", 3)}


def mysql_column(col: Col, position: int) -> dict[str, Any]:
    type_name, jdbc = _MYSQL_DDL[col.base]
    length = scale = None
    if col.base == "decimal":
        length, scale = col.precision_scale
    elif col.base == "string":
        length = 32 if col.added else 255
    elif col.base == "timestamp":
        length = 6
    elif col.base == "binary":
        length = 16
    expression = type_name if length is None else f"{type_name}({length}{'' if scale is None else f',{scale}'})"
    return {"name": col.name, "jdbcType": jdbc, "nativeType": None, "typeName": type_name,
            "typeExpression": expression, "charsetName": "utf8mb4" if col.base == "string" else None,
            "length": length, "scale": scale, "position": position, "optional": col.nullable,
            "autoIncremented": False, "generated": False, "comment": None, "defaultValueExpression": None,
            "enumValues": None}


def create_table_ddl(t: TableDef, version: int) -> str:
    cols = [f"`{c['name']}` {c['typeExpression']}{'' if c['optional'] else ' NOT NULL'}"
            for c in (mysql_column(col, i + 1) for i, col in enumerate(t.columns_at(version)))]
    if t.primary_key:
        cols.append("PRIMARY KEY (" + ", ".join(f"`{k}`" for k in t.primary_key) + ")")
    return f"CREATE TABLE `{t.name}` (" + ", ".join(cols) + ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"


# -- per table version: key, value and envelope schemas --------------------------------------------------------
class Version:
    """One table version's Connect schemas: columns, `<topic>.Value`, `<topic>.Key`, `<topic>.Envelope`."""

    def __init__(self, t: TableDef, version: int, string_decimals: bool):
        conn, topic = connector_of(t), topic_of(t)
        self.columns = t.columns_at(version)
        self.col_schemas = {c.name: column_schema(conn, c, string_decimals) for c in self.columns}
        self.value = struct(f"{topic}.Value", [(c.name, self.col_schemas[c.name]) for c in self.columns],
                            optional=True)
        self.key = struct(f"{topic}.Key", [(k, {**self.col_schemas[k], "optional": False}) for k in t.primary_key])
        env = struct(f"{topic}.Envelope", [
            ("before", self.value), ("after", self.value), ("source", source_schema(conn)),
            ("transaction", TX_BLOCK), ("op", schema("string")), ("ts_ms", _opt("int64")),
            ("ts_us", _opt("int64")), ("ts_ns", _opt("int64"))])
        if conn == "mysql":
            env["version"] = 2
        self.envelope = env
