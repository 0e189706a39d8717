"""DataWorks' names for ops and source engines, mapped to canonical ones: the adapter's lookup tables."""

from __future__ import annotations

import functools
import re
from typing import Any

from cdcnorm.adapters.datahub.spec import SPEC

VENDOR = SPEC.name
FMT_BLOB, FMT_TUPLE = SPEC.formats

DML_OPS: dict[str, tuple[str, str]] = {
    "INSERT": ("INSERT", "after"),
    "DELETE": ("DELETE", "before"),
    "UPDATE_BEFOR": ("UPDATE", "before"),  # sic: DataWorks' spelling
    "UPDATE_BEFORE": ("UPDATE", "before"),
    "UPDATE_AFTER": ("UPDATE", "after"),
}
"""Blob DML op -> (canonical op, image the message carries)."""

DDL_OPS: dict[str, str] = {
    "CREATE": "DDL",
    "ALTER": "DDL",
    "ERASE": "DDL",  # DROP TABLE
    "QUERY": "DDL",  # other statements (CREATE/DROP DATABASE, ...)
    "RENAME": "DDL",
    "CINDEX": "DDL",
    "DINDEX": "DDL",
    "TRUNCATE": "TRUNCATE",
}

CONTROL_OPS: dict[str, str] = {
    "TRANSACTION_BEGIN": "TX_BEGIN",
    "TRANSACTION_END": "TX_COMMIT",
    "GTID": "CONTROL",
    "XACOMMIT": "CONTROL",
    "XAROLLBACK": "CONTROL",
    "MHEARTBEAT": "HEARTBEAT",
}

TUPLE_OPS: dict[str, str] = {"I": "INSERT", "U": "UPDATE", "D": "DELETE"}

SOURCE_DBS: dict[str, str] = {
    "mysql": "mysql",
    "oracle": "oracle",
    "postgresql": "postgresql",
    "postgres": "postgresql",
    "sqlserver": "sqlserver",
    "mssql": "sqlserver",
    "polardb": "polardb",
    "polardbmysql": "polardb",
    "polardbx": "polardbx",
    "drds": "drds",
    "mariadb": "mariadb",
}
MYSQL_FAMILY = frozenset({"mysql", "polardb", "polardbx", "drds", "mariadb"})
"""Engines without a schema level: the database name goes to `database`, `schema` stays null."""


def source_db_of(db_type: Any) -> str | None:
    """Canonical lower-case engine name from DataWorks' dbType (MySQL, Oracle, PostgreSQL, SQLServer, ...)."""
    if not isinstance(db_type, str) or not db_type.strip():
        return None
    return _source_db(db_type)


@functools.lru_cache(maxsize=256)
def _source_db(db_type: str) -> str:
    flat = re.sub(r"[\s_-]", "", db_type.lower())
    return SOURCE_DBS.get(flat, flat)

