"""`cdcnorm cutover`: stitch one continuous history from an old and a new vendor; print the switch points."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from cdcnorm.cli.guard import EXIT_OK, EXIT_PROBLEM, run_guarded
from cdcnorm.cli.options import LakeOpt, MasterOpt, check_lakes_exist
from cdcnorm.cli.output import console as default_console


def cutover(
    old: Annotated[str, typer.Option("--old", help="Lake of the old vendor.")],
    new: Annotated[str, typer.Option("--new", help="Lake of the new vendor.")],
    lake: LakeOpt,
    old_vendor: Annotated[str | None, typer.Option("--old-vendor")] = None,
    new_vendor: Annotated[str | None, typer.Option("--new-vendor")] = None,
    at: Annotated[str, typer.Option("--at", help="Switch time (ISO) or auto.")] = "auto",
    stream: Annotated[str, typer.Option("--stream", help="Stream name of the stitched stream.")] = "cutover",
    master: MasterOpt = None,
) -> None:
    """Stitch one continuous history: the old vendor before a safe switch point, the new one after."""
    run_guarded(lambda: cutover_command(old, old_vendor, new, new_vendor, lake, at, stream, master))


def cutover_command(old: str, old_vendor: str | None, new: str, new_vendor: str | None, lake: str,
                    at: str | None, stream: str | None, master: str | None) -> int:
    """Choose the switch points and write the stitched stream: 0 written, 1 refused (reasons printed)."""
    from cdcnorm.migrate.cutover import check_stream_name, cutover, parse_at
    from cdcnorm.runtime.session import get_spark

    parse_at(at)
    check_stream_name(stream or "cutover")
    check_lakes_exist(old, new)
    console = default_console
    with console.status("starting Spark") as status:
        spark = get_spark(master, quiet=True)
        report = cutover(spark, old, new, lake, old_vendor, new_vendor, at=at or "auto",
                         stream=stream or "cutover", progress=lambda m: status.update(m))
    print_cutover(report, console)
    return EXIT_OK if report["status"] == "done" else EXIT_PROBLEM


def print_cutover(report: dict[str, Any], console=None) -> None:
    """The chosen switch points (or the reasons for refusing) as a table."""
    console = console or default_console
    t = Table(title=f"cutover {report['old']['vendor']} -> {report['new']['vendor']} as stream '{report['stream']}'")
    for col in ("table", "status", "switch at", "how", "rows old / new", "verified", "reason"):
        t.add_column(col, overflow="fold")
    for x in report["tables"]:
        ok = x["status"] == "ok"
        rows = f"{x.get('rows_from_old', '-')} / {x.get('rows_from_new', '-')}" if ok else ""
        ver = x.get("verified") or {}
        t.add_row(x["name"], "[green]ok[/green]" if ok else "[red]refused[/red]", x["at"] or "", x["how"], rows,
                  f"{ver.get('matched', 0)} matched, {ver.get('disagreements', 0)} disagreements" if ver else "",
                  x["reason"] or "; ".join(x["warnings"][:2]))
    console.print(t)
    window = report.get("window")
    console.print(f"common window: {window[0]} to {window[1]}" if window else "common window: none", highlight=False)
    if report["status"] == "done":
        console.print(f"[green]stitched stream '{report['stream']}' written[/green]: {report['rows_written']} rows "
                      f"into {report['lake']} (run {report['run_id']})", highlight=False)
    else:
        console.print("[red]cutover refused, nothing written:[/red]")
        for r in report["reasons"]:
            console.print(f"  - {r}", highlight=False, soft_wrap=True)
