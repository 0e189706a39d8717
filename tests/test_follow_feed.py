"""The continuous mode's proof: files land over time (the simulator's feeder, every delivery quirk on, one file
two days late) while `normalize --follow` runs; its whole process group (the JVM included) is killed -9 at
commit points (`CDCNORM_CRASH_AT`) and at random times, and restarted. At the end the lake holds exactly the
events of one batch run over the same files (zero lost, zero doubled) and `apply` equals the simulator's
ground truth.

`make test`: one kill of the CLI on one format (datastream-json), right after a batch's changes commit (the
restart completes the batch's pending intent); the restart runs in-process (one JVM start less).
`make test-slow`: 20 kills of one process following every vendor format.
The figures (kills, lost, doubled, seconds) are printed (`pytest -s`).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from cdcnorm.ingest.pipeline import normalize
from cdcnorm.lake.store import Lake
from cdcnorm.simulate import VENDOR_FORMATS
from cdcnorm.simulate.feed import prepare
from cdcnorm.simulate.verify import check_format, options_for, stream_of
from cdcnorm.state import apply
from cdcnorm.streaming.follow import follow
from conftest import ROOT
from follow_proof import GatedFeeder, kill_while_feeding, progress_lines, tally
from lake_checks import check_lake

VF = "datastream-json"
HISTORY = {"tables": 2, "rows": 10, "changes": 60, "seed": 3, "rotate": 12}
"""8 files; the pause after 40 % of the changes puts a backfill file two days behind its neighbours."""
FAST_KILLS = [("committed:changes", None)]


@pytest.fixture(autouse=True)
def _no_crash_env(monkeypatch):
    monkeypatch.delenv("CDCNORM_CRASH_AT", raising=False)  # the in-process runs must never kill the test


@pytest.fixture(scope="module")
def fed(spark, tmp_path_factory):
    """The fast proof, run once: a kill while the feeder lands 8 files; the in-process restart drains."""
    root = tmp_path_factory.mktemp("follow-feed")
    plan = prepare(root / "sim", [VF], **HISTORY)
    inputs = str(plan.manifest.input_dir(VF))
    lake, ref, progress = str(root / "lake"), str(root / "ref"), root / "progress.jsonl"
    cmd = [sys.executable, "-m", "cdcnorm", "normalize", inputs, "--lake", lake, "--vendor", "datastream",
           "--follow", "--trigger-seconds", "0.5", "--settle-seconds", "0", "--progress-json", str(progress),
           "--master", "local[1]"]
    feeder = GatedFeeder(root / "sim", plan, interval=1.0)
    feeder.start()
    t0 = time.monotonic()
    try:
        kills = kill_while_feeding(cmd, feeder, progress, root / "follow.log", FAST_KILLS, seed=12)
        feeder.finish()
    finally:
        feeder.stop()
    resumed = follow([inputs], "datastream", lake, spark=spark, settle_seconds=0)
    seconds = time.monotonic() - t0
    normalize([inputs], "datastream", spark=spark, lake=ref)
    return {"plan": plan, "inputs": inputs, "lake": lake, "ref": ref, "kills": kills, "resumed": resumed,
            "progress": progress_lines(progress), "seconds": seconds, "feeder": feeder}


def test_killed_while_files_land_loses_and_doubles_nothing(spark, fed):
    kills, lake = fed["kills"], fed["lake"]
    assert kills.kills == len(FAST_KILLS), kills.lines()
    assert [r.how for r in kills.runs] == ["at committed:changes"]  # a batch's intent left pending, then completed
    figures = check_lake(spark, lake)  # one row per event id, reports reconcile, no intent left, no lost file
    t = tally(spark, lake, fed["ref"])
    print(f"\nfollow proof ({VF}): {kills.kills} kills, {t.events} events, lost {t.lost}, doubled {t.doubled}, "
          f"unexpected {t.unexpected}, {fed['seconds']:.0f} s; lake {figures}")
    print("\n".join(kills.lines()))
    assert t.ok(), t
    assert sum(r["files"] for r in Lake(spark, lake).run_reports()) == fed["feeder"].total
    frames = apply(spark, lake, write=False)
    assert check_format(frames, fed["plan"].manifest, VF, natural=True) == []


def test_a_file_landing_two_days_late_is_normalized_and_counted(spark, fed):
    plan, lake = fed["plan"], fed["lake"]
    late = str(Path(plan.manifest.out, plan.late.rel).resolve())
    order = [rel for rel, _, _ in fed["feeder"].landings]
    i = order.index(plan.late.rel)
    assert 0 < i < len(order) - 1  # landed among files after it
    earlier = [str(Path(plan.manifest.out, rel).resolve()) for rel in order[:i]]

    def newest(paths):
        return normalize(paths, "datastream", spark=spark).changes.agg(F.max("source_ts")).first()[0]

    assert (newest(earlier) - newest([late])).days >= 2  # files two days newer landed before it
    # counted: exactly one committed run read it, and every event it holds is in the lake
    reports = [r for r in Lake(spark, lake).run_reports() if any(Path(p).resolve() == Path(late) for p in r["inputs"])]
    assert len(reports) == 1 and reports[0]["reconciled"]
    events = normalize([late], "datastream", spark=spark).changes.select("event_id")
    assert events.count() > 0
    assert events.exceptAll(Lake(spark, lake).changes().select("event_id")).count() == 0


# -- every format, 20 kills -------------------------------------------------------------------------------------
ALL_HISTORY = {"tables": 3, "rows": 20, "changes": 300, "seed": 12, "rotate": 40}


@pytest.mark.slow
def test_every_format_killed_twenty_times_while_files_land(spark, tmp_path):
    """One process follows every format (a query each, stream `e2e-<format>`, one lake); it is killed 20
    times while the feeder lands the ~110 files; the restart after the last kill runs in-process."""
    plan = prepare(tmp_path / "sim", ["all"], **ALL_HISTORY)
    manifest = plan.manifest
    lake, ref, progress = str(tmp_path / "lake"), str(tmp_path / "ref"), tmp_path / "progress.jsonl"
    cmd = [sys.executable, str(ROOT / "tests" / "follow_proof.py"), str(tmp_path / "sim"), lake, str(progress)]
    feeder = GatedFeeder(tmp_path / "sim", plan, interval=0.5)
    feeder.start()
    t0 = time.monotonic()
    try:
        kills = kill_while_feeding(cmd, feeder, progress, tmp_path / "follow.log", 20, seed=20261124)
        feeder.finish()
    finally:
        feeder.stop()
    for vf in manifest.formats:
        follow([str(manifest.input_dir(vf))], VENDOR_FORMATS[vf][0], lake, spark=spark, name=vf,
               options=options_for(vf, manifest), settle_seconds=0)
    seconds = time.monotonic() - t0
    for vf in manifest.formats:
        normalize([str(manifest.input_dir(vf))], VENDOR_FORMATS[vf][0], spark=spark, lake=ref,
                  options=options_for(vf, manifest))
    print(f"\nfollow proof (all formats, {feeder.total} files): {kills.kills} kills in {seconds:.0f} s")
    print("\n".join(kills.lines()))
    tallies = {vf: tally(spark, lake, ref, f"stream = '{stream_of(vf)}'") for vf in manifest.formats}
    for vf, t in tallies.items():
        print(f"  {vf:<18} events {t.events:>5} (batch run {t.expected}), lost {t.lost}, doubled {t.doubled}, "
              f"unexpected {t.unexpected}")
    frames = apply(spark, lake, write=False)
    problems = {vf: check_format(frames, manifest, vf) for vf in manifest.formats}
    for vf, p in problems.items():
        print(f"  {vf:<18} apply vs truth: {'equal' if not p else '; '.join(p)[:300]}")
    assert kills.kills == 20
    assert {vf: t for vf, t in tallies.items() if not t.ok()} == {}
    assert {vf: p for vf, p in problems.items() if p} == {}
    check_lake(spark, lake)
