"""follow: normalize input as it lands, one micro-batch at a time, each committed exactly once.

A Structured Streaming query reads a stream of input file paths (cdcnorm.streaming.paths_source) or a
Kafka-shaped stream of raw messages; `foreachBatch` hands each micro-batch to the batch pipeline
(cdcnorm.ingest.pipeline.normalize) with the run id `<query id>-<batch id>`. The query id is stable across restarts
from the same checkpoint, and Spark replays an unfinished batch with the same input, so the run id is the
batch's Delta transaction: before decoding, a batch whose report the lake already holds is skipped, one whose
intent is pending is completed, and only a batch the lake has never seen is run. A crash at any point therefore
loses nothing and commits nothing twice.

State across batches lives in the lake, never in Spark's state store: update halves wait in the `halves` table
(cdcnorm.ingest.pairing), table metadata in the `schemas` table (a Replicate data message whose metadata arrives
in a later batch is quarantined as `schema_not_found`, then retried automatically by the batch that brings the
metadata: run id `<run id>-retry`, exactly once like the batch itself). No watermark drops an input row.

The batch command (`cdcnorm normalize` without `--follow`) is this query with `trigger(availableNow=True)` over
the listed files, a fresh checkpoint, and no pairing wait (:func:`normalize_once`).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from cdcnorm.adapters import get_adapter
from cdcnorm.errors import UsageError
from cdcnorm.ingest.pipeline import _detect_files, normalize
from cdcnorm.ingest.retry import renormalize, retry_batch
from cdcnorm.lake.commit import INTENTS, STAGED_TABLES, Pending, complete, open_lake, run_app
from cdcnorm.lake.store import Lake, new_run_id
from cdcnorm.lake.tables import STAGING
from cdcnorm.runtime.fs import FileEntry, is_local, list_files, local_path
from cdcnorm.runtime.session import get_spark, use_portable_parquet
from cdcnorm.runtime.small_runs import planned_for
from cdcnorm.streaming.paths_source import DEFAULT_SETTLE_SECONDS, Seen, batch_entries, paths_stream

FOLLOW = "_follow"  # LAKE/_follow/<name>/{checkpoint,manifest}: one continuous query's state
DEFAULT_PAIR_WAIT_SECONDS = 300.0
"""A lone update half waits this long (event time) for its partner before it is emitted as an orphan."""
DEFAULT_RESTARTS = 3
TRANSIENT_FAILURES = ("Python worker failed to connect back",)
"""Query failures that say nothing about the input: Spark waits a fixed 10 s for a new Python worker to connect
back (`PythonWorkerFactory`), which a loaded machine can miss while a query starts its Python source. Such a
query is started again from its checkpoint (exactly once, like any restart), at most `DEFAULT_RESTARTS` times."""


@dataclass
class Limits:
    """Thresholds that stop a follow query with a non-zero exit (the batch that crossed one is committed)."""

    max_quarantine_rate: float | None = None
    """fraction of one batch's records quarantined (0..1)"""
    max_lag_seconds: float | None = None
    """now minus the newest source time of a batch's changes"""

    def crossed(self, p: BatchProgress) -> str | None:
        if self.max_quarantine_rate is not None and p.records and p.quarantined / p.records > self.max_quarantine_rate:
            return (f"batch {p.batch_id} quarantined {p.quarantined} of {p.records} records "
                    f"({p.quarantined / p.records:.1%} > --max-quarantine-rate {self.max_quarantine_rate:.1%})")
        if self.max_lag_seconds is not None and p.lag_seconds is not None and p.lag_seconds > self.max_lag_seconds:
            return (f"batch {p.batch_id}: lag {p.lag_seconds:.0f} s (now minus the newest source time) > "
                    f"--max-lag {self.max_lag_seconds:.0f} s")
        return None


@dataclass
class BatchProgress:
    """One micro-batch's outcome (printed per batch, appended to --progress-json)."""

    batch_id: int
    run_id: str
    status: str  # "committed" | "already_committed" | "completed_pending" | "no_data_files"
    files: int = 0
    bytes: int = 0
    records: int = 0
    rows_written: int = 0
    quarantined: int = 0
    duplicates: int = 0
    held: int = 0
    state_rows: int = 0
    lag_seconds: float | None = None
    retried: int = 0
    resolved: int = 0
    reconciled: bool | None = None
    at: str = field(default_factory=lambda: dt.datetime.now(dt.UTC).isoformat())
    report: dict[str, Any] | None = field(default=None, repr=False)

    def line(self) -> str:
        lag = "" if self.lag_seconds is None else f", lag {self.lag_seconds:.0f} s"
        retry = f", {self.resolved}/{self.retried} quarantined retried" if self.retried else ""
        return (f"batch {self.batch_id} ({self.status}): {self.files} files, {self.records} records, "
                f"{self.rows_written} rows written, {self.quarantined} quarantined, {self.duplicates} duplicates, "
                f"{self.held:+d} held, {self.state_rows} pairing state rows{lag}{retry}")

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "report"}


class StopRequested(Exception):
    """Raised by a micro-batch that starts after a stop was asked for: Spark does not mark it done, so a
    restart runs it."""


@dataclass
class Follower:
    """A running follow query, with a stop that lets the current micro-batch finish."""

    query: Any
    batches: list[BatchProgress]
    _stop: threading.Event
    _busy: threading.Lock
    errors: list[BaseException] = field(default_factory=list)
    failure: str | None = None
    """why a threshold stopped the query (None: it ended or was stopped normally)"""

    def stop(self) -> None:
        """Finish the batch in progress (if any), then stop the query; later batches are not started."""
        self._stop.set()
        with self._busy:  # waits for the batch in progress
            pass
        self.query.stop()

    def request_stop(self) -> None:
        """Safe from a signal handler: the owner's loop (`run_until_stopped`) does the stopping."""
        self._stop.set()

    def run_until_stopped(self, poll_seconds: float = 0.5) -> None:
        """Block until the query ends by itself (availableNow) or a stop is requested; then stop cleanly.
        A failed batch fails the query: its original error is raised here (a usage or data error keeps its one
        line), except the refusal of a batch started after the stop."""
        try:
            while not self.query.awaitTermination(poll_seconds):
                if self._stop.is_set():
                    self.stop()
                    break
        except Exception as exc:  # the query ended with an error (pyspark raises it from awaitTermination)
            if not self._refused_after_stop(exc):
                raise self._original(exc) from exc
            return
        exc = self.query.exception()
        if exc is not None and not self._refused_after_stop(exc):
            raise self._original(exc)

    def _original(self, exc: BaseException) -> BaseException:
        return self.errors[-1] if self.errors else exc

    def _refused_after_stop(self, exc: BaseException) -> bool:
        return self._stop.is_set() and StopRequested.__name__ in str(exc)


def follow_folder(lake: str, name: str) -> str:
    root = lake.rstrip("/")
    if is_local(root):
        root = os.path.abspath(local_path(root))
    return f"{root}/{FOLLOW}/{name}"


@dataclass
class _Run:
    """What every micro-batch of one query needs."""

    spark: SparkSession
    lake: str
    vendor: str | None
    options: dict[str, Any]
    dedup_window_days: int | None
    pair_wait_seconds: float | None
    column_map: dict[str, str] | None = None
    skipped: dict[str, int] = field(default_factory=dict)
    continuous: bool = True
    progress: Callable[[str], None] | None = None
    folder: str | None = None
    """the query's folder (checkpoint and manifest) when its source is the paths source"""
    reprocess: bool = False
    """read files the lake's input-file ledger knows (cdcnorm.lake.ledger) anyway"""
    pair_memory_days: int | None = None


def start_follow(inputs: list[str | os.PathLike], vendor: str | None, lake: str, *,
                 spark: SparkSession | None = None, options: dict[str, Any] | None = None, name: str = "default",
                 trigger: str | float = "available_now", settle_seconds: float = DEFAULT_SETTLE_SECONDS,
                 max_files_per_trigger: int | None = None, max_bytes_per_trigger: int | None = None,
                 dedup_window_days: int | None = None,
                 pair_wait_seconds: float | None = DEFAULT_PAIR_WAIT_SECONDS, limits: Limits | None = None,
                 on_batch: Callable[[BatchProgress], None] | None = None, stop: threading.Event | None = None,
                 listed: list[FileEntry] | None = None, skipped: dict[str, int] | None = None,
                 continuous: bool = True, progress: Callable[[str], None] | None = None,
                 reprocess: bool = False, pair_memory_days: int | None = None) -> Follower:
    """Start the follow query over input files (see the module doc); returns at once with the running query.
    Setting `stop` (or calling `Follower.request_stop`) makes `Follower.run_until_stopped` stop it after the
    current batch. `listed`: a fixed list of files (the batch command's listing) instead of watching folders;
    `continuous=False` (the batch command) accepts Replicate's file-named streams. Files a committed run of the
    lake already read are skipped by the batch that lists them, unless `reprocess`."""
    spark = spark or get_spark()
    use_portable_parquet(spark)
    options = dict(options or {})
    if vendor and continuous:
        refuse_file_streams(vendor, options)
    folder = follow_folder(lake, name)
    open_lake(spark, lake, create=True)
    run = _Run(spark, lake, vendor, options, dedup_window_days, pair_wait_seconds, skipped=dict(skipped or {}),
               continuous=continuous, progress=progress, folder=folder, reprocess=reprocess,
               pair_memory_days=pair_memory_days)
    stream = paths_stream(spark, [os.fspath(p) for p in inputs], f"{folder}/manifest", settle_seconds,
                          max_files_per_trigger, max_bytes_per_trigger, listed)
    return _start(stream, run, folder, name, trigger, _files_batch, limits, on_batch, stop)


def start_follow_messages(messages: DataFrame, vendor: str, lake: str, *, spark: SparkSession | None = None,
                          options: dict[str, Any] | None = None, column_map: dict[str, str] | None = None,
                          name: str = "messages", trigger: str | float = "available_now",
                          dedup_window_days: int | None = None,
                          pair_wait_seconds: float | None = DEFAULT_PAIR_WAIT_SECONDS, limits: Limits | None = None,
                          on_batch: Callable[[BatchProgress], None] | None = None,
                          stop: threading.Event | None = None) -> Follower:
    """Start the follow query over a Kafka-shaped streaming DataFrame (`value` and optionally `key`, `topic`,
    `partition`, `offset`, `timestamp`; Event Hubs' names are mapped), e.g. Spark's Kafka source. The source must
    replay a batch's messages after a restart (Kafka, Event Hubs and file sources do): the run id is the batch's
    transaction. Rate limits are the source's own (`maxOffsetsPerTrigger`, ...)."""
    spark = spark or messages.sparkSession
    use_portable_parquet(spark)
    options = dict(options or {})
    refuse_file_streams(vendor, options)
    if not messages.isStreaming:
        raise UsageError("start_follow_messages needs a streaming DataFrame (spark.readStream...); "
                         "use cdcnorm.normalize for a static one.")
    folder = follow_folder(lake, name)
    open_lake(spark, lake, create=True)
    run = _Run(spark, lake, vendor, options, dedup_window_days, pair_wait_seconds, column_map)
    return _start(messages, run, folder, name, trigger, _messages_batch, limits, on_batch, stop)


def _start(stream: DataFrame, run: _Run, folder: str, name: str, trigger: str | float,
           handle: Callable[[_Run, DataFrame, int, str], BatchProgress], limits: Limits | None,
           on_batch: Callable[[BatchProgress], None] | None, stop: threading.Event | None) -> Follower:
    stop, busy = stop or threading.Event(), threading.Lock()
    batches: list[BatchProgress] = []
    follower: Follower | None = None

    def run_batch(df: DataFrame, batch_id: int) -> None:
        if stop.is_set():
            raise StopRequested(f"stop requested before batch {batch_id}")
        with busy:
            query_id = run.spark.sparkContext.getLocalProperty("sql.streaming.queryId")
            try:
                progress = handle(run, df, int(batch_id), f"{query_id}-{batch_id}")
            except Exception as exc:
                if follower is not None:
                    follower.errors.append(exc)
                raise
            batches.append(progress)
            if on_batch:
                on_batch(progress)
            crossed = limits.crossed(progress) if limits else None
            if crossed and follower is not None:
                follower.failure = crossed
                stop.set()

    writer = (stream.writeStream.foreachBatch(run_batch).option("checkpointLocation", f"{folder}/checkpoint")
              .queryName(f"cdcnorm-follow-{name}"))
    if trigger == "available_now":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{float(trigger)} seconds")
    follower = Follower(None, batches, stop, busy)
    follower.query = writer.start()
    return follower


def follow(inputs: list[str | os.PathLike], vendor: str | None, lake: str, *, restarts: int = DEFAULT_RESTARTS,
           **kwargs: Any) -> list[BatchProgress]:
    """Run the follow query until it ends (trigger="available_now": all files there now) or is stopped;
    the progress of every micro-batch this call ran. A transient failure (`TRANSIENT_FAILURES`) restarts it."""
    return run_restarting(lambda: start_follow(inputs, vendor, lake, **kwargs), restarts).batches


def is_transient(exc: BaseException) -> bool:
    """Whether a query failure is one of `TRANSIENT_FAILURES` (the machine's, not the input's)."""
    return any(t in str(exc) for t in TRANSIENT_FAILURES)


def run_restarting(start: Callable[[], Follower], restarts: int = DEFAULT_RESTARTS,
                   on_restart: Callable[[BaseException], None] | None = None) -> Follower:
    """Run a query from `start` until it ends or is stopped; one that fails transiently is started again (from its
    checkpoint) up to `restarts` times. Any other failure is raised at once. The follower returned carries the
    progress of every attempt's batches."""
    done: list[BatchProgress] = []
    for attempt in range(restarts + 1):
        follower = start()
        try:
            follower.run_until_stopped()
        except Exception as exc:
            done += follower.batches
            if attempt == restarts or follower._stop.is_set() or not is_transient(exc):
                raise
            if on_restart:
                on_restart(exc)
            continue
        follower.batches[:0] = done
        return follower
    raise AssertionError("unreachable: the last attempt returns or raises")


def normalize_once(inputs: list[str], vendor: str | None, lake: str, *, spark: SparkSession | None = None,
                   options: dict[str, Any] | None = None, dedup_window_days: int | None = None,
                   on_batch: Callable[[BatchProgress], None] | None = None,
                   progress: Callable[[str], None] | None = None, reprocess: bool = False,
                   pair_memory_days: int | None = None) -> list[BatchProgress]:
    """The batch command: list the inputs (any file system Spark reads), then run the follow query over exactly
    those files with `availableNow`, a checkpoint of its own (removed afterwards) and no pairing wait (a lone
    half is emitted as an orphan now; a partner in a later run supersedes it)."""
    spark = spark or get_spark()
    files, skipped = list_files(spark, inputs)
    if not files:
        raise UsageError(f"No input files found under {', '.join(inputs)} (skipped: {skipped or 'none'}).")
    name = f"once-{new_run_id()}"
    # the query's own plans (the paths source's batch, its collect) are planned like the run they carry
    with planned_for(spark, sum(f.size for f in files)):
        batches = follow(inputs, vendor, lake, spark=spark, options=options, name=name, settle_seconds=0,
                         dedup_window_days=dedup_window_days, pair_wait_seconds=None, on_batch=on_batch,
                         listed=files, skipped=skipped, continuous=False, progress=progress, reprocess=reprocess,
                         pair_memory_days=pair_memory_days)
    folder = follow_folder(lake, name)
    if is_local(folder):
        shutil.rmtree(local_path(folder), ignore_errors=True)
    if not any(b.status != "no_data_files" for b in batches):
        raise UsageError(f"No data files among the inputs (skipped: {skipped or 'none'}).")
    return batches


# -- one micro-batch, exactly once ------------------------------------------------------------------------------
def _files_batch(run: _Run, df: DataFrame, batch_id: int, run_id: str) -> BatchProgress:
    entries = batch_entries(run.folder, batch_id) if run.folder else None  # no Spark job (paths_source)
    if entries is None:
        rows = df.select("path", "size").collect()  # paths and sizes only, never file contents
        entries = [Seen(r["path"], int(r["size"] or 0), 0.0) for r in rows]
    paths = sorted(e.path for e in entries)
    size = sum(e.size for e in entries)
    if run.vendor is None and paths:
        run.vendor = _detect_files([FileEntry(p, 0) for p in paths])
        if run.continuous:
            refuse_file_streams(run.vendor, run.options)
    if run.vendor:
        adapter = get_adapter(run.vendor, run.options)
        kept = [p for p in paths if adapter.accepts_file(p)]
        if len(kept) < len(paths):
            run.skipped["not_data_file"] = run.skipped.get("not_data_file", 0) + len(paths) - len(kept)
        paths = kept

    def decode() -> dict[str, Any]:
        return normalize(paths, run.vendor, spark=run.spark, options=run.options, lake=run.lake, run_id=run_id,
                         dedup_window_days=run.dedup_window_days, pair_wait_seconds=run.pair_wait_seconds,
                         skipped_objects=run.skipped, progress=run.progress, reprocess=run.reprocess,
                         pair_memory_days=run.pair_memory_days).report

    progress = _exactly_once(run, batch_id, run_id, decode if paths else None)
    progress.bytes = size
    return progress


def _messages_batch(run: _Run, df: DataFrame, batch_id: int, run_id: str) -> BatchProgress:
    def decode() -> dict[str, Any] | None:
        if df.isEmpty():
            return None
        return normalize(df, run.vendor, spark=run.spark, options=run.options, column_map=run.column_map,
                         lake=run.lake, run_id=run_id, dedup_window_days=run.dedup_window_days,
                         pair_wait_seconds=run.pair_wait_seconds, pair_memory_days=run.pair_memory_days).report

    return _exactly_once(run, batch_id, run_id, decode)


def _exactly_once(run: _Run, batch_id: int, run_id: str,
                  decode: Callable[[], dict[str, Any] | None] | None) -> BatchProgress:
    """Skip a committed batch, complete a pending one, else run it (see the module doc); then retry the
    quarantined records the batch's new table metadata may now decode."""
    lk = open_lake(run.spark, run.lake)
    status, report = _commit_state(lk, run_id)
    if report is None:
        if decode is None:
            return BatchProgress(batch_id, run_id, "no_data_files")
        _clear_leftovers(lk, run_id)
        report = decode()
        if report is None:
            return BatchProgress(batch_id, run_id, "no_data_files")
        status = "committed"
    progress = from_report(batch_id, run_id, status, report)
    if run.vendor and int(report.get("schema_versions_new") or 0) > 0:
        progress.retried, progress.resolved = _retry_waiting_metadata(run, f"{run_id}-retry")
    return progress


def _commit_state(lk: Lake, run_id: str) -> tuple[str, dict[str, Any] | None]:
    if lk.table("runs").txn_version(run_app(run_id)) is not None:
        lk.fs.delete(lk._p(STAGING, run_id))  # a killed run's staged rows, if it died after its commits
        return "already_committed", lk.run_report(run_id)
    text = lk.fs.read_text_or_none(lk._p(INTENTS, run_id + ".json"))
    if text is not None:
        lk.fs.delete(lk._p(STAGING, run_id))
        return "completed_pending", complete(lk, Pending.from_json(text))
    return "run", None


def _retry_waiting_metadata(run: _Run, run_id: str) -> tuple[int, int]:
    """Re-decode this vendor's records quarantined as `schema_not_found` (their metadata may have arrived), as
    one run with a deterministic id: a replay finds it committed. (retried, resolved)."""
    if not get_adapter(run.vendor, run.options).uses_stored_schemas:
        return 0, 0
    lk = open_lake(run.spark, run.lake)
    status, report = _commit_state(lk, run_id)
    if report is not None:
        return int(report.get("records_read", 0)), int(report.get("quarantine_resolved", 0))
    batch = retry_batch(lk, run.vendor, "schema_not_found")
    if batch.isEmpty():
        return 0, 0
    _clear_leftovers(lk, run_id)
    result = renormalize(batch, run.vendor, run.spark, run.lake, run.options, run_id=run_id,
                         dedup_window_days=run.dedup_window_days, pair_wait_seconds=run.pair_wait_seconds)
    return int(result.report.get("records_read", 0)), int(result.report.get("quarantine_resolved", 0))


def _clear_leftovers(lk: Lake, run_id: str) -> None:
    """Remove what a crashed earlier attempt of this run wrote before recording its intent: nothing of it is
    committed (the intent precedes every commit), and the run writes to the same folders again."""
    lk.fs.delete(lk._p(STAGING, run_id))
    for name in STAGED_TABLES:
        lk.fs.delete(f"{lk.table(name).uri}/run={run_id}")


def from_report(batch_id: int, run_id: str, status: str, report: dict[str, Any]) -> BatchProgress:
    """A batch's progress line from its run report."""
    oc = report.get("outcomes", {})
    newest = report.get("newest_source_ts")
    lag = None
    if newest:
        t = dt.datetime.fromisoformat(newest)
        lag = (dt.datetime.now(dt.UTC) - (t if t.tzinfo else t.replace(tzinfo=dt.UTC))).total_seconds()
    return BatchProgress(batch_id, run_id, status, files=int(report.get("files", 0)),
                         records=int(report.get("records_read", 0)), rows_written=int(report.get("rows_written", 0)),
                         quarantined=int(oc.get("quarantined", 0)), duplicates=int(oc.get("duplicate", 0)),
                         held=int(oc.get("held", 0)), state_rows=int(report.get("pairing_state_rows", 0)),
                         lag_seconds=lag, reconciled=report.get("reconciled"), report=report)


def refuse_file_streams(vendor: str, options: dict[str, Any]) -> None:
    """Replicate's legacy file-stem naming names a stream after each file: followed, every new file would be a
    new stream. Continuous mode needs the stream from `--stream`, a topic or a Capture path."""
    if vendor == "replicate" and options.get("stream_naming") == "file" and not options.get("stream"):
        raise UsageError("--follow with Replicate files named by file (stream_naming=file) needs --stream: "
                         "each new file would otherwise become a stream of its own.")


