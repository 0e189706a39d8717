"""AWS DMS among the other vendors: one simulated history through DMS (Kinesis messages and S3 CSV) and
Datastream JSON compares equal up to documented projections, and a DMS task writing only inserts
(`CdcInsertsOnly`) compares different, saying which rows. Normalizing and comparing take minutes here:
`make test-slow`."""

from __future__ import annotations

import pytest

import cdcnorm
from cdcnorm.migrate import compare
from cdcnorm.simulate import simulate
from cdcnorm.simulate.verify import options_for

FORMATS = ["datastream-json", "dms-kinesis", "dms-csv"]
HISTORY = {"tables": 2, "rows": 8, "changes": 30}
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory):
    """One history (2 tables) through Datastream JSON and DMS, plus the same history from an inserts-only DMS
    task (stream `inserts-only`), normalized into one lake."""
    root = tmp_path_factory.mktemp("dms-migration")
    lake = str(root / "lake")
    manifest = simulate(root / "sim", vendors=FORMATS, quirks=[], **HISTORY)
    for vf in FORMATS:
        vendor = vf.split("-", 1)[0]
        options = options_for(vf, manifest, natural=True)
        if vf == "dms-csv":
            options["stream"] = "s3"
        cdcnorm.normalize([str(manifest.input_dir(vf))], vendor, spark=spark, lake=lake, options=options)
    only = simulate(root / "inserts", vendors=["dms-csv"], quirks=["dms_inserts_only"], **HISTORY)
    cdcnorm.normalize([str(only.input_dir("dms-csv"))], "dms", spark=spark, lake=lake,
                      options={**options_for("dms-csv", only, natural=True), "stream": "inserts-only"})
    return lake


DOCUMENTED = {"json_text_binary", "naive_vs_instant", "datastream_mysql_date_midnight", "integer_boolean",
              "json_text_decimal"}
"""The projections docs/adapters/dms.md lists for DMS against Datastream JSON (all generic compare rules)."""


@pytest.mark.parametrize("left", ["dms:dms", "dms:s3"])
def test_dms_compares_equal_to_datastream(spark, lake, left):
    rep = compare(spark, lake, lake, left_vendor=left, right_vendor="datastream", tables=["customers", "order_lines"])
    assert rep["equal"] is True, [t["reasons"] for t in rep["tables"]]
    assert len(rep["tables"]) == 2
    for table in rep["tables"]:
        assert set(table["state"]["lossy"]) <= DOCUMENTED, table["state"]["lossy"]
        assert table["stream"]["matched"] > 0 and table["stream"]["only_left"] == table["stream"]["only_right"] == 0


def test_inserts_only_never_delivers_deletes_and_compare_says_so(spark, lake):
    rep = compare(spark, lake, lake, left_vendor="dms:inserts-only", right_vendor="datastream",
                  tables=["customers"])
    assert rep["equal"] is False
    (table,) = rep["tables"]
    ops = table["stream"]["ops"]
    assert not ops["left"]["all"].get("DELETE") and ops["right"]["all"].get("DELETE")
    assert table["state"]["rows_only_left"] > 0  # rows the source deleted are still in the DMS table
