"""GoldenGate among the other vendors: one simulated history through GoldenGate and Datastream compares equal
(documented lossy projections only), and a cut-over from GoldenGate to Debezium loses and doubles nothing.
GoldenGate's own losses are on (compressed updates, empty before images). Three vendors normalized and
compared take minutes here: `make test-slow`."""

from __future__ import annotations

import pytest

import cdcnorm
from cdcnorm.migrate import compare
from cdcnorm.migrate.cutover import cutover
from cdcnorm.simulate import simulate
from cdcnorm.simulate.verify import options_for

FORMATS = ["datastream-json", "goldengate-json", "debezium-json"]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def three(spark, tmp_path_factory):
    """One history (2 tables) in three vendors' formats, normalized into one lake."""
    root = tmp_path_factory.mktemp("gg-three")
    manifest = simulate(root / "sim", vendors=FORMATS, tables=2, rows=8, changes=30,
                        quirks=["compressed_updates", "empty_before"])
    lake = str(root / "lake")
    for vf in FORMATS:
        vendor = vf.split("-", 1)[0]
        cdcnorm.normalize([str(manifest.input_dir(vf))], vendor, spark=spark, lake=lake,
                          options=options_for(vf, manifest))
    return root, lake


def test_goldengate_compares_equal_to_datastream(spark, three):
    _, lake = three
    rep = compare(spark, lake, lake, left_vendor="goldengate", right_vendor="datastream", tables=["customers"])
    assert rep["equal"] is True, [t["reasons"] for t in rep["tables"]]
    (table,) = rep["tables"]
    assert table["stream"]["matched"] > 0 and table["stream"]["only_left"] == table["stream"]["only_right"] == 0


def test_goldengate_carries_the_truncate_datastream_cannot(spark, three):
    _, lake = three
    rep = compare(spark, lake, lake, left_vendor="datastream", right_vendor="goldengate", tables=["order_lines"])
    (table,) = rep["tables"]
    assert table["stream"]["ops"]["right"]["all"].get("TRUNCATE") == 1
    assert rep["equal"] is False and table["state"]["rows_only_left"] > 0


def test_cutover_from_goldengate_to_debezium_loses_and_doubles_nothing(spark, three):
    root, lake = three
    out = str(root / "stitched")
    rep = cutover(spark, lake, lake, out, old_vendor="goldengate", new_vendor="debezium", stream="stitched")
    assert rep["status"] == "done" and rep["unmatched_tables"] == {"old": [], "new": []}
    assert all(t["status"] == "ok" for t in rep["tables"])
    check = compare(spark, out, lake, left_vendor="debezium:stitched", right_vendor="debezium")
    assert check["equal"] is True, [t["reasons"] for t in check["tables"]]
    for t in check["tables"]:
        assert t["state"]["rows_only_left"] == t["state"]["rows_only_right"] == 0
    again = cutover(spark, lake, lake, out, old_vendor="goldengate", new_vendor="debezium", stream="stitched")
    assert again["rows_written"] == 0 and again["rows_skipped_existing"] == rep["rows_written"]
