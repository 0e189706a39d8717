"""The simulator's Canal encoder, read back with plain `json` (no cdcnorm adapter), and once end to end.

The reader below knows the flat message (reference canal.md), nothing of the encoder's internals: replaying the
messages (a resent batch recognised by what Canal repeats: `es`, `gtid`, `type`, table and rows, never `id` or
`ts`) must give the history's final state as the truth projects it, and single messages must carry the quirks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from canal_flat import messages, replay
from cdcnorm.simulate import load_truth
from cdcnorm.simulate.encoders.canal import FORMATS, java_double
from cdcnorm.simulate.history import History

SIZE = {"tables": 3, "rows": 20, "changes": 240, "seed": 7}
FMT = FORMATS[0]


def run(out: Path, quirks: frozenset[str]) -> Any:
    """Feed a history to the encoder the way `simulate()` does."""
    history = History(SIZE["tables"], SIZE["rows"], SIZE["changes"], SIZE["seed"])
    enc = FMT.encoder(out, history.defs, SIZE["seed"], quirks, 60, FMT.folder)
    initial: list[list[dict]] = [[] for _ in history.defs]
    changes = []
    for ev in history:
        (initial[ev.table].append(ev.after) if ev.kind == "SNAPSHOT" else changes.append(ev))
    for t in history.defs:
        enc.backfill(t, initial[t.index], 1_714_557_600_000_000, 0)
    for ev in changes:
        enc.change(ev)
    enc.close()
    return enc


def _truth_rows(out: Path) -> dict[str, list[dict]]:
    return load_truth(out, FMT.name)


@pytest.fixture(scope="module")
def sim(tmp_path_factory) -> tuple[Path, Any]:
    from cdcnorm.simulate import simulate

    out = tmp_path_factory.mktemp("canal")
    simulate(out, vendors=[FMT.name], tables=3, rows=20, changes=240, seed=7, rotate=60,
             quirks=["all", "canal_null_old"])
    return out, json.loads((out / "manifest.json").read_text())


def test_replaying_the_messages_gives_the_truth(sim):
    out, _ = sim
    state, resent = replay(messages(out))
    assert resent > 0
    truth = _truth_rows(out)
    for table, rows in truth.items():
        got = state[table]
        got_rows = sorted(got.values(), key=repr) if isinstance(got, dict) else sorted(got, key=repr)
        want = sorted(({k: v for k, v in r.items()} for r in rows), key=repr)
        full = [{k: r.get(k) for k in want[0]} for r in got_rows] if want else got_rows
        assert sorted(full, key=repr) == want, table


def test_messages_are_flat_messages_of_strings(sim):
    out, _ = sim
    msgs = messages(out)
    keys = {"data", "database", "es", "gtid", "id", "isDdl", "mysqlType", "old", "pkNames", "sql", "sqlType",
            "table", "ts", "type"}
    assert all(set(m) == keys for m in msgs)
    assert all(m["es"] % 1000 == 0 and m["ts"] > m["es"] for m in msgs)
    for m in msgs:
        for row in m["data"] or ():
            assert all(v is None or isinstance(v, str) for v in row.values())
    types = {m["type"] for m in msgs}
    assert types == {"INIT", "INSERT", "UPDATE", "DELETE", "ALTER", "TRUNCATE"}
    assert {m["mysqlType"]["id"] for m in msgs if m["table"] == "customers" and m["mysqlType"]} == \
        {"bigint(20)", "BIGINT"}  # the case flips between batches


def test_multi_row_messages_align_old(sim):
    out, _ = sim
    multi = [m for m in messages(out) if m["data"] and len(m["data"]) > 1 and m["type"] != "INIT"]
    assert multi
    for m in multi:
        if m["type"] == "UPDATE":
            assert len(m["old"]) == len(m["data"])


def test_a_resent_batch_is_renumbered_and_retimed(sim):
    out, _ = sim
    by_content: dict[str, list[dict]] = {}
    for m in messages(out):
        by_content.setdefault(json.dumps([m["es"], m["gtid"], m["type"], m["table"], m["data"]]), []).append(m)
    resent = [ms for ms in by_content.values() if len(ms) > 1]
    assert resent
    for first, again in (ms[:2] for ms in resent):
        assert again["id"] != first["id"] and again["ts"] != first["ts"]


def test_null_to_value_changes_are_left_out_of_old(tmp_path):
    enc = run(tmp_path, frozenset({"canal_null_old"}))
    assert enc.counts["null_old"] > 0
    plain = run(tmp_path / "plain", frozenset())
    assert plain.counts["null_old"] == 0 and plain.counts["resent"] == 0
    nulls = [old for m in messages(tmp_path / "plain") if m["type"] == "UPDATE" for old in m["old"]
             if None in old.values()]
    assert nulls  # without the quirk, a NULL -> value change is in `old` as null


def test_java_double():
    assert [java_double(v) for v in (1.0, 12.5, 1e7, 1.5e-4, -2.25e10, 0.001)] == \
        ["1.0", "12.5", "1.0E7", "1.5E-4", "-2.25E10", "0.001"]


@pytest.mark.slow  # make test: canal-json in the fast e2e lake (test_e2e)
def test_normalize_and_apply_equal_the_truth(spark, tmp_path):
    from cdcnorm.simulate.verify import build_lake, check_format

    built = build_lake(spark, tmp_path / "sim", tmp_path / "lake", formats=(FMT.name,), tables=3, rows=20,
                       changes=150, seed=7, rotate=60)
    report = built["reports"][FMT.name]
    assert report["reconciled"] and report["outcomes"]["quarantined"] == 0
    resent = replay(messages(tmp_path / "sim"))[1]
    assert report["outcomes"]["duplicate"] == resent > 0
    assert check_format(built["frames"], built["manifest"], FMT.name) == []
