"""Column type hints for `cdcnorm apply`: the user's word on a column's type beats the vendor's and inference.

Why at apply time (not normalize): a hint changes how the lake is read, not what it holds, so a wrong hint is
fixed by applying again, without re-normalizing; the schema versions keep recording what the vendor declared
and what the values looked like.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import orjson

from cdcnorm.errors import UsageError
from cdcnorm.state.types import OutputColumn, spark_type_name

if TYPE_CHECKING:
    from cdcnorm.state.plan import TablePlan


def parse_hints(specs: list[str] | None = None, file: str | os.PathLike | None = None) -> dict[str, str]:
    """`db.table.col=TYPE` options and a JSON hints file (`{"db.table.col": "TYPE", ...}`) -> {name: TYPE}.

    Options given on the command line win over the file's entries for the same name. A type must be one
    apply knows (`cdcnorm.state.types.spark_type_name`): an unknown spelling is an error, not a silent VARIANT.
    """
    hints: dict[str, str] = {}
    if file is not None:
        try:
            doc = orjson.loads(open(file, "rb").read())  # noqa: SIM115 - small file read once
        except (OSError, orjson.JSONDecodeError) as exc:
            raise UsageError(f"Cannot read the column type hints file {file}: {exc}") from None
        if not isinstance(doc, dict) or not all(isinstance(v, str) for v in doc.values()):
            raise UsageError(f"{file} must be a JSON object of \"db.table.column\": \"TYPE\" entries.")
        hints.update(doc)
    for spec in specs or []:
        name, sep, typ = spec.rpartition("=")
        if not sep or not name.strip() or not typ.strip():
            raise UsageError(f"--column-type {spec!r}: expected table.column=TYPE (e.g. shop.orders.paid_at=timestamp).")
        hints[name.strip()] = typ.strip()
    for name, typ in hints.items():
        if "." not in name:
            raise UsageError(f"Column type hint {name!r}: name the table too (table.column, db.table.column, ...).")
        if spark_type_name(typ) == "variant" and typ.strip().lower() not in ("variant", "json"):
            raise UsageError(f"Column type hint {name}={typ}: unknown type (use e.g. int, bigint, decimal(12,2), "
                             "date, timestamp, timestamp_ntz, string, boolean, binary, variant).")
    return hints


def apply_hints(plans: list[TablePlan], hints: dict[str, str], require_all: bool) -> None:
    """Replace the type of every hinted column; a hint names `table.col`, `schema.table.col` or `db.schema.table.col`
    (matched like `--table`: case-insensitive dotted suffix of `db.schema.table.column`).

    A hinted column the table does not have is added (null until its values arrive). With `require_all`
    (no `--table` filter), a hint matching no table is an error.
    """
    if not hints:
        return
    used: set[str] = set()
    for plan in plans:
        for name, typ in hints.items():
            if not _names(plan.tid, name):
                continue
            column = name.rpartition(".")[2]
            used.add(name)
            hinted = dataclasses.replace(_column(plan, column), type=spark_type_name(typ), canonical_type=typ,
                                         source="hint", note=None)
            plan.columns = [hinted if c.name == hinted.name else c for c in plan.columns]
            if all(c.name != hinted.name for c in plan.columns):
                plan.columns.append(hinted)
    unused = sorted(set(hints) - used)
    if unused and require_all:
        raise UsageError(f"Column type hints match no applied table: {', '.join(unused)}.")


def check_hints_used(hints: dict[str, str], tids: Iterable[Sequence[str | None]],
                     every_table: Callable[[], Iterable[Sequence[str | None]]]) -> None:
    """Refuse hints that name no table before an incremental apply writes anything: first against the tables it
    already knows (`tids`: targets and schema versions), then, only if some hint is left, against `every_table()`
    (one row per table of the changes: metadata, not data)."""
    left = [n for n in hints if not any(_names(t, n) for t in tids)]
    if left:
        known = list(every_table())
        left = [n for n in left if not any(_names(t, n) for t in known)]
    if left:
        raise UsageError(f"Column type hints match no applied table: {', '.join(sorted(left))}.")


def _names(tid: Sequence[str | None], hint: str) -> bool:
    """Whether `hint` (`[db.][schema.]table.column`) names a column of table `tid` (vendor, stream, db, schema, table)."""
    table = ".".join(p for p in tuple(tid)[2:5] if p is not None).lower()
    where = hint.rpartition(".")[0].strip().lower()
    return table == where or table.endswith("." + where)


def _column(plan: TablePlan, name: str) -> OutputColumn:
    found = [c for c in plan.columns if c.name == name] or [c for c in plan.columns if c.name.lower() == name.lower()]
    return found[0] if found else OutputColumn(name, "string")
