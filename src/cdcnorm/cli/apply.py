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
    full: Annotated[bool, typer.Option("--full", help="Rebuild every table from all changes.")] = False,
    history: Annotated[bool, typer.Option("--history", help="Also write SCD type 2 history under LAKE/history/.")] = False,
    track_column: Annotated[list[str] | None, typer.Option("--track-column", help="History: only changes of these columns open a version.")] = None,
    as_of: Annotated[str | None, typer.Option("--as-of", help="Write the state at a source time (ISO-8601) or position (sk:HEX) under LAKE/as_of/.")] = None,
    column_type: Annotated[list[str] | None, typer.Option(
        "--column-type", help="A column's type, over the vendor's and the inferred one: table.col=TYPE "
                              "(or schema.table.col / db.schema.table.col), e.g. shop.orders.paid_at=timestamp.")] = None,
    column_types: Annotated[str | None, typer.Option(
        "--column-types", help='A JSON file of hints: {"db.table.col": "TYPE", ...}; --column-type wins.')] = None,
) -> None:
    """Bring the current state of every source table under LAKE/current/ up to date."""
    run_guarded(lambda: apply_command(lake, table, master, full, history, track_column, as_of, column_type, column_types))


def apply_command(lake: str, tables: list[str] | None, master: str | None, full: bool = False,
                  history: bool = False, track: list[str] | None = None, as_of: str | None = None,
                  column_type: list[str] | None = None, column_types: str | None = None) -> int:
    """`cdcnorm apply --lake LAKE [--table T ...] [--full] [--history] [--as-of X] [--column-type T.C=TYPE ...]`:
    write tables and list them."""
    from cdcnorm.runtime.session import get_spark
    from cdcnorm.runtime.small_runs import jvm_conf_for
    from cdcnorm.state import CURRENT, INDEX, apply
    from cdcnorm.state.hints import parse_hints

    check_lakes_exist(lake)
    hints = parse_hints(column_type, column_types)
    # a small local lake is a small run (cdcnorm.state.build.small_apply_bytes): its JVM starts as one too
    spark = get_spark(master, quiet=True, conf=jvm_conf_for([lake]))
    if as_of is not None:
        from cdcnorm.state.as_of import write_as_of

        with console.status(f"computing the state as of {as_of}"):
            written = write_as_of(spark, lake, as_of, tables or None, hints)
        for path, rows in written:
            console.print(f"{path}  {rows} row(s)", highlight=False)
        console.print(f"{len(written)} table(s) as of {as_of}", highlight=False)
        return EXIT_OK
    with console.status("applying changes"):
        result = apply(spark, lake, tables=tables or None, full=full, history=history, track_columns=track or None,
                       column_types=hints)
    summary = result.summary
    out = Table(title="current-state tables")
    for col, just in (("path", "left"), ("rows", "right"), ("columns", "right"), ("key", "left"),
                      ("schema version", "left"), ("orphans ignored", "right"), ("applied", "left")):
        out.add_column(col, justify=just, overflow="fold")
    for t in summary["tables"]:
        key = t["key_mode"] + (f" ({', '.join(t['key_columns'])})" if t["key_columns"] else "")
        out.add_row(f"{lake.rstrip('/')}/{t['path']}", str(t["rows"]), str(len(t["columns"])), key,
                    t["schema_version"] or f"[dim]{t['schema_source']}[/dim]", str(t["orphan_updates_ignored"]),
                    _how(t.get("apply") or {}))
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
    for note in summary.get("notes") or []:
        console.print(note, highlight=False)
    return EXIT_OK


def _how(a: dict) -> str:
    """`incremental, 1 file(s) rewritten` or `rebuilt (first apply)`, plus history versions when written."""
    if not a:
        return ""
    text = (f"incremental: {a['changes']} change(s), {a['files_rewritten']} file(s) rewritten, "
            f"{a['files_written']} written") if a["mode"] == "incremental" else f"rebuilt ({a['reason']})"
    if "history_versions" in a:
        text += f"; history {a['history_versions']} version(s)"
    return text
