"""The input-file ledger (`LAKE/inputs`): which input files committed runs read, by file identity.

A run skips the listed files whose identity (:class:`cdcnorm.runtime.fs.FileId`: normalised URI, size,
modification time, ETag) is in the ledger, and records the files it reads as one more table of its commit
(:mod:`cdcnorm.lake.commit`, before `runs`, with the run's app transaction). The ledger is read at the lake's
committed cut, after pending intents were completed, so a file is never recorded without its rows, nor its rows
committed without the file. A changed file (other size, time or ETag) is another identity: read again, its events
still checked for duplicates. Two concurrent runs over the same new files may both read them (their events are
checked against each other at commit) and both record them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from cdcnorm.lake.delta.read import read_files
from cdcnorm.lake.store import Lake
from cdcnorm.runtime.fs import FileEntry, FileId, is_local, local_path

COLUMNS = ("uri", "size", "mtime_ms", "etag")


def known(lk: Lake, files: Iterable[FileEntry]) -> set[FileId]:
    """The identities among `files` that committed runs of the lake already read."""
    return known_ids(lk, {f.identity() for f in files})


def known_ids(lk: Lake, wanted: set[FileId]) -> set[FileId]:
    """The identities among `wanted` that committed runs of the lake already read (the ledger at the cut)."""
    table = lk.table("inputs")
    if not wanted or not table.exists():
        return set()
    uris = [f["uri"] for f in lk.files_at_cut("inputs")]
    if not uris:
        return set()
    names = sorted({w.uri for w in wanted})
    if all(is_local(u) for u in uris):  # a local lake's ledger: read by the driver, no Spark job
        rows = pq.read_table([local_path(u) for u in uris], columns=list(COLUMNS),
                             filters=[("uri", "in", names)]).to_pylist()
    else:
        found = read_files(lk.spark, table, uris, list(COLUMNS)).where(F.col("uri").isin(names))
        rows = [r.asDict() for r in found.collect()]  # identities of listed files only
    seen = {FileId(r["uri"], int(r["size"]), r["mtime_ms"], r["etag"]) for r in rows}
    return wanted & seen


def rows(lk: Lake, files: Iterable[FileEntry], run_id: str, vendor: str) -> pa.Table | DataFrame | None:
    """The ledger rows of the files a run read (None: none): Arrow for a local lake (written by the driver),
    a Spark DataFrame for a remote one."""
    table = arrow_rows([(f.identity(), run_id, vendor) for f in files])
    if not table.num_rows:
        return None
    if is_local(lk.table("inputs").uri):
        return table
    return lk.spark.createDataFrame(table.to_pylist(), lk.specs["inputs"].schema)


def arrow_rows(entries: list[tuple[FileId, str, str | None]]) -> pa.Table:
    """Ledger rows, one per (identity, run id, vendor), recorded now."""
    now = dt.datetime.now(dt.UTC)
    return pa.table({
        "uri": pa.array([i.uri for i, _, _ in entries], pa.string()),
        "size": pa.array([i.size for i, _, _ in entries], pa.int64()),
        "mtime_ms": pa.array([i.mtime_ms for i, _, _ in entries], pa.int64()),
        "etag": pa.array([i.etag for i, _, _ in entries], pa.string()),
        "vendor": pa.array([v for _, _, v in entries], pa.string()),
        "run_id": pa.array([r for _, r, _ in entries], pa.string()),
        "recorded_at": pa.array([now] * len(entries), pa.timestamp("us", tz="UTC")),
    })
