"""GoldenGate among the other vendors: one simulated history through GoldenGate and Datastream compares equal
(documented lossy projections only), and a cut-over from GoldenGate to Debezium loses and doubles nothing.
GoldenGate's own losses are on (compressed updates, empty before images). Three vendors normalized and
compared take minutes here: `make test-slow`."""

from __future__ import annotations

import pytest

from cdcnorm.migrate import compare
from vendor_lake import assert_cutover_loses_and_doubles_nothing, history_lake

FORMATS = ["datastream-json", "goldengate-json", "debezium-json"]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def three(spark, tmp_path_factory):
    """One history (2 tables) in three vendors' formats, normalized into one lake."""
    return history_lake(spark, tmp_path_factory.mktemp("gg-three"), FORMATS, quirks=["compressed_updates", "empty_before"])


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
    assert_cutover_loses_and_doubles_nothing(spark, root, lake, "goldengate", "debezium")
