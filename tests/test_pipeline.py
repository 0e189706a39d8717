"""The pipeline and the lake, driven by a tiny line-based adapter so the machinery is tested on its own."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import functions as F

import cdcnorm
from cdcnorm.adapters.base import Adapter
from cdcnorm.canonical.record import Change
from cdcnorm.errors import DecodeError, UsageError
from cdcnorm.lake.store import Lake


class LinesAdapter(Adapter):
    """Test adapter: one JSON object per line {"op", "id", "v", "seq"}; 'meta' lines are metadata."""

    name = "lines"
    formats = ("lines.json",)

    def read_file(self, path, fh, out):
        for i, line in enumerate(fh):
            out.begin_record(path, i, raw=line)
            try:
                self._decode(line, out)
            except DecodeError as exc:
                out.quarantine(exc.error_class, exc.message)
            yield

    def decode_message(self, value, meta, out):
        self._decode(value, out)

    def _decode(self, line: bytes, out) -> None:
        try:
            ev = json.loads(line, parse_float=Decimal)
        except ValueError as exc:
            raise DecodeError("bad_json", f"not JSON: {exc}") from None
        if ev.get("op") == "meta":
            out.metadata("lines_meta")
            return
        if ev.get("op") == "skip":
            out.filtered("lines_skip")
            return
        row = {"id": ev["id"], "v": ev.get("v")}
        op = {"i": "INSERT", "u": "UPDATE", "d": "DELETE"}[ev["op"]]
        out.change(Change(
            vendor="datastream", format="datastream.json", stream="s1", op=op, table="t", database="db",
            sort_parts=(1, ev["seq"]), id_parts=(ev["seq"], op), primary_keys=["id"],
            before=row if op == "DELETE" else None, after=None if op == "DELETE" else row,
            position=str(ev["seq"]), vendor_op=ev["op"],
        ))


def _write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return str(path)


GOOD = [
    '{"op":"i","id":1,"v":1.50,"seq":1}',
    '{"op":"u","id":1,"v":2.25,"seq":2}',
    '{"op":"meta"}',
    '{"op":"skip"}',
    "{broken",
    '{"op":"d","id":1,"seq":10}',
    '{"op":"i","id":1,"v":1.50,"seq":1}',
]


@pytest.fixture()
def inputs(tmp_path):
    return _write(tmp_path / "in" / "a.jsonl", GOOD)


def test_outcomes_reconcile_without_lake(spark, inputs):
    res = cdcnorm.normalize(inputs, LinesAdapter(), spark=spark)
    rep = res.report
    assert rep["records_read"] == 7
    assert rep["outcomes"] == {"emitted": 3, "merged": 0, "metadata": 1, "filtered": 1, "duplicate": 1, "quarantined": 1}
    assert rep["reconciled"] is True
    assert rep["filters_by_rule"] == {"lines_skip": 1}
    assert rep["quarantine_by_reason"] == {"bad_json": 1}
    assert [d["duplicates"] for d in rep["duplicates_by_table"]] == [1]
    rows = res.changes.orderBy("sort_key").select(
        "op", F.to_json("after").alias("after"), "position", F.schema_of_variant("after").alias("types"),
        F.col("after").alias("raw_after")).collect()
    assert [(r.op, r.position) for r in rows] == [("INSERT", "1"), ("UPDATE", "2"), ("DELETE", "10")]
    assert rows[0].after == '{"id":1,"v":1.5}'
    assert rows[0].raw_after.toPython() == {"id": 1, "v": Decimal("1.50")}
    q = res.quarantine.collect()
    assert len(q) == 1 and bytes(q[0].raw) == b"{broken\n" and q[0].origin["index"] == 4
    assert "not JSON" in q[0].message


def test_sort_key_orders_numerically(spark, tmp_path):
    lines = [f'{{"op":"i","id":{i},"v":{i},"seq":{s}}}' for i, s in enumerate([10, 9, 100, 2])]
    res = cdcnorm.normalize(_write(tmp_path / "x.jsonl", lines), LinesAdapter(), spark=spark)
    assert [r.position for r in res.changes.orderBy("sort_key").collect()] == ["2", "9", "10", "100"]


def test_lake_is_idempotent_and_appends(spark, inputs, tmp_path, lake_path):
    first = cdcnorm.normalize(inputs, LinesAdapter(), spark=spark, lake=lake_path)
    assert first.report["rows_written"] == 3
    lake_rows = cdcnorm.read_changes(spark, lake_path)
    assert lake_rows.columns == list(cdcnorm.canonical.schema.COLUMN_NAMES)
    assert lake_rows.count() == 3
    assert dict(lake_rows.schema["after"].jsonValue()) ["type"] == "variant"

    again = cdcnorm.normalize(inputs, LinesAdapter(), spark=spark, lake=lake_path)  # every file known: none read
    assert again.report["files"] == 0 and again.report["files_skipped_known"] == first.report["files"] > 0
    assert again.report["records_read"] == again.report["rows_written"] == 0
    forced = cdcnorm.normalize(inputs, LinesAdapter(), spark=spark, lake=lake_path, reprocess=True)
    assert forced.report["rows_written"] == 0
    assert forced.report["outcomes"]["duplicate"] == 4
    assert forced.report["quarantine_new"] == 0
    assert cdcnorm.read_changes(spark, lake_path).count() == 3
    assert cdcnorm.read_quarantine(spark, lake_path).count() == 1

    more = _write(tmp_path / "in2" / "b.jsonl", ['{"op":"i","id":2,"v":7,"seq":11}', GOOD[0]])
    third = cdcnorm.normalize(more, LinesAdapter(), spark=spark, lake=lake_path)
    assert third.report["rows_written"] == 1 and third.report["outcomes"]["duplicate"] == 1
    assert cdcnorm.read_changes(spark, lake_path).count() == 4
    runs = Lake(spark, lake_path).committed_runs()
    assert len(runs) == 4
    assert json.loads((tmp_path / "lake" / "_cdcnorm.json").read_text())["canonical_version"] == "2"


def test_crashed_run_leaves_lake_readable(spark, inputs, lake_path, monkeypatch):
    cdcnorm.normalize(inputs, LinesAdapter(), spark=spark, lake=lake_path)
    # A writer that died after writing data files but before committing: its files are orphans no reader sees.
    spark.createDataFrame([(1,)], "x int").write.parquet(lake_path + "/changes/run=crashed/vendor=datastream")
    assert cdcnorm.read_changes(spark, lake_path).count() == 3

    # A writer that died between two commits (quarantine committed, changes and report not): the next
    # writer completes it from its intent file, and nothing is committed twice.
    import cdcnorm.lake.commit as lc

    class Died(BaseException):
        pass

    def die_at(point):
        if point == "committed:quarantine":
            raise Died(point)

    more = _write(Path(lake_path + "-in") / "c.jsonl", ['{"op":"i","id":9,"v":1,"seq":20}'])
    monkeypatch.setattr(lc, "crash_point", die_at)
    with pytest.raises(Died):
        cdcnorm.normalize(more, LinesAdapter(), spark=spark, lake=lake_path)
    monkeypatch.undo()
    lake = Lake(spark, lake_path)
    assert lake.fs.list_dir(lake_path + "/_commits") and len(lake.committed_runs()) == 1
    assert cdcnorm.read_changes(spark, lake_path).count() == 3  # the cut: the half-committed run is not visible
    res = cdcnorm.normalize(inputs, LinesAdapter(), spark=spark, lake=lake_path)
    assert res.report["reconciled"] and res.report["rows_written"] == 0
    assert not [n for n in lake.fs.list_dir(lake_path + "/_commits") if n.endswith(".json")]
    assert len(lake.committed_runs()) == 3
    assert cdcnorm.read_changes(spark, lake_path).count() == 4
    assert cdcnorm.read_changes(spark, lake_path).select("event_id").distinct().count() == 4


def test_messages_dataframe_and_column_map(spark):
    df = spark.createDataFrame(
        [(b'{"op":"i","id":5,"v":1,"seq":3}', 7, "2024-01-01 00:00:00"), (b"nope", 8, "2024-01-01 00:00:01")],
        "body binary, sequenceNumber long, enqueuedTime string",
    ).withColumn("partition", F.lit(0))
    res = cdcnorm.normalize(df, LinesAdapter(), spark=spark, column_map=cdcnorm.ingest.sources.EVENT_HUBS_COLUMNS)
    assert res.report["outcomes"]["emitted"] == 1 and res.report["outcomes"]["quarantined"] == 1
    q = res.quarantine.collect()[0]
    assert q.origin.offset == "8" and q.origin.partition == "0" and bytes(q.raw) == b"nope"


def test_quarantine_retry_resolves(spark, tmp_path, lake_path):
    class Strict(LinesAdapter):
        def _decode(self, line, out):
            if b'"id":2' in line and not self.options.stream:
                raise DecodeError("needs_fix", "id 2 needs the fix")
            super()._decode(line, out)

    path = _write(tmp_path / "r.jsonl", ['{"op":"i","id":1,"v":1,"seq":1}', '{"op":"i","id":2,"v":1,"seq":2}'])
    cdcnorm.normalize(path, Strict(), spark=spark, lake=lake_path)
    assert cdcnorm.read_quarantine(spark, lake_path).count() == 1
    from cdcnorm.ingest.pipeline import normalize

    pending = cdcnorm.read_quarantine(spark, lake_path)
    batch = pending.select(F.col("raw").alias("value"), "origin")
    res = normalize(batch, Strict({"stream": "fixed"}), spark=spark, lake=lake_path,
                    resolves=pending.select("quarantine_id"))
    assert res.report["quarantine_resolved"] == 1
    assert cdcnorm.read_quarantine(spark, lake_path).count() == 0
    assert cdcnorm.read_quarantine(spark, lake_path, include_resolved=True).count() == 1
    assert cdcnorm.read_changes(spark, lake_path).count() == 2


def test_missing_input_is_a_usage_error(spark, tmp_path):
    with pytest.raises(UsageError, match="Input not found"):
        cdcnorm.normalize(str(tmp_path / "nope"), LinesAdapter(), spark=spark)


def test_unknown_vendor_suggests(spark, inputs):
    with pytest.raises(UsageError, match="Did you mean datastream"):
        cdcnorm.normalize(inputs, "datastrem", spark=spark)
