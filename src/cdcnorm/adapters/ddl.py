"""DDL text -> structured column changes (sqlglot), shared by every adapter whose vendor delivers statements.

Vendors hand over DDL as text (DataWorks `payload.ddl.text`, Debezium's schema-change `ddl`, Canal's `sql`,
Maxwell's `sql`, DMS control records); only the text is portable, so it is parsed here with sqlglot in the
source's dialect (:data:`DIALECTS`, keyed by the canonical `source_db`). A statement sqlglot cannot parse (it
falls back to a generic `Command`) yields `None` ("unknown"), never a guess. :func:`apply_changes` folds the
changes into a column list, so an adapter derives the next schema version from the previous one.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

DIALECTS: dict[str, str] = {
    "mysql": "mysql",
    "polardb": "mysql",
    "mariadb": "mysql",
    "drds": "mysql",
    "polardbx": "mysql",
    "oracle": "oracle",
    "postgresql": "postgres",
    "sqlserver": "tsql",
}
"""Canonical `source_db` -> sqlglot dialect; other engines parse with sqlglot's default dialect."""

_ORACLE_MODIFY = re.compile(r"^\s*ALTER\s+TABLE\s+(\S+)\s+MODIFY\s*\((.*)\)\s*;?\s*$", re.I | re.S)


@dataclass(slots=True)
class DdlInfo:
    """What a DDL statement says about columns.

    `changes` is the list of column changes (empty when the statement changes no columns, None when the
    text could not be parsed); `columns`/`primary_key` are the full column list of a CREATE TABLE.
    """

    changes: list[dict[str, str | None]] | None
    columns: list[tuple[str, str | None]] | None = None
    primary_key: list[str] | None = None


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """sqlglot logs a warning for every statement it only understands as a Command; we report None."""
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def parse_ddl(text: str | None, source_db: str | None) -> DdlInfo:
    """Parse DDL text into column changes; unparseable text gives `changes=None`."""
    if not text or not text.strip():
        return DdlInfo(None)
    dialect = DIALECTS.get(source_db or "")
    try:
        with _quiet():
            statements = [s for s in sqlglot.parse(text, read=dialect) if s is not None]
    except (SqlglotError, ValueError, RecursionError):
        return DdlInfo(None)
    info = DdlInfo([])
    for st in statements:
        if not _collect(st, dialect, info):
            return DdlInfo(None)
    return info


def _collect(st: exp.Expression, dialect: str | None, info: DdlInfo) -> bool:
    """Add one statement's column changes to `info`; False when the statement was not understood."""
    changes = info.changes
    if isinstance(st, exp.Command):
        return _oracle_modify(st, dialect, changes)
    if isinstance(st, exp.Alter):
        for action in st.args.get("actions") or []:
            changes.extend(_alter_action(action, dialect))
    elif isinstance(st, exp.Create) and isinstance(st.this, exp.Schema):
        cols, pk = _create_columns(st.this, dialect)
        info.columns, info.primary_key = cols, pk
        changes.extend({"action": "add", "column": n, "new_name": None, "type": t} for n, t in cols)
    elif isinstance(st, exp.Execute):
        changes.extend(_sp_rename(st, dialect))
    return True


def _name(node: exp.Expression | None, dialect: str | None) -> str | None:
    """Column name as the database stores it: unquoted names fold to upper (Oracle) or lower (PostgreSQL)."""
    if node is None:
        return None
    ident = node if isinstance(node, exp.Identifier) else node.find(exp.Identifier)
    if ident is None:
        return node.name or None
    name = ident.this
    if not ident.args.get("quoted"):
        if dialect == "oracle":
            return name.upper()
        if dialect == "postgres":
            return name.lower()
    return name


def _type(node: exp.Expression | None, dialect: str | None) -> str | None:
    return node.sql(dialect=dialect) if node is not None else None


def _change(action: str, column: str | None, new_name: str | None = None, type_: str | None = None) -> dict:
    return {"action": action, "column": column, "new_name": new_name, "type": type_}


def _alter_action(action: exp.Expression, dialect: str | None) -> list[dict]:
    """Column changes of one ALTER TABLE action (table-level actions give none)."""
    if isinstance(action, exp.ColumnDef):
        return [_change("add", _name(action.this, dialect), None, _type(action.args.get("kind"), dialect))]
    if isinstance(action, exp.Schema):  # Oracle: ADD (c1 t1, c2 t2)
        return [c for e in action.expressions for c in _alter_action(e, dialect)]
    if isinstance(action, exp.Drop) and str(action.args.get("kind") or "").upper() == "COLUMN":
        return [_change("drop", _name(c, dialect)) for c in action.args.get("tables") or []]
    if isinstance(action, exp.RenameColumn):
        return [_change("rename", _name(action.this, dialect), _name(action.args.get("to"), dialect))]
    if isinstance(action, exp.ModifyColumn):
        return _modify(action, dialect)
    if isinstance(action, exp.AlterColumn) and action.args.get("dtype") is not None:
        return [_change("modify", _name(action.this, dialect), None, _type(action.args["dtype"], dialect))]
    return []


def _modify(action: exp.ModifyColumn, dialect: str | None) -> list[dict]:
    """MySQL MODIFY (type) and CHANGE old new type (rename, then the new column's type)."""
    coldef = action.this
    new = _name(coldef.this, dialect)
    typ = _type(coldef.args.get("kind"), dialect)
    old = action.args.get("rename_from")
    out = []
    if old is not None and _name(old, dialect) != new:
        out.append(_change("rename", _name(old, dialect), new))
    out.append(_change("modify", new, None, typ))
    return out


def _create_columns(
    schema: exp.Schema, dialect: str | None
) -> tuple[list[tuple[str, str | None]], list[str]]:
    cols: list[tuple[str, str | None]] = []
    pk: list[str] = []
    for e in schema.expressions:
        if isinstance(e, exp.ColumnDef):
            name = _name(e.this, dialect)
            cols.append((name, _type(e.args.get("kind"), dialect)))
            if any(
                isinstance(c.args.get("kind"), exp.PrimaryKeyColumnConstraint)
                for c in e.args.get("constraints") or []
            ):
                pk.append(name)
        elif isinstance(e, exp.PrimaryKey):
            pk.extend(_name(c, dialect) for c in e.expressions)
    return cols, pk


def _sp_rename(st: exp.Execute, dialect: str | None) -> list[dict]:
    """SQL Server renames a column with EXEC sp_rename 'tbl.old', 'new', 'COLUMN'."""
    args = [a.name for a in st.expressions if isinstance(a, exp.Literal)]
    if st.this.name.lower() != "sp_rename" or len(args) != 3 or args[2].upper() != "COLUMN":
        return []
    return [_change("rename", args[0].rsplit(".", 1)[-1], args[1])]


def _oracle_modify(st: exp.Command, dialect: str | None, changes: list[dict]) -> bool:
    """Oracle's ALTER TABLE t MODIFY (c type, ...), which sqlglot leaves as a Command."""
    m = _ORACLE_MODIFY.match(st.sql(dialect=dialect)) if dialect == "oracle" else None
    if m is None:
        return False
    try:
        with _quiet():
            create = sqlglot.parse_one(f"CREATE TABLE x ({m.group(2)})", read=dialect)
    except SqlglotError:
        return False
    if not isinstance(create, exp.Create) or not isinstance(create.this, exp.Schema):
        return False
    cols, _ = _create_columns(create.this, dialect)
    changes.extend(_change("modify", n, None, t) for n, t in cols)
    return True


def apply_changes(
    columns: list[tuple[str, str | None]], changes: list[dict[str, str | None]]
) -> list[tuple[str, str | None]]:
    """Apply column changes to a (name, type) list, idempotently.

    Why idempotent: a DDL message's `schema.dataColumn` may describe the table before or after the
    statement (undocumented), so an ADD of a present column or a DROP of an absent one is a no-op.
    """
    cols = list(columns)
    for ch in changes:
        names = [c[0] for c in cols]
        col, action = ch.get("column"), ch.get("action")
        if action == "add" and col not in names:
            cols.append((col, ch.get("type")))
        elif action == "drop" and col in names:
            cols.pop(names.index(col))
        elif action == "rename" and col in names and ch.get("new_name") not in names:
            i = names.index(col)
            cols[i] = (ch["new_name"], cols[i][1])
        elif action == "modify" and col in names:
            i = names.index(col)
            cols[i] = (col, ch.get("type"))
    return cols
