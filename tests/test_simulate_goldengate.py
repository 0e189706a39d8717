"""The simulator's GoldenGate encoder, read back with plain `json` (no cdcnorm adapter), then end to end.

The reader knows the JSON formatter's records (op- and row-modeled) and the reference's rules, nothing of the
encoder's internals: replaying each format's records in `pos` order, merging partial images, must give the
truth's final state; the quirks must show (compressed updates, empty before images, redelivered copies with a
later `current_ts`). Then `normalize` + `apply` of each format equals its truth.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path

import pytest

from cdcnorm.simulate import simulate
from cdcnorm.simulate.truth import load_truth
from cdcnorm.simulate.verify import build_lake, check_format

SIZE = {"tables": 3, "rows": 20, "changes": 240, "seed": 7}
META = {"table", "op_type", "op_ts", "current_ts", "pos", "primary_keys", "tokens"}


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    out = tmp_path_factory.mktemp("gg-sim")
    return simulate(out, vendors=["goldengate"], quirks=None, rotate=50, **SIZE), out


def lines(out: Path, fmt: str) -> list[dict]:
    found = []
    for path in sorted((out / "goldengate" / fmt).rglob("*.jsonl")):
        found += [json.loads(ln, parse_float=Decimal) for ln in path.read_text(encoding="utf-8").splitlines()]
    return found


def pos_key(pos: str) -> tuple[int, int]:
    """The reference's reading: the last ten characters are the RBA, the rest the trail sequence ('-1')."""
    return int(pos[:-10].lstrip("0") or "0"), int(pos[-10:])


def typed(kind: str, v):
    if v is None:
        return None
    if kind == "timestamp_ntz":
        return dt.datetime.strptime(v[:26], "%Y-%m-%d %H:%M:%S.%f")
    if kind == "date":
        return dt.date.fromisoformat(v[:10])
    if kind == "bytes":
        return base64.b64decode(v)
    if kind == "bool":
        return bool(v)
    if kind == "float":
        return float(v)
    return v


def replay(man, fmt: str, recs: list[dict]) -> dict[str, list[dict]]:
    """Final state per table: records deduplicated by (table, pos, op_type), applied in pos order (a row
    formatter's delete-insert at one pos: the delete first), partial images merged."""
    info = man.vendor_formats[f"goldengate-{fmt}"]["tables"]
    by_table: dict[str, dict[str, dict]] = defaultdict(dict)
    for r in recs:
        by_table[r["table"].split(".", 1)[1]][(r["pos"], r["op_type"])] = r
    state = {}
    for name, t in info.items():
        kinds = {c["name"]: c["truth_kind"] for c in t["columns"]}
        pks = t["primary_key"]
        rows: dict = {}
        keyless: list = []
        for at in sorted(by_table[name], key=lambda p: (pos_key(p[0]), p[1] != "D")):
            r = by_table[name][at]
            if fmt == "json":
                before, after = r.get("before") or None, r.get("after")
            else:
                image = {k: v for k, v in r.items() if k not in META}
                before, after = (image, None) if r["op_type"] == "D" else (None, image)
            op = r["op_type"]
            if op == "T":
                rows.clear()
                continue
            if not pks:
                keyless.append(after)
                continue
            if op == "D":
                rows.pop(tuple(before[k] for k in pks), None)
                continue
            if before is not None and tuple(before[k] for k in pks) != tuple(after[k] for k in pks):
                rows.pop(tuple(before[k] for k in pks), None)  # a key change
            key = tuple(after[k] for k in pks)
            rows[key] = {**rows.get(key, {}), **after} if op == "U" else dict(after)
        out = keyless if not pks else [rows[k] for k in sorted(rows)]
        state[name] = [{c: typed(kinds[c], row.get(c)) for c in kinds} for row in out]
    return state


def canonical(rows: list[dict]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


@pytest.mark.parametrize("fmt", ["json", "json_row"])
def test_replaying_the_records_gives_the_truth(sim, fmt):
    man, out = sim
    state = replay(man, fmt, lines(out, fmt))
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


def test_without_quirks_updates_carry_full_images(tmp_path):
    simulate(tmp_path, vendors=["goldengate-json"], quirks=[], **SIZE)
    updates = [r for r in lines(tmp_path, "json") if r["op_type"] == "U"]
    assert updates and all(r["before"] and set(r["before"]) == set(r["after"]) for r in updates)


@pytest.mark.parametrize("vf", ["goldengate-json", pytest.param("goldengate-json_row", marks=pytest.mark.slow)])
def test_normalize_and_apply_equal_the_truth(spark, tmp_path, vf):
    run = build_lake(spark, tmp_path / "sim", tmp_path / "lake", formats=(vf,), rotate=60, **SIZE)
    report = run["reports"][vf]
    assert report["reconciled"] and report["quarantine_by_reason"] == {}
    assert check_format(run["frames"], run["manifest"], vf) == []
    assert report["outcomes"]["duplicate"] > 0
