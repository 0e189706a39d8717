"""`cdcnorm apply`: write the current-state tables of a lake and list them."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from cdcnorm.cli.guard import EXIT_OK, run_guarded
from cdcnorm.cli.options import LakeOpt, MasterOpt, check_lakes_exist
from cdcnorm.cli.output import console


def apply_cmd(
    lake: LakeOpt,
    table: Annotated[list[str] | None, typer.Option("--table", help="Only these tables (table, schema.table or db.schema.table).")] = None,
    master: MasterOpt = None,
    column_type: Annotated[list[str] | None, typer.Option(
        "--column-type", help="A column's type, over the vendor's and the inferred one: table.col=TYPE "
                              "(or schema.table.col / db.schema.table.col), e.g. shop.orders.paid_at=timestamp.")] = None,
    column_types: Annotated[str | None, typer.Option(
        "--column-types", help='A JSON file of hints: {"db.table.col": "TYPE", ...}; --column-type wins.')] = None,
) -> None:
    """Build the current state of every source table under LAKE/current/."""
    run_guarded(lambda: apply_command(lake, table, master, column_type, column_types))


def apply_command(lake: str, tables: list[str] | None, master: str | None, column_type: list[str] | None = None,
                  column_types: str | None = None) -> int:
    """`cdcnorm apply --lake LAKE [--table T ...] [--column-type T.C=TYPE ...]`: write the tables and list them."""
    from cdcnorm.session import get_spark
    from cdcnorm.state import CURRENT, INDEX, apply
    from cdcnorm.state.hints import parse_hints

    check_lakes_exist(lake)
    hints = parse_hints(column_type, column_types)
    with console.status("applying changes"):
        result = apply(get_spark(master, quiet=True), lake, tables=tables or None, column_types=hints)
    summary = result.summary
    out = Table(title="current-state tables")
    for col, just in (("path", "left"), ("rows", "right"), ("columns", "right"), ("key", "left"),
                      ("schema version", "left"), ("orphans ignored", "right")):
        out.add_column(col, justify=just, overflow="fold")
    for t in summary["tables"]:
        key = t["key_mode"] + (f" ({', '.join(t['key_columns'])})" if t["key_columns"] else "")
        out.add_row(f"{lake.rstrip('/')}/{t['path']}", str(t["rows"]), str(len(t["columns"])), key,
                    t["schema_version"] or f"[dim]{t['schema_source']}[/dim]", str(t["orphan_updates_ignored"]))
    console.print(out)
    for t in summary["tables"]:
        name = ".".join(p for p in (t["database"], t["schema"], t["table"]) if p is not None)
        for ch in t.get("type_changes", []):
            console.print(f"{name}.{ch['column']}: {ch['from']} -> {ch['to']} ({ch['kind']}; table rewritten)",
                          highlight=False)
        for c in t["columns"]:
            if c.get("note"):
                console.print(f"{name}.{c['name']}: {c['note']}", highlight=False)
    tot = summary["totals"]
    ignored = ", ".join(f"{k} {v}" for k, v in tot["ignored_ops"].items()) or "none"
    console.print(f"{tot['tables']} table(s), {tot['rows']} row(s); orphan updates ignored: "
                  f"{tot['orphan_updates_ignored']}; non-data rows ignored: {ignored}; "
                  f"index: {lake.rstrip('/')}/{CURRENT}/{INDEX}", highlight=False)
    return EXIT_OK
