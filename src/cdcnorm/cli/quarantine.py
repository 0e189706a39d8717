"""`cdcnorm quarantine list | show | retry`: inspect and re-process quarantined records."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from cdcnorm.cli.guard import EXIT_OK, run_guarded
from cdcnorm.cli.options import LakeOpt, MasterOpt, OptionOpt, check_lakes_exist, parse_pairs
from cdcnorm.cli.output import console

app = typer.Typer(no_args_is_help=True, help="Inspect and re-process quarantined records.")


@app.command("list")
def quarantine_list(lake: LakeOpt, master: MasterOpt = None,
                    all_: Annotated[bool, typer.Option("--all", help="Include resolved records.")] = False) -> None:
    """List quarantined records (unresolved unless --all)."""

    def run() -> int:
        from pyspark.sql import functions as F

        from cdcnorm.lake.store import read_quarantine
        from cdcnorm.runtime.session import get_spark

        check_lakes_exist(lake)
        q = read_quarantine(get_spark(master, quiet=True), lake, include_resolved=all_)
        rows = q.select("quarantine_id", "vendor", "error_class", "origin.uri", "origin.index", "message",
                        F.length("raw").alias("bytes")).orderBy("uri", "index").limit(1000).collect()
        t = Table(title=f"quarantine of {lake} ({len(rows)} shown)")
        for col in ("id", "vendor", "reason", "origin", "bytes", "message"):
            t.add_column(col, overflow="fold")
        for r in rows:
            t.add_row(r["quarantine_id"][:12], r["vendor"] or "", r["error_class"],
                      f"{r['uri']}#{r['index']}", str(r["bytes"] or 0), r["message"])
        console.print(t)
        return EXIT_OK

    run_guarded(run)


@app.command("show")
def quarantine_show(qid: Annotated[str, typer.Argument(help="Quarantine id (or a unique prefix).")],
                    lake: LakeOpt, master: MasterOpt = None) -> None:
    """Show one quarantined record with its raw bytes."""

    def run() -> int:
        from pyspark.sql import functions as F

        from cdcnorm.errors import UsageError
        from cdcnorm.lake.store import read_quarantine
        from cdcnorm.runtime.session import get_spark

        check_lakes_exist(lake)
        q = read_quarantine(get_spark(master, quiet=True), lake, include_resolved=True)
        rows = q.where(F.col("quarantine_id").startswith(qid)).limit(2).collect()
        if len(rows) != 1:
            raise UsageError(f"{'No' if not rows else 'More than one'} quarantined record matches '{qid}'.")
        r = rows[0].asDict(recursive=True)
        raw = bytes(r.pop("raw") or b"")
        for k, v in r.items():
            console.print(f"[bold]{k}[/bold]: {v}", highlight=False)
        try:
            text = raw.decode("utf-8")
            console.print("[bold]raw[/bold] (utf-8):", highlight=False)
            console.print(text[:20000], markup=False, highlight=False)
        except UnicodeDecodeError:
            console.print(f"[bold]raw[/bold] ({len(raw)} bytes, hex): {raw[:2048].hex()}", highlight=False)
        return EXIT_OK

    run_guarded(run)


@app.command("retry")
def quarantine_retry(lake: LakeOpt, vendor: Annotated[str | None, typer.Option("--vendor")] = None,
                     option: OptionOpt = None, master: MasterOpt = None) -> None:
    """Re-process quarantined records (after a fix or once missing metadata has arrived)."""

    def run() -> int:
        from cdcnorm.ingest.retry import retry_quarantine
        from cdcnorm.runtime.session import get_spark

        options = parse_pairs(option, "--option")
        check_lakes_exist(lake)
        with console.status("re-processing quarantined records"):
            summary = retry_quarantine(get_spark(master, quiet=True), lake, vendor=vendor, options=options)
        t = Table(title="quarantine retry")
        for col in ("vendor", "retried", "resolved", "still quarantined"):
            t.add_column(col, justify="right")
        for v, s in summary.items():
            t.add_row(v, str(s["retried"]), str(s["resolved"]), str(s["still_quarantined"]))
        console.print(t)
        return EXIT_OK

    run_guarded(run)
