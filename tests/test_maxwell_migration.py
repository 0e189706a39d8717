"""Maxwell beside Debezium: one simulated history through Maxwell (every table MySQL) and Debezium JSON compares
equal up to documented lossy projections, and a cut-over from Maxwell to Debezium loses and doubles nothing.
Two vendors normalized and compared take minutes here: `make test-slow`."""

from __future__ import annotations

import pytest

from cdcnorm.migrate import compare
from vendor_lake import assert_cutover_loses_and_doubles_nothing, history_lake

FORMATS = ["maxwell-json", "debezium-json"]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def both(spark, tmp_path_factory):
    """One history (3 tables) in Maxwell's and Debezium's JSON, normalized into one lake."""
    return history_lake(spark, tmp_path_factory.mktemp("maxwell-dbz"), FORMATS, quirks=["duplicates"], tables=3,
                        changes=40)


def test_maxwell_compares_equal_to_debezium(spark, both):
    """customers is read by Debezium's PostgreSQL connector: booleans and instants there, Maxwell's MySQL
    TINYINT(1) and naive DATETIME here (`integer_boolean`, `naive_vs_instant`). (A keyless table matches changes
    by their image text, which differs in form between the two: Maxwell leaves NULL columns out.)"""
    _, lake = both
    rep = compare(spark, lake, lake, left_vendor="maxwell", right_vendor="debezium", tables=["customers"])
    assert rep["equal"] is True, [t["reasons"] for t in rep["tables"]]
    (t,) = rep["tables"]
    assert t["stream"]["matched"] > 0 and t["stream"]["only_left"] == t["stream"]["only_right"] == 0


def test_maxwell_cannot_carry_the_truncate_debezium_sends(spark, both):
    """Maxwell emits no event for the simulated TRUNCATE of order_lines; Debezium's MySQL connector does, and
    compare says so rather than calling the tables equal."""
    _, lake = both
    rep = compare(spark, lake, lake, left_vendor="maxwell", right_vendor="debezium", tables=["order_lines"])
    (t,) = rep["tables"]
    assert t["stream"]["ops"]["right"]["all"].get("TRUNCATE") == 1
    assert rep["equal"] is False and t["state"]["rows_only_left"] > 0


def test_cutover_from_maxwell_to_debezium_loses_and_doubles_nothing(spark, both):
    root, lake = both
    assert_cutover_loses_and_doubles_nothing(spark, root, lake, "maxwell", "debezium", tables=["customers"])
