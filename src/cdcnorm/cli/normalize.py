"""`cdcnorm normalize`: vendor CDC files into canonical change records, with a readable run report."""

from __future__ import annotations

import contextlib
import importlib
import os
import threading
from collections.abc import Iterator
from typing import Annotated, Any

import typer
from rich.table import Table

from cdcnorm.adapters import names as vendor_names
from cdcnorm.cli.guard import EXIT_OK, EXIT_PROBLEM, run_guarded
from cdcnorm.cli.options import LakeOpt, MasterOpt, OptionOpt, parse_pairs
from cdcnorm.cli.output import console, err


def normalize(
    inputs: Annotated[list[str], typer.Argument(help="Input files or folders (local paths or URIs).")],
    lake: LakeOpt,
    vendor: Annotated[str | None, typer.Option("--vendor", help=f"{' | '.join(vendor_names())} (auto-detected).")] = None,
    stream: Annotated[str | None, typer.Option("--stream", help="Override the stream name.")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when any record was quarantined.")] = False,
    option: OptionOpt = None,
    master: MasterOpt = None,
    dedup_window: Annotated[int | None, typer.Option(
        "--dedup-window", min=0, help="Check new changes for duplicates only within this many days of the run's "
        "newest source day (default: every day they fall in, exactly); older ones are written and counted as "
        "dedup_unchecked.")] = None,
    reprocess: Annotated[bool, typer.Option(
        "--reprocess", help="Read input files a committed run of the lake already read (same path, size, "
        "modification time and ETag); their events still go through the duplicate check.")] = False,
    pair_memory_days: Annotated[int | None, typer.Option(
        "--pair-memory-days", min=0, help="Days of event time an update half emitted as an orphan is remembered "
        "for a late partner (default 30).")] = None,
    follow: Annotated[bool, typer.Option("--follow", help="Keep running: normalize new files as they land, one "
                                         "micro-batch at a time, until SIGTERM / Ctrl-C (docs/follow.md).")] = False,
    trigger_seconds: Annotated[float, typer.Option("--trigger-seconds", min=0.1,
                                                   help="--follow: seconds between micro-batches.")] = 10.0,
    settle_seconds: Annotated[float, typer.Option("--settle-seconds", min=0,
                                                  help="--follow: a file is read once unchanged this long.")] = 30.0,
    max_files_per_trigger: Annotated[int | None, typer.Option("--max-files-per-trigger", min=1,
                                                              help="--follow: files per micro-batch at most.")] = None,
    progress_json: Annotated[str | None, typer.Option("--progress-json",
                                                      help="--follow: append one JSON line per micro-batch.")] = None,
    max_bytes_per_trigger: Annotated[int | None, typer.Option(
        "--max-bytes-per-trigger", min=1, help="--follow: input bytes per micro-batch at most (one file at least).")] = None,
    pair_wait: Annotated[float | None, typer.Option(
        "--pair-wait", min=0, help="--follow: seconds of source time a lone update half waits for its partner "
        "before it is emitted as an orphan (default 300; a later partner supersedes the orphan).")] = None,
    max_quarantine_rate: Annotated[float | None, typer.Option(
        "--max-quarantine-rate", min=0, max=1, help="--follow: stop with exit 1 when a batch quarantines more than "
        "this fraction of its records.")] = None,
    max_lag: Annotated[float | None, typer.Option(
        "--max-lag", min=0, help="--follow: stop with exit 1 when a batch's lag (now minus its newest source "
        "time) exceeds this many seconds.")] = None,
) -> None:
    """Normalize vendor CDC files into canonical change records in LAKE."""

    def run() -> int:
        from cdcnorm.runtime.session import get_spark

        options = parse_pairs(option, "--option")
        if stream:
            options["stream"] = stream
        _check_before_spark(inputs, vendor, options)
        if follow:
            from cdcnorm.streaming.follow import DEFAULT_PAIR_WAIT_SECONDS, Limits

            limits = Limits(max_quarantine_rate, max_lag)
            return _follow(inputs, vendor, lake, options, master, dedup_window, progress_json, limits,
                           reprocess=reprocess, pair_memory_days=pair_memory_days,
                           trigger=trigger_seconds, settle_seconds=settle_seconds,
                           max_files_per_trigger=max_files_per_trigger, max_bytes_per_trigger=max_bytes_per_trigger,
                           pair_wait_seconds=DEFAULT_PAIR_WAIT_SECONDS if pair_wait is None else pair_wait)
        from cdcnorm.runtime.small_runs import jvm_conf_for

        with console.status("starting Spark") as status:
            small = jvm_conf_for(inputs)
            with importing_meanwhile("cdcnorm.streaming.follow"):
                spark = get_spark(master, quiet=True, conf=small)
            if small and os.environ.get("CDCNORM_WARM_WORKERS", "1") != "0":
                warming_workers(spark, vendor, options)
            from cdcnorm.streaming.follow import normalize_once

            batches = normalize_once(inputs, vendor, lake, spark=spark, options=options,
                                     dedup_window_days=dedup_window, progress=lambda msg: status.update(msg),
                                     reprocess=reprocess, pair_memory_days=pair_memory_days)
        quarantined = 0
        for b in batches:
            if b.report is not None:
                print_report(b.report, lake)
                quarantined += int(b.report["outcomes"]["quarantined"])
        if strict and quarantined:
            err.print(f"[yellow]--strict:[/yellow] {quarantined} record(s) quarantined; "
                      f"see `cdcnorm quarantine list --lake {lake}`.")
            return EXIT_PROBLEM
        return EXIT_OK

    run_guarded(run)


def _follow(inputs: list[str], vendor: str | None, lake: str, options: dict[str, Any], master: str | None,
            dedup_window: int | None, progress_json: str | None, limits: Any, **query: Any) -> int:
    """Run the follow query until SIGTERM / SIGINT, which finish the current micro-batch and exit 0; a crossed
    threshold (--max-quarantine-rate, --max-lag) stops it after the batch that crossed it, with exit 1."""
    import signal
    import threading

    import orjson

    from cdcnorm.runtime.session import get_spark
    from cdcnorm.streaming.follow import BatchProgress, refuse_file_streams, run_restarting, start_follow

    if vendor:
        refuse_file_streams(vendor, options)  # before a JVM starts

    def report(progress: BatchProgress) -> None:
        console.print(progress.line(), highlight=False)
        if progress_json:
            with open(progress_json, "ab") as fh:
                fh.write(orjson.dumps(progress.to_dict()) + b"\n")

    spark = get_spark(master, quiet=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())  # the follower's loop does the stopping

    def start() -> Any:
        return start_follow(inputs, vendor, lake, spark=spark, options=options, dedup_window_days=dedup_window,
                            on_batch=report, limits=limits, stop=stop, **query)

    def restarted(exc: BaseException) -> None:
        err.print(f"[yellow]restarting:[/yellow] {str(exc).splitlines()[0]} (a transient failure; the query "
                  "resumes from its checkpoint)")

    console.print(f"following {', '.join(inputs)} into {lake} (SIGTERM or Ctrl-C stops after the current batch)",
                  highlight=False)
    follower = run_restarting(start, on_restart=restarted)
    console.print(f"stopped after {len(follower.batches)} micro-batch(es)", highlight=False)
    if follower.failure:
        err.print(f"[red]stopped:[/red] {follower.failure}")
        return EXIT_PROBLEM
    return EXIT_OK


@contextlib.contextmanager
def importing_meanwhile(module: str) -> Iterator[None]:
    """Import `module` in a thread while the body runs (the JVM starting: the Python thread only waits for it),
    instead of before it: the run's own modules (pipeline, adapters, deltalake, pyarrow) load on the other core.
    A failed import is left to the caller's own `import`, which raises it where it always did."""
    def load() -> None:
        with contextlib.suppress(Exception):
            importlib.import_module(module)

    thread = threading.Thread(target=load, name=f"import {module}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join()


def warming_workers(spark: Any, vendor: str | None, options: dict[str, Any]) -> None:
    """Start Spark's Python workers in a thread while the batch query starts (its source's planner and runner,
    the offsets, the checkpoint: seconds in which the decode's worker would otherwise not exist yet), with the
    decode's modules imported (`cdcnorm.ingest.sources.warm_workers`): the run's first decode task finds a worker
    ready instead of starting the daemon and importing. A small local run only (the command line's small-run
    JVM), where those seconds are a large share; it never fails the command. `CDCNORM_WARM_WORKERS=0` turns it
    off."""
    def warm() -> None:
        with contextlib.suppress(Exception):
            from cdcnorm.adapters import get_adapter
            from cdcnorm.ingest.sources import warm_workers

            modules = (type(get_adapter(vendor, options)).__module__,) if vendor else ()
            spark.sparkContext.setJobDescription("cdcnorm: starting the Python workers")
            warm_workers(spark, modules)

    threading.Thread(target=warm, name="warm python workers", daemon=True).start()


def _check_before_spark(inputs: list[str], vendor: str | None, options: dict[str, Any]) -> None:
    """Usage errors that need no Spark are reported before a JVM starts (seconds saved, same message)."""
    from cdcnorm.adapters import get_adapter
    from cdcnorm.errors import UsageError
    from cdcnorm.runtime.fs import is_local, local_path

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
    if report.get("input_kind") == "files":
        head.add_row("files read", str(report["files"]))
        head.add_row("files skipped (read before)", str(report.get("files_skipped_known", 0)), end_section=True)
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
        console.print(f"lake: {lake}  (report: run {report['run_id']} in {lake}/runs)")


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
