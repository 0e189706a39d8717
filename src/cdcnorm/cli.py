"""The `cdcnorm` command line.

Exit codes, the same for every command: 0 success; 1 ran but found a problem the user asked to fail on
(`--strict` quarantines, compare differences); 2 usage error; 3 runtime failure. Every failure prints a
one-line message; `CDCNORM_DEBUG=1` adds the traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.table import Table

from cdcnorm.adapters import names as vendor_names

EXIT_OK, EXIT_PROBLEM, EXIT_USAGE, EXIT_RUNTIME = 0, 1, 2, 3

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Turn vendors' CDC output into one canonical change record, on Spark.")
quarantine_app = typer.Typer(no_args_is_help=True, help="Inspect and re-process quarantined records.")
app.add_typer(quarantine_app, name="quarantine")

console = Console(stderr=False)
err = Console(stderr=True)

LakeOpt = Annotated[str, typer.Option("--lake", help="Lake folder or URI.")]
MasterOpt = Annotated[str | None, typer.Option("--master", help="Spark master (default: SPARK_MASTER or local[*]).")]
OptionOpt = Annotated[list[str] | None, typer.Option("--option", "-o", help="Adapter option KEY=VALUE (VALUE may be JSON).")]


def _version(value: bool) -> None:
    if value:
        from cdcnorm import __version__

        console.print(f"cdcnorm {__version__}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def main_options(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")] = False,
) -> None:
    """cdcnorm command line."""


def parse_pairs(pairs: list[str] | None, what: str) -> dict[str, Any]:
    """KEY=VALUE pairs; VALUE is parsed as JSON when it is JSON, else kept as a string."""
    from cdcnorm.errors import UsageError

    out: dict[str, Any] = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise UsageError(f"{what} '{pair}' must look like KEY=VALUE.")
        key, value = pair.split("=", 1)
        try:
            out[key.strip()] = orjson.loads(value)
        except orjson.JSONDecodeError:
            out[key.strip()] = value
    return out


def run_guarded(fn: Callable[[], int]) -> None:
    """Run a command, turning every failure into a one-line message and the documented exit code."""
    from cdcnorm.errors import CdcError

    try:
        code = fn()
    except typer.Exit:
        raise
    except CdcError as exc:
        err.print(f"[red]error:[/red] {exc.message}", highlight=False, soft_wrap=True)
        _debug()
        raise typer.Exit(exc.exit_code) from None
    except Exception as exc:  # Spark/Java failures: one readable line, not a stack trace
        err.print(f"[red]error:[/red] {_one_line(exc)}", highlight=False, soft_wrap=True)
        _debug()
        raise typer.Exit(EXIT_RUNTIME) from None
    raise typer.Exit(code)


def _debug() -> None:
    if os.environ.get("CDCNORM_DEBUG"):
        import traceback

        traceback.print_exc()


def _one_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    first = next((line for line in text if line.strip()), type(exc).__name__)
    for line in text:  # Python errors raised on executors carry our tag inside the Java message
        if "[CDC_" in line or "Error: " in line and "Traceback" not in line:
            first = line.strip()
            break
    return f"{type(exc).__name__}: {first[:500]}"


@app.command()
def normalize(
    inputs: Annotated[list[str], typer.Argument(help="Input files or folders (local paths or URIs).")],
    lake: LakeOpt,
    vendor: Annotated[str | None, typer.Option("--vendor", help=f"{' | '.join(vendor_names())} (auto-detected).")] = None,
    stream: Annotated[str | None, typer.Option("--stream", help="Override the stream name.")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when any record was quarantined.")] = False,
    option: OptionOpt = None,
    master: MasterOpt = None,
) -> None:
    """Normalize vendor CDC files into canonical change records in LAKE."""

    def run() -> int:
        from cdcnorm.pipeline import normalize as do_normalize
        from cdcnorm.session import get_spark

        options = parse_pairs(option, "--option")
        if stream:
            options["stream"] = stream
        _check_before_spark(inputs, vendor, options)
        with console.status("starting Spark") as status:
            spark = get_spark(master, quiet=True)
            result = do_normalize(inputs, vendor, spark=spark, options=options, lake=lake,
                                  progress=lambda msg: status.update(msg))
        print_report(result.report, lake)
        if strict and result.report["outcomes"]["quarantined"]:
            err.print(f"[yellow]--strict:[/yellow] {result.report['outcomes']['quarantined']} record(s) quarantined; "
                      f"see `cdcnorm quarantine list --lake {lake}`.")
            return EXIT_PROBLEM
        return EXIT_OK

    run_guarded(run)


def _check_before_spark(inputs: list[str], vendor: str | None, options: dict[str, Any]) -> None:
    """Usage errors that need no Spark are reported before a JVM starts (seconds saved, same message)."""
    from cdcnorm.adapters import get_adapter
    from cdcnorm.errors import UsageError
    from cdcnorm.fs import is_local, local_path

    if vendor:
        get_adapter(vendor, options)
    for path in inputs:
        if is_local(path) and not os.path.exists(local_path(path)):
            raise UsageError(f"Input not found: {path}")


def print_report(report: dict[str, Any], lake: str | None = None) -> None:
    """A readable summary of a run report."""
    oc = report["outcomes"]
    head = Table(title=f"run {report['run_id']} · {report['vendor']}")
    head.add_column("records", overflow="fold")
    head.add_column("count", justify="right")
    head.add_row("read", str(report["records_read"]), end_section=True)
    for name, value in oc.items():
        head.add_row(name, str(value))
    head.add_row("reconciled", "[green]yes[/green]" if report["reconciled"] else "[red]NO[/red]")
    console.print(head)
    if report["rows_by_table_op"]:
        console.print(_rows_table(report["rows_by_table_op"]))
    for title, data in (("quarantined by reason", report["quarantine_by_reason"]),
                        ("filtered by rule", report["filters_by_rule"]), ("flags", report["flags"])):
        if data:
            t = Table(title=title)
            t.add_column("name")
            t.add_column("count", justify="right")
            for k, v in sorted(data.items()):
                t.add_row(str(k), str(v))
            console.print(t)
    if report.get("skipped_objects"):
        console.print("skipped objects: " + ", ".join(f"{k} {v}" for k, v in report["skipped_objects"].items()))
    if lake:
        console.print(f"lake: {lake}  (report: {lake}/runs/{report['run_id']}.json)")


_OP_COLUMNS = ("SNAPSHOT", "INSERT", "UPDATE", "DELETE")


def _rows_table(rows_by: list[dict[str, Any]]) -> Table:
    """Rows written, one line per table, one column per data op (other ops summed)."""
    pivot: dict[tuple, dict[str, int]] = {}
    for r in rows_by:
        name = ".".join(p for p in (r["database"], r["schema"], r["table"]) if p) or "(no table)"
        counts = pivot.setdefault((_short(r["stream"]), name), {})
        op = r["op"] if r["op"] in _OP_COLUMNS else "other"
        counts[op] = counts.get(op, 0) + r["rows"]
    t = Table(title="rows written")
    t.add_column("stream", overflow="fold")
    t.add_column("table", overflow="fold")
    for op in (*_OP_COLUMNS, "other"):
        t.add_column(op.lower(), justify="right")
    for (stream, name), counts in sorted(pivot.items()):
        t.add_row(stream, name, *[str(counts.get(op, "")) for op in (*_OP_COLUMNS, "other")])
    return t


def _short(stream: str | None) -> str:
    return (stream or "").rsplit("/", 1)[-1]


@quarantine_app.command("list")
def quarantine_list(lake: LakeOpt, master: MasterOpt = None,
                    all_: Annotated[bool, typer.Option("--all", help="Include resolved records.")] = False) -> None:
    """List quarantined records (unresolved unless --all)."""

    def run() -> int:
        from pyspark.sql import functions as F

        from cdcnorm.lake import read_quarantine
        from cdcnorm.session import get_spark

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


@quarantine_app.command("show")
def quarantine_show(qid: Annotated[str, typer.Argument(help="Quarantine id (or a unique prefix).")],
                    lake: LakeOpt, master: MasterOpt = None) -> None:
    """Show one quarantined record with its raw bytes."""

    def run() -> int:
        from pyspark.sql import functions as F

        from cdcnorm.errors import UsageError
        from cdcnorm.lake import read_quarantine
        from cdcnorm.session import get_spark

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


@quarantine_app.command("retry")
def quarantine_retry(lake: LakeOpt, vendor: Annotated[str | None, typer.Option("--vendor")] = None,
                     option: OptionOpt = None, master: MasterOpt = None) -> None:
    """Re-process quarantined records (after a fix or once missing metadata has arrived)."""

    def run() -> int:
        from cdcnorm.retry import retry_quarantine
        from cdcnorm.session import get_spark

        with console.status("re-processing quarantined records"):
            summary = retry_quarantine(get_spark(master, quiet=True), lake, vendor=vendor, options=parse_pairs(option, "--option"))
        t = Table(title="quarantine retry")
        for col in ("vendor", "retried", "resolved", "still quarantined"):
            t.add_column(col, justify="right")
        for v, s in summary.items():
            t.add_row(v, str(s["retried"]), str(s["resolved"]), str(s["still_quarantined"]))
        console.print(t)
        return EXIT_OK

    run_guarded(run)


@app.command("apply")
def apply_cmd(
    lake: LakeOpt,
    table: Annotated[list[str] | None, typer.Option("--table", help="Only these tables (table, schema.table or db.schema.table).")] = None,
    master: MasterOpt = None,
) -> None:
    """Build the current state of every source table under LAKE/current/."""

    def run() -> int:
        from cdcnorm.current import apply_command

        return apply_command(lake, table, master)

    run_guarded(run)


@app.command()
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

    def run() -> int:
        from cdcnorm.compare import compare_command

        return compare_command(left, right, left_vendor, right_vendor, table, table_map, report, master)

    run_guarded(run)


@app.command()
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

    def run() -> int:
        from cdcnorm.cutover import cutover_command

        return cutover_command(old, old_vendor, new, new_vendor, lake, at, stream, master)

    run_guarded(run)


@app.command()
def simulate(
    out: Annotated[str, typer.Option("--out", help="Output folder.")],
    vendor: Annotated[list[str] | None, typer.Option("--vendor", help="Vendor, vendor format, or all (repeatable).")] = None,
    tables: Annotated[int, typer.Option("--tables", help="Number of simulated tables.")] = 3,
    rows: Annotated[int, typer.Option("--rows", help="Rows per table in the backfill.")] = 100,
    changes: Annotated[int, typer.Option("--changes", help="Changes after the backfill.")] = 500,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the history.")] = 1,
    quirk: Annotated[list[str] | None, typer.Option("--quirk", help="Delivery quirk to switch on (default: all; 'none').")] = None,
) -> None:
    """Write one simulated source history as each vendor would deliver it, plus the ground truth."""

    def run() -> int:
        from cdcnorm.simulate import simulate_command

        return simulate_command(vendor or ["all"], tables, rows, changes, seed, out, quirk)

    run_guarded(run)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
        sys.exit(code)


if __name__ == "__main__":
    main()
