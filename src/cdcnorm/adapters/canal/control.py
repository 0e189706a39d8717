"""DDL messages and TiCDC watermarks as canonical rows (reference §1, §6).

A DDL message (`isDdl: true`) carries the statement in `sql` (client comments included) and Canal's parsed
`table`; its `database` is the session's default schema, which can differ from the schema the statement names
(`database: "inventory"` with `CREATE TABLE xj_.user02`): the statement's own schema wins. The statement is
parsed by the shared DDL module; `TRUNCATE` becomes the canonical TRUNCATE, every other type (`CREATE`,
`ALTER`, `ERASE`, `RENAME`, `CINDEX`, `DINDEX`, `QUERY`, DRS `INIT_DDL`) a DDL row. A TiCDC
`TIDB_WATERMARK` (every change before its `watermarkTs` was sent) is a HEARTBEAT row.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from cdcnorm.adapters.canal.changes import VENDOR, Context, Place
from cdcnorm.adapters.canal.envelope import int_or_none, ms_time, text_or_none, tidb
from cdcnorm.adapters.ddl import parse_ddl
from cdcnorm.canonical.record import Change

_COMMENTS = re.compile(r"/\*.*?\*/|--[^\n]*|#[^\n]*", re.S)
_IDENT = r"(?:`(?:[^`]|``)+`|[\w$]+)"
_TARGET = re.compile(
    rf"^\s*(?:CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMPORARY\s+)?TABLE|ALTER\s+(?:ONLINE\s+|IGNORE\s+)?TABLE|"
    rf"DROP\s+(?:TEMPORARY\s+)?TABLE|TRUNCATE(?:\s+TABLE)?|RENAME\s+TABLE|"
    rf"CREATE\s+(?:UNIQUE\s+|FULLTEXT\s+|SPATIAL\s+)?INDEX\s+{_IDENT}\s+ON|DROP\s+INDEX\s+{_IDENT}\s+ON)"
    rf"\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?(?P<first>{_IDENT})(?:\s*\.\s*(?P<second>{_IDENT}))?", re.I)


def _unquote(name: str) -> str:
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


def statement_table(sql: str | None) -> tuple[str | None, str | None]:
    """(schema, table) the statement itself names (schema None when unqualified; both None when not a table
    statement)."""
    m = _TARGET.match(_COMMENTS.sub(" ", sql or ""))
    if m is None:
        return None, None
    if m["second"] is None:
        return None, _unquote(m["first"])
    return _unquote(m["first"]), _unquote(m["second"])


def ddl_change(msg: dict[str, Any], ctx: Context, place: Place) -> Change:
    """The DDL (or TRUNCATE) row of one DDL message."""
    vtype = msg["type"]
    sql = msg.get("sql") if isinstance(msg.get("sql"), str) else None
    schema_named, table_named = statement_table(sql)
    database = schema_named or text_or_none(msg.get("database")) or ctx.database
    table = text_or_none(msg.get("table")) or table_named
    es = int_or_none(msg.get("es"))
    ext = tidb(msg)
    commit_ts = int_or_none(ext.get("commitTs"))
    gtid = text_or_none(msg.get("gtid"))
    source_db = "tidb" if ext else ctx.source_db
    info = parse_ddl(sql, source_db if source_db != "tidb" else "mysql")
    digest = hashlib.blake2b((sql or "").encode(), digest_size=8).hexdigest()
    batch = int_or_none(msg.get("id")) if ctx.batch_id_identity else None
    ident = ("DDL", "commitTs", commit_ts, digest) if commit_ts is not None else ("DDL", es, gtid, batch, digest)
    return Change(
        vendor=VENDOR, format=ctx.fmt, stream=ctx.stream, op="TRUNCATE" if vtype == "TRUNCATE" else "DDL",
        sort_parts=(1, es or 0, commit_ts or 0, place.group, place.offset, 0), id_parts=ident,
        source_db=source_db, database=database, table=table, vendor_op=vtype, ddl=sql, ddl_changes=info.changes,
        source_ts=ms_time(es), capture_ts=ms_time(msg.get("ts")),
        tx_id=str(commit_ts) if commit_ts is not None else gtid,
        position=f"commitTs:{commit_ts}" if commit_ts is not None else (f"gtid:{gtid}" if gtid else None),
    )


def watermark(msg: dict[str, Any], ctx: Context, place: Place) -> Change:
    """A TiCDC watermark: every change committed before `watermarkTs` was sent (nothing changed)."""
    ts = int_or_none(tidb(msg).get("watermarkTs"))
    es = int_or_none(msg.get("es"))
    return Change(
        vendor=VENDOR, format=ctx.fmt, stream=ctx.stream, op="HEARTBEAT",
        sort_parts=(1, es or 0, ts or 0, place.group, place.offset, 0), id_parts=("WATERMARK", ts, es),
        source_db="tidb", database=text_or_none(msg.get("database")), table=text_or_none(msg.get("table")),
        vendor_op=msg["type"], source_ts=ms_time(es), capture_ts=ms_time(msg.get("ts")),
        position=f"watermarkTs:{ts}" if ts is not None else None, content={"watermarkTs": ts},
    )
