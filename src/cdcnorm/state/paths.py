"""Where `cdcnorm apply` writes each table: `LAKE/current/<vendor>/<stream>/<database>/<schema>/<table>/`.

Why a module of its own: the path rule is part of the lake's contract (readers outside cdcnorm rely on it) and
needs no Spark, so it is importable and testable on its own. Semantics: docs/apply.md.
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple
from urllib.parse import quote

CURRENT = "current"
HISTORY = "history"
TOMBSTONES = "current/_tombstones"
INDEX = "_tables.json"
MAX_COMPONENT = 200


class TableId(NamedTuple):
    """Identity of a source table: null-safe (vendor, stream, database, schema, table)."""

    vendor: str
    stream: str
    database: str | None
    schema: str | None
    table: str | None

    @property
    def name(self) -> str:
        """`database.schema.table` without the null parts (`db.table` for MySQL-family sources)."""
        return ".".join(p for p in (self.database, self.schema, self.table) if p is not None)


def path_component(value: str | None) -> str:
    """One folder name of the path rule: injective, safe on every file system, for Spark's listing and delta-rs.

    Percent-encode everything but letters, digits and `-._` (so `/` in stream names, `=`, `:`, `~`, `%` and glob
    characters are escaped), written with `~` instead of `%`: delta-rs decodes `%XX` in local table paths on
    some calls and not on others, so a `%` in a Delta table's path breaks it. A leading `.` or `_` is encoded
    too, which keeps `..` out and stops Hadoop/Spark treating the folder as hidden. That frees every spelling
    that starts with `_` for sentinels: null is `_`, the empty string is `_empty`, and a name whose encoding is
    longer than 200 characters (file systems allow 255 bytes) is `_h<32 hex of its SHA-256>_<the start of its
    encoding>`.
    """
    if value is None:
        return "_"
    if value == "":
        return "_empty"
    enc = quote(value, safe="").replace("~", "%7E")
    if enc[0] in "._":
        enc = f"%{ord(enc[0]):02X}{enc[1:]}"
    if len(enc) > MAX_COMPONENT:  # file systems cap a name at 255 bytes: `_h<hash>_<readable prefix>`
        digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        head = enc[:MAX_COMPONENT - 36]
        cut = head.rfind("%", len(head) - 2)  # never split a %XX escape
        enc = f"_h{digest}_{head[:cut] if cut >= 0 else head}"
    return enc.replace("%", "~")


def relative_path(tid: TableId, root: str = CURRENT) -> str:
    """`current/<vendor>/<stream>/<database>/<schema>/<table>` for a table, relative to the lake (`root`:
    `history` for its SCD type 2 table, `current/_tombstones` for apply's deleted keys)."""
    return "/".join((root, *(path_component(v) for v in tid)))


def table_path(lake: str, tid: TableId | tuple, root: str = CURRENT) -> str:
    """Where `cdcnorm apply` writes a table's current state: `LAKE/current/...` (see :func:`path_component`)."""
    return lake.rstrip("/") + "/" + relative_path(TableId(*tid), root)
