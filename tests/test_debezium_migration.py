"""Debezium among the other vendors: one simulated history through Debezium, Datastream and Replicate compares
equal (documented lossy projections only), and a cut-over from Replicate to Debezium loses and doubles nothing.
Three vendors normalized and compared take minutes here: `make test-slow`."""

from __future__ import annotations

import pytest

from cdcnorm.migrate import compare
from vendor_lake import assert_cutover_loses_and_doubles_nothing, history_lake

FORMATS = ["datastream-json", "replicate-json", "debezium-json"]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def three(spark, tmp_path_factory):
    """One history (2 tables) in three vendors' formats, normalized into one lake."""
    return history_lake(spark, tmp_path_factory.mktemp("dbz-three"), FORMATS)


@pytest.mark.parametrize("other", ["datastream", "replicate"])
def test_debezium_compares_equal_to_the_other_vendors(spark, three, other):
    _, lake = three
    rep = compare(spark, lake, lake, left_vendor="debezium", right_vendor=other, tables=["customers"])
    assert rep["equal"] is True, [t["reasons"] for t in rep["tables"]]
    (table,) = rep["tables"]
    assert table["stream"]["matched"] > 0 and table["stream"]["only_left"] == table["stream"]["only_right"] == 0


def test_debezium_carries_the_truncate_the_other_json_formats_cannot(spark, three):
    """The simulated TRUNCATE of order_lines: Debezium's MySQL connector sends it (`op: t`), Datastream and
    Replicate JSON do not, and compare says so rather than calling the tables equal."""
    _, lake = three
    rep = compare(spark, lake, lake, left_vendor="replicate", right_vendor="debezium", tables=["order_lines"])
    (table,) = rep["tables"]
    assert table["stream"]["ops"]["right"]["all"].get("TRUNCATE") == 1
    assert rep["equal"] is False and table["state"]["rows_only_left"] > 0


def test_cutover_from_replicate_to_debezium_loses_and_doubles_nothing(spark, three):
    root, lake = three
    assert_cutover_loses_and_doubles_nothing(spark, root, lake, "replicate", "debezium")
