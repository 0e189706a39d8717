"""Idempotent ingestion at any history length: a month of one table's Datastream JSON files, some events
redelivered 20 days late, normalized as a daily job over a growing bucket prefix would. After every step the
`changes` table (read by the plain-Python Delta log replay, tests/delta_replay.py) holds every event id exactly
once, and `apply` equals the simulator's ground truth.

Files are idempotent by identity (the lake's input-file ledger: a known file is skipped, not re-read), events by
id (every new change is checked against the lake's rows of the days it falls in, whatever their age)."""

from __future__ import annotations

import datetime as dt
import os
import shutil
from collections import Counter
from pathlib import Path

import pytest

import delta_replay
from cdcnorm.ingest.pipeline import normalize
from cdcnorm.lake.dedup import EPOCH, may_hold
from cdcnorm.simulate import simulate
from cdcnorm.simulate.verify import check_format, options_for
from cdcnorm.state import apply
from cdcnorm.streaming.follow import follow

VF = "datastream-json"
MONTH = {"tables": 1, "rows": 20, "changes": 240, "seed": 11, "days": 30, "late_days": 20,
         "quirks": ["duplicates", "late_redelivery"], "rotate": 40}


@pytest.fixture(scope="module")
def month(tmp_path_factory):
    """The simulated month and its files in delivery order."""
    out = tmp_path_factory.mktemp("month")
    manifest = simulate(out / "sim", vendors=[VF], **MONTH)
    files = manifest.delivered_files(VF)
    assert manifest.late_redelivery["events"] and len(files) >= 20
    return manifest, files


def land(manifest, files: list[Path], inbox: Path) -> None:
    """Copy delivered files into the bucket prefix `inbox` (same relative paths, same modification times)."""
    root = manifest.input_dir(VF)
    for f in files:
        to = inbox / f.relative_to(root)
        if not to.exists():
            to.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, to)


def ids_once(lake: str) -> int:
    """Event ids of the lake's committed `changes` (plain-Python Delta replay): each exactly once."""
    table, _ = delta_replay.read(os.path.join(lake, "changes"))
    counts = Counter(table.column("event_id").to_pylist())
    doubled = {i: n for i, n in counts.items() if n > 1}
    assert doubled == {}, f"{len(doubled)} event ids more than once"
    return len(counts)


def applied_equals_truth(spark, lake: str, manifest) -> None:
    assert check_format(apply(spark, lake, write=False), manifest, VF) == []


def run(spark, inbox: Path, lake: str, manifest, **kw):
    return normalize([str(inbox)], "datastream", spark=spark, lake=lake,
                     options=options_for(VF, manifest, False), **kw).report


def test_a_daily_job_over_a_growing_prefix_reads_each_file_once_and_keeps_each_event_once(spark, tmp_path, month):
    manifest, files = month
    inbox, lake = tmp_path / "bucket", str(tmp_path / "lake")
    first = files[: len(files) * 6 // 10]
    land(manifest, first, inbox)

    one = run(spark, inbox, lake, manifest)
    assert one["files"] == len(first) and one["files_skipped_known"] == 0 and one["dedup_unchecked"] == 0
    events = ids_once(lake)

    again = run(spark, inbox, lake, manifest)  # the same command again: every file known, nothing read
    assert again["files"] == 0 and again["files_skipped_known"] == len(first)
    assert again["records_read"] == 0 and again["rows_written"] == 0 and again["reconciled"]
    assert ids_once(lake) == events

    land(manifest, files, inbox)  # the rest lands, redeliveries 20 days late among it
    rest = run(spark, inbox, lake, manifest)
    assert rest["files"] == len(files) - len(first) and rest["files_skipped_known"] == len(first)
    assert rest["outcomes"]["duplicate"] > 0 and rest["dedup_unchecked"] == 0
    ids_once(lake)
    applied_equals_truth(spark, lake, manifest)

    forced = run(spark, inbox, lake, manifest, reprocess=True)  # read again on request: every event a duplicate
    assert forced["files"] == len(files) and forced["rows_written"] == 0
    ids_once(lake)


def test_a_changed_file_is_read_again_and_its_events_checked(spark, tmp_path, month):
    manifest, files = month
    inbox, lake = tmp_path / "bucket", str(tmp_path / "lake")
    land(manifest, files[:3], inbox)
    run(spark, inbox, lake, manifest)
    events = ids_once(lake)
    target = next(p for p in sorted(inbox.rglob("*")) if p.is_file())
    os.utime(target, ns=(target.stat().st_atime_ns, target.stat().st_mtime_ns + 5_000_000_000))
    again = run(spark, inbox, lake, manifest)
    assert again["files"] == 1 and again["files_skipped_known"] == 2
    assert again["rows_written"] == 0 and again["outcomes"]["duplicate"] > 0
    assert ids_once(lake) == events


def test_a_follower_and_a_batch_run_share_the_ledger(spark, tmp_path, month):
    manifest, files = month
    inbox, lake = tmp_path / "bucket", str(tmp_path / "lake")
    first = files[: len(files) * 6 // 10]
    land(manifest, first, inbox)
    batches = follow([str(inbox)], "datastream", lake, spark=spark, settle_seconds=0,
                     options=options_for(VF, manifest, False))
    assert sum(b.files for b in batches) == len(first)
    ids_once(lake)

    land(manifest, files, inbox)
    rest = run(spark, inbox, lake, manifest)  # a batch run after the follower: it reads only the new files
    assert rest["files"] == len(files) - len(first) and rest["files_skipped_known"] == len(first)
    ids_once(lake)
    applied_equals_truth(spark, lake, manifest)


def _file(path: str, vendor: str, day: str | None, lo: dt.datetime | None = None, hi: dt.datetime | None = None):
    return {"path": path, "partition": {"vendor": vendor, "source_day": day},
            "min": {"capture_ts": lo}, "max": {"capture_ts": hi}, "nulls": {"capture_ts": 0 if lo else None}}


def test_the_duplicate_check_reads_only_the_days_and_capture_times_a_run_touches():
    """Dated changes: the files of their vendor and days, whatever their age. Day-less changes (no source time):
    the vendor's day-less files whose capture range may overlap theirs (the log's statistics); a run without
    day-less changes reads no day-less file, except those an upgraded lake registered (any day)."""
    t = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
    old = _file("vendor=d/source_day=2023-01-02/run=a/p.parquet", "d", "2023-01-02")
    other_day = _file("vendor=d/source_day=2024-05-01/run=a/p.parquet", "d", "2024-05-01")
    early = _file("vendor=d/source_day=__HIVE_DEFAULT_PARTITION__/run=a/p.parquet", "d", None, t, t + dt.timedelta(hours=1))
    late = _file("vendor=d/source_day=__HIVE_DEFAULT_PARTITION__/run=b/p.parquet", "d", None,
                 t + dt.timedelta(days=3), t + dt.timedelta(days=4))
    no_stats = _file("vendor=d/source_day=__HIVE_DEFAULT_PARTITION__/run=c/p.parquet", "d", None)
    upgraded = _file("changes/vendor=d/run_id=x/p.parquet", "d", None)
    other_vendor = _file("vendor=e/source_day=2023-01-02/run=a/p.parquet", "e", "2023-01-02")
    micros = lambda d: (d - EPOCH) // dt.timedelta(microseconds=1)  # noqa: E731
    dated = {("d", "2023-01-02")}
    assert [may_hold(f, dated, {}) for f in (old, other_day, early, late, no_stats, upgraded, other_vendor)] == [
        True, False, False, False, False, True, False]
    span = (micros(t + dt.timedelta(minutes=10)), micros(t + dt.timedelta(minutes=20)))
    dayless = {("d", None)}
    assert [may_hold(f, dayless, {"d": span}) for f in (old, early, late, no_stats, upgraded)] == [
        False, True, False, True, True]
    assert may_hold(late, dayless, {"d": None})  # a day-less change without a capture time: every day-less file
