"""What a run skips when nothing needs it (the fixed cost of a follow micro-batch): the pairing state when every
update pair of the run is complete, the schema-version write when the lake already holds the run's versions,
and a job of its own for the schema versions (they travel as texts in the report aggregation). Each shortcut
must give what the long way gives."""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import functions as F

from cdcnorm.adapters import get_adapter
from cdcnorm.canonical.emit import KIND_CHANGE, KIND_SCHEMA
from cdcnorm.canonical.emit import Bookkeeping as B
from cdcnorm.canonical.schema import schema_versions_schema
from cdcnorm.ingest import pairing as pairing_state
from cdcnorm.ingest import pipeline
from cdcnorm.ingest.pairing import balance, balanced
from cdcnorm.ingest.pipeline import normalize
from cdcnorm.ingest.schema_rows import NAMES, as_text, from_text
from cdcnorm.lake.delta.read import read_files
from cdcnorm.lake.store import Lake
from conftest import SAMPLES

FAR = SAMPLES / "datahub" / "blob" / "far_apart"


def test_schema_rows_travel_as_text_and_back_exactly(spark):
    first_seen = dt.datetime(2025, 1, 21, 11, 10, 3, 123456)  # microseconds: JSON text alone would keep millis
    cols = [{"name": "id", "vendor_type": "int", "canonical_type": "int", "ordinal": 1, "pk_position": 1,
             "nullable": False},
            {"name": "note", "vendor_type": "json:string", "canonical_type": "string", "ordinal": 2,
             "pk_position": None, "nullable": True}]
    rows = [("datastream", "s", None, "shop", "public", "orders", "v1", cols, first_seen, "{}", "id1"),
            ("datastream", "s", None, "shop", "public", "items", "v2", [], None, None, "id2")]
    frame = spark.createDataFrame(rows, schema_versions_schema()).select(*NAMES)
    texts = [r["t"] for r in frame.select(as_text(frame).alias("t")).collect()]
    back = from_text(spark, texts)
    assert [(f.name, f.dataType.simpleString()) for f in back.schema] == [
        (f.name, f.dataType.simpleString()) for f in frame.schema]
    assert sorted(back.collect(), key=lambda r: r["version_id"]) == sorted(frame.collect(), key=lambda r: r["version_id"])
    assert back.where(F.col("version_id") == "id1").first()["first_seen"] == first_seen


def _balanced(spark, halves: list[tuple[str | None, str | None]], kind: str = KIND_CHANGE) -> bool:
    frame = spark.createDataFrame([(kind, p, r) for p, r in halves],
                                  f"`{B.KIND}` string, `{B.PAIR}` string, `{B.PAIR_ROLE}` string")
    return balanced(frame.agg(*balance(get_adapter("datastream"))).first().asDict())


def test_pairs_balance_only_when_every_pair_is_complete(spark):
    assert _balanced(spark, [("a", "delete"), ("a", "insert"), ("b", "insert"), ("b", "delete"), (None, None)])
    assert _balanced(spark, [])
    assert not _balanced(spark, [("a", "delete"), ("a", "insert"), ("b", "delete")])  # a lone half that may wait
    assert not _balanced(spark, [("a", "delete"), ("b", "insert")])  # two lone halves of different pairs
    assert not _balanced(spark, [("a", "insert")])  # a lone half that never waits: the state path, as before
    assert not _balanced(spark, [("a", "delete"), ("a", "delete"), ("a", "insert")])  # a redelivered half
    assert _balanced(spark, [("a", "delete")], kind=KIND_SCHEMA)  # only change rows are halves


def _lake_rows(spark, lake: str) -> dict[str, tuple]:
    df = Lake(spark, lake).changes().select("event_id", "op", "flags", "supersedes", F.to_json("after").alias("a"))
    return {r["event_id"]: (r["op"], tuple(r["flags"] or ()), r["supersedes"], r["a"]) for r in df.collect()}


def test_a_run_whose_pairs_are_complete_skips_the_state_and_writes_what_the_state_path_writes(spark, tmp_path,
                                                                                             monkeypatch):
    short, long = str(tmp_path / "short"), str(tmp_path / "long")
    via_state = []
    real = pipeline.pair_across_runs
    monkeypatch.setattr(pipeline, "pair_across_runs", lambda *a, **k: via_state.append(1) or real(*a, **k))
    quick = normalize([str(FAR)], "datahub", spark=spark, lake=short, pair_wait_seconds=300)
    assert via_state == []  # every update's two halves are in the run: no state read, no staged pool
    assert Lake(spark, short).table("halves").version() == 0  # and no state commit
    monkeypatch.setattr(pipeline, "pairs_balanced", lambda _facts: False)  # force the state path
    slow = normalize([str(FAR)], "datahub", spark=spark, lake=long, pair_wait_seconds=300)
    assert via_state == [1]
    assert _lake_rows(spark, short) == _lake_rows(spark, long)
    assert len(_lake_rows(spark, short)) == quick.report["rows_written"] > 0
    for key in ("outcomes", "rows_by_table_op", "flags", "halves_waiting_records", "pairing_state_rows",
                "records_read", "reconciled"):
        assert quick.report[key] == slow.report[key], key
    assert quick.report["outcomes"]["held"] == 0 and quick.report["reconciled"]


def _all(frame) -> list[str]:
    """Every row, every column, as JSON text (sorted)."""
    return sorted(r[0] for r in frame.select(F.to_json(F.struct(*[F.col(f"`{c}`") for c in frame.columns]))).collect())


def _halves(spark, lake: str) -> list[str]:
    table = Lake(spark, lake).table("halves")
    return _all(read_files(spark, table, [f["uri"] for f in table.live()]))


def _three_messages(into) -> str:
    """The small-file bench's file (benchmarks/small_file.py): 3 messages, one a lone key-change half."""
    source = next((SAMPLES / "datastream/shop_orders/2025/01/21/11/05").glob("*mysql-cdc-binlog*.jsonl"))
    three = into / "three" / source.name
    three.parent.mkdir()
    lines = [line for line in source.read_text().splitlines(keepends=True) if line.strip()]
    three.write_text("".join(lines[:3]))
    return str(three)


def _empty_state(lk, files):
    """live_entries, with an empty state (not None) when there is none: the long way, the staged pool."""
    if files:
        return pairing_state._live(read_files(lk.spark, lk.table("halves"), files))
    return lk.spark.createDataFrame([], lk.specs["halves"].schema)


@pytest.mark.parametrize("vendor", ["datastream", "datahub"])
def test_a_flushing_run_without_state_pairs_without_the_staged_pool_and_writes_what_it_writes(spark, tmp_path,
                                                                                             monkeypatch, vendor):
    """No state and no wait (the batch command into a new lake): nothing waits or is late, so the run's changes
    pass unchanged and only the lone halves' orphan entries are added; the long way (an empty state, the staged
    pool) must give the same lake and report."""
    source = _three_messages(tmp_path) if vendor == "datastream" else str(FAR / "part-0001.jsonl")
    short, long = str(tmp_path / "short"), str(tmp_path / "long")
    taken = []
    real = pairing_state._flush_without_state
    monkeypatch.setattr(pairing_state, "_flush_without_state", lambda *a: taken.append(0) or real(*a))
    quick = normalize([source], vendor, spark=spark, lake=short)
    assert taken == [0]  # the short way
    monkeypatch.setattr(pairing_state, "live_entries", _empty_state)
    slow = normalize([source], vendor, spark=spark, lake=long)
    assert taken == [0]  # the long way
    assert _all(Lake(spark, short).changes()) == _all(Lake(spark, long).changes())
    assert _halves(spark, short) == _halves(spark, long)
    assert len(_halves(spark, short)) == quick.report["pairing_state_rows"] > 0
    for key in ("outcomes", "rows_by_table_op", "flags", "halves_waiting_records", "halves_released_records",
                "pairing_state_rows", "records_read", "reconciled", "rows_written"):
        assert quick.report[key] == slow.report[key], key


def test_a_run_whose_schema_versions_the_lake_holds_writes_no_schema_file(spark, tmp_path):
    lake = str(tmp_path / "lake")
    src = str(SAMPLES / "datastream" / "shop_payments")
    first = normalize([src], "datastream", spark=spark, lake=lake)
    schemas = Lake(spark, lake).table("schemas")
    version = schemas.version()
    stored = Lake(spark, lake).schemas().count()
    assert first.report["schema_versions_new"] == stored > 0
    assert first.schemas.count() == stored  # the run's own rows, read back from its committed files
    again = normalize([src], "datastream", spark=spark, lake=lake, reprocess=True)  # the known file read again
    assert again.report["schema_versions_new"] == 0
    assert again.report["outcomes"]["duplicate"] == first.report["outcomes"]["emitted"] + first.report["outcomes"]["merged"]
    assert schemas.version() == version  # no commit, no file
    assert not (tmp_path / "lake" / "schemas" / f"run={again.run_id}").exists()
    assert Lake(spark, lake).schemas().count() == stored


def _orders_lines() -> tuple[str, list[str]]:
    source = next((SAMPLES / "datastream/shop_orders/2025/01/21/11/05").glob("*mysql-cdc-binlog*.jsonl"))
    return source.name, [line for line in source.read_text().splitlines(keepends=True) if line.strip()]


def _one_file(into, folder: str, lines: list[str]) -> str:
    name, _ = _orders_lines()
    path = into / folder / name
    path.parent.mkdir()
    path.write_text("".join(lines))
    return str(path)


@pytest.mark.slow  # five lake runs; the pass-by decision itself is checked by test_the_driver_reads_the_live_state_as_spark_does
def test_a_batch_run_past_remembered_orphans_it_cannot_meet_skips_the_state_and_writes_what_the_state_path_writes(
        spark, tmp_path, monkeypatch):
    """A lake that remembers an orphan half: a batch run none of whose halves shares a pair id with it passes the
    state by (the driver read it, the staging write counted no hit) and must give what the state path gives; a run
    carrying the orphan's partner takes the state path and pairs with it."""
    _, lines = _orders_lines()
    first = _three_messages(tmp_path)  # a lone key-change half: remembered as an orphan
    # another key change (its two halves at another position, other uuids): a complete pair of another pair id
    other = [line.replace("2550", "7777").replace('0f1a0000001', '0f1a0000009') for line in lines[2:4]]
    second = _one_file(tmp_path, "other", other)
    via_state = []  # the runs that read the state through Spark
    real = pairing_state.live_entries
    monkeypatch.setattr(pairing_state, "live_entries", lambda lk, files: via_state.extend([1] if files else [])
                        or real(lk, files))
    runs = {}
    for name, forced in (("quick", False), ("slow", True)):
        if forced:
            monkeypatch.setattr(pipeline, "passes_by", lambda *_a: False)
        lake = str(tmp_path / name)
        normalize([first], "datastream", spark=spark, lake=lake)
        runs[name] = normalize([second], "datastream", spark=spark, lake=lake)
    assert via_state == [1]  # only the forced second run
    quick, slow = runs["quick"], runs["slow"]
    assert _all(Lake(spark, str(tmp_path / "quick")).changes()) == _all(Lake(spark, str(tmp_path / "slow")).changes())
    assert _halves(spark, str(tmp_path / "quick")) == _halves(spark, str(tmp_path / "slow"))
    for key in ("outcomes", "rows_by_table_op", "flags", "halves_waiting_records", "halves_released_records",
                "pairing_state_rows", "records_read", "reconciled", "rows_written"):
        assert quick.report[key] == slow.report[key], key
    assert quick.report["pairing_state_rows"] == 1 and quick.report["rows_written"] == 2

    monkeypatch.setattr(pipeline, "passes_by", pairing_state.passes_by)
    partner = _one_file(tmp_path, "partner", [lines[3]])
    late = normalize([partner], "datastream", spark=spark, lake=str(tmp_path / "quick"))
    assert via_state == [1, 1]  # the partner meets the remembered orphan: the state path
    assert late.report["pairing_state_rows"] == 0  # the orphan's entry ended
    assert late.report["rows_written"] == 1


def test_the_driver_reads_the_live_state_as_spark_does(spark, tmp_path):
    lake = str(tmp_path / "lake")
    normalize([_three_messages(tmp_path)], "datastream", spark=spark, lake=lake)
    lk = Lake(spark, lake)
    files = pairing_state.state_files(lk, "datastream")
    mem = pairing_state.memory(files, 30)
    live = pairing_state.live_entries(lk, files)
    assert mem.live == live.count() == 1 and mem.waiting == 0 and mem.expired == 0
    assert mem.orphan_pairs == {r[B.PAIR] for r in live.select(B.PAIR).collect()}
    assert pairing_state.memory(files, 30).passable()
    assert pairing_state.memory([], 30) is None
