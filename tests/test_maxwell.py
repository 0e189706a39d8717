"""Maxwell adapter: the contract on the samples, then decoding tests that check the values (no Spark)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest

from cdcnorm.adapters import adapter_class, names
from cdcnorm.adapters.base import MessageMeta
from cdcnorm.adapters.maxwell.adapter import MaxwellAdapter
from cdcnorm.canonical.emit import BatchBuilder
from cdcnorm.testing import AdapterContract
from decoded import changes, decode_files, outcomes, rows_of

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "maxwell"
ORDERS = SAMPLES / "kafka" / "shop.orders.jsonl"
REDELIVERED = SAMPLES / "kafka" / "shop.orders.redelivered.jsonl"
ITEMS = SAMPLES / "positioned" / "shop.items.jsonl"
BOOTSTRAP = SAMPLES / "bootstrap" / "shop.customers.jsonl"
DDL = SAMPLES / "ddl" / "schema-changes.jsonl"
ENCRYPTED = SAMPLES / "encrypted" / "shop.customers.jsonl"
KEY = "cdcnorm-sample-k"
ORDER_TYPES = {"id": "int", "customer": "varchar", "amount": "decimal(10,2)", "status": "enum", "tags": "set",
               "note": "varchar", "created": "datetime", "payload": "blob"}
OPTIONS = {"encryption_key": KEY, "keys": {"shop.customers": ["id"]},
           "column_types": {"shop.orders": ORDER_TYPES}}
UTC = dt.UTC


class TestMaxwellContract(AdapterContract):
    vendor = "maxwell"
    inputs = [str(SAMPLES)]
    options = OPTIONS
    message_file = str(ORDERS)


def read(*paths: Path, **options) -> list[dict]:
    return decode_files("maxwell", paths, **{**OPTIONS, **options})


def decode(*values: bytes, keys: list[bytes | None] | None = None, **options) -> list[dict]:
    """Decode raw messages as the pipeline's message input does."""
    adapter, out = MaxwellAdapter({**OPTIONS, **options}), BatchBuilder()
    for i, v in enumerate(values):
        out.begin_record("topic", i, partition="0", offset=str(i), raw=v)
        adapter.decode_message(v, MessageMeta(key=keys[i] if keys else None, topic="maxwell", partition="0",
                                              offset=str(i)), out)
    out.end_record()
    return rows_of(out.flush())


def lines(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


# -- row events ----------------------------------------------------------------------------------------------------
def test_rows_are_typed_from_the_declared_columns():
    rows = changes(read(ORDERS))
    assert [r["op"] for r in rows] == ["INSERT"] * 3 + ["UPDATE", "UPDATE", "DELETE"] + ["UPDATE"] * 3
    first = rows[0]
    assert first["after"] == {"id": 1, "customer": "ada", "amount": Decimal("10.00"), "status": "new",
                              "tags": ["gift"], "note": "first", "created": dt.datetime(2026, 3, 1, 10, 0, 0, 250000),
                              "payload": b"\x00\x01\x02\x03"}
    assert (first["database"], first["schema"], first["table"], first["source_db"]) == ("shop", None, "orders", "mysql")
    assert first["primary_keys"] == ["id"] and first["key"] == {"id": 1}
    assert first["source_ts"] == dt.datetime(2026, 3, 1, 10, 0, tzinfo=UTC)  # ts 1772359200 is seconds
    assert first["flags"] == [] and first["missing_columns"] == []


def test_update_before_image_is_data_overlaid_with_old():
    upd = changes(read(ORDERS))[3]
    assert upd["before"]["amount"] == Decimal("10.00") and upd["after"]["amount"] == Decimal("12.00")
    assert upd["before"]["customer"] == upd["after"]["customer"] == "ada"
    assert upd["changed_columns"] == ["amount"]
    # output_nulls off: `old` can miss a NULL -> value change, so the list is flagged as possibly incomplete
    assert upd["flags"] == ["changed_columns_partial"]
    assert "changed_columns_partial" not in read(ORDERS, output_nulls=True)[3]["flags"]


def test_a_column_only_in_old_became_null_and_an_absent_one_is_unknown():
    upd = changes(read(ORDERS))[4]
    assert upd["after"]["note"] is None and upd["before"]["note"] == "gift wrap"
    assert "payload" not in upd["after"] and "payload" not in upd["before"]  # absent from both: unknown, not NULL
    assert upd["missing_columns"] == ["payload"]


def test_without_declared_types_values_are_the_json_values_flagged():
    rows = changes(read(ORDERS, column_types={}))
    assert rows[0]["after"]["created"] == "2026-03-01 10:00:00.250000"
    assert rows[0]["after"]["amount"] == Decimal("10.00")
    assert rows[0]["flags"] == ["untyped_values"]
    assert rows[0]["missing_columns"] is None  # output_nulls off and no declared columns: unknown
    assert read(ORDERS, column_types={}, output_nulls=True)[0]["missing_columns"] == []


def test_transactions_from_xid_and_commit():
    rows = changes(read(ORDERS))
    assert [(r["tx_id"], r["tx_last"]) for r in rows[:3]] == [("1001", True), ("1002", False), ("1002", True)]
    assert all(r["position"] is None for r in rows)


def test_identical_change_twice_is_two_events_and_a_redelivered_file_adds_nothing():
    rows = changes(read(ORDERS))
    assert rows[6]["after"] == rows[8]["after"] and rows[6]["before"] == rows[8]["before"]
    assert rows[6]["event_id"] != rows[8]["event_id"]  # xid 1006 vs 1008, same second and images
    again = changes(read(REDELIVERED))
    assert {r["event_id"] for r in again} <= {r["event_id"] for r in rows}
    assert [r["sort_key"] for r in rows] == sorted(r["sort_key"] for r in rows)


def test_default_configuration_id_is_xid_second_and_row():
    """Without position: (xid, ts) and `commit` for a transaction's last row, the row itself for the others."""
    def event_id(msg, **change):
        return changes(decode(json.dumps({**msg, **change}).encode()))[0]["event_id"]

    last, inner = lines(ORDERS)[3], lines(ORDERS)[1]
    for msg in (last, inner):
        assert event_id(msg, xid=9999) != event_id(msg) != event_id(msg, ts=msg["ts"] + 1)
    assert event_id(last, old={"amount": 11}) == event_id(last)  # one commit row per transaction
    assert event_id(inner, data={**inner["data"], "note": "x"}) != event_id(inner)
    assert changes(decode(json.dumps(last).encode(), keys=[b'{"x":1}']))[0]["event_id"] == event_id(last)


def test_position_xoffset_gtid_and_camel_case_names():
    rows = changes(read(ITEMS))
    assert [r["primary_keys"] for r in rows] == [["sku"]] * 5
    assert [(r["tx_id"], r["tx_seq"], r["tx_last"]) for r in rows[:3]] == [
        ("1:2001", 0, False), ("1:2001", 1, False), ("1:2001", None, True)]
    assert rows[0]["position"] == "mysql-bin.000003:4711 gtid=3E11FA47-71CA-11E1-9E33-C80AA9429562:23"
    assert len({r["event_id"] for r in rows[:3]}) == 3  # one binlog event, three rows: xoffset / commit
    assert [r["sort_key"] for r in rows] == sorted(r["sort_key"] for r in rows)
    assert "unknown_position" not in rows[0]["flags"]


def test_naming_strategy_underscore_ignores_camel_case_keys():
    rows = changes(read(ITEMS, naming_strategy="underscore"))
    assert rows[0]["primary_keys"] is None and rows[0]["tx_id"] == "2001"


def test_kafka_key_names_the_primary_key():
    msg = json.dumps({"database": "d", "table": "t", "type": "insert", "ts": 1, "xid": 1, "commit": True,
                      "data": {"a": 1, "b": 2}}).encode()
    hashed = changes(decode(msg, keys=[b'{"database":"d","table":"t","pk.a":1}']))[0]
    array = changes(decode(msg, keys=[b'["d","t",[{"a":1}]]']))[0]
    assert hashed["primary_keys"] == array["primary_keys"] == ["a"] and hashed["key"] == {"a": 1}


def test_without_commit_info_the_row_is_its_identity():
    msg = {"database": "d", "table": "t", "type": "insert", "ts": 5, "data": {"a": 1}}
    row = changes(decode(json.dumps(msg).encode()))[0]
    assert "unknown_position" in row["flags"] and row["tx_id"] is None
    assert changes(decode(json.dumps({**msg, "ts": 6}).encode()))[0]["event_id"] != row["event_id"]


# -- bootstrap -----------------------------------------------------------------------------------------------------
def test_bootstrap_rows_are_snapshots_and_a_rerun_adds_nothing():
    rows = read(BOOTSTRAP)
    assert outcomes(rows).count(("metadata", "maxwell_bootstrap_marker")) == 4
    snaps = [r for r in changes(rows) if r["op"] == "SNAPSHOT"]
    assert [r["after"] for r in snaps] == [{"id": 1, "name": "ada"}, {"id": 2, "name": "bob"}] * 2
    assert [r["event_id"] for r in snaps[:2]] == [r["event_id"] for r in snaps[2:]]  # ts excluded from the id
    assert all(r["source_ts"] is None and r["capture_ts"] is not None and r["tx_id"] is None for r in snaps)
    log = [r for r in changes(rows) if r["op"] != "SNAPSHOT"]
    assert [(r["database"], r["table"]) for r in log] == [("maxwell", "bootstrap"), ("shop", "customers")]
    assert min(r["sort_key"] for r in log if r["table"] == "customers") > max(r["sort_key"] for r in snaps)


# -- DDL -----------------------------------------------------------------------------------------------------------
def test_ddl_events_with_millisecond_times_and_schema_versions():
    rows = read(DDL)
    ddl = changes(rows)
    assert [r["vendor_op"] for r in ddl] == ["database-create", "table-create", "table-alter", "table-drop"]
    assert all(r["op"] == "DDL" for r in ddl)
    assert ddl[1]["source_ts"] == dt.datetime(2026, 3, 1, 9, 56, 41, tzinfo=UTC)  # 1772359001000 ms
    assert ddl[0]["table"] is None and ddl[0]["database"] == "shop"
    assert ddl[2]["ddl_changes"] == [{"action": "add", "column": "price", "new_name": None, "type": "DECIMAL(10, 2)"}]
    assert ddl[2]["position"] == "mysql-bin.000003:900"
    versions = [json.loads(r["_schema"]) for r in rows if r["_kind"] == "schema"]
    assert [[c["name"] for c in v["columns"]] for v in versions] == [["sku", "qty"], ["sku", "qty", "price"]]
    assert versions[0]["columns"][0]["pk_position"] == 1
    assert versions[1]["columns"][2]["canonical_type"] == "decimal(10,2)"
    assert versions[1]["columns"][2]["vendor_type"] == "decimal(10,2)"
    assert ddl[2]["schema_version"] == versions[1]["schema_version"]


# -- encryption ----------------------------------------------------------------------------------------------------
def test_encrypted_messages_decrypt_with_the_key():
    rows = changes(read(ENCRYPTED))
    assert rows[0]["op"] == "UPDATE" and rows[0]["after"] == {"id": 7, "name": "eve"}
    assert rows[0]["before"] == {"id": 7, "name": "ev"} and rows[0]["tx_id"] == "4001"
    assert rows[1]["op"] == "INSERT" and rows[1]["after"] == {"id": 8, "name": "fay"} and rows[1]["key"] == {"id": 8}


def test_encrypted_messages_without_the_key_or_with_another_are_refused():
    without = read(ENCRYPTED, encryption_key=None)
    assert outcomes(without) == [("quarantine", "unsupported_format")] * 2
    assert "encryption_key" in without[0]["_message"]
    wrong = read(ENCRYPTED, encryption_key="0123456789abcdef")
    assert {o[0] for o in outcomes(wrong)} == {"quarantine"}


# -- refusals and detection ------------------------------------------------------------------------------------------
def test_bad_messages_are_quarantined_with_a_reason():
    rows = decode(b'{"database":"d","table":"t","type":"upsert","ts":1,"data":{}}', b"[1]", b"",
                  b'{"database":"d","table":"t","type":"insert","ts":1,"data":{"created":"x"}}',
                  column_types={"d.t": {"created": "datetime"}})
    assert outcomes(rows) == [("quarantine", "unknown_op"), ("quarantine", "bad_event"),
                              ("quarantine", "empty_message"), ("quarantine", "bad_value")]


def test_zero_dates_stay_text_flagged():
    msg = b'{"database":"d","table":"t","type":"insert","ts":1,"xid":1,"commit":true,"data":{"c":"0000-00-00 00:00:00"}}'
    row = changes(decode(msg, column_types={"d.t": {"c": "datetime"}}))[0]
    assert row["after"] == {"c": "0000-00-00 00:00:00"} and "timestamp_as_string" in row["flags"]


def test_samples_and_corpus_shapes_are_not_claimed_by_other_vendors():
    canal = (b'{"data":[{"id":"1"}],"database":"d","es":1,"id":1,"isDdl":false,"mysqlType":{"id":"int"},'
             b'"old":null,"pkNames":["id"],"sql":"","sqlType":{"id":4},"table":"t","ts":2,"type":"INSERT"}\n')
    assert not MaxwellAdapter.sniff(None, canal)
    for path in (ORDERS, ITEMS, BOOTSTRAP, DDL, ENCRYPTED):
        head = path.read_bytes()
        assert MaxwellAdapter.sniff(str(path), head)
        assert [n for n in names() if n != "maxwell" and adapter_class(n).sniff(str(path), head)] == []


@pytest.mark.parametrize("head", [
    b'{"before":null,"after":{"id":1},"source":{"connector":"mysql"},"op":"c"}',
    b'{"read_method":"mysql-cdc-binlog","source_metadata":{},"payload":{}}',
    b'{"data":{"id":1},"headers":{"operation":"INSERT","changeSequence":"1"}}',
])
def test_other_vendors_shapes_are_not_maxwell(head):
    assert not MaxwellAdapter.sniff(None, head)


def test_an_update_of_the_key_is_a_delete_and_an_insert():
    msg = (b'{"database":"shop","table":"customers","type":"update","ts":9,"xid":7,"commit":true,'
           b'"data":{"id":3,"name":"x"},"old":{"id":2}}')
    rows = changes(decode(msg))
    assert [(r["op"], r["key"], r["flags"]) for r in rows] == [
        ("DELETE", {"id": 2}, ["untyped_values", "changed_columns_partial", "key_change"]),
        ("INSERT", {"id": 3}, ["untyped_values", "changed_columns_partial", "key_change"])]
    assert rows[0]["before"] == {"id": 2, "name": "x"} and rows[1]["after"] == {"id": 3, "name": "x"}


@pytest.mark.slow  # test_simulate_maxwell's replay of the same encoder stays in the fast suite
def test_the_simulated_format_normalizes_and_applies_to_its_truth(spark, tmp_path):
    from cdcnorm.simulate.verify import build_lake, check_format
    from conftest import E2E_ROTATE, SMALL_HISTORY

    run = build_lake(spark, tmp_path / "sim", tmp_path / "lake", formats=("maxwell-json",), rotate=E2E_ROTATE,
                     **SMALL_HISTORY)
    report = run["reports"]["maxwell-json"]
    assert report["reconciled"] and report["outcomes"]["quarantined"] == 0
    assert report["outcomes"]["duplicate"] > 0  # redeliveries and the re-run bootstrap
    assert check_format(run["frames"], run["manifest"], "maxwell-json") == []


def test_with_output_nulls_on_a_column_only_in_old_was_not_captured():
    msg = (b'{"database":"d","table":"t","type":"update","ts":9,"xid":7,"commit":true,'
           b'"data":{"id":1,"a":null},"old":{"b":5}}')
    off, on = changes(decode(msg))[0], changes(decode(msg, output_nulls=True))[0]
    assert off["after"] == {"id": 1, "a": None, "b": None} and off["missing_columns"] is None
    assert on["after"] == {"id": 1, "a": None} and on["missing_columns"] == ["b"]
    assert on["before"] == {"id": 1, "a": None, "b": 5}
