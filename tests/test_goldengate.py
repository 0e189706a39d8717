"""GoldenGate adapter: the contract on the samples, then decoding tests that check the values (no Spark)."""

from __future__ import annotations

import datetime as dt
import io
import json
from decimal import Decimal
from pathlib import Path

import orjson
import pytest
from fastavro import parse_schema, schemaless_writer

from cdcnorm.adapters.base import MessageMeta
from cdcnorm.adapters.goldengate.adapter import GoldenGateAdapter
from cdcnorm.adapters.goldengate.avro import WRAPPER_SCHEMA, _fingerprints
from cdcnorm.adapters.goldengate.positions import pos_order
from cdcnorm.canonical.emit import BatchBuilder
from cdcnorm.testing import AdapterContract
from decoded import changes, decode_files, outcomes, rows_of

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "goldengate"
ORDERS = SAMPLES / "json" / "APP.ORDERS.jsonl"
INITIAL = SAMPLES / "json" / "initial_load.json"
ROWS = SAMPLES / "json_row" / "APP.CUSTOMERS.jsonl"
TX = SAMPLES / "kafka_tx" / "goldengate-tx.jsonl"
AVRO = SAMPLES / "avro" / "APP.PRODUCTS.avro"
SCHEMAS = SAMPLES / "avro" / "schemas"
ORDER_TYPES = {"APP.ORDERS": {"ORDER_ID": "bigint", "CUSTOMER": "string", "AMOUNT": "decimal(22,2)",
                              "STATUS": "string", "PLACED_AT": "timestamp_ntz", "SHIP_DATE": "date",
                              "NOTE": "string"}}
UTC = dt.UTC


class TestGoldenGateContract(AdapterContract):
    vendor = "goldengate"
    inputs = [str(SAMPLES)]
    options = {"column_types": ORDER_TYPES}
    message_file = str(TX)

    def test_row_modeled_key_change_is_flagged_by_post_process(self, rows):
        halves = sorted((r["op"], r["key"]) for r in rows
                        if r["format"] == "goldengate.json_row" and "key_change" in (r["flags"] or []))
        assert halves == [("DELETE", '{"CUST_ID":7}'), ("INSERT", '{"CUST_ID":8}')]


def read(*paths: Path, **options) -> list[dict]:
    return decode_files("goldengate", paths, **options)


def decode(*values: bytes | None, topic: str | None = None, **options) -> list[dict]:
    """Decode raw Kafka message values as the pipeline's message input does."""
    adapter = GoldenGateAdapter(options)
    out = BatchBuilder()
    for i, v in enumerate(values):
        out.begin_record(topic, i, partition="0", offset=str(i), raw=v)
        try:
            adapter.decode_message(v, MessageMeta(topic=topic, partition="0", offset=str(i)), out)
        except Exception as exc:  # the pipeline's message loop quarantines a DecodeError
            out.quarantine(exc.error_class, exc.message)
    out.end_record()
    return rows_of(out.flush())


def record(**fields) -> bytes:
    base = {"table": "APP.T", "op_type": "U", "op_ts": "2024-01-02 03:04:05.678901",
            "current_ts": "2024-01-02T03:04:07.000000", "pos": "00000000010000000100", "primary_keys": ["ID"]}
    return orjson.dumps({**base, **fields})


# -- operations and images -----------------------------------------------------------------------------------------
def test_orders_ops_keys_and_positions():
    rows = changes(read(ORDERS))
    assert [(r["op"], r["vendor_op"]) for r in rows] == [
        ("INSERT", "I"), ("INSERT", "I"), ("UPDATE", "U"), ("UPDATE", "U"), ("UPDATE", "U"), ("DELETE", "U"),
        ("INSERT", "U"), ("DELETE", "D"), ("TRUNCATE", "T")]
    first = rows[0]
    assert (first["database"], first["schema"], first["table"]) == (None, "APP", "ORDERS")
    assert first["position"] == "00000000070000001200" and first["stream"] == "goldengate"
    assert first["key"] == {"ORDER_ID": 1001} and first["primary_keys"] == ["ORDER_ID"]
    assert first["after"]["AMOUNT"] == Decimal("12.50") and first["after"]["NOTE"] is None
    assert rows[1]["after"]["AMOUNT"] == Decimal("99999999999999999999.99")  # beyond a double: exact
    assert rows[2]["changed_columns"] == ["STATUS"] and rows[2]["before"]["STATUS"] == "NEW"
    assert rows[-1]["table"] == "AUDIT_LOG" and rows[-1]["before"] is None and rows[-1]["after"] is None


def test_empty_before_is_unknown_never_an_empty_row():
    upd = changes(read(ORDERS))[3]
    assert upd["before"] is None and "before_unknown" in upd["flags"]
    assert upd["after"]["STATUS"] == "PAID" and upd["changed_columns"] is None
    for before in (None, {}):
        (row,) = changes(decode(record(before=before, after={"ID": 1, "V": 2})))
        assert row["op"] == "UPDATE" and row["before"] is None and "before_unknown" in row["flags"]
    (row,) = changes(decode(record(after={"ID": 1, "V": 2})))  # no `before` key at all
    assert row["before"] is None and "before_unknown" in row["flags"]


def test_compressed_update_is_a_partial_image():
    upd = changes(read(ORDERS))[4]
    assert upd["before"] == {"ORDER_ID": 1001, "STATUS": "PAID"}
    assert upd["after"] == {"ORDER_ID": 1001, "STATUS": "SHIPPED"}  # absent columns are not NULL
    assert upd["missing_columns"] is None  # the table's columns are not known: unknown, not "none missing"
    typed = changes(read(ORDERS, column_types=ORDER_TYPES))[4]
    assert typed["missing_columns"] == ["CUSTOMER", "AMOUNT", "PLACED_AT", "SHIP_DATE", "NOTE"]
    assert "untyped_values" not in typed["flags"]


def test_key_change_inside_one_update_is_the_canonical_pair():
    rows = changes(read(ORDERS))
    old, new = rows[5], rows[6]
    assert (old["op"], new["op"]) == ("DELETE", "INSERT")
    assert "key_change" in old["flags"] and "key_change" in new["flags"]
    assert old["key"] == {"ORDER_ID": 1002} and new["key"] == {"ORDER_ID": 2002}
    assert old["before"]["NOTE"] == "line\nbreak" and old["after"] is None
    assert new["after"] == {"ORDER_ID": 2002, "NOTE": "renumbered"} and new["before"] is None
    assert old["position"] == new["position"] == "00000000080000000042"
    assert old["sort_key"] < new["sort_key"] and old["event_id"] != new["event_id"]


def test_op_letters_are_configurable():
    letters = {"insert_op_key": "ins", "update_op_key": "upd", "delete_op_key": "del", "truncate_op_key": "tr"}
    rows = [decode(record(op_type=k, before={"ID": 1, "V": 0}, after={"ID": 1, "V": 1}), **letters)
            for k in ("ins", "upd", "del", "tr")]
    assert [changes(r)[0]["op"] for r in rows] == ["INSERT", "UPDATE", "DELETE", "TRUNCATE"]
    assert outcomes(decode(record(op_type="I", after={"ID": 1}), **letters)) == [("quarantine", "unknown_op")]


def test_default_letters_and_unknown_op():
    assert outcomes(decode(record(op_type="X", after={"ID": 1}))) == [("quarantine", "unknown_op")]
    assert outcomes(decode(record(op_type="INSERT", after={"ID": 1}))) == [("quarantine", "unknown_op")]


def test_delete_needs_a_before_image():
    assert outcomes(decode(record(op_type="D", before={}, after=None))) == [("quarantine", "bad_event")]
    (row,) = changes(decode(record(op_type="D", before={"ID": 4}, after=None)))
    assert row["op"] == "DELETE" and row["key"] == {"ID": 4}


def test_row_modeled_records():
    rows = changes(read(ROWS))
    assert [r["op"] for r in rows] == ["INSERT", "UPDATE", "DELETE", "INSERT", "DELETE", "TRUNCATE"]
    assert {r["format"] for r in rows} == {"goldengate.json_row"}
    assert rows[0]["after"] == {"CUST_ID": 7, "NAME": "Łukasz", "CITY": "北京", "BALANCE": Decimal("10.5")}
    assert rows[1]["before"] is None and "before_unknown" in rows[1]["flags"]
    assert rows[2]["before"]["CITY"] == "東京タワー" and rows[2]["after"] is None


def test_row_modeled_delete_insert_at_one_pos_is_a_key_change_pair():
    rows = changes(read(ROWS))
    old, new = rows[2], rows[3]
    assert old["position"] == new["position"] and old["event_id"] != new["event_id"]
    assert old["sort_key"] < new["sort_key"]  # the delete first
    assert old["_pair"] == new["_pair"] and (old["_pair_role"], new["_pair_role"]) == ("delete", "insert")
    assert rows[4]["_pair"] != old["_pair"]  # post_process flags both halves key_change (the contract checks)
    assert rows[0]["capture_ts"] == dt.datetime(2024, 3, 5, 10, 0, 1, 500000, tzinfo=UTC)


def test_pretty_printed_initial_load_is_an_insert_before_every_trail_position():
    (load,) = changes(read(INITIAL))
    assert load["op"] == "INSERT" and load["position"] == "00000000-10000000311"
    assert load["after"]["NOTE"] == "tab\there"
    first = changes(read(ORDERS))[0]
    assert load["sort_key"] < first["sort_key"]


# -- pos: opaque in identity, ordered across its forms ---------------------------------------------------------
@pytest.mark.parametrize(("pos", "parts"), [
    ("00000000050078524159", (0, 5, 78524159)),
    ("00002564940142073691", (0, 256494, 142073691)),
    ("00000000-10000009626", (0, -1, 9626)),
    ("00000000-10012956694", (0, -1, 12956694)),
    ("00000000000000000000143", (0, 0, 143)),
    ("00000000000000000000", (0, 0, 0)),
    ("abc", (1, 0, 0)),
    ("12-34", (1, 0, 0)),
])
def test_pos_forms(pos, parts):
    assert pos_order(pos)[:3] == parts and pos_order(pos)[3] == pos


def test_pos_order_within_and_across_forms():
    ordered = ["00000000-10000009626", "00000000-10012956694", "00000000000000000000143",
               "00000000000000000144", "00000000010000000000", "00000000050078524159", "00000000110000000001",
               "00002564940142073691", "not-a-position"]
    rows = [changes(decode(record(op_type="I", pos=p, after={"ID": i})))[0] for i, p in enumerate(ordered)]
    assert [r["position"] for r in sorted(rows, key=lambda r: r["sort_key"])] == ordered
    assert sorted(ordered[:-1], key=pos_order) == ordered[:-1]


def test_identity_is_table_and_pos_never_current_ts():
    a = changes(decode(record(after={"ID": 1, "V": 1})))[0]
    replay = changes(decode(record(after={"ID": 1, "V": 1}, current_ts="2030-01-01T00:00:00.000000")))[0]
    assert a["event_id"] == replay["event_id"] and a["sort_key"] == replay["sort_key"]
    assert a["capture_ts"] != replay["capture_ts"]
    other = changes(decode(record(after={"ID": 1, "V": 1}, pos="00000000010000000101")))[0]
    assert other["event_id"] != a["event_id"]
    elsewhere = changes(decode(record(after={"ID": 1, "V": 1}, table="APP.U")))[0]
    assert elsewhere["event_id"] != a["event_id"]


def test_without_pos_identity_is_the_row_and_op_ts():
    one = changes(decode(record(op_type="I", pos=None, after={"ID": 1})))[0]
    again = changes(decode(record(op_type="I", pos=None, after={"ID": 1}, current_ts="2031-01-01 00:00:00")))[0]
    later = changes(decode(record(op_type="I", pos=None, after={"ID": 1}, op_ts="2024-01-02 03:04:06.000000")))[0]
    assert "unknown_position" in one["flags"] and one["position"] is None
    assert one["event_id"] == again["event_id"] != later["event_id"]


# -- times -------------------------------------------------------------------------------------------------------
def test_op_ts_is_the_source_time_in_the_configured_zone():
    (utc,) = changes(decode(record(after={"ID": 1})))
    assert utc["source_ts"] == dt.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    (ny,) = changes(decode(record(after={"ID": 1}), time_zone="America/New_York"))
    assert ny["source_ts"] == dt.datetime(2024, 1, 2, 8, 4, 5, 678901, tzinfo=UTC)
    assert ny["capture_ts"] == dt.datetime(2024, 1, 2, 8, 4, 7, tzinfo=UTC)
    (host,) = changes(decode(record(after={"ID": 1}), time_zone="America/New_York", current_ts_zone="UTC"))
    assert host["capture_ts"] == dt.datetime(2024, 1, 2, 3, 4, 7, tzinfo=UTC)
    assert ny["event_id"] == utc["event_id"]  # the zone reads the time; the identity is the position


def test_old_colon_time_form_and_missing_current_ts():
    (row,) = changes(decode(record(after={"ID": 1}, op_ts="1993-11-03:07:51:35", current_ts=None)))
    assert row["source_ts"] == dt.datetime(1993, 11, 3, 7, 51, 35, tzinfo=UTC) and row["capture_ts"] is None


# -- declared column types ---------------------------------------------------------------------------------------
def test_declared_types_read_goldengate_text():
    rows = changes(read(ORDERS, column_types=ORDER_TYPES))
    after = rows[0]["after"]
    assert after["PLACED_AT"] == dt.datetime(2024, 3, 4, 9, 15, 0, 123456)  # nine digits, exact in µs
    assert after["SHIP_DATE"] == dt.date(2024, 3, 9) and after["AMOUNT"] == Decimal("12.50")
    types = {"APP.T": {"ID": "int", "TS": "timestamp_ntz", "AT": "timestamp", "B": "binary", "F": "double",
                       "OK": "boolean", "N": "decimal(10,3)"}}
    (row,) = changes(decode(record(op_type="I", after={
        "ID": "7", "TS": "2017-08-23 20:35:49.421000001", "AT": "2024-06-01 12:00:00", "B": "AAEC", "F": 1.5,
        "OK": 1, "N": "2.5"}), column_types=types, time_zone="Europe/Berlin"))
    assert row["after"] == {"ID": 7, "TS": "2017-08-23 20:35:49.421000001",
                            "AT": dt.datetime(2024, 6, 1, 10, 0, tzinfo=UTC), "B": b"\x00\x01\x02", "F": 1.5,
                            "OK": True, "N": Decimal("2.500")}
    assert "timestamp_as_string" in row["flags"]  # nanoseconds a timestamp cannot hold: kept as text
    assert outcomes(decode(record(op_type="I", after={"ID": "x"}), column_types=types)) == [
        ("quarantine", "bad_value")]


# -- Kafka handler transaction mode --------------------------------------------------------------------------------
def test_tx_mode_message_is_split_into_its_operations():
    value = TX.read_bytes().splitlines()[0]
    rows = decode(value)
    assert outcomes(rows) == [("change", None)]
    ops = changes(rows)
    assert [r["op"] for r in ops] == ["INSERT", "INSERT", "UPDATE"]
    assert {r["tx_id"] for r in ops} == {"pos:00000000150000004000"}
    assert [(r["tx_seq"], r["tx_last"]) for r in ops] == [(1, False), (2, False), (3, True)]
    assert ops[2]["before"] == {"ITEM_ID": 1, "QTY": 3} and ops[2]["after"] == {"ITEM_ID": 1, "QTY": 4}
    by_file = changes(read(TX))
    assert [r["event_id"] for r in by_file[:3]] == [r["event_id"] for r in ops]


def test_tx_mode_message_with_a_bad_operation_is_refused_whole():
    value = record(op_type="I", after={"ID": 1}) + b"\n" + record(op_type="Q", after={"ID": 2})
    assert outcomes(decode(value)) == [("quarantine", "unknown_op")]
    assert changes(decode(value)) == []


def test_tokens_can_name_the_transaction():
    (row,) = changes(decode(record(after={"ID": 1}, tokens={"TXID": "42.7.1234"}), tx_token="TXID"))
    assert row["tx_id"] == "42.7.1234"


# -- Avro op formatter ---------------------------------------------------------------------------------------------
def test_avro_container_file_with_is_missing():
    rows = changes(read(AVRO))
    assert [r["op"] for r in rows] == ["INSERT", "UPDATE", "DELETE"]
    assert {r["format"] for r in rows} == {"goldengate.avro_op"}
    ins, upd, _ = rows
    assert ins["after"] == {"PRODUCT_ID": 1, "NAME": "Straße", "PRICE": Decimal("19.90"),
                            "UPDATED": "2024-03-07:08:00:00"}
    assert ins["missing_columns"] == [] and ins["flags"] == []
    assert upd["after"] == {"PRODUCT_ID": 1, "PRICE": Decimal("17.50")}
    assert upd["missing_columns"] == ["NAME", "UPDATED"] and upd["changed_columns"] == ["PRICE"]


def _avro_records() -> tuple[dict, list[dict]]:
    schema = json.loads((SCHEMAS / "APP.PRODUCTS.avsc").read_text())
    from fastavro import reader

    with open(AVRO, "rb") as fh:
        return schema, list(reader(fh))


def test_avro_messages_plain_and_wrapped():
    schema, recs = _avro_records()
    buf = io.BytesIO()
    schemaless_writer(buf, parse_schema(schema), recs[0])
    plain = buf.getvalue()
    rows = changes(decode(plain, topic="APP.PRODUCTS", avro_schemas=str(SCHEMAS)))
    assert rows[0]["after"]["NAME"] == "Straße" and rows[0]["format"] == "goldengate.avro_op"
    wrapped = io.BytesIO()
    schemaless_writer(wrapped, parse_schema(WRAPPER_SCHEMA), {
        "table_name": "APP.PRODUCTS", "schema_fingerprint": _fingerprints(schema)[0], "payload": plain})
    again = changes(decode(wrapped.getvalue(), topic="oggtopic", avro_schemas=str(SCHEMAS)))
    assert again[0]["event_id"] == rows[0]["event_id"]
    assert outcomes(decode(plain, topic="APP.PRODUCTS")) == [("quarantine", "missing_schema")]


# -- detection -----------------------------------------------------------------------------------------------------
def test_sniff_takes_goldengate_and_not_lookalikes():
    assert GoldenGateAdapter.sniff(None, ORDERS.read_bytes()[:4096])
    assert GoldenGateAdapter.sniff(None, AVRO.read_bytes()[:4096])
    confluent = b'{"table":"ORCL.C","op_type":"I","op_ts":"1","current_ts":"2","scn":"1","row_id":"AAA","ID":1}'
    assert not GoldenGateAdapter.sniff(None, confluent)  # Confluent's Oracle CDC connector: no `pos`
    dbz = b'{"before":null,"after":{"id":1},"source":{"connector":"mysql"},"op":"c","ts_ms":1}'
    assert not GoldenGateAdapter.sniff(None, dbz)


def test_wide_decimals_keep_every_digit():
    types = {"APP.T": {"ID": "int", "BIG": "decimal(60,20)"}}
    (row,) = changes(decode(b'{"table":"APP.T","op_type":"I","op_ts":"2024-01-02 03:04:05","pos":"00000000010000000100",'
                            b'"after":{"ID":1,"BIG":19255060800167042919.85693523793079722859}}', column_types=types))
    assert row["after"]["BIG"] == "19255060800167042919.85693523793079722859"  # > 38 digits: exact text
    assert "decimal_as_string" in row["flags"]
    (row,) = changes(decode(record(op_type="I", after={"ID": 1, "BIG": 5}), column_types=types))
    assert str(row["after"]["BIG"]) == "5.00000000000000000000"


def test_declared_types_pass_avro_typed_values_through():
    from cdcnorm.adapters.goldengate.positions import zone
    from cdcnorm.adapters.goldengate.values import TableTypes

    types = TableTypes({"TS": "timestamp_ntz", "D": "date", "B": "binary", "N": "decimal(5,2)"}, zone("UTC"), "base64")
    at = dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    got = types.image({"TS": at, "D": dt.date(2024, 1, 2), "B": b"\x00", "N": Decimal("1.5")}, [])
    assert got == {"TS": at, "D": dt.date(2024, 1, 2), "B": b"\x00", "N": Decimal("1.50")}


def test_schema_versions_from_declared_types_and_the_avro_schema():
    rows = read(ORDERS, column_types=ORDER_TYPES)
    (sv,) = [json.loads(r["_schema"]) for r in rows if r["_kind"] == "schema"]
    assert (sv["schema"], sv["table"]) == ("APP", "ORDERS") and sv["schema_version"].startswith("declared:")
    assert [(c["name"], c["canonical_type"], c["pk_position"]) for c in sv["columns"]][:3] == [
        ("ORDER_ID", "bigint", 1), ("CUSTOMER", "string", None), ("AMOUNT", "decimal(22,2)", None)]
    (av,) = [json.loads(r["_schema"]) for r in read(AVRO) if r["_kind"] == "schema"]
    assert [(c["name"], c["canonical_type"]) for c in av["columns"]] == [
        ("PRODUCT_ID", "bigint"), ("NAME", "string"), ("PRICE", "decimal(10,2)"), ("UPDATED", "string")]
    assert not [r for r in read(ORDERS) if r["_kind"] == "schema"]  # nothing declared: no version


def test_avro_text_columns_take_their_declared_type_in_the_version():
    rows = read(AVRO, column_types={"APP.PRODUCTS": {"UPDATED": "string", "PRICE": "decimal(10,2)"}})
    (av,) = [json.loads(r["_schema"]) for r in rows if r["_kind"] == "schema"]
    assert av["schema_version"].startswith("avro:") and "+declared:" in av["schema_version"]
    rows = read(AVRO, column_types={"APP.PRODUCTS": {"UPDATED": "date"}})
    assert outcomes(rows)[0] == ("quarantine", "bad_value")  # `2024-03-07:08:00:00` is not a date
