"""End to end: `simulate -> normalize -> apply` equals each vendor format's ground truth, exactly.

One simulated history (every delivery quirk on) is written in the vendor encodings, each normalized into
ONE lake as its own stream (the Replicate formats under the stream their topic / task / Event Hub names, split
over many files, with redeliveries in other files), and applied once; every format's current-state tables must then hold the truth's
keys, rows, columns and typed values. This is the project's oracle test: the simulator's encoders are written
from the vendor references, independently of the adapters (docs/simulate.md). `make e2e-large` runs the slow
variant: more seeds and a larger history. `make test` checks one format per vendor (`conftest.E2E_FORMATS`);
`make test-slow` checks the others, in a lake of every format.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from cdcnorm.simulate import VENDOR_FORMATS
from cdcnorm.simulate.verify import build_lake, check_format, stream_of, streams_of
from conftest import E2E_NATURAL, e2e_for, every_format_param


def _streams(e2e, vf: str) -> set[str]:
    return streams_of(e2e["manifest"], vf, vf in E2E_NATURAL)

LARGE = [{"tables": 5, "rows": 150, "changes": 2500, "seed": seed} for seed in (2, 3)]
WRITTEN_ONCE = {"dms-csv", "dms-parquet"}
"""S3 objects written once: a redelivery is the same object (the input-file ledger skips it), never a record."""


@pytest.mark.parametrize("vf", every_format_param())
def test_applied_tables_equal_the_truth(request, vf):
    e2e = e2e_for(request, vf)
    assert check_format(e2e["frames"], e2e["manifest"], vf, vf in E2E_NATURAL) == []


@pytest.mark.parametrize("vf", every_format_param())
def test_every_record_reconciles_and_nothing_is_quarantined(request, vf):
    e2e = e2e_for(request, vf)
    report = e2e["reports"][vf]
    assert report["reconciled"] is True
    assert report["outcomes"]["quarantined"] == 0 and report["quarantine_by_reason"] == {}
    assert report["records_read"] == e2e["manifest"].vendor_formats[vf]["records"]


@pytest.mark.parametrize("vf", every_format_param())
def test_redelivered_records_are_dropped_as_duplicates(request, vf):
    e2e = e2e_for(request, vf)
    report = e2e["reports"][vf]
    stats = [e2e["stream_stats"][s] for s in _streams(e2e, vf)]
    assert "duplicates" in e2e["manifest"].quirks and (report["outcomes"]["duplicate"] > 0 or vf in WRITTEN_ONCE)
    assert sum(s["rows"] for s in stats) == sum(s["ids"] for s in stats) == report["rows_written"]


def test_the_lake_holds_exactly_the_simulated_formats(e2e):
    every = set().union(*(_streams(e2e, vf) for vf in e2e["formats"]))
    assert set(e2e["stream_stats"]) == every
    assert {tid.stream for tid in e2e["frames"]} == every


NATURAL_STREAMS = {
    "replicate-json": ["shop.customers", "shop.events", "shop.order_lines"],
    "replicate-avro": ["sim-task"],
    "replicate-capture": ["customers", "events", "order_lines"],
}


@pytest.mark.parametrize("vf", [p for p in every_format_param() if getattr(p, "values", [p])[0] in E2E_NATURAL])
def test_replicate_streams_are_the_topic_task_or_event_hub_never_a_file(request, vf):
    """A topic split over many files is ONE stream (Kafka Connect sink files, a consumer's rotated dumps,
    Capture files), and a redelivery in another file is a duplicate (checked above)."""
    e2e = e2e_for(request, vf)
    assert sorted(_streams(e2e, vf)) == NATURAL_STREAMS[vf]
    assert e2e["manifest"].vendor_formats[vf]["files"] >= 2 * len(_streams(e2e, vf))


def test_replicate_redeliveries_land_in_later_files_of_the_same_topic_partition(e2e):
    """The Kafka Connect layout's redeliveries are byte-identical messages in another file of the same
    `topics/<topic>/partition=<p>/` folder; the lake counts them as duplicates (see above)."""
    files_of: dict[bytes, set[Path]] = defaultdict(set)
    for p in (Path(e2e["root"]) / "replicate" / "json").rglob("*.json"):
        for line in p.read_bytes().splitlines():
            if b'"type":"DT"' in line:
                files_of[line].add(p)
    spread = [files for files in files_of.values() if len(files) > 1]
    assert spread and all(len({f.parent for f in files}) == 1 for files in spread)


@pytest.mark.slow
@pytest.mark.parametrize("size", LARGE, ids=lambda s: f"seed{s['seed']}-{s['tables']}x{s['rows']}-{s['changes']}")
def test_larger_histories_equal_the_truth(spark, tmp_path, size):
    run = build_lake(spark, tmp_path / "sim", tmp_path / "lake", **size)
    problems = {vf: check_format(run["frames"], run["manifest"], vf) for vf in VENDOR_FORMATS}
    assert {vf: p for vf, p in problems.items() if p} == {}
    reports = run["reports"]
    assert {vf: r["outcomes"]["quarantined"] for vf, r in reports.items() if not r["reconciled"]
            or r["outcomes"]["quarantined"]} == {}
    assert all(r["outcomes"]["duplicate"] > 0 for vf, r in reports.items() if vf not in WRITTEN_ONCE)


def test_dataworks_shapes_round_trip(spark, e2e):
    """datahub-blob carries the aliyun_json quirk: full-load records with -1 times become SNAPSHOT rows with an
    unknown source time, one- and two-message updates both become complete UPDATEs (no orphan)."""
    from pyspark.sql import functions as F

    import cdcnorm

    rows = cdcnorm.read_changes(spark, e2e["lake"]).where(F.col("stream") == stream_of("datahub-blob"))
    got = rows.agg(
        F.sum((F.col("op") == "SNAPSHOT").cast("int")).alias("snapshots"),
        F.sum(((F.col("op") == "SNAPSHOT") & F.col("source_ts").isNull()).cast("int")).alias("unknown_ts"),
        F.sum((F.col("op") != "SNAPSHOT").cast("int") * F.col("source_ts").isNull().cast("int")).alias("cdc_no_ts"),
        F.sum(F.exists("flags", lambda f: f.startswith("orphan")).cast("int")).alias("orphans"),
        F.sum((F.col("vendor_op") == "UPDATE_AFTER").cast("int")).alias("one_message"),
        F.sum((F.col("vendor_op") == "UPDATE_BEFOR+UPDATE_AFTER").cast("int")).alias("two_message"),
    ).first().asDict()
    assert got["snapshots"] == got["unknown_ts"] >= e2e["manifest"].rows  # the keyless table's rows at least
    assert got["cdc_no_ts"] == 0 and got["orphans"] == 0
    assert got["one_message"] > 0 and got["two_message"] > 0
