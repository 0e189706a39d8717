"""AWS DMS adapter: the contract on the samples, then decoding tests that check the values (no Spark)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cdcnorm.adapters import adapter_class, names
from cdcnorm.adapters.base import MessageMeta
from cdcnorm.adapters.dms.adapter import DmsAdapter
from cdcnorm.canonical.emit import BatchBuilder
from cdcnorm.testing import AdapterContract
from decoded import changes, decode_files, outcomes, rows_of

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "dms"
CUSTOMERS = SAMPLES / "s3" / "public" / "customers"
ORDERS = SAMPLES / "s3" / "public" / "orders"
EMPLOYEES = SAMPLES / "s3" / "hr" / "employees" / "20190118-184518184.csv"
KINESIS = SAMPLES / "kinesis" / "postgres-items.json"
KAFKA = SAMPLES / "kafka" / "mysql-tools.jsonl"
KEYS = {"public.customers": ["col_1"], "public.orders": ["order_id"], "hr.employees": ["EMPLOYEE_ID"],
        "shop.tools": ["id"]}
CUSTOMER_COLUMNS = {"id": "int", "name": "string", "email": "string", "balance": "decimal(10,2)",
                    "created": "timestamp_ntz"}
UTC = dt.UTC


class TestDmsContract(AdapterContract):
    vendor = "dms"
    inputs = [str(SAMPLES)]
    options = {"keys": KEYS}
    message_file = str(KAFKA)


def read(*paths: Path, **options) -> list[dict]:
    return decode_files("dms", paths, **options)


def decode(*values: bytes | None, **options) -> list[dict]:
    adapter = DmsAdapter(options)
    out = BatchBuilder()
    for i, v in enumerate(values):
        out.begin_record("topic", i, partition="0", offset=str(i), raw=v)
        adapter.decode_message(v, MessageMeta(topic="topic", partition="0", offset=str(i)), out)
    out.end_record()
    return rows_of(out.flush())


def s3(tmp_path: Path, rel: str, text: str) -> Path:
    p = tmp_path / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8", newline="")
    return p


# -- S3 CSV --------------------------------------------------------------------------------------------------------
def test_headerless_csv_with_a_table_definition_is_typed_exactly():
    rows = read(CUSTOMERS / "LOAD00000001.csv", CUSTOMERS / "20240809-192717787.csv",
                tables={"public.customers": CUSTOMER_COLUMNS}, keys={"public.customers": ["id"]})
    assert outcomes(rows) == [("change", None)] * 7 + [("quarantine", "unknown_op")]
    ch = changes(rows)
    assert [r["op"] for r in ch] == ["SNAPSHOT"] * 3 + ["INSERT", "UPDATE", "UPDATE", "DELETE"]
    ann = ch[0]
    assert ann["after"] == {"id": 1, "name": "Ann", "email": "ann@example.com", "balance": Decimal("100.50"),
                            "created": dt.datetime(2024, 8, 9, 19, 0)}
    assert ann["schema"] == "public" and ann["table"] == "customers" and ann["database"] is None
    assert ann["key"] == {"id": 1} and ann["vendor_op"] is None and ann["flags"] == ["file_order"]
    assert ann["position"] == "LOAD00000001.csv:0" and ann["source_ts"] is None
    assert ch[1]["after"]["name"] == "Bob, Jr." and ch[1]["after"]["email"] is None  # empty field: NULL
    assert ch[2]["after"]["email"] == 'say "hi"'
    delete = ch[6]
    assert delete["before"]["id"] == 3 and delete["after"] is None and delete["vendor_op"] == "D"
    assert ch[4]["before"] is None  # DMS S3 writes no before image of an update
    assert rows[-1]["_raw"] == b"X,9,broken,,," and rows[-1]["origin"]["offset"] == "line 5"


def test_one_identical_change_made_twice_within_one_second_in_one_file_is_two_events():
    rows = changes(read(CUSTOMERS / "20240809-192717787.csv", tables={"public.customers": CUSTOMER_COLUMNS},
                        keys={"public.customers": ["id"]}))
    twice = [r for r in rows if r["op"] == "UPDATE"]
    assert len(twice) == 2 and twice[0]["after"] == twice[1]["after"]
    assert twice[0]["event_id"] != twice[1]["event_id"]
    assert twice[0]["sort_key"] < twice[1]["sort_key"]  # file order: the row index decides
    assert all("file_order" in r["flags"] for r in twice)


def test_redelivered_file_keeps_its_ids_and_a_rewritten_object_gets_new_ones(tmp_path):
    text = "I,1,a\nU,1,b\n"
    p = s3(tmp_path, "public/t/20240101-000000000.csv", text)
    first = [r["event_id"] for r in changes(read(p))]
    assert [r["event_id"] for r in changes(read(p))] == first
    p.write_text(text + "D,1,b\n")  # another object under the same name (another size)
    assert not set(first) & {r["event_id"] for r in changes(read(p))}


def test_the_same_file_read_from_another_bucket_or_a_download_keeps_its_ids(tmp_path):
    """A row's identity is where DMS put it (`<schema>/<table>/<file>`), its size and index, not the bucket or
    folders it is read from: a mirrored bucket or a local download gives the same events."""
    text = "I,1,a\nU,1,b\n"
    bucket = [r["event_id"] for r in changes(read(s3(tmp_path, "bucket/dms/public/t/20240101-000000000.csv", text)))]
    mirror = [r["event_id"] for r in changes(read(s3(tmp_path, "download/public/t/20240101-000000000.csv", text)))]
    assert len(bucket) == 2 and mirror == bucket
    other = [r["event_id"] for r in changes(read(s3(tmp_path, "bucket/dms/public/u/20240101-000000000.csv", text)))]
    assert not set(other) & set(bucket)  # another table's file of the same name


def test_null_marker_and_empty_strings(tmp_path):
    p = s3(tmp_path, "public/t/LOAD00000001.csv", '1,,NULL\n')
    assert changes(read(p, csv_null_value="NULL"))[0]["after"] == {"col_1": "1", "col_2": "", "col_3": None}
    assert changes(read(p))[0]["after"] == {"col_1": "1", "col_2": None, "col_3": "NULL"}
    assert changes(read(p, empty_field="empty_string"))[0]["after"]["col_2"] == ""
    assert changes(read(p))[0]["flags"] == ["file_order", "no_schema"]


def test_timestamp_column_is_commit_time_in_cdc_and_transfer_time_in_full_load(tmp_path):
    load = s3(tmp_path, "dbo/t/LOAD00000001.csv", "2024-01-02 03:04:05.123456,1,a\n")
    cdc = s3(tmp_path, "dbo/t/20240102-030410000.csv", "U,2024-01-02 03:04:09.500000,1,b\n")
    rows = changes(read(load, cdc, timestamp_column="ts", tables={"dbo.t": {"id": "int", "v": "string"}}))
    assert rows[0]["capture_ts"] == dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)
    assert rows[0]["source_ts"] is None and rows[0]["after"] == {"id": 1, "v": "a"}
    assert rows[1]["source_ts"] == dt.datetime(2024, 1, 2, 3, 4, 9, 500000, tzinfo=UTC)
    assert rows[1]["after"] == {"id": 1, "v": "b"} and rows[1]["vendor_op"] == "U"
    assert rows[1]["capture_ts"] == dt.datetime(2024, 1, 2, 3, 4, 10, tzinfo=UTC)  # the CDC file's name


def test_op_for_full_load_and_cdc_inserts_settings(tmp_path):
    load = s3(tmp_path, "s/t/LOAD0000000A.csv", "I,1,a\n")
    assert changes(read(load, include_op_for_full_load=True))[0]["op"] == "SNAPSHOT"
    cdc = s3(tmp_path, "s/t/20240101-000000000.csv", "1,a\n")
    only = changes(read(cdc, cdc_inserts_only=True))[0]
    assert only["op"] == "INSERT" and "op_from_settings" in only["flags"] and only["after"] == {"col_1": "1",
                                                                                               "col_2": "a"}
    upsert = changes(read(cdc, cdc_inserts_and_updates=True))[0]
    assert upsert["op"] == "UPDATE" and "op_from_settings" in upsert["flags"]
    with_op = s3(tmp_path, "s/t/20240101-000000001.csv", "U,1,a\n")
    assert changes(read(with_op, cdc_inserts_and_updates=True, include_op_for_full_load=True))[0]["vendor_op"] == "U"


def test_header_names_columns_and_before_image_columns_make_a_key_change(tmp_path):
    rows = changes(read(EMPLOYEES, keys={"hr.employees": ["EMPLOYEE_ID"]}))
    assert [r["op"] for r in rows] == ["UPDATE", "UPDATE", "DELETE"]
    assert rows[0]["after"]["SALARY"] == "24000.00" and rows[0]["key"] == {"EMPLOYEE_ID": "100"}
    p = s3(tmp_path, "s/t/20240101-000000000.csv", "Op,BI_id,BI_v,id,v\nU,1,a,2,b\nU,2,b,2,c\n")
    moved, same = changes(read(p, keys={"t": ["id"]})), None
    assert [(r["op"], r["key"]) for r in moved] == [("DELETE", {"id": "1"}), ("INSERT", {"id": "2"}),
                                                    ("UPDATE", {"id": "2"})]
    assert moved[0]["flags"] == moved[1]["flags"] == ["file_order", "key_change"]
    same = moved[2]
    assert same["before"] == {"id": "2", "v": "b"} and same["after"] == {"id": "2", "v": "c"}


def test_table_from_option_and_missing_table(tmp_path):
    p = s3(tmp_path, "x.csv", "I,1\n")
    assert outcomes(read(p)) == [("quarantine", "missing_table")]
    row = changes(read(p, table="sales.orders"))[0]
    assert (row["schema"], row["table"]) == ("sales", "orders")
    mysql = changes(read(p, table="shop.orders", source_db="mysql"))[0]
    assert (mysql["database"], mysql["schema"], mysql["source_db"]) == ("shop", None, "mysql")


def test_declared_columns_that_do_not_fit_the_row_quarantine_it(tmp_path):
    p = s3(tmp_path, "s/t/20240101-000000000.csv", "I,1,a,extra\n")
    rows = read(p, tables={"s.t": {"id": "int", "v": "string"}})
    assert rows[0]["_rule"] == "bad_message" and "declared with 2 columns" in rows[0]["_message"]


# -- S3 Parquet ----------------------------------------------------------------------------------------------------
def test_parquet_values_come_typed_from_the_schema():
    rows = changes(read(ORDERS / "LOAD00000001.parquet", ORDERS / "20240809-193000123.parquet",
                        keys={"orders": ["order_id"]}))
    assert [(r["op"], r["vendor_op"]) for r in rows] == [("SNAPSHOT", None), ("SNAPSHOT", None), ("INSERT", "I"),
                                                          ("UPDATE", "U"), ("DELETE", "D")]
    assert rows[0]["after"] == {"order_id": 10, "customer": "Ann", "amount": Decimal("99.90"),
                                "placed": dt.datetime(2024, 8, 9, 19, 0, 0, 123000, tzinfo=UTC),
                                "blob": b"\x00\x01", "qty": 1}
    assert rows[2]["after"]["amount"] == Decimal("1234567890123.45") and rows[4]["before"]["blob"] is None
    assert rows[2]["format"] == "dms.parquet" and rows[2]["position"] == "20240809-193000123.parquet:0"


def test_parquet_timestamp_column_is_a_string_before_the_data(tmp_path):
    p = tmp_path / "public" / "t" / "20240101-000000000.parquet"
    p.parent.mkdir(parents=True)
    pq.write_table(pa.table({"Op": ["I"], "DMS_TIMESTAMP": ["2024-01-01 00:00:00.250000"], "id": [1]}), p)
    row = changes(read(p, timestamp_column="DMS_TIMESTAMP"))[0]
    assert row["after"] == {"id": 1} and row["source_ts"] == dt.datetime(2024, 1, 1, 0, 0, 0, 250000, tzinfo=UTC)


# -- Kinesis / Kafka messages --------------------------------------------------------------------------------------
def test_multi_line_kinesis_file_controls_filters_and_images():
    rows = read(KINESIS)
    assert outcomes(rows) == [("change", None), ("filtered", "dms_internal_table")] + [("change", None)] * 6 + [
        ("change", None)]
    ch = changes(rows)
    assert [r["op"] for r in ch] == ["DDL", "SNAPSHOT", "SNAPSHOT", "INSERT", "UPDATE", "DELETE", "INSERT",
                                     "DELETE", "DDL"]
    create = ch[0]
    assert create["vendor_op"] == "create-table" and create["primary_keys"] == ["id"]
    versions = [r for r in rows if r["_kind"] == "schema"]
    assert len(versions) == 1
    lamp = ch[1]
    assert lamp["after"] == {"id": 1, "name": "lamp", "price": Decimal("19.90"), "attributes": '{"foo": "bar"}',
                             "updated": dt.datetime(2024, 8, 9, 19, 0)}
    assert lamp["key"] == {"id": 1} and lamp["source_ts"] is None
    insert = ch[3]
    assert insert["source_ts"] == dt.datetime(2024, 8, 9, 19, 5, 0, 4000, tzinfo=UTC)
    assert insert["capture_ts"] == dt.datetime(2024, 8, 9, 19, 5, 0, 10000, tzinfo=UTC)
    assert insert["tx_id"] == "501" and insert["tx_seq"] == 1
    assert insert["position"] == "00000002/7C007178.1.00000002/7C007178:1"
    assert ch[4]["before"] is None  # "before-image": {} - unknown, never an empty row
    old, new = ch[5], ch[6]
    assert old["key"] == {"id": 3} and new["key"] == {"id": 30} and old["position"] == new["position"]
    assert "key_change" in old["flags"] and "key_change" in new["flags"] and old["before"] == {"id": 3}
    assert ch[7]["before"] == {"id": 2, "name": None, "price": None, "attributes": None, "updated": None}


def test_single_line_messages_with_bi_columns_and_message_input():
    lines = KAFKA.read_bytes().splitlines()
    by_file = changes(read(KAFKA, keys={"tools": ["id"]}))
    by_message = changes(decode(*lines, keys={"tools": ["id"]}))
    assert [r["event_id"] for r in by_file] == [r["event_id"] for r in by_message]
    update = by_message[1]
    assert update["before"] == {"id": 7, "name": "pen", "weight": None}
    assert update["after"] == {"id": 7, "name": "pen", "weight": 3}
    assert update["tx_id"] == "9002" and update["position"] is None and update["schema"] == "shop"


def test_absent_columns_are_null_when_the_table_is_known():
    msg = {"data": {"id": 5}, "metadata": {"timestamp": "2024-01-01T00:00:00Z", "record-type": "data",
                                           "operation": "insert", "schema-name": "s", "table-name": "t"}}
    row = changes(decode(json.dumps(msg).encode(), tables={"s.t": {"id": "int", "note": "string"}}))[0]
    assert row["after"] == {"id": 5, "note": None}


def test_bad_messages_are_quarantined():
    rows = decode(b"{not json", b"", json.dumps({"data": {}}).encode(), json.dumps(
        {"data": {}, "metadata": {"record-type": "data", "operation": "merge", "table-name": "t"}}).encode())
    assert [r["_rule"] for r in rows] == ["bad_json", "empty_message", "bad_event", "unknown_op"]


def test_redelivered_message_keeps_its_id_and_a_second_identical_change_differs():
    line = KINESIS.read_text()
    msgs = [json.loads(m) for m in line.replace("}\n{", "}\x00{").split("\x00")]
    insert = json.dumps(msgs[4]).encode()
    again = dict(msgs[4], metadata={**msgs[4]["metadata"], "timestamp": "2024-08-09T21:00:00Z"})
    ids = [r["event_id"] for r in changes(decode(insert, json.dumps(again).encode()))]
    assert ids[0] == ids[1]  # DMS's processing time is not identity
    other = dict(msgs[4], metadata={**msgs[4]["metadata"], "stream-position": "00000002/7C007999.1.x"})
    assert changes(decode(json.dumps(other).encode()))[0]["event_id"] != ids[0]


# -- detection -----------------------------------------------------------------------------------------------------
def test_messages_are_detected_and_s3_files_are_not():
    assert DmsAdapter.sniff(str(KAFKA), KAFKA.read_bytes())
    assert DmsAdapter.sniff(str(KINESIS), KINESIS.read_bytes())
    assert not DmsAdapter.sniff(str(EMPLOYEES), EMPLOYEES.read_bytes())
    assert not DmsAdapter.sniff(None, (ORDERS / "LOAD00000001.parquet").read_bytes()[:65536])


@pytest.mark.parametrize("vendor", [n for n in names() if n != "dms"])
def test_other_vendors_samples_are_not_claimed(vendor):
    root = Path(__file__).resolve().parents[1] / "samples" / vendor
    for p in sorted(x for x in root.rglob("*") if x.is_file()):
        assert not DmsAdapter.sniff(str(p), p.read_bytes()[:65536]), p
    for p in (KAFKA, KINESIS):
        assert not adapter_class(vendor).sniff(str(p), p.read_bytes()[:65536]), (vendor, p)


# -- the first pass: create-table records wherever they sit ----------------------------------------------------------
def test_create_table_in_another_file_types_and_keys_later_messages():
    from cdcnorm.adapters.base import FirstPass

    adapter = DmsAdapter()
    with KINESIS.open("rb") as fh:
        items = adapter.first_pass_file(str(KINESIS), fh)
    assert items == [{"schema": "public", "table": "items", "keys": ["id"],
                      "columns": {"id": "int", "name": "string", "price": "decimal(10,2)", "attributes": "string",
                                  "updated": "timestamp_ntz"}}]
    with KAFKA.open("rb") as fh:
        assert adapter.first_pass_file(str(KAFKA), fh) == []
    prepared = adapter.prepare(FirstPass(kind="messages", items=items))
    assert not prepared.options.learn_tables
    msg = {"data": {"id": 9, "price": "5.5"}, "metadata": {
        "timestamp": "2024-08-09T19:10:00Z", "record-type": "data", "operation": "insert",
        "schema-name": "public", "table-name": "items", "transaction-id": 7}}
    out = BatchBuilder()
    out.begin_record("t", 0)
    prepared.decode_message(json.dumps(msg).encode(), MessageMeta(), out)
    row = changes(rows_of(out.flush()))[0]
    assert row["key"] == {"id": 9} and row["after"] == {"id": 9, "price": Decimal("5.50"), "name": None,
                                                        "attributes": None, "updated": None}
    assert adapter.first_pass_message(json.dumps(msg).encode()) == []


def test_a_column_added_after_create_table_gets_a_schema_version():
    lines = [json.dumps(m) for m in (
        {"data": None, "metadata": {"timestamp": "2024-01-01T00:00:00Z", "record-type": "control",
                                    "operation": "create-table", "schema-name": "s", "table-name": "t"},
         "control": {"table-def": {"columns": {"id": {"type": "INT32"}}, "primary-key": ["id"]}}},
        {"data": {"id": 1, "tier": "gold"}, "metadata": {"timestamp": "2024-01-01T00:00:01Z", "record-type": "data",
                                                         "operation": "insert", "schema-name": "s", "table-name": "t"}},
    )]
    rows = decode(*(line.encode() for line in lines))
    versions = [json.loads(r["_schema"]) for r in rows if r["_kind"] == "schema"]
    assert [[c["name"] for c in v["columns"]] for v in versions] == [["id"], ["id", "tier"]]
    assert versions[1]["columns"][0]["pk_position"] == 1 and versions[1]["columns"][1]["canonical_type"] == "string"


def test_a_redelivered_load_row_keeps_its_id_after_the_table_grew():
    create = {"data": None, "metadata": {"timestamp": "2024-01-01T00:00:00Z", "record-type": "control",
                                         "operation": "create-table", "schema-name": "s", "table-name": "t"},
              "control": {"table-def": {"columns": {"id": {"type": "INT32"}}, "primary-key": ["id"]}}}
    load = {"data": {"id": 1}, "metadata": {"timestamp": "2024-01-01T00:00:01Z", "record-type": "data",
                                           "operation": "load", "schema-name": "s", "table-name": "t"}}
    grown = {"data": {"id": 2, "tier": "gold"}, "metadata": {**load["metadata"], "operation": "insert",
                                                             "timestamp": "2024-01-01T00:00:02Z"}}
    rows = changes(decode(*(json.dumps(m).encode() for m in (create, load, grown, load))))
    first, again = rows[1], rows[3]
    assert again["after"] == {"id": 1, "tier": None} and first["after"] == {"id": 1}
    assert first["event_id"] == again["event_id"]  # the same message: one event, whatever the decoder learnt


def test_stored_definitions_of_another_stream_do_not_type_this_streams_messages():
    """One lake, two tasks with the same table: the Kinesis run reads its own stream's stored version only
    (the S3 task declared `created` as an aware timestamp, the Kinesis `create-table` said DATETIME)."""
    from cdcnorm.adapters.base import FirstPass

    def version(stream: str, created: str, seen: dt.datetime) -> dict:
        return {"vendor": "dms", "stream": stream, "schema_version": f"dms-{stream}", "schema": "s", "table": "t",
                "first_seen": seen, "columns": [
                    {"name": "id", "canonical_type": "int", "ordinal": 1, "pk_position": 1},
                    {"name": "created", "canonical_type": created, "ordinal": 2, "pk_position": None}]}

    stored = [version("kinesis", "timestamp_ntz", dt.datetime(2024, 1, 1)),
              version("s3", "timestamp", dt.datetime(2024, 1, 2))]
    msg = {"data": {"id": 1, "created": "2024-01-03T10:00:00Z"}, "metadata": {
        "timestamp": "2024-01-03T10:00:01Z", "record-type": "data", "operation": "insert",
        "schema-name": "s", "table-name": "t", "transaction-id": 7}}
    for order in (stored, stored[::-1]):
        prepared = DmsAdapter({"stream": "kinesis"}).prepare(FirstPass(kind="messages", stored_schemas=order))
        out = BatchBuilder()
        out.begin_record("t", 0)
        prepared.decode_message(json.dumps(msg).encode(), MessageMeta(), out)
        row = changes(rows_of(out.flush()))[0]
        assert row["after"]["created"] == dt.datetime(2024, 1, 3, 10) and row["key"] == {"id": 1}
