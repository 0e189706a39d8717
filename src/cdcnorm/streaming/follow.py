"""follow: normalize input files as they land, one micro-batch at a time, each committed exactly once.

A Structured Streaming query reads the stream of paths (cdcnorm.streaming.paths_source); `foreachBatch` hands
each micro-batch's paths to the batch pipeline (cdcnorm.pipeline.normalize) with the run id
`<query id>-<batch id>`. The query id is stable across restarts from the same checkpoint, and Spark replays an
unfinished batch with the same files, so the run id is the batch's Delta transaction: before decoding, a batch
whose report the lake already holds is skipped, one whose intent is pending is completed, and only a batch the
lake has never seen is run. A crash at any point therefore loses nothing and commits nothing twice.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from cdcnorm.adapters import get_adapter
from cdcnorm.errors import UsageError
from cdcnorm.fs import FileEntry, is_local, local_path
from cdcnorm.lake import Lake, open_lake
from cdcnorm.lake_commit import INTENTS, STAGED_TABLES, Pending, complete, run_app
from cdcnorm.lake_tables import STAGING
from cdcnorm.pipeline import _detect_files, normalize
from cdcnorm.session import get_spark, use_portable_parquet
from cdcnorm.streaming.paths_source import DEFAULT_SETTLE_SECONDS, paths_stream

FOLLOW = "_follow"  # LAKE/_follow/<name>/{checkpoint,manifest}: one continuous query's state


@dataclass
class BatchProgress:
    """One micro-batch's outcome (printed per batch, appended to --progress-json)."""

    batch_id: int
    run_id: str
    status: str  # "committed" | "already_committed" | "completed_pending" | "no_data_files"
    files: int = 0
    records: int = 0
    rows_written: int = 0
    quarantined: int = 0
    duplicates: int = 0
    reconciled: bool | None = None
    at: str = field(default_factory=lambda: dt.datetime.now(dt.UTC).isoformat())

    def line(self) -> str:
        return (f"batch {self.batch_id} ({self.status}): {self.files} files, {self.records} records, "
                f"{self.rows_written} rows written, {self.quarantined} quarantined, {self.duplicates} duplicates")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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
        A failed batch fails the query (raised here), except the refusal of a batch started after the stop."""
        try:
            while not self.query.awaitTermination(poll_seconds):
                if self._stop.is_set():
                    self.stop()
                    break
        except Exception as exc:  # the query ended with an error (pyspark raises it from awaitTermination)
            if not self._refused_after_stop(exc):
                raise
            return
        exc = self.query.exception()
        if exc is not None and not self._refused_after_stop(exc):
            raise exc

    def _refused_after_stop(self, exc: BaseException) -> bool:
        return self._stop.is_set() and StopRequested.__name__ in str(exc)


def follow_folder(lake: str, name: str) -> str:
    root = lake.rstrip("/")
    if is_local(root):
        root = os.path.abspath(local_path(root))
    return f"{root}/{FOLLOW}/{name}"


def start_follow(inputs: list[str | os.PathLike], vendor: str | None, lake: str, *,
                 spark: SparkSession | None = None, options: dict[str, Any] | None = None, name: str = "default",
                 trigger: str | float = "available_now", settle_seconds: float = DEFAULT_SETTLE_SECONDS,
                 max_files_per_trigger: int | None = None, dedup_window_days: int | None = None,
                 on_batch: Callable[[BatchProgress], None] | None = None,
                 stop: threading.Event | None = None) -> Follower:
    """Start the follow query (see the module doc); returns at once with the running query. Setting `stop`
    (or calling `Follower.request_stop`) makes `Follower.run_until_stopped` stop it after the current batch."""
    spark = spark or get_spark()
    use_portable_parquet(spark)
    options = dict(options or {})
    if vendor:
        refuse_file_streams(vendor, options)
    folder = follow_folder(lake, name)
    open_lake(spark, lake, create=True)
    stop, busy = stop or threading.Event(), threading.Lock()
    batches: list[BatchProgress] = []
    state = {"vendor": vendor}

    def run_batch(df: DataFrame, batch_id: int) -> None:
        if stop.is_set():
            raise StopRequested(f"stop requested before batch {batch_id}")
        with busy:
            query_id = spark.sparkContext.getLocalProperty("sql.streaming.queryId")
            progress = run_micro_batch(spark, df, int(batch_id), f"{query_id}-{batch_id}", state, lake, options,
                                       dedup_window_days)
            batches.append(progress)
            if on_batch:
                on_batch(progress)

    writer = (paths_stream(spark, [os.fspath(p) for p in inputs], f"{folder}/manifest", settle_seconds,
                           max_files_per_trigger)
              .writeStream.foreachBatch(run_batch).option("checkpointLocation", f"{folder}/checkpoint")
              .queryName(f"cdcnorm-follow-{name}"))
    if trigger == "available_now":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{float(trigger)} seconds")
    return Follower(writer.start(), batches, stop, busy)


def follow(inputs: list[str | os.PathLike], vendor: str | None, lake: str, **kwargs: Any) -> list[BatchProgress]:
    """Run the follow query until it ends (trigger="available_now": all files there now) or is stopped;
    the progress of every micro-batch this call ran."""
    follower = start_follow(inputs, vendor, lake, **kwargs)
    follower.run_until_stopped()
    return follower.batches


def run_micro_batch(spark: SparkSession, df: DataFrame, batch_id: int, run_id: str, state: dict[str, Any],
                    lake: str, options: dict[str, Any], dedup_window_days: int | None) -> BatchProgress:
    """Commit one micro-batch exactly once (skip it, complete it, or run it: see the module doc)."""
    lk = open_lake(spark, lake)
    if lk.table("runs").txn_version(run_app(run_id)) is not None:
        lk.fs.delete(lk._p(STAGING, run_id))  # a killed run's staged rows, if it died after its commits
        return _from_report(batch_id, run_id, "already_committed", lk.run_report(run_id))
    intent = lk._p(INTENTS, run_id + ".json")
    text = lk.fs.read_text_or_none(intent)
    if text is not None:
        lk.fs.delete(lk._p(STAGING, run_id))
        return _from_report(batch_id, run_id, "completed_pending", complete(lk, Pending.from_json(text)))
    paths = sorted(r["path"] for r in df.select("path").collect())  # paths only, never file contents
    if state["vendor"] is None and paths:
        state["vendor"] = _detect_files([FileEntry(p, 0) for p in paths])
        refuse_file_streams(state["vendor"], options)
    vendor = state["vendor"]
    if vendor:
        adapter = get_adapter(vendor, options)
        paths = [p for p in paths if adapter.accepts_file(p)]
    if not paths:
        return BatchProgress(batch_id, run_id, "no_data_files")
    _clear_leftovers(lk, run_id)
    result = normalize(paths, vendor, spark=spark, options=options, lake=lake, run_id=run_id,
                       dedup_window_days=dedup_window_days)
    return _from_report(batch_id, run_id, "committed", result.report)


def _clear_leftovers(lk: Lake, run_id: str) -> None:
    """Remove what a crashed earlier attempt of this run wrote before recording its intent: nothing of it is
    committed (the intent precedes every commit), and the run writes to the same folders again."""
    lk.fs.delete(lk._p(STAGING, run_id))
    for name in STAGED_TABLES:
        lk.fs.delete(f"{lk.table(name).uri}/run={run_id}")


def _from_report(batch_id: int, run_id: str, status: str, report: dict[str, Any]) -> BatchProgress:
    oc = report.get("outcomes", {})
    return BatchProgress(batch_id, run_id, status, files=int(report.get("files", 0)),
                         records=int(report.get("records_read", 0)), rows_written=int(report.get("rows_written", 0)),
                         quarantined=int(oc.get("quarantined", 0)), duplicates=int(oc.get("duplicate", 0)),
                         reconciled=report.get("reconciled"))


def refuse_file_streams(vendor: str, options: dict[str, Any]) -> None:
    """Replicate's legacy file-stem naming names a stream after each file: followed, every new file would be a
    new stream. Continuous mode needs the stream from `--stream`, a topic or a Capture path."""
    if vendor == "replicate" and options.get("stream_naming") == "file" and not options.get("stream"):
        raise UsageError("--follow with Replicate files named by file (stream_naming=file) needs --stream: "
                         "each new file would otherwise become a stream of its own.")
