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
                           "aliyun_json", "late_files", "compressed_updates", "empty_before")
"""The default quirk set (`all`): every quirk a run switches on unless told otherwise."""
OPT_IN_QUIRKS: tuple[str, ...] = ("late_redelivery", "connector_restart", "toast", "dms_inserts_only",
                                  "dms_no_before_image", "canal_null_old")
"""Quirks only switched on by name: adding them to `all` would change every existing default output.
`connector_restart` and `toast` are Debezium's (a restart's replay; PostgreSQL's unavailable TOAST values);
`dms_inserts_only` and `dms_no_before_image` AWS DMS's (CdcInsertsOnly; no before image of a key change);
`canal_null_old` Canal's (a NULL -> value change left out of `old`)."""
KNOWN_QUIRKS: tuple[str, ...] = QUIRKS + OPT_IN_QUIRKS
LATE_RATE = 0.1
"""late_files: share of a format's files delivered one step late."""
LATE_DAYS = 20.0
"""late_redelivery: how many days of source time after the original's file the copy's file lands (default)."""
LATE_REDELIVERY_RATE = 0.03
"""late_redelivery: share of the single-statement row changes delivered again late (besides each table's first)."""
LATE = 2
"""The `redelivered` value a sink gets for a late redelivery (truthy like True, so it is a redelivery too)."""
DAY_US = 86_400_000_000

SHUFFLE_WINDOW = 16
"""Out-of-order deliveries move a record at most about this many places."""
DUPLICATE_RATE = 0.03
"""Share of records delivered twice (at-least-once)."""


def parse_quirks(quirks: list[str] | tuple[str, ...] | None) -> frozenset[str]:
    """None or ['all'] -> the default set (QUIRKS); ['none'] or [] -> none; else the named ones (unknown names
    raise). Opt-in quirks (OPT_IN_QUIRKS) are never in `all`: name them, alone or beside `all`."""
    if quirks is None:
        return frozenset(QUIRKS)
    names = {q.strip() for item in quirks for q in item.split(",") if q.strip()}
    if names <= {"none"}:
        return frozenset()
    unknown = sorted(names - set(KNOWN_QUIRKS) - {"all"})
    if unknown:
        raise ValueError(f"unknown quirk(s) {', '.join(unknown)}; known: {', '.join(KNOWN_QUIRKS)}, all, none")
    if "all" in names:  # `all` is the default set; opt-in quirks are added by name (`all,late_redelivery`)
        return frozenset(QUIRKS) | (names & set(OPT_IN_QUIRKS))
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
        # the simulation's delivery log (if any) releases the lane at day ends and delivers its late copies
        self.log = _RECORDING[-1] if _RECORDING else None
        self.late_on = self.log is not None and "late_redelivery" in quirks
        if self.log is not None:
            self.log.lanes.append(self)

    def put(self, item: Any, *, hold: int = 0, barrier: bool = False) -> None:
        if self.late_on and self.log.late_seq is not None:  # an item of an event chosen for a late redelivery
            item = _Late(item, self.log.late_seq)
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
        late = None
        if type(item) is _Late:
            late, item = item, item.item
        self.sink(item, False)
        if late is not None:
            self.log.schedule_late(self, item, late.seq)
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

    release = close
    """A day ended (time-rotated files): what the lane still holds is delivered now, into the new day's files.
    The lane stays usable."""


class _Late:
    """An item whose event is redelivered late (late_redelivery); unwrapped when the lane emits it."""

    __slots__ = ("item", "seq")

    def __init__(self, item: Any, seq: int):
        self.item, self.seq = item, seq


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
    simulator advances the clock (`advance`) as it hands events to the encoders; `Rotator.write` reports each
    write.

    Time-rotated files (`period_us`, a day: set by `simulate(days=...)` and by late_redelivery): a file holds
    what was delivered within one period of the clock; when the clock enters a new period every lane releases
    what it still holds (shuffle window, held halves, pending duplicates) into the new period's files.
    late_redelivery: the lanes hand each emitted item of a chosen event (`late_seq` while it is encoded) to
    `schedule_late`; the copy is delivered once the clock reaches `late_us` after the original's delivery,
    through the lane's sink as `LATE`, so it lands in a file of that later period. `drain` delivers what the
    end of the history leaves, the copies due after it included, in due order.
    """

    def __init__(self) -> None:
        self.clock_us = 0
        self.writes = 0
        self.files: dict[str, tuple[int, int]] = {}  # path -> (write count, clock) at its last record
        self.period_us = 0
        self.late_us = int(LATE_DAYS * DAY_US)
        self.late_seq: int | None = None
        self.lanes: list[Lane] = []
        self.last_path = ""
        self.gap_end_us: int | None = None
        self._late: list[tuple[int, int, Lane, Any, int, str]] = []
        self._scheduled = 0
        self.late_copies: list[tuple[int, str, str]] = []
        """late_redelivery: (event seq, the original's file, the late copy's file), in delivery order."""

    def wrote(self, path: Path) -> None:
        self.writes += 1
        self.last_path = str(path)
        self.files[self.last_path] = (self.writes, self.clock_us)

    def period(self) -> int | None:
        """The clock's period (day number since the epoch) when files rotate by time, else None."""
        return self.clock_us // self.period_us if self.period_us else None

    def advance(self, ts_us: int) -> None:
        """Move the clock to `ts_us` (never back): release every lane on a new period, deliver due late copies."""
        before = self.period()
        self.clock_us = max(self.clock_us, ts_us)
        if self.period_us and self.period() != before:
            for lane in self.lanes:
                lane.release()
        while self._late and self._late[0][0] <= self.clock_us:
            _, _, lane, item, seq, original = heapq.heappop(self._late)
            lane.sink(item, LATE)
            self.late_copies.append((seq, original, self.last_path))

    def schedule_late(self, lane: Lane, item: Any, seq: int) -> None:
        """The item was just written (to `last_path`): deliver it again `late_us` later."""
        self._scheduled += 1
        heapq.heappush(self._late, (self.clock_us + self.late_us, self._scheduled, lane, item, seq, self.last_path))

    def drain(self) -> None:
        """The history ended: release every lane, then deliver the late copies still due, in due order."""
        for lane in self.lanes:
            lane.release()
        while self._late:
            self.advance(self._late[0][0])


_RECORDING: list[DeliveryLog] = []
"""The log of the simulation running now (at most one): a module-level hook, so the encoders stay unaware."""


def current_log() -> DeliveryLog | None:
    """The delivery log of the simulation running now (the encoders read its clock for time-named files)."""
    return _RECORDING[-1] if _RECORDING else None


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
        self.period: int | None = None

    def write(self, item: Any) -> None:
        log = _RECORDING[-1] if _RECORDING else None
        period = log.period() if log is not None else None
        if self.file is None or self.count >= self.rotate or period != self.period:
            self.close()
            self.period = period  # time-rotated files (a day each): a file never spans two periods
            self.file = self.factory(self.file_no, item)
            self.file_no += 1
        self.file.write(item)
        self.count += 1
        if log is not None:
            log.wrote(self.file.path)

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
