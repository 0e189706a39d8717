"""Conformance over every real Qlik Replicate file in ../shared/corpus/replicate (skipped only when absent).

Expectations are written by hand from the messages themselves (see ../shared/reference/replicate.md §5):
masks read as ONE big-endian number, bit k = ordinal k+1, ordinals = the data's field order when no MD is
known. For real UPDATEs the changed columns must be exactly the columns whose before/after values differ.
"""

from __future__ import annotations

import datetime as dt
import io
import json
from decimal import Decimal
from pathlib import Path

import pytest
from fastavro import parse_schema, reader, schemaless_writer, writer
from pyspark.sql.types import VariantVal

from cdcnorm.adapters.base import MessageMeta
from cdcnorm.adapters.replicate.adapter import ReplicateAdapter
from cdcnorm.adapters.replicate.catalog import entry_from_data_schema
from cdcnorm.adapters.replicate.envelope import ENVELOPE_SCHEMA, extract_metadata
from cdcnorm.adapters.replicate.files import enqueued_time
from cdcnorm.canonical.emit import BatchBuilder
from decoded import rows_of

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "replicate"
pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not present at {CORPUS}")
UTC = dt.UTC

SALARIES_ID = "8FB9D3C10EA4B25751DF9CC8318F0A02"
CCC_PRESENT = [
    "CUSTOMER_ID",
    "CONSENT_TYPE_CODE",
    "CHANNEL_CODE",
    "ENTITY_TYPE_CODE",
]  # 01000043: 1, 2, 7, 25


def _rows(adapter: ReplicateAdapter, path: Path) -> list[dict]:
    out = BatchBuilder()
    with path.open("rb") as fh:
        for _ in adapter.read_file(str(path), fh, out):
            pass
    out.end_record()
    return rows_of(out.flush())


def read(name: str, **options) -> list[dict]:
    return _rows(ReplicateAdapter(options), CORPUS / name)


def changes(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["_kind"] == "change"]


def message(name: str) -> dict:
    return json.loads((CORPUS / name).read_text())["message"]


def others(name: str, present: list[str]) -> list[str]:
    """The data's columns not in `present`, in the data's order (those are null in these messages)."""
    data = message(name)["data"]
    assert all(data[c] is None for c in data if c not in present)
    return [c for c in data if c not in present]


# (file, op, changed_columns, missing_columns, flags) for one-message files, derived from each message by hand
SINGLE = {
    "json/qlik_kafka_json_DT_update_16cols_sqlserver_changeMask_008080.json": (
        "UPDATE",
        ["item_desc", "load_date_time"],
        [],
        ["no_schema"],
    ),  # 008080 -> 8, 16; 00FFFF -> 1..16
    # 2000000000 -> 38 (> 37); 0000000015 -> 1, 3, 5
    "json/oracle_kafka_json_DT_update_37cols_CUSTOMER.json": (
        "UPDATE",
        [],
        None,
        ["no_schema", "mask_bits_beyond_columns"],
    ),
    "json/oracle_kafka_json_DT_update_26cols_CUSTOMER_COMMUNICATION_CONSENT.json": (  # 04000000 -> 27 (> 26)
        "UPDATE",
        [],
        None,
        ["no_schema", "mask_bits_beyond_columns"],
    ),
    "json/oracle_kafka_json_DT_update_26cols_CCC_raw_2019-08-06.json": (
        "UPDATE",
        [],
        None,
        ["no_schema", "mask_bits_beyond_columns"],
    ),
    "json/oracle_kafka_json_DT_update_3cols_CUSTOMER_14_testDb.json": (  # 00 -> none; 05 -> 1, 3
        "UPDATE",
        [],
        ["FIRST_NAME"],
        ["no_schema"],
    ),
    "json/qlik_support_article_DT_update_3cols_ID_NAME_tableName.json": (  # 02 -> 2; 07 -> 1..3
        "UPDATE",
        ["NAME"],
        [],
        ["no_schema"],
    ),
    "json/oracle_kafka_json_DT_insert_CUSTOMER_handedited_masks.json": (  # 1FFFFFFFFF -> 1..37 on 3 columns
        "INSERT",
        ["CUSTOMER_ID", "FIRST_NAME", "LAST_NAME"],
        [],
        ["no_schema", "mask_bits_beyond_columns"],
    ),
    "json/oracle_kafka_json_DT_refresh_6cols_CUSTOMER_SOURCE_SYSTEM_suspect.json": (
        # REFRESH with CDC headers; 0040 -> 7 (> 6); 0018 -> 4, 5 although 1..3 have values (masks do not fit)
        "SNAPSHOT",
        None,
        ["MDM_LAST_UPDATE_DTTM"],
        ["no_schema", "mask_bits_beyond_columns", "column_mask_conflict"],
    ),
    "json/SYNTHETIC_michelin_readme_envelope_update.json": (  # invented masks "1": ordinal 1 only
        "UPDATE",
        ["id"],
        [],
        ["no_schema", "column_mask_conflict"],
    ),
    "json/attunity2018_json_envelope_DT_refresh_salaries.json": ("SNAPSHOT", None, [], ["no_schema"]),
}
MISSING_FROM_MASK = {
    "json/oracle_kafka_json_DT_update_37cols_CUSTOMER.json": ["CUSTOMER_ID", "FIRST_NAME", "LAST_NAME"],
    "json/oracle_kafka_json_DT_update_26cols_CUSTOMER_COMMUNICATION_CONSENT.json": CCC_PRESENT,
    "json/oracle_kafka_json_DT_update_26cols_CCC_raw_2019-08-06.json": CCC_PRESENT,
}
# the 14 Oracle UPDATEs with partial supplemental logging: (changeMask, columnMask) -> (changed, missing)
JSONL = "json/oracle_kafka_json_DT_update_3cols_partial_suplog_jsonlines.jsonl"
F, L = "FIRST_NAME", "LAST_NAME"
# masks: 02/03, 02/03, 02/03, 00/01, 00/01, 06/07, 02/03, 04/05, 02/03, 02/03, 00/01, 00/01, 02/03, 00/03
JSONL_MASKS = [
    ([F], [L]),
    ([F], [L]),
    ([F], [L]),
    ([], [F, L]),
    ([], [F, L]),
    ([F, L], []),
    ([F], [L]),
    ([L], [F]),
    ([F], [L]),
    ([F], [L]),
    ([], [F, L]),
    ([], [F, L]),
    ([F], [L]),
    ([], [L]),
]
QUARANTINED = {
    "json/legacy_attunity2016_json_NAVDEMO_CUSTOMER_op_F.json": "unsupported_format",
    "json/oracle_kafka_json_DT_delete_CUSTOMER_handedited_INVALIDJSON.json.txt": "bad_json",
    "eventhubs_capture/eventhubs_capture_2016_sample_05.avro": "unknown_format",  # Body is not Replicate data
}
SCHEMAS = [
    "avsc/qlik_replicate_MessageEnvelope.avsc",
    "avsc/attunity2018_MetadataMessage_schema_from_messageSchema.avsc",
    "avsc/attunity2018_DataRecord_salaries_from_dataSchema.avsc",
    "avsc/thirdparty_template_qlik_confluent_sr_DataRecord.avsc",
    "avsc/eventhubs_capture_EventData_msdocs.avsc",
    "avsc/eventhubs_capture_EventData_variant_nullable_Properties.avsc",
]
METADATA = ["json/attunity2018_json_envelope_MD_salaries.json"]
COVERED = {*SINGLE, JSONL, *QUARANTINED, *SCHEMAS, *METADATA, "SOURCES.md"}


def _files() -> list[str]:
    return (
        sorted(str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*") if p.is_file())
        if CORPUS.is_dir()
        else []
    )


def test_every_corpus_file_has_an_expectation():
    assert set(_files()) == COVERED


@pytest.mark.parametrize("name", sorted(SINGLE))
def test_single_messages(name):
    op, changed, missing, flags = SINGLE[name]
    if name in MISSING_FROM_MASK:
        missing = others(name, MISSING_FROM_MASK[name])
    [row] = changes(read(name))
    assert (row["op"], row["changed_columns"], row["missing_columns"], row["flags"]) == (
        op,
        changed,
        missing,
        flags,
    )
    msg = message(name)
    assert row["vendor_op"] == msg["headers"]["operation"]
    assert row["after"] == msg["data"]  # no metadata: the JSON values as sent
    assert row["before"] == (msg["beforeData"] if op == "UPDATE" else None)
    assert row["table"] is None  # the table is not in a data message (reference §4)


@pytest.mark.parametrize("name", [n for n, v in SINGLE.items() if v[0] == "UPDATE" and "SYNTHETIC" not in n])
def test_changed_columns_are_the_columns_that_differ(name):
    """Real UPDATEs: the change mask names exactly the columns whose value changed."""
    msg = message(name)
    differ = [c for c in msg["data"] if msg["data"][c] != msg["beforeData"][c]]
    [row] = changes(read(name))
    assert row["changed_columns"] == differ


def test_partial_supplemental_logging_lines():
    rows = read(JSONL)
    assert [r["_kind"] for r in rows] == ["change"] * 14
    assert [(r["changed_columns"], r["missing_columns"]) for r in rows] == JSONL_MASKS
    lines = [
        json.loads(line)["message"] for line in (CORPUS / JSONL).read_text().splitlines() if line.strip()
    ]
    for row, msg in zip(rows, lines, strict=True):
        differ = [c for c in msg["data"] if msg["data"][c] != msg["beforeData"][c]]
        assert row["changed_columns"] == differ
        assert all(msg["data"][c] is None for c in row["missing_columns"])
        assert row["position"] == msg["headers"]["streamPosition"]
        assert row["source_ts"] == dt.datetime.fromisoformat(msg["headers"]["timestamp"]).replace(tzinfo=UTC)
    assert rows[0]["source_ts"] == dt.datetime(2019, 4, 30, 15, 32, 15, tzinfo=UTC)
    assert {r["schema_version"] for r in rows} == {"87A672B0AA76C4DB0A30F50F4A9F848C"}


def test_sixteen_columns_headers():
    [row] = changes(read("json/qlik_kafka_json_DT_update_16cols_sqlserver_changeMask_008080.json"))
    assert row["source_ts"] == dt.datetime(2023, 3, 21, 21, 34, 19, 511000, tzinfo=UTC)
    assert (row["tx_id"], row["tx_seq"], row["tx_last"]) == ("0000000066DA0202A903000000000000", 1, True)
    assert row["position"] == "1015;638150312565803470;20221211140008252023B|0000000003A90202DB790001"
    assert (
        row["after"]["load_date_time"] == "2023-03-21 14:34:21.000000"
        and row["before"]["load_date_time"] is None
    )


def test_table_name_column_added_by_a_transformation():
    name = "json/qlik_support_article_DT_update_3cols_ID_NAME_tableName.json"
    [row] = changes(read(name, table_field="tableName"))
    assert row["table"] == "kit" and row["changed_columns"] == ["NAME"]


@pytest.mark.parametrize("name", sorted(QUARANTINED))
def test_unusable_files_are_quarantined(name):
    rows = read(name)
    assert [(r["_kind"], r["_rule"]) for r in rows] == [("quarantine", QUARANTINED[name])]
    assert rows[0]["_raw"] and rows[0]["_message"]


def test_capture_sample_origin_and_enqueued_time():
    name = "eventhubs_capture/eventhubs_capture_2016_sample_05.avro"
    [row] = read(name)
    assert row["origin"]["offset"] == "0" and row["_raw"].startswith(b'{"field1"')
    with (CORPUS / name).open("rb") as fh:
        [rec] = list(reader(fh))
    assert enqueued_time(rec["EnqueuedTimeUtc"]) == dt.datetime(2016, 11, 16, 16, 44, 11, tzinfo=UTC)


# -- the real metadata message -------------------------------------------------------------------------------
def test_metadata_message():
    rows = read(METADATA[0])
    assert [(r["_kind"], r["_rule"]) for r in rows] == [("metadata", "replicate_metadata"), ("schema", None)]
    schema = json.loads(rows[1]["_schema"])
    assert (schema["schema"], schema["table"], schema["schema_version"]) == (
        "employees",
        "salaries",
        SALARIES_ID,
    )
    assert [
        (c["name"], c["vendor_type"], c["canonical_type"], c["pk_position"]) for c in schema["columns"]
    ] == [
        ("emp_no", "INT4", "int", 1),
        ("salary", "INT4", "int", None),
        ("from_date", "DATE", "date", 2),
        ("to_date", "DATE", "date", None),
    ]
    assert schema["first_seen"] == "2018-04-13T20:13:58.289000+00:00"


def test_refresh_decoded_with_its_metadata():
    entries = extract_metadata((CORPUS / METADATA[0]).read_bytes())
    assert [e["schema_id"] for e in entries] == [SALARIES_ID]
    [row] = changes(
        read(
            "json/attunity2018_json_envelope_DT_refresh_salaries.json",
            catalog_entries=entries,
            source_db="mysql",
        )
    )
    assert (row["op"], row["database"], row["schema"], row["table"]) == (
        "SNAPSHOT",
        "employees",
        None,
        "salaries",
    )
    assert row["after"] == {
        "emp_no": 14472,
        "salary": 49592,
        "from_date": dt.date(1993, 11, 25),
        "to_date": dt.date(1994, 11, 25),
    }
    assert row["primary_keys"] == ["emp_no", "from_date"]
    assert row["key"] == {"emp_no": 14472, "from_date": dt.date(1993, 11, 25)}
    assert (row["flags"], row["changed_columns"], row["missing_columns"]) == ([], None, [])
    assert row["source_ts"] is None and row["tx_id"] is None


# -- the schema files ----------------------------------------------------------------------------------------
def _avsc(name: str) -> dict:
    return json.loads((CORPUS / name).read_text())


def test_envelope_schema_is_the_documented_one():
    assert _avsc(SCHEMAS[0]) == ENVELOPE_SCHEMA


def test_metadata_schemas_are_those_of_the_real_md():
    md = json.loads((CORPUS / METADATA[0]).read_text())
    assert _avsc(SCHEMAS[1]) == json.loads(md["messageSchema"])
    assert _avsc(SCHEMAS[2]) == json.loads(md["message"]["dataSchema"])


def _avro(schema: dict, datum: dict) -> bytes:
    buf = io.BytesIO()
    schemaless_writer(buf, parse_schema(schema), datum)
    return buf.getvalue()


def _decode(value: bytes, adapter: ReplicateAdapter, topic: str | None = None) -> list[dict]:
    out = BatchBuilder()
    out.begin_record(topic, 0, raw=value)
    adapter.decode_message(value, MessageMeta(topic=topic), out)
    out.end_record()
    rows = out.flush().to_pylist()
    for r in rows:
        if r["after"] is not None:
            r["after"] = VariantVal(r["after"]["value"], r["after"]["metadata"]).toPython()
    return rows


def test_real_md_and_refresh_as_avro_envelopes():
    """The 2018 MD and REFRESH rendered in the Avro envelope with their own schemas decode like the JSON."""
    md = json.loads((CORPUS / METADATA[0]).read_text())
    dt_msg = message("json/attunity2018_json_envelope_DT_refresh_salaries.json")
    md_bytes = _avro(
        ENVELOPE_SCHEMA,
        {
            "magic": b"atMSG",
            "type": "MD",
            "headers": None,
            "messageSchemaId": SALARIES_ID,
            "messageSchema": md["messageSchema"],
            "message": _avro(_avsc(SCHEMAS[1]), md["message"]),
        },
    )
    headers = {k: v for k, v in dt_msg["headers"].items() if k != "externalSchemaId"}
    dt_bytes = _avro(
        ENVELOPE_SCHEMA,
        {
            "magic": b"atMSG",
            "type": "DT",
            "headers": None,
            "messageSchemaId": SALARIES_ID,
            "messageSchema": None,
            "message": _avro(_avsc(SCHEMAS[2]), {**dt_msg, "headers": headers}),
        },
    )
    assert (
        extract_metadata(md_bytes)[0]["columns"]
        == extract_metadata((CORPUS / METADATA[0]).read_bytes())[0]["columns"]
    )
    adapter = ReplicateAdapter()
    assert [r["_kind"] for r in _decode(md_bytes, adapter)] == ["metadata", "schema"]
    [row] = _decode(dt_bytes, adapter)
    assert (row["op"], row["format"], row["table"]) == ("SNAPSHOT", "replicate.avro", "salaries")
    assert row["after"] == {
        "emp_no": 14472,
        "salary": 49592,
        "from_date": dt.date(1993, 11, 25),
        "to_date": dt.date(1994, 11, 25),
    }


def test_third_party_registry_template(tmp_path):
    schema = _avsc(SCHEMAS[3])
    entry = entry_from_data_schema("registry:7", schema)
    assert entry["columns"] == [] and entry["table"] is None
    body = _avro(
        schema,
        {
            "data": {},
            "beforeData": None,
            "headers": {
                "operation": "DELETE",
                "changeSequence": "20230101000000000000000000000000009",
                "timestamp": "",
                "streamPosition": "",
                "transactionId": "T",
                "changeMask": b"\x01",
                "columnMask": b"\x01",
                "transactionEventCounter": 4,
                "transactionLastEvent": True,
            },
        },
    )
    (tmp_path / "7.avsc").write_text((CORPUS / SCHEMAS[3]).read_text())
    adapter = ReplicateAdapter({"schema_registry": str(tmp_path)})
    schema_row, row = _decode(b"\x00" + (7).to_bytes(4, "big") + body, adapter, topic="orders")
    assert schema_row["_kind"] == "schema" and json.loads(schema_row["_schema"])["columns"] == []
    assert (row["op"], row["table"], row["tx_seq"], row["tx_last"]) == ("DELETE", "orders", 4, True)
    assert row["flags"] == ["no_schema", "mask_bits_beyond_columns"]


@pytest.mark.parametrize("name", SCHEMAS[4:])
def test_capture_files_with_each_event_data_schema(name, tmp_path):
    body = (CORPUS / "json/qlik_kafka_json_DT_update_16cols_sqlserver_changeMask_008080.json").read_bytes()
    path = tmp_path / "ns" / "items" / "2" / "2023/03/21/21/35/00.avro"
    path.parent.mkdir(parents=True)
    with path.open("wb") as fh:
        writer(
            fh,
            parse_schema(_avsc(name)),
            [
                {
                    "SequenceNumber": 12,
                    "Offset": "4096",
                    "EnqueuedTimeUtc": "3/21/2023 9:35:00 PM",
                    "SystemProperties": {},
                    "Properties": {"k": None} if "nullable" in name else {},
                    "Body": body,
                }
            ],
        )
    [row] = changes(_rows(ReplicateAdapter(), path))
    assert (row["op"], row["table"], row["stream"]) == ("UPDATE", "items", "items")
    assert row["changed_columns"] == ["item_desc", "load_date_time"]
    assert row["origin"] == {"uri": str(path), "partition": "2", "offset": "12", "index": 0}
    assert row["capture_ts"] == dt.datetime(2023, 3, 21, 21, 35, tzinfo=UTC)
    assert row["after"]["itm_aut_ord_fct"] == "1" and not isinstance(row["after"]["itm_aut_ord_fct"], Decimal)
