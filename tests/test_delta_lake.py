"""Every lake table is real Delta: three readers that share no code return exactly the same rows.

(a) `delta_replay` (a plain replay of the log, written from the protocol, Parquet read with pyarrow),
(b) DuckDB's `delta_scan` (delta-kernel-rs) and (c) cdcnorm's own jar-less reader (`Lake.read`). Rows are
compared as a multiset, column by column: variants as their exact `value` / `metadata` bytes, binaries as
bytes, timestamps as UTC microseconds. The same holds after a log checkpoint and a commit on top of it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import deltalake
import duckdb
import duckdb_ext
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import cdcnorm
import delta_replay
from cdcnorm.lake.store import Lake
from cdcnorm.lake.tables import COMMIT_ORDER
from conftest import SAMPLES

TABLES = COMMIT_ORDER  # schemas, quarantine, quarantine_resolved, halves, changes, inputs, runs
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
TIMESTAMP_COLUMNS = {"changes": ("source_ts", "capture_ts"), "quarantine": ("quarantined_at",),
                     "schemas": ("first_seen",), "runs": ("finished_at",), "quarantine_resolved": (),
                     "halves": ("source_ts", "capture_ts", "event_time"), "inputs": ("recorded_at",)}


@pytest.fixture(scope="module")
def duck():
    ext = os.path.join(list(duckdb_ext.__path__)[0], "extensions")
    con = duckdb.connect(config={"extension_directory": ext, "allow_unsigned_extensions": "true"})
    con.execute("LOAD delta")
    yield con
    con.close()


DATASTREAM = [str(SAMPLES / "datastream" / d) for d in ("broken", "public_accounts", "shop_orders", "shop_payments")]
"""Variants holding exact decimals, bytes, arrays, nested JSON and infinities; six quarantined records."""


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory):
    """Some Datastream samples normalized twice into a new lake."""
    root = tmp_path_factory.mktemp("delta_lake")
    path = str(root / "lake")
    first = cdcnorm.normalize(DATASTREAM, "datastream", spark=spark, lake=path)
    versions = {t: delta_replay.snapshot(f"{path}/{t}").version for t in TABLES}
    again = cdcnorm.normalize(DATASTREAM, "datastream", spark=spark, lake=path)
    return {"path": path, "root": root, "first": first.report, "again": again.report, "versions": versions}


# -- comparing rows -----------------------------------------------------------------------------------------
def plain(v: Any) -> Any:
    """A value in a hashable, reader-independent form: timestamps as UTC microseconds, structs (a variant is
    the struct of its `value` / `metadata` bytes) as sorted (field, value) pairs, lists as tuples."""
    if isinstance(v, dt.datetime):
        aware = v if v.tzinfo else v.replace(tzinfo=dt.UTC)
        return ("ts_us", (aware - EPOCH) // dt.timedelta(microseconds=1))
    if isinstance(v, dict):
        return tuple(sorted((k, plain(x)) for k, x in v.items()))
    if isinstance(v, list | tuple):
        return tuple(plain(x) for x in v)
    if isinstance(v, bytearray | memoryview):
        return bytes(v)
    return v


def rows_of(table: pa.Table, names: list[str]) -> dict[str, list[Any]]:
    return {n: [plain(v) for v in table.column(n).to_pylist()] for n in names}


def assert_same_rows(name: str, expected_names: list[str], readers: dict[str, pa.Table]) -> int:
    """Same columns, same row count, same multiset per column and of whole rows across all readers."""
    for who, t in readers.items():
        assert t.column_names == expected_names, f"{name}: {who} returns columns {t.column_names}"
    cols = {who: rows_of(t, expected_names) for who, t in readers.items()}
    (ref_who, ref), *others = cols.items()
    n = len(ref[expected_names[0]])
    for who, c in others:
        assert len(c[expected_names[0]]) == n, f"{name}: {who} has {len(c[expected_names[0]])} rows, {ref_who} {n}"
        for col in expected_names:
            assert Counter(c[col]) == Counter(ref[col]), f"{name}.{col}: {who} differs from {ref_who}"
        rows = Counter(zip(*c.values(), strict=True))
        assert rows == Counter(zip(*ref.values(), strict=True)), f"{name}: {who} pairs values differently"
    return n


def read_three(spark, duck, path: str, name: str, out: Path) -> dict[str, pa.Table]:
    """The table as the replay, DuckDB and cdcnorm read it. cdcnorm's rows leave Spark as Parquet written
    by Spark (not collected): Spark writes a VARIANT's bytes unchanged, so they are compared exactly."""
    replayed, _ = delta_replay.read(f"{path}/{name}")
    ducked = duck.execute(f"SELECT * FROM delta_scan('{path}/{name}')").fetch_arrow_table()
    target = out / name
    Lake(spark, path).read(name, latest=True).write.parquet(str(target))
    sparked = pq.read_table(str(target))
    return {"replay": replayed, "duckdb": ducked, "cdcnorm": sparked}


def assert_readers_agree(spark, duck, path: str, out: Path) -> dict[str, int]:
    counts = {}
    for name in TABLES:
        names = [f["name"] for f in delta_replay.snapshot(f"{path}/{name}").schema["fields"]]
        counts[name] = assert_same_rows(name, names, read_three(spark, duck, path, name, out))
    return counts


# -- the tests ----------------------------------------------------------------------------------------------
def test_second_run_adds_nothing_and_all_readers_agree(spark, duck, lake, tmp_path):
    first, again = lake["first"], lake["again"]
    assert first["rows_written"] > 15 and first["quarantine_new"] == 6 and first["schema_versions_new"] > 0
    assert (again["rows_written"], again["quarantine_new"], again["schema_versions_new"]) == (0, 0, 0)
    assert again["files_skipped_known"] == first["files"] and again["files"] == 0
    now = {t: delta_replay.snapshot(f"{lake['path']}/{t}").version for t in TABLES}
    assert {t: v for t, v in now.items() if t != "runs"} == {t: v for t, v in lake["versions"].items() if t != "runs"}
    assert now["runs"] == lake["versions"]["runs"] + 1

    counts = assert_readers_agree(spark, duck, lake["path"], tmp_path)
    changes, _ = delta_replay.read(f"{lake['path']}/changes")
    for col in ("key", "after", "before", "key_bytes", "source_ts"):  # the exact comparisons compared values
        assert changes.column(col).null_count < changes.num_rows, f"changes.{col} is always null"
    assert counts == {"schemas": first["schema_versions_new"], "quarantine": 6, "quarantine_resolved": 0,
                      "halves": 0, "changes": first["rows_written"], "inputs": first["files"], "runs": 2}


def test_tables_use_the_protocol_other_readers_expect(lake):
    path = lake["path"]
    changes = delta_replay.snapshot(f"{path}/changes")
    proto = changes.protocol
    assert (proto["minReaderVersion"], proto["minWriterVersion"]) == (3, 7)
    assert "variantType" in proto["readerFeatures"] and "variantType" in proto["writerFeatures"]
    assert changes.partition_columns == ["vendor", "source_day"]
    assert {t: delta_replay.snapshot(f"{path}/{t}").partition_columns for t in TABLES if t != "changes"} == {
        "schemas": [], "quarantine": [], "quarantine_resolved": [], "halves": ["vendor"], "inputs": [], "runs": []}
    for name in TABLES:
        snap = delta_replay.snapshot(f"{path}/{name}")
        for rel in snap.files:
            meta = pq.ParquetFile(f"{path}/{name}/{rel}").schema
            leaves = {meta.column(i).path: meta.column(i) for i in range(len(meta))}
            assert not [p for p, c in leaves.items() if c.physical_type == "INT96"], f"INT96 in {name}/{rel}"
            for col in TIMESTAMP_COLUMNS[name]:
                logical = json.loads(leaves[col].logical_type.to_json())
                assert (leaves[col].physical_type, logical["timeUnit"], logical["isAdjustedToUTC"]) == (
                    "INT64", "microseconds", True), f"{name}.{col} in {rel}"
            # DuckDB reads a variant annotated with Parquet's VARIANT logical type as JSON and then fails.
            assert "Variant(" not in str(meta), f"{name}/{rel} annotates its variants"
        assert snap.files or name in ("quarantine_resolved", "halves"), f"{name} has no live file"


def test_readers_agree_after_a_checkpoint_and_a_commit_on_top(spark, duck, lake, tmp_path):
    path = str(tmp_path / "lake")
    shutil.copytree(lake["path"], path)
    checkpoints = {}
    for name in TABLES:
        table = deltalake.DeltaTable(f"{path}/{name}")
        table.create_checkpoint()
        checkpoints[name] = table.version()
        assert os.path.exists(f"{path}/{name}/_delta_log/_last_checkpoint")

    quarantined, _ = delta_replay.read(f"{path}/quarantine")
    retried = sorted(quarantined.column("quarantine_id").to_pylist())[:2]
    resolves = spark.createDataFrame([(q,) for q in retried], "quarantine_id string")
    third = cdcnorm.normalize([str(SAMPLES / "replicate" / "json")], "replicate", spark=spark, lake=path,
                              resolves=resolves)
    assert third.report["rows_written"] > 0 and third.report["quarantine_resolved"] == 2

    snaps = {t: delta_replay.snapshot(f"{path}/{t}") for t in TABLES}
    assert {t: s.checkpoint for t, s in snaps.items()} == checkpoints
    for t in ("changes", "schemas", "quarantine_resolved", "runs"):
        assert snaps[t].version > checkpoints[t], f"{t} got no commit after its checkpoint"
    assert snaps["changes"].txns[f"cdcnorm-run-{third.run_id}"] == 1

    counts = assert_readers_agree(spark, duck, path, tmp_path / "read")
    first = lake["first"]
    assert counts == {"schemas": first["schema_versions_new"] + third.report["schema_versions_new"],
                      "quarantine": 6, "quarantine_resolved": 2, "halves": 0,
                      "changes": first["rows_written"] + third.report["rows_written"],
                      "inputs": first["files"] + third.report["files"], "runs": 3}
    resolved, _ = delta_replay.read(f"{path}/quarantine_resolved")
    assert sorted(resolved.column("quarantine_id").to_pylist()) == retried
    days = set(delta_replay.read(f"{path}/changes")[0].column("source_day").to_pylist())
    assert None in days and "2025-01-21" in days  # the null day partition is read as null by all three


TRICKY = ["plain", "a b", "x:y", "50%", "%41", "a=b", "a/b", "1+1", "é€", "tab\there", None]
"""Partition values that Spark escapes in folder names and the Delta log URL-encodes again in add paths."""


def test_escaped_partition_values_read_the_same_everywhere(spark, duck, tmp_path):
    from cdcnorm.lake.delta.files import write_files
    from cdcnorm.lake.delta.read import read_table
    from cdcnorm.lake.delta.table import DeltaTableRef

    schema = "id long, p string"
    table = DeltaTableRef(str(tmp_path / "t"), spark.createDataFrame([], schema).schema, ("p",))
    table.ensure()
    rows = spark.createDataFrame([(i, v) for i, v in enumerate(TRICKY)], schema).repartition(1)
    table.commit(write_files(rows, table, "run=1"), [("test", 1)])

    replayed, snap = delta_replay.read(table.uri)
    logged = {add["path"] for add in snap.files.values()}
    assert any("%25" in p for p in logged), "the log's paths are not URL-encoded"
    target = tmp_path / "spark"
    read_table(spark, table).write.parquet(str(target))
    readers = {"replay": replayed, "cdcnorm": pq.read_table(str(target)),
               "duckdb": duck.execute(f"SELECT * FROM delta_scan('{table.uri}')").fetch_arrow_table()}
    assert assert_same_rows("tricky", ["id", "p"], readers) == len(TRICKY)
    assert sorted(zip(replayed.column("id").to_pylist(), replayed.column("p").to_pylist(), strict=True)) == \
        list(enumerate(TRICKY))


def test_footer_statistics_equal_the_spark_aggregation(spark, tmp_path):
    """Local writes take their add actions' statistics from the Parquet footers (no Spark job): they must be the
    figures Spark's own aggregation over the same files gives (as remote tables still use)."""
    from cdcnorm.lake.delta.files import _relative, _stat_adds, write_files
    from cdcnorm.lake.delta.table import DeltaTableRef

    schema = "p string, s string, big string, ts timestamp, ntz timestamp_ntz, d date, n long, gone string"
    table = DeltaTableRef(str(tmp_path / "t"), spark.createDataFrame([], schema).schema, ("p",))
    table.ensure()
    t0 = dt.datetime(2025, 1, 20, 10, 0, 0, 123456)
    rows = [("a", "é€", "x" * 5000, t0, t0, dt.date(2025, 1, 20), 5, None),
            ("a", "abc", "y", None, t0 + dt.timedelta(microseconds=1), None, -7, None),
            ("b", None, None, t0 - dt.timedelta(days=400), None, dt.date(2020, 2, 29), None, None)]
    cols = ("s", "big", "ts", "ntz", "d", "n", "gone")
    adds = write_files(spark.createDataFrame(rows, schema).repartition(1), table, "run=1", cols)
    frame = spark.read.schema("s string, big string, ts timestamp, ntz timestamp_ntz, d date, n long, gone string")
    by_spark = _stat_adds(frame.parquet(f"{table.uri}/run=1"), table, cols, lambda uri: _relative(uri, "run=1"))
    footer = {a.path: (a.size, a.partition_values, json.loads(a.stats)) for a in adds}
    aggregated = {a.path: (a.size, a.partition_values, json.loads(a.stats)) for a in by_spark}
    a_file = next(k for k, v in footer.items() if v[1] == {"p": "a"})
    # Parquet leaves out the statistics of a chunk holding a value over 4 KiB: no figure rather than a wrong one
    assert all("big" not in footer[a_file][2][k] for k in ("minValues", "maxValues", "nullCount"))
    for k in ("minValues", "maxValues", "nullCount"):
        aggregated[a_file][2][k].pop("big")
    assert footer == aggregated
    stats_a = next(s for _, p, s in footer.values() if p == {"p": "a"})
    assert stats_a["numRecords"] == 2 and stats_a["minValues"]["s"] == "abc" and stats_a["maxValues"]["s"] == "é€"
    assert stats_a["maxValues"]["ts"] == "2025-01-20T10:00:00.124Z" and stats_a["nullCount"]["gone"] == 2
