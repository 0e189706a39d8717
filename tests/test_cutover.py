"""`cdcnorm cutover`: the stitched stream applies to exactly the history, and unsafe cut-overs are refused."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

import cdcnorm
from cdcnorm.canonical import tuple_codec
from cdcnorm.cli.cutover import cutover_command
from cdcnorm.errors import UsageError
from cdcnorm.migrate import compare
from cdcnorm.migrate.cutover import cutover, parse_at
from cdcnorm.migrate.scenario import migration


@pytest.fixture(scope="module")
def base(tmp_path_factory, typed_history):
    return tmp_path_factory.mktemp("cut"), typed_history


@pytest.fixture(scope="module")
def clean(spark, base):
    root, history = base
    sc = migration(spark, history, str(root / "two"), overlap=(0.3, 0.7))
    rep = cutover(spark, str(root / "two"), str(root / "two"), str(root / "out"), old_vendor="replicate",
                  new_vendor="datastream", stream="stitched")
    return root, history, sc, rep


def test_stitched_stream_applies_to_the_history(spark, clean):
    root, history, sc, rep = clean
    assert rep["status"] == "done", rep.get("reasons")
    assert [t["name"] for t in rep["tables"]] == ["shop.customers", "shop.orders"]
    for t in rep["tables"]:
        assert t["status"] == "ok" and t["how"] == "auto" and t["verified"]["disagreements"] == 0
        assert sc.start.isoformat() <= t["at"] <= sc.end.isoformat()
        assert t["rows_from_old"] > 0 and t["rows_from_new"] > 0
    out = str(root / "out")
    check = compare(spark, out, history, left_vendor="datastream:stitched")
    assert check["equal"] is True, check["findings"]
    assert all(t["state"]["rows_left"] == t["state"]["rows_right"] > 0 for t in check["tables"])
    assert all(t["stream"]["only_left"] == t["stream"]["only_right"] == 0 for t in check["tables"])


def test_stitched_stream_is_one_ordered_stream(spark, clean):
    root, _, _, rep = clean
    rows = cdcnorm.read_changes(spark, str(root / "out"))
    assert {r["vendor"] for r in rows.select("vendor").distinct().collect()} == {"datastream"}
    assert {r["stream"] for r in rows.select("stream").distinct().collect()} == {"stitched"}
    assert rows.count() == rows.select("event_id").distinct().count() == rep["rows_written"]
    # sort_key = (side, *original): every old row sorts before every new row of a table
    orders = rows.where(F.col("table") == "orders").orderBy("sort_key").select("sort_key", "format", "source_ts").collect()
    sides = [tuple_codec.decode(bytes(r["sort_key"]))[0] for r in orders]
    assert sides == sorted(sides) and set(sides) == {0, 1}
    log = [r["source_ts"] for r, s in zip(orders, sides, strict=True) if s == 1]
    assert log == sorted(log)
    schemas = cdcnorm.read_schemas(spark, str(root / "out")).select("stream", "schema_version").collect()
    assert {r["stream"] for r in schemas} == {"stitched"}
    assert {r["schema_version"] for r in schemas} == {"replicate:1", "datastream:1"}


@pytest.mark.slow
def test_rerun_adds_nothing(spark, clean):
    root, _, _, rep = clean
    again = cutover(spark, str(root / "two"), str(root / "two"), str(root / "out"), old_vendor="replicate",
                    new_vendor="datastream", stream="stitched")
    assert again["status"] == "done" and again["rows_written"] == 0
    assert again["rows_skipped_existing"] == rep["rows_written"]


@pytest.mark.slow  # over 20 s under load: `make test-slow` keeps it; the fast suite stays under 10 min
def test_cutover_switches_after_a_disagreement(spark, base):
    root, history = base
    lake = str(root / "dropped")
    sc = migration(spark, history, lake, overlap=(0.3, 0.7), drop_change=True, change_value=True)
    rep = cutover(spark, lake, lake, str(root / "out2"), old_vendor="replicate", new_vendor="datastream")
    assert rep["status"] == "done", rep.get("reasons")
    drop = next(i for i in sc.injected if i["kind"] == "dropped_change")
    t = next(x for x in rep["tables"] if x["name"] == drop["table"])
    assert t["at"] > drop["source_ts"] and t["verified"]["disagreements"] >= 1
    assert any(drop["key"] in w for w in t["warnings"])
    check = compare(spark, str(root / "out2"), history, left_vendor="datastream:cutover")
    assert check["equal"] is True, check["findings"]


def test_cutover_refuses_without_overlap(spark, base, capsys):
    root, history = base
    lake = str(root / "gap")
    migration(spark, history, lake, overlap=(0.6, 0.4))
    rep = cutover(spark, lake, lake, str(root / "never"), old_vendor="replicate", new_vendor="datastream")
    assert rep["status"] == "refused" and rep["window"] is None
    assert all("windows do not overlap" in r for r in rep["reasons"])
    assert not (root / "never").exists()
    code = cutover_command(lake, "replicate", lake, "datastream", str(root / "never"), None, None, None)
    assert code == 1 and "windows do not overlap" in capsys.readouterr().out


def test_cutover_at_outside_window_is_refused(spark, clean):
    root, _, sc, _ = clean
    rep = cutover(spark, str(root / "two"), str(root / "two"), str(root / "never2"), old_vendor="replicate",
                  new_vendor="datastream", at="2000-01-01T00:00:00Z")
    assert rep["status"] == "refused" and "outside the window" in rep["reasons"][0]


def test_parse_at():
    assert parse_at("auto") is None
    assert parse_at("2025-03-01T12:00:00").isoformat() == "2025-03-01T12:00:00+00:00"
    with pytest.raises(UsageError, match="neither 'auto'"):
        parse_at("yesterday")
