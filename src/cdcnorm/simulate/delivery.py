"""Vendor-realistic delivery: the quirks, and files that rotate by count.

A :class:`Lane` is one ordered channel a vendor delivers through (a topic partition, a DataHub shard, a
Datastream object folder). The quirks live here, once, so every encoder gets the same behaviour and each one
can be switched off. Quirk randomness comes from the lane's own RNG, never from the history's.
"""

from __future__ import annotations

import contextlib
import gzip
import heapq
import io
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from fastavro import parse_schema
from fastavro.write import Writer

QUIRKS: tuple[str, ...] = ("duplicates", "out_of_order", "backfill_overlap", "far_halves", "heartbeats", "dt_before_md",
                           "aliyun_json", "late_files")
LATE_RATE = 0.1
"""late_files: share of a format's files delivered one step late."""

SHUFFLE_WINDOW = 16
"""Out-of-order deliveries move a record at most about this many places."""
DUPLICATE_RATE = 0.03
"""Share of records delivered twice (at-least-once)."""


def parse_quirks(quirks: list[str] | tuple[str, ...] | None) -> frozenset[str]:
    """None or ['all'] -> every quirk; ['none'] or [] -> none; else the named ones (unknown names raise)."""
    if quirks is None:
        return frozenset(QUIRKS)
    names = {q.strip() for item in quirks for q in item.split(",") if q.strip()}
    if names == {"all"}:
        return frozenset(QUIRKS)
    if names <= {"none"}:
        return frozenset()
    unknown = sorted(names - set(QUIRKS))
    if unknown:
        raise ValueError(f"unknown quirk(s) {', '.join(unknown)}; known: {', '.join(QUIRKS)}, all, none")
    return frozenset(names)


def lane_rng(seed: int, *names: object) -> random.Random:
    """A deterministic RNG per (seed, lane): quirks never touch the history's random stream."""
    return random.Random("cdcnorm-delivery:" + ":".join(str(n) for n in (seed, *names)))


class Lane:
    """Deliver items to `sink(item, redelivered)` with the enabled quirks applied.

    - out_of_order: a bounded shuffle (window SHUFFLE_WINDOW); `barrier=True` items flush it first, so
      e.g. a Replicate metadata message is never overtaken unless asked to be (`hold`).
    - duplicates: an emitted item is emitted again, later, with probability DUPLICATE_RATE.
    - `hold=N`: the item is held back until N more items were put (far UPDATE halves, DT before MD).
    """

    def __init__(self, sink: Callable[[Any, bool], None], rng: random.Random, quirks: frozenset[str],
                 dup_delay: int = 200):
        self.sink, self.rng = sink, rng
        self.shuffle = "out_of_order" in quirks
        self.dups_on = "duplicates" in quirks
        self.dup_delay = max(2, dup_delay)
        self.buf: list[Any] = []
        self.held: list[tuple[int, int, Any, bool]] = []
        self.dups: list[tuple[int, int, Any]] = []
        self.tick = self.emitted = self.n = 0

    def put(self, item: Any, *, hold: int = 0, barrier: bool = False) -> None:
        self.tick += 1
        while self.held and self.held[0][0] <= self.tick:
            _, _, held, held_barrier = heapq.heappop(self.held)
            self._accept(held, held_barrier)
        if hold > 0:
            self.n += 1
            heapq.heappush(self.held, (self.tick + hold, self.n, item, barrier))
            return
        self._accept(item, barrier)

    def _accept(self, item: Any, barrier: bool) -> None:
        if barrier or not self.shuffle:
            self._flush()
            self._emit(item)
            return
        self.buf.append(item)
        if len(self.buf) >= SHUFFLE_WINDOW:
            self._emit(self.buf.pop(self.rng.randrange(len(self.buf))))

    def _flush(self) -> None:
        while self.buf:
            self._emit(self.buf.pop(self.rng.randrange(len(self.buf))))

    def _emit(self, item: Any) -> None:
        self.sink(item, False)
        self.emitted += 1
        if self.dups_on and self.rng.random() < DUPLICATE_RATE:
            self.n += 1
            heapq.heappush(self.dups, (self.emitted + self.rng.randrange(1, self.dup_delay), self.n, item))
        while self.dups and self.dups[0][0] <= self.emitted:
            self.sink(heapq.heappop(self.dups)[2], True)

    def close(self) -> None:
        while self.held:
            _, _, held, held_barrier = heapq.heappop(self.held)
            self._accept(held, held_barrier)
        self._flush()
        while self.dups:
            self.sink(heapq.heappop(self.dups)[2], True)


def late_files(files: list[str], seed: int, vf: str) -> list[str]:
    """late_files: the files (about LATE_RATE of them) a stepwise consumer receives one step after the files
    written around them; the choice never draws from the history's or a lane's random stream."""
    rng = lane_rng(seed, vf, "late_files")
    ordered = sorted(files)
    chosen = [f for f in ordered if rng.random() < LATE_RATE]
    if not chosen and len(ordered) > 1:
        # a format with few files may draw none: the quirk still delays one, early enough for a later step
        chosen = [ordered[rng.randrange(max(1, len(ordered) * 2 // 3))]]
    return chosen


class DeliveryLog:
    """When each file became complete: the global write count and the history's clock at its last record.

    Why: a vendor delivers a file once it is complete, so a feeder (cdcnorm.simulate.feed) that drops files in
    the order of their last write replays the delivery order of one history across every vendor's lanes. The
    simulator advances `clock_us` as it hands events to the encoders; `Rotator.write` reports each write.
    """

    def __init__(self) -> None:
        self.clock_us = 0
        self.writes = 0
        self.files: dict[str, tuple[int, int]] = {}  # path -> (write count, clock) at its last record

    def wrote(self, path: Path) -> None:
        self.writes += 1
        self.files[str(path)] = (self.writes, self.clock_us)


_RECORDING: list[DeliveryLog] = []
"""The log of the simulation running now (at most one): a module-level hook, so the encoders stay unaware."""


@contextlib.contextmanager
def recording(log: DeliveryLog | None) -> Iterator[None]:
    """Report every file write of the block to `log` (None: record nothing)."""
    if log is not None:
        _RECORDING.append(log)
    try:
        yield
    finally:
        if log is not None:
            _RECORDING.remove(log)


class Rotator:
    """Write items into a sequence of files, a new one every `rotate` items.

    `factory(file_no, first_item)` opens the next file (so names can depend on the first item, e.g. the
    Datastream minute folder); the file object needs `write(item)`, `close()` and `path`.
    """

    def __init__(self, rotate: int, factory: Callable[[int, Any], Any]):
        self.rotate, self.factory = max(1, rotate), factory
        self.file: Any = None
        self.count = self.file_no = 0

    def write(self, item: Any) -> None:
        if self.file is None or self.count >= self.rotate:
            self.close()
            self.file = self.factory(self.file_no, item)
            self.file_no += 1
        self.file.write(item)
        self.count += 1
        if _RECORDING:
            _RECORDING[-1].wrote(self.file.path)

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file, self.count = None, 0


def _open_binary(path: Path, gz: bool = False) -> io.BufferedIOBase:
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:  # mtime=0: identical content gives identical bytes (determinism)
        return gzip.GzipFile(filename="", mode="wb", fileobj=open(path, "wb"), mtime=0)  # noqa: SIM115
    return open(path, "wb")  # noqa: SIM115


class LinesFile:
    """JSON Lines; `trailing_newline=False` leaves the last line unterminated, as real Datastream files do."""

    def __init__(self, path: Path, gz: bool = False, trailing_newline: bool = True):
        self.path = path
        self.fh = _open_binary(path, gz)
        self.raw = self.fh.fileobj if gz else None
        self.trailing, self.first = trailing_newline, True

    def write(self, line: bytes) -> None:
        if self.trailing:
            self.fh.write(line + b"\n")
        else:
            self.fh.write(line if self.first else b"\n" + line)
        self.first = False

    def close(self) -> None:
        self.fh.close()
        if self.raw is not None:
            self.raw.close()


class ConcatFile:
    """Blobs back to back with no separator (DataHub's OSS export of a BLOB topic)."""

    def __init__(self, path: Path):
        self.path = path
        self.fh = _open_binary(path)

    def write(self, blob: bytes) -> None:
        self.fh.write(blob)

    def close(self) -> None:
        self.fh.close()


class AvroFile:
    """An Avro object container file (codec null, like every real file in the corpus)."""

    def __init__(self, path: Path, schema: dict, sync_marker: bytes | None = None):
        self.path = path
        self.fh = _open_binary(path)
        self.writer = Writer(self.fh, parse_schema(schema), codec="null", sync_interval=1 << 20,
                             sync_marker=sync_marker)

    def write(self, record: dict) -> None:
        self.writer.write(record)

    def close(self) -> None:
        self.writer.flush()
        self.fh.close()
