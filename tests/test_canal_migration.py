"""Canal among the other vendors: one simulated history through Canal and Debezium compares equal (documented
lossy projections only), and a cut-over from Canal to Debezium loses and doubles nothing. Two vendors
normalized and compared take minutes here: `make test-slow`."""

from __future__ import annotations

import pytest

from cdcnorm.migrate import compare
from vendor_lake import assert_cutover_loses_and_doubles_nothing, history_lake

FORMATS = ["canal-json", "debezium-json"]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def both(spark, tmp_path_factory):
    """One history (2 tables: `order_lines` MySQL for both, `customers` PostgreSQL for Debezium) in both
    vendors' formats, normalized into one lake."""
    return history_lake(spark, tmp_path_factory.mktemp("canal-dbz"), FORMATS)


@pytest.mark.parametrize("table", ["order_lines", "customers"])
def test_canal_compares_equal_to_debezium(spark, both, table):
    _, lake = both
    rep = compare(spark, lake, lake, left_vendor="canal", right_vendor="debezium", tables=[table])
    assert rep["equal"] is True, [t["reasons"] for t in rep["tables"]]
    (t,) = rep["tables"]
    assert t["stream"]["matched"] > 0 and t["stream"]["only_left"] == t["stream"]["only_right"] == 0
    # Canal's TINYINT(1) booleans are integers; Debezium's PostgreSQL timestamptz is an instant where Canal's
    # DATETIME(6) is the UTC wall clock
    assert set(t["state"]["lossy"]) == LOSSY[table]


LOSSY = {"order_lines": {"integer_boolean"}, "customers": {"integer_boolean", "naive_vs_instant"}}


def test_cutover_from_canal_to_debezium_loses_and_doubles_nothing(spark, both):
    root, lake = both
    assert_cutover_loses_and_doubles_nothing(spark, root, lake, "canal", "debezium")
