"""`cdcnorm_paths`: a streaming source of input file *paths* (path, size, mtime), never of file contents.

Spark asks the source for its latest offset; the source lists the input folders, appends the files it has not
seen yet (and that have not changed for `settleSeconds`: a file still being written waits) to an append-only
manifest kept next to the query's checkpoint, and answers with the manifest's length. A micro-batch is a slice
of the manifest, so an offset is one small number, a file listed again is never emitted twice (the manifest is
keyed by file identity, cdcnorm.runtime.fs.file_identity: a file whose size or modification time changed is
emitted again), and no file is skipped for its age. Files a committed run of the lake already read (batch or
follow) are skipped by the run itself (the lake's input-file ledger). The manifest is a folder of segments
(`<first index>.jsonl`), each written once and atomically (temp file, rename): a crash leaves whole segments.
The executors later open the files themselves (cdcnorm.runtime.fs.open_input).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    SupportsTriggerAvailableNow,
)

from cdcnorm.errors import UsageError
from cdcnorm.runtime.fs import FileId, file_identity, hidden_name, is_local, local_path, skip_reason

NAME = "cdcnorm_paths"
SCHEMA = "path string, size long, mtime timestamp"
DEFAULT_SETTLE_SECONDS = 30.0
SEGMENT_DIGITS = 12


@dataclass(frozen=True, slots=True)
class Seen:
    """One manifest entry: an input file as it was when it was admitted."""

    path: str
    size: int
    mtime: float  # seconds since the epoch
    mtime_ms: int | None = None  # exact, from the listing (absent in older manifests)

    def identity(self) -> FileId:
        return file_identity(self.path, self.size, self.mtime_ms if self.mtime_ms is not None else int(self.mtime * 1000))

    def row(self) -> tuple[str, int, dt.datetime]:
        return self.path, self.size, dt.datetime.fromtimestamp(self.mtime, dt.UTC)


class Manifest:
    """The append-only list of admitted files, in admission order (a local folder of JSON-lines segments)."""

    def __init__(self, folder: str):
        if not is_local(folder):
            raise UsageError(f"The follow manifest must be on a local file system for now (got {folder}).")
        self.folder = local_path(folder)
        self._entries: list[Seen] = []
        self._ids: set[FileId] = set()
        self._segments: set[str] = set()

    def entries(self) -> list[Seen]:
        """All entries, reading only the segments not read yet (segments are never rewritten)."""
        os.makedirs(self.folder, exist_ok=True)
        names = sorted(n for n in os.listdir(self.folder) if n.endswith(".jsonl") and n not in self._segments)
        for name in names:
            if int(name.split(".")[0]) != len(self._entries):
                raise UsageError(f"The follow manifest {self.folder} is damaged: segment {name} does not follow "
                                 f"entry {len(self._entries)}.")
            with open(os.path.join(self.folder, name), "rb") as fh:
                for line in fh.read().decode("utf-8").splitlines():
                    d = json.loads(line)
                    self._add(Seen(d["path"], int(d["size"]), float(d["mtime"]), d.get("mtime_ms")))
            self._segments.add(name)
        return self._entries

    def between(self, start: int, end: int) -> list[Seen]:
        """Entries `start` (included) to `end` (excluded): what the offsets `{"files": start}` to `{"files": end}`
        name, whether the source or the driver reads them."""
        return self.entries()[start:end]

    def knows(self, seen: Seen) -> bool:
        """Whether the manifest holds this file as it is now (same identity)."""
        return seen.identity() in self._ids

    def append(self, new: list[Seen]) -> None:
        """Append entries as one new segment (written to a temp file, then renamed into place)."""
        if not new:
            return
        start = len(self.entries())
        name = f"{start:0{SEGMENT_DIGITS}d}.jsonl"
        tmp = os.path.join(self.folder, f".{name}.tmp")
        with open(tmp, "wb") as fh:
            fh.write("".join(json.dumps({"path": s.path, "size": s.size, "mtime": s.mtime, "mtime_ms": s.mtime_ms}) + "\n"
                             for s in new).encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, os.path.join(self.folder, name))
        for s in new:
            self._add(s)
        self._segments.add(name)

    def _add(self, s: Seen) -> None:
        self._entries.append(s)
        self._ids.add(s.identity())


def list_inputs(inputs: list[str]) -> list[Seen]:
    """Input files under the given local files or folders (recursively), with the skip rules of
    cdcnorm.runtime.fs.list_files: hidden files and folders (cdcnorm.runtime.fs.hidden_name), zero-byte objects."""
    out: list[Seen] = []
    for raw in inputs:
        if not is_local(raw):
            raise UsageError(f"--follow lists local folders only for now (got {raw}).")
        p = local_path(raw)
        if os.path.isfile(p):
            candidates = [os.path.abspath(p)]
        else:
            candidates = []
            for root, dirs, names in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not hidden_name(d))
                candidates.extend(os.path.abspath(os.path.join(root, n)) for n in sorted(names))
        for path in candidates:
            try:
                st = os.stat(path)
            except FileNotFoundError:  # removed between the listing and the stat
                continue
            if skip_reason(path, st.st_size) is None:
                out.append(Seen(path, st.st_size, st.st_mtime, st.st_mtime_ns // 1_000_000))
    return out


def batch_entries(folder: str, batch_id: int) -> list[Seen] | None:
    """The manifest entries of micro-batch `batch_id` of the follow query kept in `folder` (its `checkpoint` and
    `manifest`), read on the driver: the batch's end offset is in the query's offset log (written before the batch
    runs), its start is the previous batch's end, and the slice between them is exactly what the source's
    `partitions` gives the batch. Reading the batch's rows instead costs a Spark job and a Python worker (on a
    cold process, a tenth of a small run's wall time). None when the log does not say (a remote or damaged
    checkpoint, a log format this code does not know): the caller then reads the batch's rows."""
    if not is_local(folder):
        return None
    end = _logged_offset(folder, batch_id)
    start = 0 if batch_id == 0 else _logged_offset(folder, batch_id - 1)
    if end is None or start is None:
        return None
    batch = Manifest(f"{folder}/manifest").between(start, end)
    return batch if len(batch) == end - start else None


def _logged_offset(folder: str, batch_id: int) -> int | None:
    """This source's end offset of a batch from Spark's offset log (`v1`, the batch metadata, one offset per
    source: the query has this one source)."""
    try:
        with open(os.path.join(local_path(folder), "checkpoint", "offsets", str(batch_id)), encoding="utf-8") as fh:
            lines = fh.read().splitlines()
        if len(lines) != 3 or lines[0] != "v1":
            return None
        return int(json.loads(lines[2])["files"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


class PathsStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets are `{"files": n}`: the first n manifest entries."""

    def __init__(self, options: Mapping[str, str]):
        self.inputs = json.loads(options["inputs"])
        self.manifest = Manifest(options["manifest"])
        self.settle = float(options.get("settleSeconds", DEFAULT_SETTLE_SECONDS))
        cap = options.get("maxFilesPerTrigger")
        self.max_files = int(cap) if cap else None
        cap = options.get("maxBytesPerTrigger")
        self.max_bytes = int(cap) if cap else None
        listed = options.get("listed")
        self.listed = [Seen(p, int(n), 0.0) for p, n in json.loads(listed)] if listed else None
        self.target: int | None = None  # set by availableNow: never read past what existed when it started

    def initialOffset(self) -> dict:
        return {"files": 0}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxFiles(self.max_files) if self.max_files else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = self.discover()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        total = self.target if self.target is not None else self.discover()
        first = int(start["files"])
        end = total
        if isinstance(limit, ReadMaxFiles):
            end = min(total, first + int(limit.max_files))
        if self.max_bytes and end > first:
            end = first + self._files_within(first, end, self.max_bytes)
        return {"files": max(end, first)}

    def _files_within(self, first: int, end: int, budget: int) -> int:
        """How many files from `first` fit in `budget` bytes (at least one, so a large file is never stuck)."""
        used, n = 0, 0
        for s in self.manifest.between(first, end):
            if n and used + s.size > budget:
                break
            used, n = used + s.size, n + 1
        return n

    def discover(self) -> int:
        """Admit the settled files not in the manifest yet; the manifest's length."""
        self.manifest.entries()
        now = time.time()
        found = self.listed if self.listed is not None else list_inputs(self.inputs)
        new = [s for s in found if not self.manifest.knows(s) and now - s.mtime >= self.settle]
        self.manifest.append(new)
        return len(self.manifest.entries())

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        batch = self.manifest.between(int(start["files"]), int(end["files"]))
        return [InputPartition([(s.path, s.size, s.mtime) for s in batch])] if batch else []

    def read(self, partition: InputPartition) -> Iterator[tuple[str, int, dt.datetime]]:
        for path, size, mtime in partition.value:
            yield Seen(path, size, mtime).row()

    def commit(self, end: dict) -> None:
        """Nothing to release: the manifest is the history the offsets point into."""


class PathsSource(DataSource):
    """Options: `inputs` (JSON list of files or folders), `manifest` (folder), `settleSeconds` (default 30),
    `maxFilesPerTrigger` and `maxBytesPerTrigger` (default: no cap; a batch takes at least one file), `listed`
    (JSON list of [path, size]: exactly these files, no listing)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return PathsStreamReader(self.options)  # case-insensitive keys: keep the mapping


def register(spark) -> None:
    """Make `spark.readStream.format("cdcnorm_paths")` available in this session."""
    spark.dataSource.register(PathsSource)


def paths_stream(spark, inputs: list[str], manifest: str, settle_seconds: float = DEFAULT_SETTLE_SECONDS,
                 max_files_per_trigger: int | None = None, max_bytes_per_trigger: int | None = None,
                 listed: list | None = None):
    """A streaming DataFrame of (path, size, mtime) for the files landing under `inputs` (or exactly the
    `listed` files, entries with `path` and `size`: the batch command lists with Spark's file systems)."""
    register(spark)
    reader = (spark.readStream.format(NAME)
              .option("inputs", json.dumps([os.fspath(p) for p in inputs]))
              .option("manifest", manifest)
              .option("settleSeconds", str(settle_seconds)))
    if max_files_per_trigger:
        reader = reader.option("maxFilesPerTrigger", str(int(max_files_per_trigger)))
    if max_bytes_per_trigger:
        reader = reader.option("maxBytesPerTrigger", str(int(max_bytes_per_trigger)))
    if listed is not None:
        reader = reader.option("listed", json.dumps([[f.path, int(f.size)] for f in listed]))
    return reader.load()
