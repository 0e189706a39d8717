"""The enterprise replication tools against the MySQL binlog streams: one simulated history through AWS DMS
(Kinesis), Oracle GoldenGate (JSON), Canal and Maxwell compares equal for every pair across the two groups, up to
the documented projections (docs/compare.md, "Projections between vendors"). Four vendors normalized and compared
take minutes here: `make test-slow`."""

from __future__ import annotations

import pytest

from cdcnorm.migrate import compare
from vendor_lake import history_lake

ENTERPRISE = ["dms-kinesis", "goldengate-json"]
BINLOG = ["canal-json", "maxwell-json"]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory):
    """One history (2 tables: `customers` PostgreSQL-flavoured, `order_lines` MySQL) in the four formats."""
    return history_lake(spark, tmp_path_factory.mktemp("vendor-matrix"), ENTERPRISE + BINLOG)[1]


PAIRS = [(e.split("-")[0], b.split("-")[0]) for e in ENTERPRISE for b in BINLOG]


@pytest.mark.parametrize(("left", "right"), PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_the_enterprise_tools_compare_equal_to_the_binlog_streams(spark, lake, left, right):
    rep = compare(spark, lake, lake, left_vendor=left, right_vendor=right, tables=["customers"])
    assert rep["equal"] is True, [t["reasons"] for t in rep["tables"]]
    (t,) = rep["tables"]
    assert t["stream"]["matched"] > 0 and t["stream"]["only_left"] == t["stream"]["only_right"] == 0
    assert set(t["state"]["lossy"]) <= DOCUMENTED, t["state"]["lossy"]


@pytest.mark.parametrize(("left", "right"), PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_the_truncate_tells_the_vendors_that_carry_it_apart(spark, lake, left, right):
    """The simulated TRUNCATE of `order_lines`: GoldenGate (`T`) and Canal (a `TRUNCATE` DDL message) carry it,
    DMS and Maxwell do not; a pair is equal exactly when both sides deliver the same."""
    rep = compare(spark, lake, lake, left_vendor=left, right_vendor=right, tables=["order_lines"])
    (t,) = rep["tables"]
    carried = {v: t["stream"]["ops"][side]["all"].get("TRUNCATE", 0) for v, side in ((left, "left"), (right, "right"))}
    assert carried == {v: int(v in CARRY_TRUNCATE) for v in (left, right)}
    assert rep["equal"] is ((left in CARRY_TRUNCATE) == (right in CARRY_TRUNCATE)), t["reasons"]


CARRY_TRUNCATE = {"goldengate", "canal"}


DOCUMENTED = {"integer_boolean", "naive_vs_instant", "json_text_decimal", "json_text_binary"}
