"""Conformance against the shared DataHub corpus (real SDK fixtures; no public DataWorks Blob output exists).

The pydatahub fixtures are GetRecords/GetTopic API responses: their records are decoded as far as they are
DataHub data, with expectations checked by hand. The related formats (Canal JSON, DTS Avro schema) are other
Alibaba formats: the adapter must not claim them.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from pathlib import Path

import pytest

from cdcnorm.adapters.base import MessageMeta
from cdcnorm.adapters.datahub.adapter import DataHubAdapter
from cdcnorm.adapters.datahub.tuple_topic import TupleField, convert, parse_tuple_schema
from cdcnorm.canonical.emit import BatchBuilder
from decoded import rows_of

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "datahub"
RELATED = CORPUS / "related_formats"

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"shared corpus not present at {CORPUS}")


def _load(name: str) -> dict:
    return json.loads((CORPUS / name).read_text())


def _rows(out: BatchBuilder) -> list[dict]:
    out.end_record()
    return rows_of(out.flush())


def _decode(value: bytes, offset: str) -> list[dict]:
    out = BatchBuilder()
    out.begin_record("topic", 0, partition="0", offset=offset, raw=value)
    DataHubAdapter().decode_message(value, MessageMeta(topic="topic", partition="0", offset=offset), out)
    return _rows(out)


def test_blob_getrecords_payload_is_not_a_dataworks_message():
    resp = _load("pydatahub_fixture_projects.get.topics.blob.shards.0.json")
    (record,) = resp["Records"]
    assert (resp["RecordCount"], record["Sequence"], record["SystemTime"]) == (1, 0, 1526292424292)
    blob = base64.b64decode(record["Data"])  # JSON protocol: Data is Base64 of the blob bytes
    assert blob.startswith(b"\x89PNG\r\n\x1a\n")  # the fixture's blob is a PNG fragment
    (row,) = _decode(blob, str(record["Sequence"]))
    assert (row["_kind"], row["_rule"], row["_raw"]) == ("quarantine", "bad_json", blob)
    assert row["origin"]["offset"] == "0"


def test_tuple_topic_schema_and_values():
    topic = _load("pydatahub_fixture_projects.success.topics.tuple.json")
    fields = parse_tuple_schema(topic)
    assert fields == (
        TupleField("bigint_field", "BIGINT"),
        TupleField("string_field", "STRING"),
        TupleField("double_field", "DOUBLE"),
        TupleField("bool_field", "BOOLEAN"),
        TupleField("event_time1", "TIMESTAMP"),
    )
    (record,) = _load("pydatahub_fixture_projects.get.topics.tuple.shards.0.json")["Records"]
    values = [convert(v, f.type, f.name) for v, f in zip(record["Data"], fields, strict=True)]
    assert values == [1, "yc1", 10.01, False, dt.datetime(2016, 2, 19, 8, 8, 55, tzinfo=dt.UTC)]


def test_tuple_record_without_dataworks_meta_columns_is_not_claimed():
    (record,) = _load("pydatahub_fixture_projects.get.topics.tuple.shards.0.json")["Records"]
    fields = parse_tuple_schema(_load("pydatahub_fixture_projects.success.topics.tuple.json"))
    row = json.dumps(dict(zip([f.name for f in fields], record["Data"], strict=True))).encode()
    (out,) = _decode(row, "0")
    assert (out["_kind"], out["_rule"]) == ("quarantine", "bad_message")
    assert "TUPLE row (no '_operation_type_')" in out["_message"]


def test_blob_topic_has_no_record_schema():
    topic = _load("pydatahub_fixture_projects.success.topics.blob.json")
    assert topic["RecordType"] == "BLOB"
    with pytest.raises(ValueError, match="RecordSchema"):
        parse_tuple_schema(topic)


RELATED_FILES = sorted(p.name for p in RELATED.glob("*")) if RELATED.is_dir() else []


@pytest.mark.parametrize("name", RELATED_FILES)
def test_related_formats_are_not_sniffed_as_datahub(name):
    path = RELATED / name
    assert not DataHubAdapter.sniff(str(path), path.read_bytes()[:65536])


@pytest.mark.parametrize(
    ("name", "records"),
    [
        ("canal_json_flink_canal-data.jsonl", 11),
        ("canal_json_flink_canal-data-filter-table.jsonl", 14),
        ("canal_json_issue5056_varbinary_gtid.json", 1),
        ("dts_avro_Record.avsc", 14),
    ],
)
def test_related_formats_are_quarantined_not_decoded(name, records):
    path = RELATED / name
    out = BatchBuilder()
    with path.open("rb") as fh:
        for _ in DataHubAdapter().read_file(str(path), fh, out):
            pass
    rows = _rows(out)
    assert [(r["_kind"], r["_rule"]) for r in rows] == [("quarantine", "bad_message")] * records
