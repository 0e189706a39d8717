"""What lies under a lake folder, through Hadoop's FileSystem (any URI Spark reaches): relative paths, sizes
and modification times, metadata only.

Why not the Delta log: the commands here look for what the log does *not* know (a format-1 lake's files,
files of crashed runs, staging folders).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import SparkSession

STAGING = "_staging"  # LAKE/_staging/<run_id>/: a normalize run's decoded rows (cdcnorm.pipeline.STAGING)


@dataclass(frozen=True)
class Listed:
    """One file under a folder: its path relative to that folder, size in bytes, modification time (ms)."""

    rel: str
    size: int
    mtime_ms: int

    @property
    def segments(self) -> list[str]:
        return self.rel.split("/")


def _fs_and_path(spark: SparkSession, root: str):
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(root)
    return path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), path


def walk(spark: SparkSession, root: str, parquet_only: bool = True, hidden: bool = False) -> list[Listed]:
    """Every file under `root` (recursively); hidden entries (`_delta_log`, `_SUCCESS`, `.crc`, `_temporary`, ...)
    only with `hidden`."""
    fs, path = _fs_and_path(spark, root)
    if not fs.exists(path):
        return []
    base = fs.makeQualified(path).toUri().getPath().rstrip("/") + "/"
    it = fs.listFiles(path, True)
    out = []
    while it.hasNext():
        st = it.next()
        full = st.getPath().toUri().getPath()
        if not full.startswith(base):
            continue
        rel = full[len(base):]
        if not hidden and any(seg.startswith(("_", ".")) for seg in rel.split("/")):
            continue
        if parquet_only and not rel.endswith(".parquet"):
            continue
        out.append(Listed(rel, int(st.getLen()), int(st.getModificationTime())))
    return sorted(out, key=lambda f: f.rel)


def subfolders(spark: SparkSession, root: str) -> list[str]:
    """Names of the folders directly under `root`."""
    fs, path = _fs_and_path(spark, root)
    if not fs.exists(path):
        return []
    return sorted(st.getPath().getName() for st in fs.listStatus(path) if st.isDirectory())


def run_of(rel: str) -> str | None:
    """The run a data file belongs to, from its folders: `run=R` (a format-2 run, `run=R.<attempt>` for a
    rewritten attempt) or `run_id=R` (format 1); None when the path names no run."""
    for seg in rel.split("/")[:-1]:
        if seg.startswith("run="):
            return seg[4:].split(".", 1)[0]
        if seg.startswith("run_id="):
            return seg[7:]
    return None


def modified_ms(spark: SparkSession, path: str) -> int:
    """The modification time of a file or folder (ms), 0 when it is gone."""
    fs, p = _fs_and_path(spark, path)
    return int(fs.getFileStatus(p).getModificationTime()) if fs.exists(p) else 0
