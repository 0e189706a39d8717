"""`cdcnorm lake upgrade | check | maintain`: upgrade a format-1 lake, audit a lake, keep its tables tidy."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.table import Table

from cdcnorm.cli.guard import EXIT_OK, EXIT_PROBLEM, run_guarded
from cdcnorm.cli.options import LakeOpt, MasterOpt, check_lakes_exist
from cdcnorm.cli.output import console

app = typer.Typer(no_args_is_help=True, help="Upgrade, audit and maintain a lake.")


@app.command("upgrade")
def lake_upgrade(lake: LakeOpt, master: MasterOpt = None) -> None:
    """Turn a format-1 lake (Parquet folders) into a format-2 lake (Delta tables; no data file is rewritten) and
    fill the input-file ledger from the run reports (also of a format-2 lake whose runs predate the ledger)."""

    def run() -> int:
        from cdcnorm.lake.admin.upgrade import upgrade
        from cdcnorm.runtime.session import get_spark

        check_lakes_exist(lake)
        with console.status("registering the lake's files in Delta tables and the input-file ledger"):
            res = upgrade(get_spark(master, quiet=True), lake)
        if not res.upgraded:
            if not res.ledger.runs:
                console.print(f"{res.lake} is already a format-2 lake and its input-file ledger covers every run "
                              "report: nothing to do.", highlight=False)
                return EXIT_OK
            console.print(f"{res.lake} is already a format-2 lake; {_ledger_line(res.ledger)}", highlight=False)
            return EXIT_OK
        t = Table(title=f"upgraded {res.lake} ({res.runs} committed runs)")
        for col in ("table", "runs", "files", "rows", "bytes"):
            t.add_column(col, justify="right" if col != "table" else "left")
        for name, d in res.registered.items():
            t.add_row(name, str(d["runs"]), str(d["files"]), str(d["rows"]), str(d["bytes"]))
        console.print(t)
        console.print(_ledger_line(res.ledger), highlight=False)
        if res.leftovers:
            left = Table(title="not registered (uncommitted leftovers of the old layout)")
            for col in ("path", "files", "bytes", "why"):
                left.add_column(col, overflow="fold")
            for x in res.leftovers:
                left.add_row(x.path, str(x.files), str(x.bytes), x.why)
            console.print(left)
        return EXIT_OK

    run_guarded(run)


def _ledger_line(fill) -> str:
    """What the upgrade recorded in the input-file ledger, in one sentence."""
    text = (f"input-file ledger filled from {fill.runs} run report(s): {fill.files} file(s) with their current "
            f"size and modification time, {fill.unknown} path(s) of unknown identity (gone, or named by "
            "a report without a start time: read again when listed)")
    if fill.newer:
        text += f"; {fill.newer} file(s) changed after the last run that named them are left for the next run"
    return text + "."


@app.command("check")
def lake_check(lake: LakeOpt, master: MasterOpt = None,
               json_: Annotated[bool, typer.Option("--json", help="Print the findings as JSON.")] = False) -> None:
    """Audit the whole lake: duplicate event ids, ledger rows of runs not committed, unreferenced files, pending
    runs, report reconciliation. Exit 0 when clean, 1 when a problem is found."""

    def run() -> int:
        from cdcnorm.lake.admin.check import check, to_json
        from cdcnorm.runtime.session import get_spark

        check_lakes_exist(lake)
        res = check(get_spark(master, quiet=True), lake)
        if json_:
            sys.stdout.write(to_json(res) + "\n")
            return EXIT_OK if res.ok else EXIT_PROBLEM
        t = Table(title=f"check of {res.lake}: {'clean' if res.ok else 'PROBLEMS FOUND'}")
        for col in ("check", "result", "summary"):
            t.add_column(col, overflow="fold")
        for f in res.findings:
            t.add_row(f.name, "[red]problem[/red]" if f.problem else "[green]ok[/green]", f.summary)
        console.print(t)
        for f in res.findings:
            rows = [d for d in f.details if "totals" not in d]
            if f.problem and rows:
                d = Table(title=f"{f.name} (first {min(len(rows), 20)} of {len(rows)})")
                for col in rows[0]:
                    d.add_column(col, overflow="fold")
                for r in rows[:20]:
                    d.add_row(*[str(v) for v in r.values()])
                console.print(d)
        return EXIT_OK if res.ok else EXIT_PROBLEM

    run_guarded(run)


@app.command("maintain")
def lake_maintain(
    lake: LakeOpt, master: MasterOpt = None,
    retention_hours: Annotated[float, typer.Option("--retention-hours", min=0,
                                                  help="Keep unreferenced files younger than this.")] = 168,
    vacuum: Annotated[bool, typer.Option("--vacuum/--no-vacuum", help="Delete old unreferenced files.")] = True,
    compact: Annotated[bool, typer.Option("--compact/--no-compact", help="Rewrite small files as bigger ones.")] = True,
) -> None:
    """Compact small files, checkpoint the logs, vacuum old unreferenced files and stale staging folders."""

    def run() -> int:
        from cdcnorm.lake.admin.maintain import maintain
        from cdcnorm.runtime.session import get_spark

        check_lakes_exist(lake)
        with console.status("maintaining the lake's tables"):
            res = maintain(get_spark(master, quiet=True), lake, retention_hours, vacuum=vacuum, compact=compact)
        t = Table(title=f"maintain {res.lake} (retention {res.retention_hours:g} h)")
        for col in ("table", "compacted files", "compacted bytes", "written files", "vacuumed files",
                    "vacuumed bytes", "checkpoint", "note"):
            t.add_column(col, justify="left" if col in ("table", "note") else "right")
        for w in res.tables:
            t.add_row(w.table, str(w.compacted_files), str(w.compacted_bytes), str(w.written_files),
                      str(w.vacuumed_files), str(w.vacuumed_bytes), str(w.checkpoint_version), w.note)
        console.print(t)
        if res.completed_runs:
            console.print(f"completed pending runs: {', '.join(res.completed_runs)}", highlight=False)
        for s in res.staging_removed:
            console.print(f"removed _staging/{s['run']} ({s['files']} files, {s['bytes']} bytes)", highlight=False)
        return EXIT_OK

    run_guarded(run)
