"""State across runs and micro-batches: update halves pair across batches (waiting, orphans superseded by a late
partner), Replicate metadata arriving after its data, thresholds, rate limits, Kafka-shaped streams, and the
canonical-version upgrade of an older lake."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable

from cdcnorm.canonical.schema import COLUMN_NAMES
from cdcnorm.errors import UsageError
from cdcnorm.ingest.pipeline import normalize
from cdcnorm.lake.delta.table import DeltaTableRef
from cdcnorm.lake.store import MARKER, Lake
from cdcnorm.lake.tables import specs
from cdcnorm.streaming.follow import Limits, follow, normalize_once, start_follow, start_follow_messages
from cdcnorm.streaming.paths_source import PathsStreamReader
from conftest import SAMPLES
from lake_checks import applied_state

FAR = SAMPLES / "datahub" / "blob" / "far_apart"
EH = SAMPLES / "replicate" / "eventhubs" / "replicate-ns"
NEVER = 10.0 ** 9  # a pairing wait no test history outlasts


def rows(spark, lake: str) -> dict[str, dict]:
    df = Lake(spark, lake).changes().select("event_id", "op", "flags", "supersedes")
    return {r["event_id"]: r.asDict() for r in df.collect()}


def staged(into: Path, *files: Path) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    for i, f in enumerate(files):
        shutil.copy(f, into / f"{i:02d}-{f.name}")  # admission order = name order
    return into


# -- update halves across runs ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def whole(spark, tmp_path_factory):
    """Both far-apart files in one run (no half waits across runs): the lake the split runs must equal. Only read."""
    lake = str(tmp_path_factory.mktemp("whole") / "lake")
    normalize([str(FAR)], "datahub", spark=spark, lake=lake)
    return {"lake": lake, "rows": rows(spark, lake), "applied": applied_state(spark, lake)}


@pytest.fixture(scope="module")
def first_half(spark, tmp_path_factory):
    """The first far-apart file alone in a new lake (three halves emitted as orphans): the run two tests start
    from. Only read: each test continues on its own copy (a lake's logs name its files relative to it)."""
    lake = str(tmp_path_factory.mktemp("first_half") / "lake")
    first = normalize([str(FAR / "part-0001.jsonl")], "datahub", spark=spark, lake=lake)
    return {"lake": lake, "report": first.report}


@pytest.fixture(scope="module")
def held(spark, tmp_path_factory):
    """The first far-apart file alone, as stream `first`, with a wait no history outlasts: its three lone halves
    are held, not emitted. Only read: each test continues on its own copy."""
    lake = str(tmp_path_factory.mktemp("held") / "lake")
    one = normalize([str(FAR / "part-0001.jsonl")], "datahub", spark=spark, lake=lake, pair_wait_seconds=NEVER,
                    options={"stream": "first"})
    return {"lake": lake, "report": one.report}


def copy_lake(lake: str, to: Path) -> str:
    shutil.copytree(lake, to)
    return str(to)


def test_orphan_emitted_by_one_run_is_superseded_by_its_partner_in_the_next(spark, tmp_path, whole, first_half):
    split = copy_lake(first_half["lake"], tmp_path / "split")
    first = first_half["report"]
    second = normalize([str(FAR / "part-0002.jsonl")], "datahub", spark=spark, lake=split)
    got = rows(spark, split)
    orphans = {i for i, r in got.items() if {"orphan_before", "orphan_after"} & set(r["flags"])}
    assert len(orphans) == 3  # three updates' halves straddle the two files
    assert {r["supersedes"] for r in got.values() if r["supersedes"]} == orphans
    assert first["pairing_state_rows"] == 3 and second.report["pairing_state_rows"] == 0
    assert first["reconciled"] and second.report["reconciled"]
    # what is not an orphan is exactly the one-run lake, and apply ignores the superseded orphans
    assert {i for i in got if i not in orphans} == set(whole["rows"])
    assert applied_state(spark, split) == whole["applied"]


@pytest.mark.slow  # the fast suite keeps test_orphan_emitted_by_one_run_is_superseded_by_its_partner_in_the_next
def test_an_orphan_redelivered_with_its_partner_is_superseded_by_their_pair(spark, tmp_path, whole, first_half):
    """The orphan's half comes again in the run that brings its partner (a redelivery): the two pair in the run,
    and the pair must still replace the orphan emitted before (found by the 20-kill follow proof)."""
    split = copy_lake(first_half["lake"], tmp_path / "split")
    again = normalize([str(FAR / "part-0001.jsonl"), str(FAR / "part-0002.jsonl")], "datahub", spark=spark,
                      lake=split, reprocess=True)  # the known file delivered again
    got = rows(spark, split)
    orphans = {i for i, r in got.items() if {"orphan_before", "orphan_after"} & set(r["flags"])}
    assert len(orphans) == 3
    assert {r["supersedes"] for r in got.values() if r["supersedes"]} == orphans
    assert again.report["pairing_state_rows"] == 0 and again.report["reconciled"]
    assert {i for i in got if i not in orphans} == set(whole["rows"])
    assert applied_state(spark, split) == whole["applied"]


def test_a_half_redelivered_after_its_pair_was_emitted_is_a_duplicate(spark, tmp_path, whole):
    lake = copy_lake(whole["lake"], tmp_path / "lake")  # both files in one run: every pair emitted
    before = rows(spark, lake)
    assert before == whole["rows"]
    again = normalize([str(FAR / "part-0002.jsonl")], "datahub", spark=spark, lake=lake, reprocess=True)
    assert again.report["rows_written"] == 0 and again.report["reconciled"]
    assert again.report["outcomes"]["duplicate"] == again.report["records_read"]
    assert rows(spark, lake) == before  # no orphan of an update already paired


def test_lone_halves_wait_for_their_partner_in_a_later_batch(spark, tmp_path, whole):
    src, lake = staged(tmp_path / "in", FAR / "part-0001.jsonl", FAR / "part-0002.jsonl"), str(tmp_path / "lake")
    batches = follow([src], "datahub", lake, spark=spark, settle_seconds=0, max_files_per_trigger=1,
                     pair_wait_seconds=NEVER)
    assert [(b.status, b.held) for b in batches] == [("committed", 3), ("committed", -3)]
    assert [b.state_rows for b in batches] == [3, 0]
    assert all(b.reconciled for b in batches)
    assert rows(spark, lake) == whole["rows"]  # paired as if both files came in one run: no orphan at all


def test_a_lone_half_is_released_as_an_orphan_once_the_wait_has_passed(spark, tmp_path, held):
    lake = copy_lake(held["lake"], tmp_path / "lake")
    one = held["report"]
    assert one["outcomes"]["held"] == 3 and "orphan_before" not in one["flags"]
    # the next run's events are minutes newer than the waiting halves: with a 1 s wait they are released
    two = normalize([str(SAMPLES / "datahub" / "blob" / "tx_truncate.jsonl")], "datahub", spark=spark, lake=lake,
                    pair_wait_seconds=1, options={"stream": "first"})
    assert two.report["outcomes"]["held"] == -3 and two.report["reconciled"]
    assert sum(two.report["flags"].get(f, 0) for f in ("orphan_before", "orphan_after")) == 3
    # ...and their late partners still pair, superseding them
    three = normalize([str(FAR / "part-0002.jsonl")], "datahub", spark=spark, lake=lake, pair_wait_seconds=1,
                      options={"stream": "first"})
    assert three.report["reconciled"]
    assert len({r["supersedes"] for r in rows(spark, lake).values() if r["supersedes"]}) == 3


@pytest.mark.slow  # three follow batches; the release rule itself is in test_a_lone_half_is_released_as_an_orphan_once_the_wait_has_passed
def test_one_streams_newer_events_release_no_half_of_another_stream(spark, tmp_path, held):
    """The halves state is per vendor, the wait per stream: a later run of another stream (minutes newer events)
    leaves the first stream's halves waiting; its own newer events release them."""
    lake = copy_lake(held["lake"], tmp_path / "lake")  # stream `first`: three halves waiting
    newer = str(SAMPLES / "datahub" / "blob" / "tx_truncate.jsonl")
    # a 100 s wait: the first stream's halves span 50 s, the newer file comes 150 s after them
    other = normalize([newer], "datahub", spark=spark, lake=lake, pair_wait_seconds=100,
                      options={"stream": "second"})
    assert other.report["outcomes"]["held"] == 0 and other.report["pairing_state_rows"] == 3
    assert not {"orphan_before", "orphan_after"} & set(other.report["flags"])
    own = normalize([newer], "datahub", spark=spark, lake=lake, pair_wait_seconds=100, options={"stream": "first"},
                    reprocess=True)  # the file the other stream's run read, read again as stream `first`
    assert own.report["outcomes"]["held"] == -3 and own.report["reconciled"]
    assert sum(own.report["flags"].get(f, 0) for f in ("orphan_before", "orphan_after")) == 3


def test_an_update_delete_whose_update_insert_was_emitted_earlier_is_not_held(spark, tmp_path):
    """A Datastream key change whose UPDATE-INSERT came in an earlier batch (emitted then: alone it is an ordinary
    update) and whose UPDATE-DELETE comes later: no partner can pair the delete any more, so it is emitted by the
    batch that brings it, even with a wait no history outlasts (held, the old key would stay in `apply` until the
    stream's events moved a wait past it: for ever on a quiet stream). Same event ids as one run over both."""
    cdc = next((SAMPLES / "datastream" / "shop_orders" / "2025/01/21/11/05").glob("*_mysql-cdc-binlog_*.jsonl"))
    events = [line for line in cdc.read_bytes().splitlines() if line.strip()]
    delete = [e for e in events if json.loads(e)["source_metadata"]["change_type"] == "UPDATE-DELETE"]
    assert len(delete) == 1
    first, second = tmp_path / "in" / "1" / "a.jsonl", tmp_path / "in" / "2" / "b.jsonl"
    for path, lines in ((first, [e for e in events if e not in delete]), (second, delete)):
        path.parent.mkdir(parents=True)
        path.write_bytes(b"\n".join(lines) + b"\n")
    whole = str(tmp_path / "whole")
    normalize([str(first), str(second)], "datastream", spark=spark, lake=whole)
    lake = str(tmp_path / "lake")
    one = normalize([str(first)], "datastream", spark=spark, lake=lake, pair_wait_seconds=NEVER)
    two = normalize([str(second)], "datastream", spark=spark, lake=lake, pair_wait_seconds=NEVER)
    assert one.report["outcomes"]["held"] == 0 and two.report["outcomes"]["held"] == 0
    assert two.report["rows_by_table_op"] == [{**two.report["rows_by_table_op"][0], "op": "DELETE", "rows": 1}]
    assert one.report["reconciled"] and two.report["reconciled"]
    assert set(rows(spark, lake)) == set(rows(spark, whole))
    assert applied_state(spark, lake) == applied_state(spark, whole)


# -- Replicate metadata after its data --------------------------------------------------------------------------
def test_data_quarantined_before_its_metadata_is_retried_by_the_batch_that_brings_it(spark, tmp_path):
    src = staged(tmp_path / "in", EH / "customers/0/2024/05/01/11/02/00.avro",
                 EH / "customers/1/2024/05/01/11/05/00.avro")
    lake = str(tmp_path / "lake")
    batches = follow([src], "replicate", lake, spark=spark, settle_seconds=0, max_files_per_trigger=1,
                     options={"stream": "customers"})
    assert [(b.quarantined, b.retried, b.resolved) for b in batches] == [(2, 0, 0), (0, 2, 2)]
    lk = Lake(spark, lake)
    assert lk.quarantine().count() == 0
    got = sorted((r["op"], r["table"]) for r in lk.changes().collect())
    assert got == [("INSERT", "CUSTOMERS"), ("UPDATE", "CUSTOMERS")]
    again = follow([src], "replicate", lake, spark=spark, settle_seconds=0, options={"stream": "customers"})
    assert again == [] and lk.changes().count() == 2  # nothing new, nothing retried twice


# -- limits, errors, messages -----------------------------------------------------------------------------------
def test_quarantine_rate_threshold_stops_the_query_after_the_batch(spark, tmp_path):
    src = staged(tmp_path / "in", SAMPLES / "datahub" / "blob" / "bad" / "broken_middle.json",
                 SAMPLES / "datahub" / "blob" / "documented.jsonl")
    lake = str(tmp_path / "lake")
    follower = start_follow([src], "datahub", lake, spark=spark, settle_seconds=0, max_files_per_trigger=1,
                            limits=Limits(max_quarantine_rate=0.01), trigger=0.5)
    follower.run_until_stopped()
    assert follower.failure and "--max-quarantine-rate" in follower.failure
    assert len(follower.batches) == 1 and follower.batches[0].quarantined > 0
    assert len(Lake(spark, lake).committed_runs()) == 1  # the batch that crossed the line is committed


def test_bytes_per_trigger_cap_takes_at_least_one_file(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    for name, size in (("a", 10), ("b", 10), ("c", 50)):
        (src / f"{name}.json").write_text("x" * size)
    r = PathsStreamReader({"inputs": json.dumps([str(src)]), "manifest": str(tmp_path / "m"),
                           "settleSeconds": "0", "maxBytesPerTrigger": "25"})
    assert r.latestOffset({"files": 0}, ReadAllAvailable()) == {"files": 2}
    assert r.latestOffset({"files": 2}, ReadAllAvailable()) == {"files": 3}  # 50 bytes > cap: still one file


def test_a_usage_error_inside_a_batch_is_raised_as_itself(spark, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "notes.txt").write_text("not any vendor's output\n")
    with pytest.raises(UsageError, match="Could not recognise the vendor"):
        follow([src], None, str(tmp_path / "lake"), spark=spark, settle_seconds=0)


def test_batch_command_is_the_available_now_query(spark, tmp_path):
    lake = str(tmp_path / "lake")
    batches = normalize_once([str(SAMPLES / "datastream")], "datastream", lake, spark=spark)
    assert len(batches) == 1 and batches[0].status == "committed"
    report = batches[0].report
    assert report["skipped_objects"] == {"zero_byte_object": 1, "hidden_file": 1, "not_data_file": 2}
    assert not list(Path(lake, "_follow").iterdir())  # its one-shot checkpoint is gone
    ref = str(tmp_path / "ref")
    normalize([str(SAMPLES / "datastream")], "datastream", spark=spark, lake=ref)
    assert rows(spark, lake) == rows(spark, ref)


def test_kafka_shaped_stream_commits_each_batch_once(spark, tmp_path):
    from fastavro import reader

    with (EH / "orders-avro/0/2024/05/01/10/10/00.avro").open("rb") as fh:
        events = [(r["Body"], "orders", 0, int(r["SequenceNumber"])) for r in reader(fh)]
    feed = tmp_path / "feed"
    schema = "value binary, topic string, partition int, offset long"
    spark.createDataFrame(events, schema).coalesce(1).write.parquet(str(feed / "part1"))
    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(feed / "*"))
    lake, ref = str(tmp_path / "lake"), str(tmp_path / "ref")
    follower = start_follow_messages(stream, "replicate", lake, spark=spark)
    follower.run_until_stopped()
    assert [b.status for b in follower.batches] == ["committed"]
    normalize(spark.createDataFrame(events, schema), "replicate", spark=spark, lake=ref)
    assert rows(spark, lake) == rows(spark, ref) != {}
    again = start_follow_messages(stream, "replicate", lake, spark=spark)  # same checkpoint: nothing to do
    again.run_until_stopped()
    assert again.batches == []


# -- an older lake ----------------------------------------------------------------------------------------------
def test_a_canonical_version_1_lake_is_upgraded_in_place(spark, tmp_path):
    lake = tmp_path / "lake"
    Lake(spark, str(lake), create=True)
    shutil.rmtree(lake / "changes")
    shutil.rmtree(lake / "halves")
    old = specs()["changes"]
    v1 = old.schema.__class__([f for f in old.schema.fields if f.name != "supersedes"])
    DeltaTableRef(str(lake / "changes"), v1, old.partition_by).ensure()
    meta = orjson.loads((lake / MARKER).read_bytes())
    (lake / MARKER).write_bytes(orjson.dumps({**meta, "canonical_version": "1"}))
    result = normalize([str(FAR)], "datahub", spark=spark, lake=str(lake))
    assert result.report["reconciled"]
    assert orjson.loads((lake / MARKER).read_bytes())["canonical_version"] == "2"
    lk = Lake(spark, str(lake))
    assert "supersedes" in {f.name for f in lk.table("changes").handle().schema().fields}
    assert lk.changes().columns == list(COLUMN_NAMES) and lk.changes().count() == result.report["rows_written"]
