"""The feeder: one simulated history's files dropped into their input folders over time, in delivery order.

Why: the continuous mode (`normalize --follow`, docs/follow.md) must be proven on files that *arrive*, not on a
folder that is already complete. The feeder simulates once with every chosen format (all quirks on, unless
told), moves the input trees aside into `OUT/.feed/` (a hidden folder: no lister ever reads it), and lands
the files one by one back at their place under `OUT/<vendor>/<format>/`, in the order they became complete in
the simulation (the delivery log of cdcnorm.simulate.delivery), across every vendor's lanes.

Each landing is atomic: the file is renamed from `OUT/.feed/` into place, so a reader sees it whole or not at
all (its mtime is set to the landing time first, so a settle time counts from the landing). The history
pauses `gap_days` (2) after 40 % of its changes, and one file completed before the pause is held back and
landed among the files after it: its source times are two days older than its neighbours' ("a file that
lands two days late"). `OUT/feed.jsonl` gets one line per landed file (`file`, `landed` epoch seconds, `late`).
Truth and manifest are written at once, as by a plain run (`OUT/truth/`, `OUT/manifest.json`).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cdcnorm.simulate import Manifest, simulate
from cdcnorm.simulate.delivery import LATE_DAYS, DeliveryLog

STAGING = ".feed"
FEED_LOG = "feed.jsonl"
GAP_DAYS = 2.0
LATE_PREFERENCE = ("datastream", "datahub", "replicate")
"""The vendor whose file is landed late, first one simulated: a Datastream file lands in its old minute folder,
as on GCS; a Replicate file may hold metadata messages, which a late file would keep from every other file."""


@dataclass(frozen=True, slots=True)
class Delivery:
    """One file to land: its path relative to OUT, and whether it is the file that lands late."""

    rel: str
    late: bool = False


@dataclass
class FeedPlan:
    manifest: Manifest
    deliveries: list[Delivery]

    @property
    def late(self) -> Delivery:
        return next(d for d in self.deliveries if d.late)


def prepare(out: str | Path, vendors: list[str] | tuple[str, ...] | str = ("all",), tables: int = 3,
            rows: int = 100, changes: int = 500, seed: int = 1, quirks: list[str] | None = None,
            rotate: int = 500, gap_days: float = GAP_DAYS, days: float = 0,
            late_days: float = LATE_DAYS) -> FeedPlan:
    """Simulate into OUT, move every input tree to `OUT/.feed/`, and plan the landings (see the module doc).
    `days` and `late_days` are simulate()'s: the files of a late redelivery land in their late place, among
    the files of `late_days` later."""
    root = Path(out)
    shutil.rmtree(root / STAGING, ignore_errors=True)
    (root / FEED_LOG).unlink(missing_ok=True)
    log = DeliveryLog()
    manifest = simulate(root, vendors, tables=tables, rows=rows, changes=changes, seed=seed, quirks=quirks,
                        rotate=rotate, gap_days=gap_days, log=log, days=days, late_days=late_days)
    for info in manifest.vendor_formats.values():
        src = root / info["input"]
        if src.exists():
            (root / STAGING / info["input"]).parent.mkdir(parents=True, exist_ok=True)
            os.replace(src, root / STAGING / info["input"])
        src.mkdir(parents=True)  # empty until the first file lands: a follow query can be started on it now
    ordered = [Path(p).relative_to(root).as_posix() for p, _ in sorted(log.files.items(), key=lambda kv: kv[1][0])]
    return FeedPlan(manifest, _hold_one_back(ordered, log, root, manifest, gap_days))


def _hold_one_back(ordered: list[str], log: DeliveryLog, root: Path, manifest: Manifest,
                   gap_days: float) -> list[Delivery]:
    """Delivery order, with the last file completed before the pause moved to the middle of the files after it."""
    if not gap_days:
        return [Delivery(rel) for rel in ordered]
    clock = {Path(p).relative_to(root).as_posix(): c for p, (_, c) in log.files.items()}
    gap_start = log.gap_end_us if log.gap_end_us is not None else _gap_start(clock)
    vendors = [v for v in LATE_PREFERENCE if any(i["vendor"] == v for i in manifest.vendor_formats.values())]
    before = [rel for rel in ordered if clock[rel] < gap_start and rel.split("/", 1)[0] == vendors[0]]
    after = [i for i, rel in enumerate(ordered) if clock[rel] >= gap_start]
    if not before or len(after) < 2:
        raise ValueError("the history is too short for a late file: use more changes or a smaller rotate")
    late = before[-1]
    rest = [rel for rel in ordered if rel != late]
    at = rest.index(ordered[after[len(after) // 2]])
    return [Delivery(rel) for rel in rest[:at]] + [Delivery(late, late=True)] + [Delivery(rel) for rel in rest[at:]]


def _gap_start(clock: dict[str, int]) -> int:
    """The first clock value after the pause when the history did not say it: the largest jump between the
    files' last-write clocks (a step of the history is under 1.5 s; the pause is days)."""
    ticks = sorted(set(clock.values()))
    jumps = [(b - a, b) for a, b in zip(ticks, ticks[1:], strict=False)]
    return max(jumps)[1] if jumps else ticks[0] + 1


def land(out: str | Path, delivery: Delivery) -> float:
    """Move one file from `OUT/.feed/` into place atomically (rename); the landing time (epoch seconds)."""
    root = Path(out)
    staged, dest = root / STAGING / delivery.rel, root / delivery.rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    now = time.time()
    os.utime(staged, (now, now))
    os.replace(staged, dest)
    with open(root / FEED_LOG, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"file": delivery.rel, "landed": now, "late": delivery.late}) + "\n")
    return now


def feed(out: str | Path, plan: FeedPlan, interval: float, *, stop: threading.Event | None = None,
         on_land: Callable[[int, Delivery, float], None] | None = None) -> int:
    """Land the plan's files one every `interval` seconds (the first at once) until done or `stop` is set;
    returns how many landed."""
    stop = stop or threading.Event()
    for i, d in enumerate(plan.deliveries):
        if i and stop.wait(interval):
            return i
        at = land(out, d)
        if on_land:
            on_land(i, d, at)
    return len(plan.deliveries)


def landed(out: str | Path) -> list[dict]:
    """The lines of `OUT/feed.jsonl`: what landed when."""
    path = Path(out) / FEED_LOG
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def feed_command(vendors: list[str], tables: int, rows: int, changes: int, seed: int, out: str,
                 quirks: list[str] | None, rotate: int, interval: float, days: float = 0,
                 late_days: float = LATE_DAYS) -> int:
    """CLI entry (`cdcnorm simulate --feed`): plan, then land every file, printing a line per file; exit code
    0 when all landed, 2 on a usage error (an unknown vendor or quirk, a history too short for a late file)."""
    try:
        plan = prepare(out, vendors or ["all"], tables=tables, rows=rows, changes=changes, seed=seed,
                       quirks=quirks, rotate=rotate, days=days, late_days=late_days)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    total = len(plan.deliveries)
    print(f"feeding {total} file(s) of {', '.join(plan.manifest.formats)} into {out}/ every {interval:g} s "
          f"(staged in {out}/{STAGING}/; truth in {out}/truth/)", flush=True)

    def say(i: int, d: Delivery, at: float) -> None:
        print(f"{i + 1:>5}/{total} {d.rel}{'  <- two days late' if d.late else ''}", flush=True)

    feed(out, plan, interval, on_land=say)
    print(f"done: {total} file(s) landed; log in {out}/{FEED_LOG}", flush=True)
    return 0
