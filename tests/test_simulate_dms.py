"""The DMS encoder, read back with csv / pyarrow / json (independent of the adapter), then normalized and
applied to its ground truth."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

import dms_files
from cdcnorm.simulate import Manifest, load_changes, simulate

SMALL = {"tables": 3, "rows": 12, "changes": 150, "seed": 7, "rotate": 40}
TIME_NAME = re.compile(r"^\d{8}-\d{9}\.(csv|parquet)$")


@pytest.fixture(scope="module")
def sim(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sim_dms")
    simulate(out, vendors="dms", **SMALL)
    return out


def _history(out: Path) -> Counter:
    return Counter((c["table"], c["op"]) for c in load_changes(out))


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_s3_folders_full_load_then_time_named_cdc_files(sim, fmt):
    m = Manifest.load(sim)
    for table, info in m.vendor_formats[f"dms-{fmt}"]["tables"].items():
        files = dms_files.s3_files(sim, fmt, table)
        assert files[0].name == f"LOAD00000001.{fmt}" and all(TIME_NAME.match(p.name) for p in files[1:])
        assert [p.name for p in files[1:]] == sorted(p.name for p in files[1:]) and len(files) > 1
        load = dms_files.s3_rows(files[0])
        assert load and "Op" not in load[0] and "dms_commit_ts" in load[0]  # no Op without IncludeOpForFullLoad
        cdc = [r for p in files[1:] for r in dms_files.s3_rows(p)]
        assert {r["Op"] for r in cdc} <= {"I", "U", "D"} and list(cdc[0])[:2] == ["Op", "dms_commit_ts"]
        keys = info["primary_key"]
        assert [k for k in cdc[0] if k.startswith("BI_")] == [f"BI_{k}" for k in keys]
        stamps = [r["dms_commit_ts"] for r in cdc]
        assert stamps == sorted(stamps)  # commit order inside and across files
        history = _history(sim)
        assert Counter(r["Op"] for r in cdc) == Counter(
            {"I": history[(table, "INSERT")], "U": history[(table, "UPDATE")], "D": history[(table, "DELETE")]}) - \
            Counter()


def test_s3_key_change_is_an_update_with_the_old_key_in_bi_columns(sim):
    moved = [c for c in load_changes(sim) if c["key_change"]]
    assert moved
    c = moved[0]
    rows = [r for p in dms_files.s3_files(sim, "csv", c["table"]) for r in dms_files.s3_rows(p)]
    key = c["key"]
    found = [r for r in rows if r.get("Op") == "U" and all(r[f"BI_{k}"] == str(v) for k, v in key.items())
             and any(r[k] != str(v) for k, v in key.items())]
    assert len(found) == 1


def test_kinesis_messages_are_multi_line_with_controls_and_transaction_details(sim):
    m = Manifest.load(sim)
    for table in m.vendor_formats["dms-kinesis"]["tables"]:
        first = sorted((sim / "dms" / "kinesis" / table).iterdir())[0]
        assert first.read_text().startswith("{\n\t\"data\"")
        msgs = dms_files.kinesis_messages(sim, table)
        ops = [x["metadata"]["operation"] for x in msgs]
        assert "create-table" in ops[:2] and "load" in ops
        data = [x for x in msgs if x["metadata"]["operation"] in ("insert", "update", "delete")]
        for x in data:
            md = x["metadata"]
            assert md["record-type"] == "data" and md["schema-name"] == "shop" and md["table-name"] == table
            assert {"commit-timestamp", "stream-position", "transaction-id", "transaction-record-id"} <= set(md)
            assert md["commit-timestamp"] < md["timestamp"]
        create = next(x for x in msgs if x["metadata"]["operation"] == "create-table"
                      and x["metadata"]["table-name"] == table)
        keys = create["control"]["table-def"].get("primary-key") or []
        for x in data:
            if x["metadata"]["operation"] == "update" and keys:
                assert x["before-image"] == {} or set(x["before-image"]) == set(keys)
    internal = [x for t in m.vendor_formats["dms-kinesis"]["tables"] for x in dms_files.kinesis_messages(sim, t)
                if x["metadata"]["table-name"] == "awsdms_apply_exceptions"]
    assert len(internal) == 1 and internal[0]["metadata"]["schema-name"] == ""


def test_postgresql_flavoured_deletes_carry_the_key_only(sim):
    m = Manifest.load(sim)
    pg = [t["name"] for t in m.source_tables if t["datastream_flavour"] == "postgresql" and t["primary_key"]]
    assert pg
    deletes = [x for x in dms_files.kinesis_messages(sim, pg[0]) if x["metadata"]["operation"] == "delete"]
    keys = set(next(t for t in m.source_tables if t["name"] == pg[0])["primary_key"])
    assert deletes and all({k for k, v in x["data"].items() if v is not None} == keys for x in deletes)


def test_quirks_inserts_only_and_no_before_image(tmp_path):
    simulate(tmp_path / "i", vendors="dms", quirks=["dms_inserts_only"], **SMALL)
    history = _history(tmp_path / "i")
    for table in ("customers", "order_lines"):
        files = dms_files.s3_files(tmp_path / "i", "csv", table)
        cdc = [r for p in files[1:] for r in dms_files.s3_rows(p)]
        assert "Op" not in cdc[0] and len(cdc) == history[(table, "INSERT")]  # no updates, no deletes
    assert json.loads((tmp_path / "i" / "manifest.json").read_text())["quirks"] == ["dms_inserts_only"]
    simulate(tmp_path / "b", vendors="dms", quirks=["dms_no_before_image"], **SMALL)
    rows = [r for p in dms_files.s3_files(tmp_path / "b", "parquet", "customers") for r in dms_files.s3_rows(p)]
    assert not any(k.startswith("BI_") for r in rows for k in r)
    msgs = dms_files.kinesis_messages(tmp_path / "b", "customers")
    assert not any("before-image" in x for x in msgs)


# -- normalize + apply = truth --------------------------------------------------------------------------------
DMS_FORMATS = ("dms-csv", "dms-parquet", "dms-kinesis")


@pytest.mark.slow  # make test: dms-csv in the fast e2e lake (test_e2e)
def test_every_dms_format_normalizes_and_applies_to_its_truth(spark, tmp_path):
    from cdcnorm.simulate.verify import build_lake, check_format

    run = build_lake(spark, tmp_path / "sim", tmp_path / "lake", formats=DMS_FORMATS, **SMALL)
    for vf in DMS_FORMATS:
        report = run["reports"][vf]
        assert report["reconciled"] and not report["outcomes"]["quarantined"], (vf, report["quarantine_by_reason"])
        assert check_format(run["frames"], run["manifest"], vf) == [], vf
    assert run["reports"]["dms-kinesis"]["filters_by_rule"] == {"dms_internal_table": 1}
    assert run["reports"]["dms-kinesis"]["outcomes"]["duplicate"] > 0  # redelivered messages keep their ids


@pytest.mark.slow  # test_every_dms_format_normalizes_and_applies_to_its_truth
def test_inserts_only_deletes_never_arrive_and_verify_says_so(spark, tmp_path):
    from cdcnorm.ingest.pipeline import normalize
    from cdcnorm.simulate.verify import check_format, options_for
    from cdcnorm.state import apply

    m = simulate(tmp_path / "sim", vendors="dms-csv", quirks=["dms_inserts_only"], **SMALL)
    options = options_for("dms-csv", m)
    assert options["cdc_inserts_only"] is True
    normalize([str(m.input_dir("dms-csv"))], "dms", spark=spark, options=options, lake=str(tmp_path / "lake"))
    problems = check_format(apply(spark, str(tmp_path / "lake")), m, "dms-csv")
    assert any("unexpected" in p for p in problems), problems  # rows the source deleted are still there
    assert any("rows differ" in p for p in problems), problems  # updates never arrived either
