"""Baselines measured in the same run as cdcnorm, on the same files and cores.

Why: a throughput figure alone says little on a shared two-core machine; a ratio to work any Spark job must do
on the same files (the copy floor), to what a user would write by hand, and to the Avro library's own decode
speed says how much cdcnorm itself costs.

- copy floor: Spark reads the files as plain text (JSON, CSV) or whole binary objects (Avro) and writes them to
  Parquet unchanged; the least any Spark job over these files can cost.
- hand-written pipeline (Datastream JSON): what a user writes by hand: `from_json` with a VARIANT payload,
  an id, `dropDuplicates`, committed as one Delta table through the same delta-rs commit code as cdcnorm (both pay for
  Delta); the bar cdcnorm must beat. Its streaming twin runs the same transformation in an `availableNow` query
  (`readStream.text` -> `foreachBatch`), each micro-batch committed once with the batch id as the Delta
  transaction, the shape of `cdcnorm normalize` itself.
- fastavro alone: decoding the same Avro files with fastavro in one process per core, no Spark at all.
- DuckDB: the projection `apply` computes (latest row per key by `sort_key`, minus deletes) over the lake's
  Parquet, for context.
"""

from __future__ import annotations

import glob
import os
import threading
from multiprocessing import Pool

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F


def copy_floor(spark: SparkSession, files: list[str], out: str, binary: bool) -> None:
    """Read the files unchanged (text lines, or whole binary objects) and write them to Parquet."""
    if binary:
        df = spark.read.format("binaryFile").load(files).select("path", "content")
    else:
        df = spark.read.text(files)
    df.write.mode("overwrite").parquet(out)


DATASTREAM_JSON_SCHEMA = (
    "uuid string, read_timestamp string, source_timestamp string, object string, read_method string, "
    "stream_name string, schema_key string, sort_keys variant, source_metadata variant, payload variant"
)


def _handwritten(lines: DataFrame, dedup: bool) -> DataFrame:
    df = lines.select(F.from_json("value", DATASTREAM_JSON_SCHEMA).alias("e")).select("e.*")
    df = df.withColumn("event_id", F.sha2(F.concat_ws(
        "|", "object", F.to_json("sort_keys"), F.variant_get("source_metadata", "$.change_type", "string"),
        F.to_json("payload")), 256))
    return df.dropDuplicates(["event_id"]) if dedup else df


def _delta_table(spark: SparkSession, out: str):
    from cdcnorm.lake.delta.table import DeltaTableRef, delta_uri
    from cdcnorm.runtime.session import use_portable_parquet

    use_portable_parquet(spark)  # the Parquet settings cdcnorm writes its lake with
    schema = _handwritten(spark.createDataFrame([], "value string"), False).schema
    ref = DeltaTableRef(delta_uri(out), schema)
    ref.ensure()
    return ref


def handwritten_datastream_json(spark: SparkSession, files: list[str], out: str, dedup: bool) -> None:
    """The pipeline a user writes by hand for Datastream JSON, with or without deduplication, committed as one
    Delta table through cdcnorm's delta-rs commit code (Spark writes the Parquet files, the driver commits them)."""
    from cdcnorm.lake.delta.files import write_files

    ref = _delta_table(spark, out)
    ref.commit(write_files(_handwritten(spark.read.text(files), dedup), ref, "hw"))


def handwritten_streaming(spark: SparkSession, folder: str, out: str, checkpoint: str) -> int:
    """The same pipeline (with dedup) as an `availableNow` query over the folder: each micro-batch is written and
    committed once, with (query, batch id) as the Delta transaction. Returns the number of micro-batches."""
    from cdcnorm.lake.delta.files import write_files

    ref = _delta_table(spark, out)
    batches = []

    def commit(df: DataFrame, batch_id: int) -> None:
        app = "hw-" + spark.sparkContext.getLocalProperty("sql.streaming.queryId")
        done = ref.txn_version(app)
        if done is None or done < batch_id:
            ref.commit(write_files(_handwritten(df, True), ref, f"hw-{batch_id}"), txns=[(app, batch_id)])
        batches.append(batch_id)

    q = (spark.readStream.format("text").option("recursiveFileLookup", "true").load(folder)
         .writeStream.foreachBatch(commit).option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start())
    q.awaitTermination()
    return len(batches)


def _decode_avro_file(path: str) -> int:
    import fastavro

    n = 0
    with open(path, "rb") as fh:
        for _ in fastavro.reader(fh):
            n += 1
    return n


def fastavro_alone(files: list[str], cores: int | None = None) -> int:
    """fastavro decoding every file, one process per core (largest files first); returns the record count."""
    cores = cores or os.cpu_count() or 1
    with Pool(cores) as pool:
        return sum(pool.map(_decode_avro_file, sorted(files, key=lambda p: -os.path.getsize(p)), chunksize=1))


def duckdb_projection(lake: str, out: str, threads: int) -> int:
    """DuckDB over the live files of the lake's `changes` Delta table: latest row per (table, key) by `sort_key`, deletes dropped.

    The same projection `apply` makes for keyed tables, without its per-column merge, truncates or keyless
    multiset: context for what a single-node columnar engine costs on the same rows. Returns the row count.
    """
    import duckdb
    from deltalake import DeltaTable

    files = DeltaTable(os.path.join(lake, "changes")).file_uris()  # the live files of the Delta table
    if not files:
        return 0
    con = duckdb.connect()
    con.execute(f"SET threads = {int(threads)}")
    query = f"""
        SELECT vendor, stream, "database", "schema", "table", key_bytes, sort_key, "after"
        FROM (
            SELECT *, row_number() OVER (
                PARTITION BY vendor, stream, "database", "schema", "table", key_bytes ORDER BY sort_key DESC) AS rn
            FROM read_parquet({files!r}, hive_partitioning = true, union_by_name = true)
            WHERE op IN ('INSERT', 'UPDATE', 'DELETE', 'SNAPSHOT') AND key_bytes IS NOT NULL
        )
        WHERE rn = 1 AND op <> 'DELETE'
    """
    con.execute(f"COPY ({query}) TO '{out}' (FORMAT parquet)")
    rows = con.execute(f"SELECT count(*) FROM read_parquet('{out}')").fetchone()[0]
    con.close()
    return int(rows)


# -- memory -------------------------------------------------------------------------------------------------
def _status(pid: int, field: str) -> float:
    """A /proc/PID/status field in MiB (VmHWM = peak resident memory), NaN when the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def _children(pid: int) -> list[int]:
    """All descendants of a process (Spark's Python daemon and its forked workers under the JVM)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for task in glob.glob(f"/proc/{p}/task/*/children"):
            try:
                with open(task) as fh:
                    kids = [int(x) for x in fh.read().split()]
            except OSError:
                continue
            out += kids
            todo += kids
    return out


def _kind(pid: int) -> str:
    if pid == os.getpid():
        return "driver"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmd = fh.read().replace(b"\0", b" ")
    except OSError:
        return "other"
    if b"java" in cmd.split(b" ")[0]:
        return "jvm"
    if b"pyspark.daemon" in cmd or b"pyspark.worker" in cmd:
        return "python_worker"
    return "other"


def _cpu_ticks(pid: int) -> tuple[tuple[int, int], int] | None:
    """((pid, start time), utime + stime in clock ticks) of one process; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (pid, int(fields[19])), int(fields[11]) + int(fields[12])


class _Sampler:
    """Calls `_sample` every `interval` seconds on a thread of its own, from `_start` to `_finish`."""

    def __init__(self, interval: float):
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> object:
        raise NotImplementedError

    def _start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def _finish(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


class CpuMeter(_Sampler):
    """CPU seconds used by this process and all its descendants (JVM, Python workers, fastavro processes).

    On a shared machine wall time depends on the neighbours, the CPU time of our own processes much less, so
    ratios are reported on both. Processes are sampled every `interval` seconds, so a worker that starts and
    ends between two samples is missed (Spark's Python workers are long-lived and reused).
    """

    def __init__(self, interval: float = 0.2):
        super().__init__(interval)
        self._base: dict[tuple[int, int], int] = {}
        self._last: dict[tuple[int, int], int] = {}
        self._kind: dict[tuple[int, int], str] = {}
        self._hwm: dict[tuple[int, int], float] = {}
        self.seconds = 0.0

    def _sample(self) -> None:
        for pid in [os.getpid(), *_children(os.getpid())]:
            got = _cpu_ticks(pid)
            if got is not None:
                self._last[got[0]] = got[1]
                if got[0] not in self._kind:
                    self._kind[got[0]] = _kind(pid)
                hwm = _status(pid, "VmHWM")
                if hwm == hwm:  # not NaN
                    self._hwm[got[0]] = max(self._hwm.get(got[0], 0.0), hwm)

    def by_kind(self) -> dict[str, float]:
        """CPU seconds per kind of process: this driver, the JVM, Python workers, other children."""
        out: dict[str, float] = {}
        for k, v in self._last.items():
            kind = self._kind.get(k, "other")
            out[kind] = out.get(kind, 0.0) + (v - self._base.get(k, 0)) / os.sysconf("SC_CLK_TCK")
        return out

    def peak_mb(self) -> dict[str, float]:
        """Largest peak resident memory (VmHWM, MiB) seen per kind of process while measuring."""
        out: dict[str, float] = {}
        for k, v in self._hwm.items():
            kind = self._kind.get(k, "other")
            out[kind] = max(out.get(kind, 0.0), v)
        return out

    def __enter__(self) -> CpuMeter:
        self._sample()
        self._base = dict(self._last)
        self._start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._finish()
        self._sample()
        ticks = sum(v - self._base.get(k, 0) for k, v in self._last.items())
        self.seconds = ticks / os.sysconf("SC_CLK_TCK")


def jvm_pid(spark: SparkSession) -> int | None:
    proc = getattr(spark.sparkContext._gateway, "proc", None)
    return proc.pid if proc is not None else None


def reset_peaks(spark: SparkSession) -> None:
    """Reset the peak-RSS counters (Linux clear_refs 5) so each measurement reports its own peak."""
    pid = jvm_pid(spark)
    for p in [os.getpid(), *([pid, *_children(pid)] if pid else [])]:
        try:
            with open(f"/proc/{p}/clear_refs", "w") as fh:
                fh.write("5")
        except OSError:
            pass


class HeapAfterGc(_Sampler):
    """The most JVM heap still in use right after a garbage collection, sampled while measuring.

    Why after GC: heap in use between collections is mostly garbage waiting to be collected, so only what a
    collection leaves says how much the job holds. Each heap pool reports its usage after its latest collection
    (`MemoryPoolMXBean.getCollectionUsage`); their sum is sampled every `interval` seconds through py4j, and
    the maximum is kept, with the heap's maximum size to compare it with."""

    def __init__(self, spark: SparkSession, interval: float = 1.0):
        super().__init__(interval)
        self._jvm = spark.sparkContext._jvm
        self.peak_mb = 0.0
        self.max_mb = self._jvm.java.lang.Runtime.getRuntime().maxMemory() / 2**20

    def _sample(self) -> float:
        mf = self._jvm.java.lang.management.ManagementFactory
        used = 0
        for pool in mf.getMemoryPoolMXBeans():
            if str(pool.getType().toString()) == "Heap memory":
                usage = pool.getCollectionUsage()
                used += usage.getUsed() if usage is not None else 0
        mb = used / 2**20
        self.peak_mb = max(self.peak_mb, mb)
        return mb

    def __enter__(self) -> HeapAfterGc:
        self._start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._finish()
        self._jvm.java.lang.System.gc()  # what the run leaves held, once collected
        self._sample()
