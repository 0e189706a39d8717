"""Incremental `cdcnorm apply`: three normalize runs, an apply after each; late changes, deletes, re-inserts,
uncaptured columns and a truncate arrive across applies. Each step equals a from-scratch computation, and the
last one equals `full=True`; the values of the late cases are asserted one by one.
"""

from __future__ import annotations

import json

import pytest

import cdcnorm
from cdcnorm.state import read_current, read_index
from test_apply import SpecAdapter, ev, tid

STEPS = [
    [ev("inc", "INSERT", 1, {"id": 1, "a": 1, "b": 1}), ev("inc", "INSERT", 2, {"id": 2, "a": 2, "b": 2}),
     ev("inc", "INSERT", 3, {"id": 3, "a": 3, "b": 3}), ev("inc", "UPDATE", 10, {"id": 1, "a": 10}),
     ev("inc", "DELETE", 20, None, {"id": 2}),
     ev("quiet", "INSERT", 1, {"id": 1, "v": "q"}),
     ev("bag", "INSERT", 1, {"a": 1}, pks=None), ev("bag", "INSERT", 2, {"a": 1}, pks=None)],
    [ev("inc", "UPDATE", 5, {"id": 1, "a": 5, "b": 5}),      # late: a@10 stays, b@1 becomes 5
     ev("inc", "UPDATE", 15, {"id": 2, "a": 15}),            # older than the delete@20: ignored
     ev("inc", "INSERT", 25, {"id": 2, "a": 25}),            # re-insert: starts from an empty row
     ev("inc", "UPDATE", 18, {"id": 2, "b": 18}),            # late, older than the delete: ignored
     ev("inc", "INSERT", 30, {"id": 4, "a": 30, "b": 30}),
     ev("inc", "UPDATE", 31, {"id": 3, "a": 31, "b": None}, missing=["b"]),   # b not captured: keeps 3
     ev("bag", "DELETE", 3, None, {"a": 1}, pks=None)],
    [ev("inc", "TRUNCATE", 26, pks=None),                     # late truncate: only changes after 26 survive
     ev("inc", "UPDATE", 28, {"id": 3, "b": 28}),
     ev("inc", "INSERT", 3, {"id": 3, "a": 3, "b": 3}),       # a redelivery (same event id)
     ev("bag", "INSERT", 0, {"a": 1}, pks=None)],             # late keyless insert before the delete@3
]
EXPECTED = [
    {"inc": [(1, 10, 1), (3, 3, 3)], "bag": [(1,), (1,)]},
    {"inc": [(1, 10, 5), (2, 25, None), (3, 31, 3), (4, 30, 30)], "bag": [(1,)]},
    {"inc": [(3, 31, 28), (4, 30, 30)], "bag": [(1,), (1,)]},
]


def _rows(df):
    return sorted(tuple(r) for r in df.collect())


@pytest.fixture(scope="module")
def steps(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("incremental")
    lake = str(root / "lake")
    out = []
    for i, events in enumerate(STEPS):
        src = root / f"in{i}" / "events.jsonl"
        src.parent.mkdir()
        src.write_text("\n".join(json.dumps(e) for e in events) + "\n")
        cdcnorm.normalize(str(src), SpecAdapter(), spark=spark, lake=lake)
        res = cdcnorm.apply(spark, lake)
        fresh = cdcnorm.apply(spark, lake, write=False)
        out.append({
            "applied": {t.table: _rows(df) for t, df in res.items()},
            "fresh": {t.table: _rows(df) for t, df in fresh.items()},
            "index": {e["table"]: e for e in read_index(spark, lake)},
        })
        fresh.unpersist()
    full = cdcnorm.apply(spark, lake, full=True)
    return {"lake": lake, "steps": out, "full": {t.table: _rows(df) for t, df in full.items()},
            "full_index": {e["table"]: e for e in read_index(spark, lake)}}


def test_each_step_equals_a_computation_from_scratch(steps):
    for i, step in enumerate(steps["steps"]):
        assert step["applied"] == step["fresh"], f"step {i}"
        for table, rows in EXPECTED[i].items():
            assert step["applied"][table] == rows, f"step {i} {table}"
    assert steps["full"] == steps["steps"][-1]["applied"]


def test_later_steps_are_incremental_and_say_what_they_rewrote(steps):
    first, second, third = (s["index"] for s in steps["steps"])
    assert first["inc"]["apply"]["mode"] == "rebuilt" and first["inc"]["apply"]["reason"] == "first apply"
    assert second["inc"]["apply"] == {"mode": "incremental", "changes": 6, "files_rewritten": 2, "files_written": 1}
    assert second["quiet"]["apply"]["mode"] == "incremental" and second["quiet"]["apply"]["changes"] == 0
    assert second["bag"]["apply"]["reason"] == "keyless tables are recomputed from their changes"
    assert third["inc"]["truncates"] == 1 and third["inc"]["changes_applied"] == 12
    assert steps["full_index"]["inc"]["apply"]["reason"] == "--full"
    assert steps["full_index"]["inc"]["changes_applied"] == third["inc"]["changes_applied"]


def test_tombstones_and_column_sort_keys(spark, steps):
    cur = read_current(spark, steps["lake"], tid("inc"), meta=True)
    rows = {r["id"]: r for r in cur.collect()}
    assert rows[3]["_cdc_column_sort_keys"] is not None and set(rows[3]["_cdc_column_sort_keys"]) == {"b"}  # a set at the row's sort key, b earlier
    assert rows[4]["_cdc_column_sort_keys"] is None and rows[4]["_cdc_deleted_at"] is None


def test_a_retried_apply_changes_nothing(spark, steps):
    before = read_current(spark, steps["lake"], tid("inc"), meta=True)
    res = cdcnorm.apply(spark, steps["lake"], tables=["inc"])
    assert res.summary["tables"][0]["apply"]["files_rewritten"] == 0
    assert _rows(read_current(spark, steps["lake"], tid("inc"), meta=True)) == _rows(before)


def _versions(df, *cols):
    return sorted((tuple(r) for r in df.select(*cols).collect()), key=lambda t: tuple((x is None, x) for x in t))


def test_history_versions_late_changes_in_place(spark, steps):
    res = cdcnorm.apply(spark, steps["lake"], tables=["inc", "bag"], history=True)
    h = res.history[tid("inc")]
    cols = ("id", "a", "b", "opened_by_op", "closed_by_op", "is_current")
    assert _versions(h, *cols) == _versions(spark.createDataFrame([
        (1, 1, 1, "INSERT", "UPDATE", False), (1, 5, 5, "UPDATE", "UPDATE", False),
        (1, 10, 5, "UPDATE", "TRUNCATE", False),
        (2, 2, 2, "INSERT", "UPDATE", False), (2, 15, 2, "UPDATE", "UPDATE", False),
        (2, 15, 18, "UPDATE", "DELETE", False), (2, 25, None, "INSERT", "TRUNCATE", False),
        (3, 3, 3, "INSERT", "TRUNCATE", False), (3, None, 28, "UPDATE", "UPDATE", False),
        (3, 31, 28, "UPDATE", None, True), (4, 30, 30, "INSERT", None, True),
    ], "id long, a long, b long, opened_by_op string, closed_by_op string, is_current boolean"), *cols)
    # no overlap, no gap: a version ends where the next one of its key starts, unless a DELETE/TRUNCATE closed it
    rows = sorted(h.collect(), key=lambda r: (r["id"], bytes(r["valid_from"])))
    for a, b in zip(rows, rows[1:], strict=False):
        if a["id"] == b["id"] and a["closed_by_op"] not in ("DELETE", "TRUNCATE"):
            assert a["valid_to"] == b["valid_from"] and a["closed_by_event_id"] == b["opened_by_event_id"]
    current = _versions(h.where("is_current"), "id", "a", "b")
    assert current == _rows(res[tid("inc")])
    bag = res.history[tid("bag")]
    assert _versions(bag, "a", "opened_by_op", "closed_by_op", "is_current") == [
        (1, "INSERT", "DELETE", False), (1, "INSERT", None, True), (1, "INSERT", None, True)]
    assert res.summary["tables"][0]["apply"]["history_versions"] == 3


def test_history_tracks_only_some_columns(spark, steps):
    res = cdcnorm.apply(spark, steps["lake"], tables=["inc"], history=True, track_columns=["a"])
    got = _versions(res.history[tid("inc")].where("id = 2"), "a", "b", "opened_by_op", "closed_by_op")
    assert got == [(2, 2, "INSERT", "UPDATE"), (15, 18, "UPDATE", "DELETE"), (25, None, "INSERT", "TRUNCATE")]


def test_as_of_a_position_and_a_time(spark, steps):
    lake = steps["lake"]
    changes = cdcnorm.read_changes(spark, lake).where("table = 'inc' and position = '20'").collect()
    at = cdcnorm.apply(spark, lake, tables=["inc"], as_of=bytes(changes[0]["sort_key"]).hex())
    assert _rows(at[tid("inc")]) == [(1, 10, 5), (3, 3, 3)]  # the delete@20 applied, nothing after it
    none = cdcnorm.apply(spark, lake, tables=["inc"], as_of="1999-01-01T00:00:00Z")
    assert list(none) == []
