"""Maxwell DDL events (reference §7): `database-*` and `table-*` with the statement (`sql`), `ts` in
milliseconds, and for tables the definition after (`def`) and before (`old`) as Maxwell resolved it.

The column changes come from the statement through the shared DDL parser; the schema version from `def`
(Maxwell's own resolved columns and primary key), so a statement the parser cannot read still gives the
table's columns.
"""

from __future__ import annotations

import hashlib
from typing import Any

from cdcnorm.adapters.ddl import parse_ddl
from cdcnorm.adapters.maxwell import positions
from cdcnorm.adapters.maxwell.values import canonical_type
from cdcnorm.adapters.numbers import lenient_int
from cdcnorm.canonical.record import Change, SchemaColumn, SchemaVersion

VENDOR, SOURCE_DB = "maxwell", "mysql"


def _vendor_type(col: dict[str, Any]) -> str | None:
    t = col.get("type")
    if not isinstance(t, str):
        return None
    if isinstance(col.get("precision"), int):
        t = f"{t}({col['precision']},{col.get('scale') or 0})"
    elif col.get("column-length") is not None:
        t = f"{t}({col['column-length']})"
    if col.get("signed") is False:
        t += " unsigned"
    return t


def _canonical(col: dict[str, Any]) -> str | None:
    """The canonical type of a `def` column; a DECIMAL without its precision is unknown (None)."""
    found = canonical_type(col.get("type"))
    if found == "decimal":
        p = col.get("precision")
        return f"decimal({p},{col.get('scale') or 0})" if isinstance(p, int) and 0 < p <= 38 else None
    return found


def version_of(definition: Any, stream: str, database: str | None, table: str | None) -> SchemaVersion | None:
    """The schema version a table `def` describes (None when it holds no columns)."""
    if not isinstance(definition, dict):
        return None
    cols = [c for c in definition.get("columns") or () if isinstance(c, dict) and isinstance(c.get("name"), str)]
    if not cols:
        return None
    pks = [str(k) for k in definition.get("primary-key") or ()]
    columns = [SchemaColumn(name=c["name"], vendor_type=_vendor_type(c), canonical_type=_canonical(c),
                            ordinal=i + 1, pk_position=pks.index(c["name"]) + 1 if c["name"] in pks else None)
               for i, c in enumerate(cols)]
    text = repr([(c.name, c.vendor_type, c.pk_position) for c in columns])
    return SchemaVersion(vendor=VENDOR, stream=stream, schema_version="def:" + hashlib.blake2b(
        text.encode(), digest_size=8).hexdigest(), columns=columns, source_db=SOURCE_DB, database=database,
        table=table)


def ddl_change(msg: dict[str, Any], fmt: str, stream: str, delivery: tuple) -> tuple[Change, SchemaVersion | None]:
    """One DDL event -> its DDL row (and the table's schema version after it, from `def`)."""
    sql = msg.get("sql") if isinstance(msg.get("sql"), str) else None
    info = parse_ddl(sql, SOURCE_DB)
    database = msg.get("database") or None
    table = msg.get("table") or None
    definition = msg.get("def")
    if isinstance(definition, dict):
        database = database or definition.get("database") or None
        table = table or definition.get("table") or None
    when = positions.millis(msg.get("ts"))
    version = version_of(definition, stream, database, table)
    if version is not None:
        version.first_seen = when
    pos = positions.binlog(msg.get("position"))
    digest = hashlib.blake2b((sql or "").encode(), digest_size=8).hexdigest()
    if pos is not None:
        sort: tuple = (pos[1], pos[2], 0, *delivery)
        ident: tuple = ("DDL", msg.get("server_id"), pos[0], pos[2], digest)
    else:
        sort = ((lenient_int(msg.get("ts")) or 0) // 1000, *delivery)
        ident = ("DDL", msg.get("server_id"), lenient_int(msg.get("ts")), msg.get("type"), digest)
    change = Change(
        vendor=VENDOR, format=fmt, stream=stream, op="DDL", sort_parts=(1, *sort), id_parts=ident,
        source_db=SOURCE_DB, database=database, table=table, vendor_op=msg.get("type"), ddl=sql,
        ddl_changes=info.changes, schema_version=version.schema_version if version else None, source_ts=when,
        position=f"{pos[0]}:{pos[2]}" if pos else None,
    )
    return change, version
