"""The simulator's GoldenGate encoder, read back with plain `json` (no cdcnorm adapter), then end to end.

The reader knows the JSON formatter's records (op- and row-modeled) and the reference's rules, nothing of the
encoder's internals: replaying each format's records in `pos` order, merging partial images, must give the
truth's final state; the quirks must show (compressed updates, empty before images, redelivered copies with a
later `current_ts`). Then `normalize` + `apply` of each format equals its truth.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter, defaultdict

import pytest

from cdcnorm.simulate import simulate
from cdcnorm.simulate.truth import load_truth
from cdcnorm.simulate.verify import build_lake, check_format
from goldengate_records import lines, replay

SIZE = {"tables": 3, "rows": 20, "changes": 240, "seed": 7}


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    out = tmp_path_factory.mktemp("gg-sim")
    return simulate(out, vendors=["goldengate"], quirks=None, rotate=50, **SIZE), out


def canonical(rows: list[dict]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


@pytest.mark.parametrize("fmt", ["json", "json_row", "avro_op"])
def test_replaying_the_records_gives_the_truth(sim, fmt):
    man, out = sim
    state = replay(man.vendor_formats[f"goldengate-{fmt}"]["tables"], fmt, lines(out, fmt))
    truth = load_truth(out, f"goldengate-{fmt}")
    for name, rows in truth.items():
        assert canonical(state[name]) == canonical(rows), name


def test_records_carry_the_reference_shape_and_the_quirks(sim):
    man, out = sim
    recs = lines(out, "json")
    ops = Counter(r["op_type"] for r in recs)
    assert set(ops) == {"I", "U", "D", "T"}
    for r in recs:
        assert list(r)[:5] == ["table", "op_type", "op_ts", "current_ts", "pos"] and len(r["pos"]) == 20
        assert dt.datetime.strptime(r["op_ts"], "%Y-%m-%d %H:%M:%S.%f")
        assert "T" in r["current_ts"]
    updates = [r for r in recs if r["op_type"] == "U"]
    assert any(r["before"] == {} for r in updates)  # empty_before
    full = len(man.vendor_formats["goldengate-json"]["tables"]["customers"]["columns"])
    assert any(len(r["after"]) < full for r in updates if r["table"].endswith("customers"))  # compressed
    loads = [r for r in recs if r["pos"].startswith("00000000-1")]
    assert loads and all(r["op_type"] == "I" for r in loads)  # the initial load's own trail
    copies = defaultdict(set)
    for r in recs:
        copies[(r["table"], r["pos"])].add(r["current_ts"])
    assert any(len(ts) > 1 for ts in copies.values())  # a redelivered copy: same pos, later current_ts


def test_avro_marks_what_a_compressed_update_or_an_empty_before_lacks(sim):
    _, out = sim
    import fastavro

    recs = []
    for path in sorted((out / "goldengate" / "avro_op").rglob("*.avro")):
        with open(path, "rb") as fh:
            recs += list(fastavro.reader(fh))
    updates = [r for r in recs if r["op_type"] == "U"]
    missing = [[k for k, v in r["after"].items() if k.endswith("_isMissing") and v] for r in updates]
    assert any(missing) and not all(missing)
    assert any(all(v for k, v in r["before"].items() if k.endswith("_isMissing")) for r in updates)


def test_without_quirks_updates_carry_full_images(tmp_path):
    simulate(tmp_path, vendors=["goldengate-json"], quirks=[], **SIZE)
    updates = [r for r in lines(tmp_path, "json") if r["op_type"] == "U"]
    assert updates and all(r["before"] and set(r["before"]) == set(r["after"]) for r in updates)


@pytest.mark.slow  # make test: goldengate-json in the fast e2e lake (test_e2e)
@pytest.mark.parametrize("vf", ["goldengate-json", "goldengate-json_row", "goldengate-avro_op"])
def test_normalize_and_apply_equal_the_truth(spark, tmp_path, vf):
    run = build_lake(spark, tmp_path / "sim", tmp_path / "lake", formats=(vf,), rotate=60, **SIZE)
    report = run["reports"][vf]
    assert report["reconciled"] and report["quarantine_by_reason"] == {}
    assert check_format(run["frames"], run["manifest"], vf) == []
    assert report["outcomes"]["duplicate"] > 0
