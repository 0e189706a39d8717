"""Sources: turn input files or a raw-message DataFrame into the adapter's decoded rows, on the executors.

Files are listed on the driver (paths only), spread over tasks, opened and streamed by the adapter inside
`mapInArrow`. A raw-message DataFrame has the Kafka source's shape (`value` binary; optional `key`, `topic`,
`partition`, `offset`, `timestamp`, `headers`, `origin`); other shapes are renamed with a column map (e.g. the
Event Hubs connector's `body`, `sequenceNumber`, `enqueuedTime`).
"""

from __future__ import annotations

import gc
import importlib
import traceback
from collections.abc import Iterator
from contextlib import contextmanager

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdcnorm.adapters.base import Adapter, MessageMeta
from cdcnorm.canonical.emit import BatchBuilder, decoded_schema
from cdcnorm.errors import DecodeError, UsageError
from cdcnorm.runtime.fs import FileEntry, open_input

BATCH_ROWS = 4096

EVENT_HUBS_COLUMNS = {"body": "value", "sequenceNumber": "offset", "enqueuedTime": "timestamp"}
"""Column map for the Azure Event Hubs Spark connector's DataFrame shape."""

_MESSAGE_COLUMNS = {
    "value": T.BinaryType(),
    "key": T.BinaryType(),
    "topic": T.StringType(),
    "partition": T.StringType(),
    "offset": T.StringType(),
    "timestamp": T.TimestampType(),
}


TASKS_PER_CORE = 4
"""Decode tasks per core: enough that a core finishing early takes more work, few enough to cost nothing."""
_LITERAL_FILES = 20_000
"""Above this many files the file list travels as a Python-created DataFrame instead of a plan literal."""


def pack_files(files: list[FileEntry], tasks: int) -> list[list[FileEntry]]:
    """Spread files over `tasks` bins of nearly equal bytes: largest file first into the lightest bin (LPT).

    Bins come back heaviest first: Spark starts tasks in partition order, so the big ones start early and the
    light ones fill the gaps at the end.
    """
    bins: list[list[FileEntry]] = [[] for _ in range(max(1, min(tasks, len(files))))]
    loads = [0] * len(bins)
    for f in sorted(files, key=lambda f: (-f.size, f.path)):
        i = loads.index(min(loads))
        bins[i].append(f)
        loads[i] += max(f.size, 1)
    order = sorted(range(len(bins)), key=lambda i: -loads[i])
    return [bins[i] for i in order]


def files_frame(spark: SparkSession, files: list[FileEntry]) -> DataFrame:
    """A DataFrame of input paths (`path`, `size`), one partition per bin of `pack_files`.

    The bins are a literal in the plan over `spark.range` with one row per partition, so the frame needs no
    shuffle and no Python worker, and every decode task gets about the same number of bytes (hashing paths
    into partitions left one core idle while the other decoded the big files).
    """
    bins = pack_files(files, spark.sparkContext.defaultParallelism * TASKS_PER_CORE)
    if len(files) > _LITERAL_FILES:
        rows = [(f.path, f.size, i) for i, b in enumerate(bins) for f in b]
        df = spark.createDataFrame(rows, "path string, size long, _bin int")
        return df.repartitionByRange(len(bins), "_bin").drop("_bin")
    literal = F.array(*[
        F.array(*[F.struct(F.lit(f.path).alias("path"), F.lit(f.size).cast("long").alias("size")) for f in b])
        for b in bins
    ])
    slots = spark.range(0, len(bins), 1, len(bins))
    return slots.select(F.explode(F.element_at(literal, (F.col("id") + 1).cast("int"))).alias("f")).select("f.*")


def decode_files(files: DataFrame, adapter: Adapter) -> DataFrame:
    """Decode every file with the adapter on the executors."""
    return files.mapInArrow(_FileDecoder(adapter), decoded_schema())


def decode_messages(messages: DataFrame, adapter: Adapter, column_map: dict[str, str] | None = None) -> DataFrame:
    """Decode a raw-message DataFrame (Kafka source shape, or renamed with `column_map`)."""
    return prepare_messages(messages, column_map).mapInArrow(_MessageDecoder(adapter), decoded_schema())


def prepare_messages(df: DataFrame, column_map: dict[str, str] | None = None) -> DataFrame:
    """Rename and cast a user's DataFrame into the raw-message shape the adapters read."""
    mapping = column_map or {}
    for src in mapping:
        if src not in df.columns:
            raise UsageError(f"Column map names '{src}', but the input has only: {', '.join(df.columns)}.")
    if mapping:
        # a mapped column replaces a column of the target's name (the Event Hubs connector has an `offset`
        # string of its own beside `sequenceNumber`)
        targets = set(mapping.values())
        df = df.select(*[F.col(f"`{c}`").alias(mapping.get(c, c)) for c in df.columns
                         if c in mapping or c not in targets])
    if "value" not in df.columns:
        raise UsageError(
            "A raw-message DataFrame needs a binary 'value' column (Kafka source shape); found: "
            f"{', '.join(df.columns)}. Use a column map, e.g. body=value for Event Hubs."
        )
    cols = []
    for name, dtype in _MESSAGE_COLUMNS.items():
        cols.append(F.col(name).cast(dtype).alias(name) if name in df.columns else F.lit(None).cast(dtype).alias(name))
    header_type = T.ArrayType(T.StructType([T.StructField("key", T.StringType()), T.StructField("value", T.BinaryType())]))
    cols.append(F.col("headers").cast(header_type).alias("headers") if "headers" in df.columns
                else F.lit(None).cast(header_type).alias("headers"))
    origin_type = decoded_schema()["origin"].dataType
    cols.append(F.col("origin").cast(origin_type).alias("origin") if "origin" in df.columns
                else F.lit(None).cast(origin_type).alias("origin"))
    return df.select(*cols)


class _FileDecoder:
    """mapInArrow function: open each file on the executor and let the adapter stream its records."""

    def __init__(self, adapter: Adapter):
        self.adapter = adapter

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        adapter = self.adapter
        with fewer_collections():
            for batch in batches:
                for path in batch.column("path").to_pylist():
                    out = BatchBuilder()
                    out.set_context(adapter.name, adapter.formats[0] if adapter.formats else adapter.name)
                    yield from decode_one_file(adapter, path, out)


class _Warm:
    """mapInArrow function that imports `modules` and passes its rows through: run as a run's first Python task
    (:func:`warm_workers`), it leaves a Python worker started, with the decode's imports done, for the decode."""

    def __init__(self, modules: tuple[str, ...]):
        self.modules = modules

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for name in self.modules:
            importlib.import_module(name)
        yield from batches


def warm_workers(spark: SparkSession, modules: tuple[str, ...] = ()) -> None:
    """Start the session's Python workers (Spark's worker daemon, and one worker with this module and `modules`
    imported) with a one-row job: the first `mapInArrow` of a cold process pays for them, so a caller that has
    other work first (the command line's streaming query starting) runs this beside it. The worker is reused by
    the next Python task (`spark.python.worker.reuse`)."""
    spark.range(1, numPartitions=1).mapInArrow(_Warm(modules), "id long").collect()


GC_YOUNG = 200_000
"""Allocations between two young-generation collections while decoding (CPython's default: 700)."""


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Collect the young generation less often while decoding, then restore the thresholds.

    Why: decoding allocates millions of short-lived objects (parsed records, row tuples) and keeps a batch of
    rows alive; at CPython's default threshold the cyclic collector ran every 700 allocations and walked them,
    about 10 % of the decode CPU. Nothing decoded forms reference cycles, so memory does not grow from this.
    """
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], GC_YOUNG), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


def decode_one_file(adapter: Adapter, path: str, out: BatchBuilder) -> Iterator[pa.RecordBatch]:
    """Stream one file through the adapter (which reads it with the container tier, gzip included); an
    exception the container tier did not turn into a quarantine row quarantines the rest of the file."""
    try:
        with open_input(path, decompress=False) as fh:
            for _ in adapter.read_file(path, fh, out):
                if len(out) >= BATCH_ROWS:
                    yield out.flush()
    except Exception as exc:  # the rest of the file could not be read: quarantine it, never lose it
        if not out.record_open:
            out.begin_record(path, -1)
        out.quarantine(_error_class(exc), _message(exc, f"while reading {path}; the rest of this file was not decoded"))
    out.end_record()
    if len(out):
        yield out.flush()


class _MessageDecoder:
    """mapInArrow function: decode each raw message with the adapter."""

    def __init__(self, adapter: Adapter):
        self.adapter = adapter

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        adapter = self.adapter
        out = BatchBuilder()
        out.set_context(adapter.name, adapter.formats[0] if adapter.formats else adapter.name)
        for batch in batches:
            cols = batch.to_pydict()
            for i, value in enumerate(cols["value"]):
                origin = cols["origin"][i] or {}
                meta = MessageMeta(
                    key=cols["key"][i], topic=cols["topic"][i], partition=cols["partition"][i],
                    offset=cols["offset"][i], timestamp=cols["timestamp"][i],
                    headers=[(h["key"], h["value"]) for h in cols["headers"][i]] if cols["headers"][i] else None,
                    uri=origin.get("uri"),
                )
                out.begin_record(
                    origin.get("uri") or meta.topic, origin.get("index"),
                    partition=origin.get("partition") or meta.partition,
                    offset=origin.get("offset") or meta.offset, raw=value,
                )
                try:
                    adapter.decode_message(value, meta, out)
                except Exception as exc:
                    out.quarantine(_error_class(exc), _message(exc, "while decoding this message"),
                                   raw=exc.raw if isinstance(exc, DecodeError) else None)
                out.end_record()
                if len(out) >= BATCH_ROWS:
                    yield out.flush()
        adapter.end_messages(out)
        if len(out):
            yield out.flush()


def _error_class(exc: Exception) -> str:
    return exc.error_class if isinstance(exc, DecodeError) else "adapter_error"


def _message(exc: Exception, where: str) -> str:
    if isinstance(exc, DecodeError):
        return exc.message
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    at = f" at {frame.filename.rsplit('/', 1)[-1]}:{frame.lineno}" if frame else ""
    return f"{type(exc).__name__}: {exc} {where}{at}"
