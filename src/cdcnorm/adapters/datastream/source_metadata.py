"""What an event's `source_metadata` means per source engine: the engine, the table identity, the key columns
and the log position (Datastream names them differently for MySQL, Oracle, PostgreSQL, SQL Server, ...)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from cdcnorm.adapters.datastream import types as dtypes
from cdcnorm.canonical.memo import Memo

SOURCE_DBS = {
    "mysql": "mysql", "oracle": "oracle", "oracle_dump": "oracle", "postgresql": "postgresql",
    "postgres": "postgresql", "sqlserver": "sqlserver", "salesforce": "salesforce", "mongodb": "mongodb",
    "mongo": "mongodb", "spanner": "spanner", "backfill": "mongodb", "cdc": "mongodb",
}
"""read_method prefix (before the first '-') -> source engine; MongoDB's read methods are bare backfill/cdc."""

UNVERIFIED_SOURCES = frozenset({"sqlserver", "salesforce", "mongodb", "spanner"})
"""Sources whose Datastream output was never seen in real files: their rows carry `unverified_source`."""

_BIN_SUFFIX = re.compile(r"(\d+)\s*$")

Ident = tuple[str | None, str | None, str | None]
"""(database, schema, table)."""

Position = tuple[tuple, str | None]
"""Position parts (compared numerically) and the readable position string."""


def text(v: Any) -> str | None:
    """A metadata value as text; absent and empty are both None."""
    return None if v is None or v == "" else str(v)


def integer(v: Any) -> int | None:
    """A metadata value as an int, or None when absent or not a number."""
    if v is None or v == "":
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def number_or_text(v: Any) -> int | str | None:
    """A sequence number: an int when numeric (so it compares numerically), else its text."""
    n = integer(v)
    return n if n is not None else text(v)


def source_db(read_method: str, sm: dict) -> str:
    """The source engine, from the read_method prefix (MongoDB events also tell by their `collection`)."""
    prefix = _PREFIX[read_method]
    if "collection" in sm and prefix not in SOURCE_DBS:
        return "mongodb"
    return SOURCE_DBS.get(prefix, prefix or "unknown")


_PREFIX = Memo(lambda read_method: read_method.strip().lower().split("-", 1)[0], 1024)
"""The source engine's prefix of a read_method (`mysql-cdc-binlog` -> `mysql`), by read_method."""
"""read_method -> its engine prefix (a stream has a handful of read methods)."""


def is_backfill(read_method: str, change_type: str, sm: dict) -> bool:
    """Backfill reads (`*backfill*`, `*dump*`, MongoDB `READ`, a snapshot flag) give SNAPSHOT rows."""
    rm = read_method.lower()
    return "backfill" in rm or "dump" in rm or change_type == "READ" or sm.get("snapshot") is True


# -- identity -------------------------------------------------------------------------------------------------
_IDENT: dict[str, Callable[[dict], Ident]] = {
    "mysql": lambda sm: (text(sm.get("database")), None, text(sm.get("table"))),
    "postgresql": lambda sm: (None, text(sm.get("schema")), text(sm.get("table"))),
    "mongodb": lambda sm: (text(sm.get("database")), None, text(sm.get("collection") or sm.get("table"))),
    "salesforce": lambda sm: (text(sm.get("domain")), None, text(sm.get("object_name") or sm.get("table"))),
    "spanner": lambda sm: (text(sm.get("database_id") or sm.get("database")), None, text(sm.get("table"))),
}
"""(database, schema, table) per source; Oracle, SQL Server and unknown sources use all three fields."""


def _ident_default(sm: dict) -> Ident:
    return text(sm.get("database")), text(sm.get("schema")), text(sm.get("table"))


def ident(source: str, sm: dict) -> Ident:
    """(database, schema, table) as this source engine names them."""
    return _IDENT.get(source, _ident_default)(sm)


def primary_keys(sm: dict, source: str) -> list[str] | None:
    """The key columns the event names (MongoDB: `_id` when it names none)."""
    for name in ("primary_keys", "replication_index", "primary_key"):
        pks = sm.get(name)
        if pks is not None:
            return [str(k) for k in (pks if isinstance(pks, list) else [pks])]
    return ["_id"] if source == "mongodb" else None


# -- positions ------------------------------------------------------------------------------------------------
def _mysql_pos(sm: dict, _sk: list) -> Position:
    file = sm.get("log_file") if sm.get("log_file") is not None else sm.get("binlog_file")
    pos = sm.get("log_position") if sm.get("log_position") is not None else sm.get("binlog_position")
    if not file and not pos:
        return (None, None), None
    number = _BINLOG_NUMBERS[file or ""]
    return (number, integer(pos)), f"{file}:{pos}"


def _binlog_file_number(file: str) -> int | None:
    """The number a binlog file name ends with ('mysql-bin.000042' -> 42)."""
    m = _BIN_SUFFIX.search(file)
    return int(m.group(1)) if m else None


_BINLOG_NUMBERS = Memo(_binlog_file_number, 1024)
"""Binlog file numbers by file name: events share a few files."""


def _oracle_pos(sm: dict, _sk: list) -> Position:
    scn, ssn = integer(sm.get("scn")), integer(sm.get("ssn"))
    rs = (sm.get("rs_id") or "").strip()
    try:
        rs_parts = tuple(int(p, 16) for p in rs.removeprefix("0x").split(".")) if rs else ()
    except ValueError:
        rs_parts = ()
    if scn is None and not rs:
        return (None, (), None), None
    return (scn, rs_parts, ssn), f"scn={scn},rs_id={rs},ssn={ssn}"


def _pg_pos(sm: dict, _sk: list) -> Position:
    lsn = (sm.get("lsn") or "").strip()
    hi, sep, lo = lsn.partition("/")
    try:
        return ((int(hi, 16) << 32) | int(lo, 16),) if sep else (None,), lsn or None
    except ValueError:
        return (None,), lsn or None


def _sqlserver_pos(sm: dict, _sk: list) -> Position:
    lsn = str(sm.get("lsn") or "").strip()
    try:
        return (tuple(int(p, 16) for p in lsn.split(":")) if lsn else (),), lsn or None
    except ValueError:
        return ((),), lsn or None


def _mongo_pos(_sm: dict, sk: list) -> Position:
    secs, nanos = (integer(sk[0]), integer(sk[1])) if len(sk) >= 2 else (None, None)
    if secs is None:
        return (None, None), None
    return (secs, nanos), f"{secs}.{(nanos or 0):09d}"


def _spanner_pos(sm: dict, _sk: list) -> Position:
    commit = sm.get("commit_timestamp")
    seq, mod = sm.get("record_sequence"), integer(sm.get("mod_index"))
    seq_key = number_or_text(seq)
    try:
        ns = dtypes.parse_ns(commit)
    except ValueError:
        ns = None
    if ns is None:
        return (None, None, None), None
    return (ns, seq_key, mod), f"{commit},{seq},{mod}"


_POSITION: dict[str, Callable[[dict, list], Position]] = {
    "mysql": _mysql_pos, "oracle": _oracle_pos, "postgresql": _pg_pos, "sqlserver": _sqlserver_pos,
    "mongodb": _mongo_pos, "spanner": _spanner_pos,
}
"""Position parts (compared numerically) and a readable position string, per source."""


def position(source: str, sm: dict, sort_keys: list) -> Position:
    """The log position of a CDC event; Salesforce and unknown sources have none (source_ts orders them)."""
    parse = _POSITION.get(source)
    return parse(sm, sort_keys) if parse else ((), None)
