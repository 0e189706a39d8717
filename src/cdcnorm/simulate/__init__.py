"""`cdcnorm simulate`: one deterministic source history, written the way each vendor would deliver it.

The simulator is the project's oracle: `OUT/<vendor>/<format>/` holds the vendor files, `OUT/truth/` the
final state of every table as each vendor format can carry it (and the ordered source changes), and
`OUT/manifest.json` the sizes, quirks, source schemas and the table identity each format will have in the
lake. The encoders are written from the vendor references only, never from the decoders, so a
misunderstanding on one side cannot hide itself. See docs/simulate.md for layout and projection rules.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

from cdcnorm.simulate.delivery import (
    DAY_US,
    KNOWN_QUIRKS,
    LATE_DAYS,
    LATE_REDELIVERY_RATE,
    OPT_IN_QUIRKS,
    QUIRKS,
    DeliveryLog,
    lane_rng,
    late_files,
    parse_quirks,
    recording,
)
from cdcnorm.simulate.formats import FORMATS
from cdcnorm.simulate.history import START_US, Event, History, TableDef
from cdcnorm.simulate.truth import (
    CARRIES_ADDED_COLUMN,
    CARRIES_TRUNCATE,
    VENDOR_FORMATS,
    TruthBuilder,
    final_columns,
    load_changes,
    load_truth,
    load_versions,
    truth_kind,
)

VENDORS: tuple[str, ...] = tuple(dict.fromkeys(f.vendor for f in FORMATS.values()))
"""The simulated vendors: every registered vendor that has an encoder module."""
OVERLAP_MAX = 1000
"""backfill_overlap: the backfill reflects the state after at most this many (and 5% of all) changes."""

@dataclass
class Manifest:
    """What a run wrote; also saved as `OUT/manifest.json`."""

    out: str
    seed: int
    tables: int
    rows: int
    changes: int
    quirks: list[str]
    formats: list[str]
    source_tables: list[dict[str, Any]]
    vendor_formats: dict[str, dict[str, Any]]
    events: dict[str, int] = field(default_factory=dict)
    days: float = 0
    """The source time the changes spread over (`simulate(days=...)`); 0 = the history's own pace."""
    late_redelivery: dict[str, Any] | None = None
    """late_redelivery: `late_days` and the redelivered source `events` (seq, table, op); None when off."""

    def to_dict(self) -> dict[str, Any]:
        """The manifest's content; `out` is left out so the file does not depend on where it was written, and
        `days` / `late_redelivery` only when used (a default run's manifest stays as it was)."""
        data = asdict(self)
        del data["out"]
        for optional in ("days", "late_redelivery"):
            if not data[optional]:
                del data[optional]
        return data

    def delivered_files(self, vendor_format: str, until_day: int | None = None) -> list[Path]:
        """The format's files in delivery order (time-rotated runs: `days` or late_redelivery), optionally only
        those delivered by the end of day `until_day` (day 0 = the day the history starts, UTC)."""
        info = self.vendor_formats[vendor_format]
        if "deliveries" not in info:
            raise ValueError("the delivery order is recorded for time-rotated runs only (days > 0 or the "
                             "late_redelivery quirk)")
        folder = self.input_dir(vendor_format)
        return [folder / d["file"] for d in info["deliveries"] if until_day is None or d["day"] <= until_day]

    def input_dir(self, vendor_format: str) -> Path:
        """The folder holding `vendor_format`'s input files (what `cdcnorm normalize` reads)."""
        return Path(self.out) / self.vendor_formats[vendor_format]["input"]

    @classmethod
    def load(cls, out: str | Path) -> Manifest:
        data = json.loads((Path(out) / "manifest.json").read_text(encoding="utf-8"))
        return cls(out=str(out), **data)


def resolve_formats(vendors: list[str] | tuple[str, ...] | str) -> list[str]:
    """Vendor names, vendor-format names or `all` (comma lists allowed) -> vendor formats, in a fixed order."""
    items = [vendors] if isinstance(vendors, str) else list(vendors)
    names = {n.strip().lower() for item in items for n in item.split(",") if n.strip()}
    if not names or "all" in names:
        return list(VENDOR_FORMATS)
    chosen: set[str] = set()
    for n in names:
        if n in VENDORS:
            chosen |= {vf for vf, (v, _) in VENDOR_FORMATS.items() if v == n}
        elif n in VENDOR_FORMATS:
            chosen.add(n)
        else:
            raise ValueError(f"unknown vendor {n!r}; choose from {', '.join(VENDORS)}, a vendor format "
                             f"({', '.join(VENDOR_FORMATS)}) or all")
    return [vf for vf in VENDOR_FORMATS if vf in chosen]


def simulate(out: str | Path, vendors: list[str] | tuple[str, ...] | str = ("all",), tables: int = 3,
             rows: int = 100, changes: int = 500, seed: int = 1, quirks: list[str] | None = None,
             rotate: int = 500, write_changes: bool = True, gap_days: float = 0,
             log: DeliveryLog | None = None, days: float = 0, late_days: float = LATE_DAYS) -> Manifest:
    """Simulate one history and write it for every chosen vendor format, plus truth and manifest.

    Args:
        out: output folder (the simulator's own subfolders in it are replaced).
        vendors: vendor names, vendor formats or `all`.
        tables, rows, changes, seed: the history's sizes and seed (the history depends on nothing else).
        quirks: delivery quirks to switch on; None = the default set (QUIRKS), [] or ['none'] = none. Opt-in
            quirks (`late_redelivery`) only by name.
        rotate: records per output file before rotating.
        write_changes: also write `truth/changes.jsonl` (one line per source event).
        gap_days: the source pauses this long after 40 % of the changes (the feeder's late file).
        log: records when each file got its last record (the feeder's delivery order).
        days: spread the changes over this many days of source time; files then also rotate at every UTC
            midnight of the history's clock (0 = the history's own pace, about a second per change).
        late_days: late_redelivery: the copy's file lands this many days of source time after the original's.
    """
    if rows < 0 or changes < 0:
        raise ValueError("rows and changes must be >= 0")
    if days < 0 or late_days < 0:
        raise ValueError("days and late_days must be >= 0")
    vfs, on = resolve_formats(vendors), parse_quirks(quirks)
    root = Path(out)
    _clean(root, vfs)
    history = History(tables, rows, changes, seed, gap_days, days)
    log = log or DeliveryLog()
    log.period_us = DAY_US if days or "late_redelivery" in on else 0
    log.late_us = int(late_days * DAY_US)
    with recording(log):
        manifest = _write(root, history, vfs, on, rotate, write_changes, log)
    log.gap_end_us = history.gap_end_us
    if days or "late_redelivery" in on:
        manifest.days = days
        _delivery_fields(manifest, root, log, on, late_days)
        _save(root, manifest)
    return manifest


def _write(root: Path, history: History, vfs: list[str], on: frozenset[str], rotate: int, write_changes: bool,
           log: DeliveryLog) -> Manifest:
    """Feed the history to every chosen encoder and the truth; write the manifest."""
    defs, seed, tables, rows, changes = history.defs, history.seed, len(history.defs), history.rows, history.changes
    encoders = [FORMATS[vf].encoder(root, defs, seed, on, rotate, FORMATS[vf].folder) for vf in vfs]
    truth = TruthBuilder(root, history, vfs, write_changes)
    kinds: Counter[str] = Counter()
    special: dict[str, dict[str, Any]] = {}

    events = iter(history)
    initial: list[list[dict[str, Any]]] = [[] for _ in defs]
    first: Event | None = None
    for ev in events:
        kinds[ev.kind] += 1
        if ev.kind != "SNAPSHOT":
            first = ev
            break
        initial[ev.table].append(ev.after)
        truth.event(ev)

    buffered = [first] if first is not None else []
    overlap = min(changes // 20, OVERLAP_MAX) if "backfill_overlap" in on else 0
    while overlap and len(buffered) < overlap and buffered[-1].kind not in ("DDL", "TRUNCATE"):
        nxt = next(events, None)
        if nxt is None:
            break
        kinds[nxt.kind] += 1
        buffered.append(nxt)
    snapshot_rows, ts, at_seq = _backfill_state(defs, initial, buffered if overlap else [])
    log.advance(ts)
    for enc in encoders:
        for t in defs:
            enc.backfill(t, snapshot_rows[t.index], ts, at_seq)

    late = _LateChoice(seed) if "late_redelivery" in on else None
    for i, ev in enumerate(chain(buffered, events)):
        if i >= len(buffered):
            kinds[ev.kind] += 1
        if ev.kind in ("DDL", "TRUNCATE"):
            special[ev.kind] = {"table": defs[ev.table].name, "seq": ev.seq, "statement": ev.ddl}
        truth.event(ev)
        log.advance(ev.ts_us)
        log.late_seq = ev.seq if late is not None and late.pick(ev, defs) else None
        for enc in encoders:
            enc.change(ev)
    log.late_seq = None
    if log.period_us:
        log.drain()
    for enc in encoders:
        enc.close()
    truth.finish()

    manifest = Manifest(
        out=str(root), seed=seed, tables=tables, rows=rows, changes=changes,
        quirks=[q for q in KNOWN_QUIRKS if q in on], formats=vfs,
        source_tables=[_source_table(t, special) for t in defs],
        vendor_formats={enc.vf: _vendor_format(enc, defs, root, seed, "late_files" in on) for enc in encoders},
        events=dict(sorted(kinds.items())),
        late_redelivery={"late_days": 0, "events": late.events} if late is not None else None,
    )
    _save(root, manifest)
    return manifest


def _save(root: Path, manifest: Manifest) -> None:
    (root / "manifest.json").write_text(json.dumps(manifest.to_dict(), indent=2, ensure_ascii=False) + "\n",
                                        encoding="utf-8")


class _LateChoice:
    """late_redelivery: which source events are delivered again late. Row changes of single-statement
    transactions only (a redelivered half of a multi-statement transaction would also need its markers): each
    table's first one, and one in every 1 / LATE_REDELIVERY_RATE of them from an offset the seed draws (from an
    RNG of its own: the history and the lanes draw nothing more)."""

    def __init__(self, seed: int):
        self.every = max(1, round(1 / LATE_REDELIVERY_RATE))
        self.offset = lane_rng(seed, "late_redelivery").randrange(self.every)
        self.eligible = 0
        self.seen: set[int] = set()
        self.events: list[dict[str, Any]] = []

    def pick(self, ev: Event, defs: tuple[TableDef, ...]) -> bool:
        if ev.kind not in ("INSERT", "UPDATE", "DELETE") or ev.tx_size != 1:
            return False
        self.eligible += 1
        chosen = self.eligible % self.every == self.offset or ev.table not in self.seen
        self.seen.add(ev.table)
        if chosen:
            self.events.append({"seq": ev.seq, "table": defs[ev.table].name, "op": ev.kind})
        return chosen


def _delivery_fields(manifest: Manifest, root: Path, log: DeliveryLog, on: frozenset[str], late_days: float) -> None:
    """Time-rotated runs: each format's files in delivery order with their day; late_redelivery: which files
    hold the late copies and where their originals are."""
    first_day = START_US // DAY_US
    ordered = sorted(log.files.items(), key=lambda kv: kv[1][0])
    for info in manifest.vendor_formats.values():
        folder = root / info["input"]
        prefix = str(folder) + "/"
        info["deliveries"] = [{"file": Path(p).relative_to(folder).as_posix(), "day": clock // DAY_US - first_day}
                              for p, (_, clock) in ordered if p.startswith(prefix)]
        if "late_redelivery" in on:
            day = {d["file"]: d["day"] for d in info["deliveries"]}
            copies = []
            for seq, original, copy in log.late_copies:
                if copy.startswith(prefix):
                    orig, late = (Path(p).relative_to(folder).as_posix() for p in (original, copy))
                    copies.append({"seq": seq, "file": late, "day": day[late], "original": orig,
                                   "original_day": day[orig]})
            info["late_redeliveries"] = copies
    if manifest.late_redelivery is not None:
        manifest.late_redelivery["late_days"] = late_days


def _clean(root: Path, vfs: list[str]) -> None:
    """Remove only what this run rewrites, so stale files of an earlier run cannot leak into inputs."""
    root.mkdir(parents=True, exist_ok=True)
    targets = [root / "truth", root / "manifest.json"]
    targets += [root / VENDOR_FORMATS[vf][0] / VENDOR_FORMATS[vf][1] for vf in vfs]
    targets += [root / extra for vf in vfs for extra in FORMATS[vf].extra_outputs]
    for p in targets:
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()


def _backfill_state(defs: tuple[TableDef, ...], initial: list[list[dict[str, Any]]],
                    overlap: list[Event]) -> tuple[list[list[dict[str, Any]]], int, int]:
    """The rows the backfill delivers: the initial state, or (backfill_overlap) the state after the first
    changes of keyed tables, which the change stream then delivers again. Keyless tables always get the
    initial rows: re-reading them would create rows the source never had twice."""
    if not overlap:
        return initial, START_US, 0
    states = [{t.key_of(r): r for r in initial[t.index]} if t.primary_key else None for t in defs]
    for ev in overlap:
        state = states[ev.table]
        if state is None or ev.kind not in ("INSERT", "UPDATE", "DELETE"):
            continue
        t = defs[ev.table]
        if ev.before is not None:
            state.pop(t.key_of(ev.before), None)
        if ev.after is not None:
            state[t.key_of(ev.after)] = ev.after
    rows = [list(s.values()) if s is not None else initial[i] for i, s in enumerate(states)]
    return rows, overlap[-1].ts_us, overlap[-1].seq


def _source_table(t: TableDef, special: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": t.name, "template": t.template, "primary_key": list(t.primary_key), "insert_only": t.insert_only,
        "columns": [{"name": c.name, "type": c.type, "nullable": c.nullable, "added_by_ddl": c.added}
                    for c in t.columns],
        "datastream_flavour": t.flavour,
        "ddl": special.get("DDL") if t.ddl else None,
        "truncate": special.get("TRUNCATE") if t.truncate else None,
    }


def _vendor_format(enc: Any, defs: tuple[TableDef, ...], root: Path, seed: int, late: bool) -> dict[str, Any]:
    vf = enc.vf
    vendor, fmt = VENDOR_FORMATS[vf]
    folder = root / vendor / fmt
    files = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()] if late else []
    tables = {}
    for t in defs:
        types = {c.name: FORMATS[vf].vendor_type(t, c) for c in t.columns}
        tables[t.name] = {
            **enc.identity(t), "primary_key": list(t.primary_key),
            "columns": [{"name": c.name, "source_type": c.type, "vendor_type": types[c.name],
                         "truth_kind": truth_kind(vf, t.flavour, c)} for c in final_columns(vf, t)],
        }
    return {"vendor": vendor, "format": fmt, "input": f"{vendor}/{fmt}", "truth": f"truth/{vf}",
            "carries_truncate": vf in CARRIES_TRUNCATE, "carries_added_column": vf in CARRIES_ADDED_COLUMN,
            "records": enc.counts["records"], "files": enc.counts["files"], "tables": tables,
            "late_files": late_files(files, seed, vf)}


def simulate_command(vendors: list[str], tables: int, rows: int, changes: int, seed: int, out: str,
                     quirks: list[str] | None, rotate: int = 500, days: float = 0,
                     late_days: float = LATE_DAYS) -> int:
    """CLI entry (`cdcnorm simulate`): run, print a short summary, return the exit code (0 ok, 2 usage)."""
    try:
        manifest = simulate(out, vendors or ["all"], tables=tables, rows=rows, changes=changes, seed=seed,
                            quirks=quirks, rotate=rotate, days=days, late_days=late_days)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    span = f" over {days:g} day(s)" if days else ""
    print(f"simulated seed={seed}: {tables} table(s), {rows} row(s) each, {changes} change(s){span} -> {out}")
    print(f"quirks: {', '.join(manifest.quirks) or 'none'}")
    if manifest.late_redelivery is not None:
        print(f"late redeliveries: {len(manifest.late_redelivery['events'])} event(s), {late_days:g} day(s) late")
    for vf, info in manifest.vendor_formats.items():
        print(f"  {vf:<18} {info['records']:>9} records in {info['files']:>5} file(s) under {info['input']}/")
    print(f"truth: {out}/truth/<vendor-format>/<table>.jsonl, changes: {out}/truth/changes.jsonl")
    return 0


__all__ = ["KNOWN_QUIRKS", "LATE_DAYS", "OPT_IN_QUIRKS", "QUIRKS", "VENDOR_FORMATS", "Manifest", "load_changes", "load_truth", "load_versions", "resolve_formats", "simulate",
           "simulate_command"]
