"""The feeder (`cdcnorm simulate --feed`): the files of one history land one at a time, atomically, in delivery
order, one of them two days late; once all landed, the tree is the plain simulator's. No Spark here."""

from __future__ import annotations

import filecmp
import json
from pathlib import Path

from cdcnorm.simulate import load_changes, simulate
from cdcnorm.simulate.feed import FEED_LOG, STAGING, feed, feed_command, land, landed, prepare
from cdcnorm.streaming.paths_source import list_inputs

SMALL = {"tables": 3, "rows": 20, "changes": 300, "seed": 12, "rotate": 40}


def files_under(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def test_fed_tree_equals_the_simulated_one_and_every_file_lands_once(tmp_path):
    plan = prepare(tmp_path / "fed", ["all"], **SMALL)
    m = plan.manifest
    inputs = [tmp_path / "fed" / info["input"] for info in m.vendor_formats.values()]
    assert all(p.is_dir() and not any(p.iterdir()) for p in inputs)  # empty until the first landing
    staged = files_under(tmp_path / "fed" / STAGING)
    assert sorted(d.rel for d in plan.deliveries) == sorted(staged)  # each staged file planned once
    assert sum(d.late for d in plan.deliveries) == 1
    assert {d.rel.split("/", 1)[0] for d in plan.deliveries} == {"datastream", "replicate", "datahub", "debezium", "dms",
                                                              "goldengate", "canal", "maxwell"}
    assert feed(tmp_path / "fed", plan, 0) == len(plan.deliveries)

    simulate(tmp_path / "plain", ["all"], gap_days=2, **SMALL)  # the same history, written at once
    fed, plain = tmp_path / "fed", tmp_path / "plain"
    assert files_under(fed) - {FEED_LOG} == files_under(plain)
    assert all(filecmp.cmp(fed / rel, plain / rel, shallow=False) for rel in files_under(plain))
    log = landed(fed)
    assert [x["file"] for x in log] == [d.rel for d in plan.deliveries]
    assert [x["late"] for x in log].count(True) == 1
    assert all(a["landed"] <= b["landed"] for a, b in zip(log, log[1:], strict=False))


def test_the_late_file_is_two_days_behind_the_files_landed_before_it(tmp_path):
    plan = prepare(tmp_path, ["datastream-json"], **SMALL)
    order = [d.rel for d in plan.deliveries]
    i = order.index(plan.late.rel)
    assert 0 < i < len(order) - 1
    assert plan.late.rel.startswith("datastream/json/")
    # Datastream folders are the first event's minute: the late file sits in a folder two days older than the
    # newest folder landed before it
    day = [tuple(rel.split("/")[3:6]) for rel in order]
    assert day[i] == ("2024", "05", "01") and ("2024", "05", "03") in day[:i]


def test_the_pause_moves_source_times_only(tmp_path):
    simulate(tmp_path / "a", ["datahub-blob"], **{**SMALL, "rotate": 500})
    simulate(tmp_path / "b", ["datahub-blob"], gap_days=2, **{**SMALL, "rotate": 500})
    a, b = list(load_changes(tmp_path / "a")), list(load_changes(tmp_path / "b"))
    assert len(a) == len(b)
    strip = [{k: v for k, v in x.items() if k != "ts"} for x in a]
    assert strip == [{k: v for k, v in x.items() if k != "ts"} for x in b]  # same rows, same order
    jumps = [(y["ts"] - x["ts"]).total_seconds() for x, y in zip(b, b[1:], strict=False)]
    assert max(jumps) > 2 * 86400 and sorted(jumps)[-2] < 60


def test_a_landing_is_atomic_and_never_a_skipped_name(tmp_path):
    plan = prepare(tmp_path, ["replicate-json"], **SMALL)
    d = plan.deliveries[0]
    staged = tmp_path / STAGING / d.rel
    size = staged.stat().st_size
    folder = str(plan.manifest.input_dir("replicate-json"))
    assert list_inputs([folder]) == []
    assert not [s for s in list_inputs([str(tmp_path)]) if f"/{STAGING}/" in s.path]  # staging is never listed
    at = land(tmp_path, d)
    dest = tmp_path / d.rel
    assert not staged.exists() and dest.stat().st_size == size and abs(dest.stat().st_mtime - at) < 1
    assert [s.path for s in list_inputs([folder])] == [str(dest.resolve())]
    assert json.loads((tmp_path / FEED_LOG).read_text())["file"] == d.rel


def test_feed_command_prints_each_landing(tmp_path, capsys):
    assert feed_command(["datastream-json"], 2, 10, 60, 3, str(tmp_path), None, 12, 0) == 0
    out = capsys.readouterr().out
    assert "feeding 8 file(s) of datastream-json" in out and out.count("<- two days late") == 1
    assert "done: 8 file(s) landed" in out
    assert feed_command(["nope"], 2, 10, 60, 3, str(tmp_path), None, 12, 0) == 2


def test_late_redeliveries_land_in_their_late_place(tmp_path):
    """With a month of source time, a late redelivery's file lands among the files of `late_days` later, never
    before a file of an earlier day (the one held-back file of the pause aside)."""
    plan = prepare(tmp_path, ["replicate-json", "datahub-tuple"], tables=1, rows=10, changes=200, seed=4, rotate=500,
                   quirks=["late_redelivery"], days=30, late_days=10)
    m = plan.manifest
    day = {f"{info['input']}/{d['file']}": d["day"] for info in m.vendor_formats.values() for d in info["deliveries"]}
    order = [d.rel for d in plan.deliveries if not d.late]
    assert [day[rel] for rel in order] == sorted(day[rel] for rel in order)
    for vf, info in m.vendor_formats.items():
        assert info["late_redeliveries"], vf
        for c in info["late_redeliveries"]:
            late, original = f"{info['input']}/{c['file']}", f"{info['input']}/{c['original']}"
            assert c["day"] >= c["original_day"] + 10
            earlier = [rel for rel in order if day[rel] < c["day"]]
            assert order.index(late) > max(order.index(rel) for rel in earlier) >= order.index(original)
    assert feed(tmp_path, plan, 0) == len(plan.deliveries)
