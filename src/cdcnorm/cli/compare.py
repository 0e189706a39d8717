"""`cdcnorm compare`: compare two vendors' canonical streams; the terminal summary of the report."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from cdcnorm.cli.guard import EXIT_OK, EXIT_PROBLEM, run_guarded
from cdcnorm.cli.options import MasterOpt, check_lakes_exist
from cdcnorm.cli.output import console as default_console


def compare(
    left: Annotated[str, typer.Option("--left", help="Lake of the left side.")],
    right: Annotated[str, typer.Option("--right", help="Lake of the right side (may be the same lake).")],
    left_vendor: Annotated[str | None, typer.Option("--left-vendor", help="V or V:STREAM.")] = None,
    right_vendor: Annotated[str | None, typer.Option("--right-vendor", help="V or V:STREAM.")] = None,
    table: Annotated[list[str] | None, typer.Option("--table", help="Only these tables (repeatable).")] = None,
    table_map: Annotated[list[str] | None, typer.Option("--table-map", help="LEFT=RIGHT for renamed tables.")] = None,
    report: Annotated[str | None, typer.Option("--report", help="Folder for compare.json and compare.html.")] = None,
    master: MasterOpt = None,
) -> None:
    """Compare two vendors' canonical streams of the same tables: exit 0 when equal, 1 when different."""
    run_guarded(lambda: compare_command(left, right, left_vendor, right_vendor, table, table_map, report, master))


def compare_command(left: str, right: str, left_vendor: str | None, right_vendor: str | None,
                    tables: list[str] | None, table_map: dict[str, str] | list[str] | None, report_dir: str | None,
                    master: str | None) -> int:
    """Run the comparison, print the summary, write the reports: 0 when every table is equal, 1 when not."""
    from cdcnorm.migrate import compare as run_compare
    from cdcnorm.migrate import write_reports
    from cdcnorm.runtime.session import get_spark

    check_lakes_exist(left, right)
    console = default_console
    with console.status("starting Spark") as status:
        spark = get_spark(master, quiet=True)
        report = run_compare(spark, left, right, left_vendor, right_vendor, tables or None, table_map,
                             progress=lambda m: status.update(m))
    print_summary(report, console)
    if report_dir:
        paths = write_reports(report, report_dir)
        console.print(f"reports: {paths['json']}  {paths['html']}", highlight=False)
    return EXIT_OK if report["equal"] else EXIT_PROBLEM


def _fmt_s(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v * 1000:.1f}ms" if abs(v) < 1 else f"{v:.2f}s"


def print_summary(report: dict[str, Any], console=None) -> None:
    """The readable terminal summary: a verdict per table and why, then latency and freshness per side."""
    console = console or default_console
    lft, rgt = report["left"], report["right"]
    title = f"compare: {_side_name(lft)} (left) vs {_side_name(rgt)} (right)"
    t = Table(title=title, show_lines=False)
    for col, just in (("table", "left"), ("verdict", "left"), ("rows L/R", "right"), ("changes matched", "right"),
                      ("lag p50", "right"), ("why", "left")):
        t.add_column(col, justify=just, overflow="fold")
    for tb in report["tables"]:
        st, sm = tb["state"], tb["stream"]
        color = "green" if tb["equal"] else "red"
        lag = (tb["latency"].get("lag") or {}).get("p50")
        why = "; ".join(tb["reasons"]) or "; ".join(tb["notes"][:2])
        t.add_row(tb["name"] + ("" if tb["matched_by"] == "name" else f" [dim](by {tb['matched_by']})[/dim]"),
                  f"[{color}]{tb['verdict']}[/{color}]", f"{st.get('rows_left', 0)}/{st.get('rows_right', 0)}",
                  str(sm.get("matched", 0)), _fmt_s(lag), why)
    for side in ("left", "right"):
        for u in report["unmatched_tables"][side]:
            t.add_row(u["name"], "[red]differs[/red]", "", "", "", f"table only on the {side}")
    console.print(t)
    for tb in report["tables"]:
        if not tb["equal"]:
            _print_details(console, tb)
    lat = Table(title="latency (capture_ts - source_ts) and freshness")
    for col in ("side", "vendor", "changes", "p50", "p95", "p99", "max", "newest change", "newest heartbeat"):
        lat.add_column(col, justify="right" if col not in ("side", "vendor") else "left")
    for label, s in (("left", lft), ("right", rgt)):
        la = s["latency"]
        lat.add_row(label, _side_name(s), str(la["count"]), _fmt_s(la["p50"]), _fmt_s(la["p95"]), _fmt_s(la["p99"]),
                    _fmt_s(la["max"]), s["freshness"]["newest_change"] or "-", s["freshness"]["newest_heartbeat"] or "-")
    console.print(lat)
    color = "green" if report["equal"] else "red"
    s = report["summary"]
    console.print(f"[{color}]verdict: {report['verdict']}[/{color}] — {s['equal']} of {s['tables']} table(s) equal"
                  + (f", {s['only_left']} only left, {s['only_right']} only right" if s["only_left"] or s["only_right"] else ""),
                  highlight=False)


def _side_name(s: dict[str, Any]) -> str:
    return s["vendor"] + (f":{s['stream']}" if s.get("stream") else "")


def _print_details(console, tb: dict[str, Any]) -> None:
    st, sm = tb["state"], tb["stream"]
    cols = [c for c in st.get("columns", []) if c["unequal"]]
    if cols:
        t = Table(title=f"{tb['name']}: columns with unequal values")
        for col in ("column", "types", "unequal", "null diff", "max diff", "sample key", "left", "right"):
            t.add_column(col, overflow="fold")
        for c in cols:
            s = (st["samples"]["values"].get(c["name"]) or [{}])[0]
            types = c["left_type"] if c["left_type"] == c["right_type"] else f"{c['left_type']} / {c['right_type']}"
            t.add_row(c["name"], types, str(c["unequal"]), str(c["null_diff"]),
                      "" if c["max_diff"] is None else f"{c['max_diff']:g}", str(s.get("key", "")),
                      str(s.get("left", "")), str(s.get("right", "")))
        console.print(t)
    smp = st.get("samples", {})
    for side in ("left", "right"):
        keys = [s["key"] for s in smp.get(f"only_{side}", [])]
        if keys:
            console.print(f"  rows only on the {side} (sample): {', '.join(keys[:5])}", highlight=False)
        changes = sm.get("samples", {}).get(f"only_{side}", [])
        if changes:
            shown = ", ".join(f"{c['op']} {c['key']} @ {c['source_ts']}" for c in changes[:5])
            console.print(f"  changes only on the {side} (sample): {shown}", highlight=False)
    for col, rows in sm.get("samples", {}).get("image", {}).items():
        s = rows[0]
        console.print(f"  change images differ in {col}: {s['key']} @ {s['source_ts']}: {s['left']} vs {s['right']}",
                      highlight=False)
