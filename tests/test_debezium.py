"""Debezium adapter: the contract on the samples, then decoding tests that check the values (no Spark)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import orjson
import pytest

from cdcnorm.adapters.base import MessageMeta
from cdcnorm.adapters.debezium import positions
from cdcnorm.adapters.debezium.adapter import DebeziumAdapter
from cdcnorm.adapters.debezium.envelope import parse_json
from cdcnorm.canonical.emit import BatchBuilder
from cdcnorm.testing import AdapterContract
from decoded import changes, decode_files, outcomes, rows_of

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "debezium"
MYSQL = SAMPLES / "sink" / "topics" / "dbserver1.inventory.customers" / "partition=0" / \
    "dbserver1.inventory.customers+0+0000000000.json"
PG = SAMPLES / "kcat" / "pg_orders.jsonl"
MONGO = SAMPLES / "kcat" / "mongo_customers.jsonl"
SQLSERVER = SAMPLES / "sqlserver" / "server1.jsonl"
AVRO = SAMPLES / "sink" / "topics" / "pgavro.public.items" / "partition=0" / "pgavro.public.items+0+0000000000.avro"
FRAMED = SAMPLES / "confluent" / "pgavro.public.items-0-5.bin"
FLAT = SAMPLES / "malformed" / "flattened.jsonl"
SPARK_DUMP = SAMPLES / "spark-kafka" / "pg.avro"
OPTIONS = {"keys": {"testDB.dbo.items": ["id"]},
           "schema_registry": str(SAMPLES / "registry"), "decimal_handling": "string",
           "column_types": {"public.orders": {"amount": "decimal(10,2)"}}}
UTC = dt.UTC


class TestDebeziumContract(AdapterContract):
    vendor = "debezium"
    inputs = [str(SAMPLES)]
    options = OPTIONS
    message_file = str(MYSQL)


def read(*paths: Path, **options) -> list[dict]:
    return decode_files("debezium", paths, **{**OPTIONS, **options})


def decode(*values: bytes | None, msg_keys: list | None = None, topic: str | None = None, headers=None,
           partition: str = "0", adapter: DebeziumAdapter | None = None, **options) -> list[dict]:
    """Decode raw Kafka messages (value, key) as the pipeline's message input does."""
    adapter = adapter or DebeziumAdapter({**OPTIONS, **options})
    out = BatchBuilder()
    for i, v in enumerate(values):
        out.begin_record(topic, i, partition=partition, offset=str(i), raw=v)
        key = msg_keys[i] if msg_keys else None
        adapter.decode_message(v, MessageMeta(key=key, topic=topic, partition=partition, offset=str(i),
                                              headers=headers), out)
    out.end_record()
    return rows_of(out.flush())


@pytest.fixture(scope="module")
def mysql() -> list[dict]:
    return read(MYSQL)


@pytest.fixture(scope="module")
def pg() -> list[dict]:
    return read(PG)


# -- ops, values, snapshot ---------------------------------------------------------------------------------------
def test_mysql_outcomes_and_ops(mysql):
    assert outcomes(mysql) == [("change", None)] * 5 + [("filtered", "debezium_tombstone"), ("change", None)]
    assert [r["op"] for r in changes(mysql)] == ["SNAPSHOT", "SNAPSHOT", "INSERT", "UPDATE", "DELETE", "INSERT"]


def test_snapshot_values_are_typed_exactly(mysql):
    ann = changes(mysql)[0]
    assert ann["op"] == "SNAPSHOT" and ann["vendor_op"] == "r"
    assert ann["after"] == {"id": 1, "name": "Ann", "balance": Decimal("100.50"),
                            "created": dt.datetime(2024, 6, 15, 21, 20, 0, 123456),
                            "updated_at": dt.datetime(2024, 6, 15, 21, 20, 0, 123456, tzinfo=UTC)}
    assert ann["database"] == "inventory" and ann["schema"] is None and ann["table"] == "customers"
    assert ann["source_db"] == "mysql" and ann["stream"] == "dbserver1"
    assert ann["key"] == {"id": 1} and ann["primary_keys"] == ["id"]
    assert ann["position"] == "mysql-bin.000003:154:0"
    assert ann["source_ts"] == dt.datetime(2024, 6, 15, 21, 20, tzinfo=UTC)
    assert ann["capture_ts"] == dt.datetime(2024, 6, 15, 21, 20, 0, 250000, tzinfo=UTC)
    bob = changes(mysql)[1]
    assert bob["after"]["balance"] == Decimal("-7.25") and bob["position"] == ann["position"]
    assert bob["event_id"] != ann["event_id"]  # one snapshot position, two rows: distinct by row


def test_update_and_transaction_block(mysql):
    upd = changes(mysql)[3]
    assert upd["before"]["balance"] == Decimal("0.10") and upd["after"]["balance"] == Decimal("12345678.90")
    assert upd["changed_columns"] == ["balance"]
    assert upd["tx_id"] == "0e4d5dcd-a5f1-11ee-9a2e-0242ac120002:8" and upd["tx_seq"] == 1


def test_every_snapshot_marker_is_a_snapshot():
    line = json.loads(MYSQL.read_text().splitlines()[2])
    for marker in ("true", "first", "last", "first_in_data_collection", "last_in_data_collection", "incremental", True):
        ev = json.loads(json.dumps(line))
        ev["payload"]["op"] = "r"
        ev["payload"]["source"]["snapshot"] = marker
        assert changes(decode(orjson.dumps(ev)))[0]["op"] == "SNAPSHOT", marker
    ev = json.loads(json.dumps(line))
    ev["payload"]["source"]["snapshot"] = "true"  # old MySQL: snapshot rows as creates
    assert changes(decode(orjson.dumps(ev)))[0]["op"] == "SNAPSHOT"
    ev["payload"]["source"]["snapshot"] = "false"
    assert changes(decode(orjson.dumps(ev)))[0]["op"] == "INSERT"


def test_unknown_op_is_quarantined():
    ev = json.loads(MYSQL.read_text().splitlines()[2])
    ev["payload"]["op"] = "x"
    assert outcomes(decode(orjson.dumps(ev))) == [("quarantine", "unknown_op")]


# -- identity ------------------------------------------------------------------------------------------------------
def test_insert_delete_insert_of_one_row_is_two_events_and_the_row_exists(mysql):
    rows = changes(mysql)
    inserts = [r for r in rows if r["op"] == "INSERT"]
    assert len(inserts) == 2 and inserts[0]["after"] == inserts[1]["after"]
    assert inserts[0]["event_id"] != inserts[1]["event_id"]
    state: dict = {}
    for r in sorted(rows, key=lambda r: r["sort_key"]):
        k = r["key"]["id"]
        if r["op"] == "DELETE":
            state.pop(k, None)
        else:
            state[k] = r["after"]
    assert sorted(state) == [1, 2, 3] and state[3]["name"] == "Cy" and state[3]["balance"] == Decimal("0.10")


def test_redelivery_after_restart_keeps_the_event_id(mysql):
    line = MYSQL.read_text().splitlines()[3]
    again = json.loads(line)
    again["payload"]["ts_ms"] += 99_000  # the connector processed it again, later
    first = changes(decode(line.encode(), partition="0"))[0]
    second = changes(decode(orjson.dumps(again), partition="3"))[0]
    assert first["event_id"] == second["event_id"] == changes(mysql)[3]["event_id"]


def test_event_ids_from_files_and_messages_agree(mysql):
    lines = [ln.encode() for ln in MYSQL.read_text().splitlines()]
    by_message = [r["event_id"] for r in changes(decode(*lines))]
    assert by_message == [r["event_id"] for r in changes(mysql)]


def test_keys_from_the_sink_key_file_else_the_option_else_none():
    assert [r["key"] for r in changes(read(MYSQL))] == [{"id": i} for i in (1, 2, 3, 3, 3, 3)]
    lines = [ln.encode() for ln in MYSQL.read_text().splitlines()]
    assert {r["primary_keys"] is None for r in changes(decode(*lines))} == {True}  # messages without keys
    keyed = changes(decode(*lines, **{"keys": {"inventory.customers": ["id"]}}))
    assert [r["key"] for r in keyed] == [{"id": i} for i in (1, 2, 3, 3, 3, 3)]
    by_key = changes(decode(*lines, msg_keys=[b'{"id":%d}' % i for i in (1, 2, 3, 3, 3, 3, 3)]))
    assert [r["primary_keys"] for r in by_key] == [["id"]] * 6


def test_tombstones_are_counted_filters():
    rows = decode(None, b"", b'{"schema":null,"payload":null}')
    assert outcomes(rows) == [("filtered", "debezium_tombstone")] * 3


# -- PostgreSQL: TOAST, replica identity, transactions, key changes -------------------------------------------------
def test_toast_placeholder_is_a_missing_column(pg):
    upd = [r for r in changes(pg) if r["op"] == "UPDATE"][0]
    assert upd["after"] == {"id": 3, "amount": Decimal("31.00")} and upd["missing_columns"] == ["note"]
    assert upd["before"] is None and "untyped_values" in upd["flags"]


def test_replica_identity_default_delete_keeps_the_key_only(pg):
    d = [r for r in changes(pg) if r["op"] == "DELETE" and r["key"] == {"id": 2}][0]
    assert d["before"] == {"id": 2} and d["missing_columns"] == ["note", "amount"]


def test_transaction_rows_and_data_tx_ids(pg):
    rows = changes(pg)
    begin = [r for r in rows if r["op"] == "TX_BEGIN"][0]
    end = [r for r in rows if r["op"] == "TX_COMMIT"][0]
    assert begin["tx_id"] == end["tx_id"] == "571" and end["tx_last"] is True
    assert begin["stream"] == end["stream"] == "pg"
    assert end["after"]["event_count"] == 3
    assert end["after"]["data_collections"] == [{"data_collection": "public.orders", "event_count": 3}]
    data = [r for r in rows if r["tx_id"] == "571" and r["op"] in ("INSERT", "UPDATE", "DELETE")]
    assert [r["tx_seq"] for r in data] == [1, 2, 3]


def test_primary_key_change_is_a_linked_pair(pg):
    halves = [r for r in changes(pg) if "key_change" in r["flags"]]
    assert [(r["op"], r["key"]) for r in halves] == [("DELETE", {"id": 1}), ("INSERT", {"id": 10})]
    assert halves[0]["position"] == halves[1]["position"] and halves[0]["sort_key"] < halves[1]["sort_key"]


def test_logical_message_and_heartbeat(pg):
    assert ("filtered", "debezium_logical_message") in outcomes(pg)
    beat = [r for r in changes(pg) if r["op"] == "HEARTBEAT"][0]
    assert beat["stream"] == "pg" and beat["capture_ts"] == dt.datetime(2024, 6, 15, 22, 26, 40, tzinfo=UTC)


def test_snapshot_then_streaming_order(pg):
    rows = [r for r in changes(pg) if r["table"] == "orders"]
    ordered = sorted(rows, key=lambda r: r["sort_key"])
    assert [r["op"] for r in ordered[:2]] == ["SNAPSHOT", "SNAPSHOT"]
    assert rows[0]["source_ts"] == dt.datetime(2024, 6, 15, 22, 20, 0, 123, tzinfo=UTC)  # ts_us kept


# -- MongoDB, SQL Server, Avro ---------------------------------------------------------------------------------------
def test_mongodb_documents_and_keys():
    rows = changes(read(MONGO))
    ins, upd, dele = rows
    assert ins["after"] == {"_id": "6650a0f1c2d3e4f5a6b7c8d9", "name": "Dee", "visits": 9007199254740993,
                            "since": dt.datetime(2024, 6, 15, 21, 20, 0, 123000, tzinfo=UTC),
                            "score": Decimal("12.340")}
    assert ins["primary_keys"] == ["_id"] and ins["key"] == {"_id": "6650a0f1c2d3e4f5a6b7c8d9"}
    assert upd["changed_columns"] == ["name"] and upd["after"]["name"] == "Dee B."
    assert dele["op"] == "DELETE" and dele["before"] == {"_id": "6650a0f1c2d3e4f5a6b7c8d9"}


def test_sqlserver_schema_change_and_positions():
    rows = read(SQLSERVER)
    ddl, upd = changes(rows)
    assert ddl["op"] == "DDL" and ddl["table"] == "items" and ddl["schema"] == "dbo" and ddl["database"] == "testDB"
    versions = [json.loads(r["_schema"]) for r in rows if r["_kind"] == "schema"]
    created = [v for v in versions if v["schema_version"] == ddl["schema_version"]][0]
    assert [(c["name"], c["canonical_type"], c["pk_position"]) for c in created["columns"]] == [
        ("id", "int", 1), ("price", "decimal(12,3)", None)]
    assert upd["after"] == {"id": 7, "price": Decimal("-1234.005")}
    assert upd["position"] == "00000025:00000d10:0003/00000025:00000d10:0002"


def test_avro_container_and_registry_framed_messages():
    rows = changes(read(AVRO, FRAMED))
    assert [r["op"] for r in rows] == ["SNAPSHOT", "INSERT", "UPDATE"]
    assert rows[0]["after"] == {"id": 1, "price": Decimal("9.99"), "seen": dt.datetime(2024, 6, 15, 22, 53, 20, 1)}
    assert rows[1]["after"] == {"id": 2, "price": None, "seen": None}
    assert rows[2]["format"] == "debezium.avro_registry" and rows[2]["after"]["price"] == Decimal("10.01")
    missing = decode(FRAMED.read_bytes(), schema_registry=None)
    assert outcomes(missing) == [("quarantine", "schema_not_found")]


def test_flattened_rows_are_refused_with_the_reason():
    rows = read(FLAT)
    assert outcomes(rows) == [("quarantine", "unsupported_format")]
    assert "ExtractNewRecordState" in rows[0]["_message"]


def test_other_files_are_refused(tmp_path):
    p = tmp_path / "x.bin"
    p.write_bytes(b"PK\x03\x04 not a dump")
    rows = decode_files("debezium", [p])
    assert outcomes(rows) == [("quarantine", "unknown_format")]


# -- positions, placeholders, schemas -------------------------------------------------------------------------------
def test_flink_cdc_placeholders_are_unknown():
    ev = json.loads(MYSQL.read_text().splitlines()[2])["payload"]
    ev["source"].update(file="", pos=0, ts_ms=0)
    ev["ts_ms"] = 0
    row = changes(decode(orjson.dumps(ev)))[0]
    assert row["position"] is None and row["source_ts"] is None and row["capture_ts"] is None
    assert "unknown_position" in row["flags"]


def test_positions_order_numerically():
    pg = positions.postgresql
    assert pg({"sequence": '["900","1200"]'}).sort < pg({"sequence": '["1000","1100"]'}).sort
    ss = positions.sqlserver
    assert ss({"commit_lsn": "0000000a:00000001:0001", "change_lsn": "0000000a:00000001:0001",
               "event_serial_no": 2}).sort > ss({"commit_lsn": "00000009:ffffffff:0001",
                                                 "change_lsn": "00000009:ffffffff:0001", "event_serial_no": 1}).sort
    ora = positions.oracle
    assert ora({"scn": "99999999999999999999", "commit_scn": "100000000000000000000"}).sort > ora(
        {"scn": "9", "commit_scn": "10"}).sort
    my = positions.mysql
    assert my({"file": "mysql-bin.000010", "pos": 4, "row": 0}).sort > my({"file": "mysql-bin.000009", "pos": 9000,
                                                                          "row": 3}).sort
    assert positions.mongodb({"ts_ms": 1718486400000, "ord": 2}).sort == (1718486400, 2)


def test_one_schema_text_is_parsed_once():
    line = MYSQL.read_text().splitlines()[2].encode()
    first, second = parse_json(line), parse_json(line)
    assert first[1] is second[1] and first[2] == second[2]
    assert first[0]["op"] == "c"


def test_key_change_without_headers_is_linked_by_position(spark):
    from cdcnorm.ingest.pipeline import normalize

    lines = [json.loads(ln) for ln in PG.read_text().splitlines()]
    halves = [ln for ln in lines if ln["headers"]]  # the delete of id 1 and the create of id 10, one LSN
    rows = [(ln["key"].encode(), ln["payload"].encode(), ln["topic"], "0", str(ln["offset"])) for ln in halves]
    plain = [ln for ln in lines if ln["offset"] in (2, 4) and ln["topic"] == "pg.public.orders"]  # other positions
    rows += [(ln["key"].encode(), ln["payload"].encode(), ln["topic"], "0", str(ln["offset"])) for ln in plain]
    df = spark.createDataFrame(rows, "key binary, value binary, topic string, partition string, offset string")
    got = {r["op"] + str(r["position"]): r["flags"] for r in normalize(df, "debezium", spark=spark).changes.collect()}
    linked = [k for k, flags in got.items() if "key_change" in (flags or [])]
    assert sorted(linked) == ['DELETE["53195900", "53196000"]', 'INSERT["53195900", "53196000"]']
    assert len(got) == 4
    off = normalize(df, "debezium", spark=spark, options={"link_key_changes": False}).changes.collect()
    assert not [r for r in off if "key_change" in (r["flags"] or [])]


def test_truncate_and_other_connectors():
    trunc = {"before": None, "after": None, "op": "t", "ts_ms": 1718486900000,
             "source": {"version": "2.7.0.Final", "connector": "postgresql", "name": "pg", "ts_ms": 1718486899000,
                        "snapshot": "false", "db": "shop", "schema": "public", "table": "orders", "txId": 9,
                        "lsn": 777, "sequence": '["700","777"]'}}
    (t,) = changes(decode(orjson.dumps(trunc)))
    assert t["op"] == "TRUNCATE" and t["table"] == "orders" and t["before"] is None and t["after"] is None
    assert t["position"] == '["700","777"]'
    db2 = {"before": None, "after": {"ID": 1}, "op": "c", "ts_ms": 5,
           "source": {"version": "2.7.0.Final", "connector": "db2", "name": "d", "ts_ms": 4, "snapshot": "false",
                      "db": "TESTDB", "schema": "DB2INST1", "table": "T", "change_lsn": "00000000:0000150f:0001",
                      "commit_lsn": "00000000:0000150f:0002"}}
    (row,) = changes(decode(orjson.dumps(db2)))
    assert row["source_db"] == "db2" and row["position"] == \
        "change_lsn=00000000:0000150f:0001,commit_lsn=00000000:0000150f:0002"


def test_nanosecond_source_time_keeps_microseconds():
    ev = json.loads(MYSQL.read_text().splitlines()[2])["payload"]
    ev["source"]["ts_ns"] = 1718486500123456789
    (row,) = changes(decode(orjson.dumps(ev)))
    assert row["source_ts"] == dt.datetime(2024, 6, 15, 21, 21, 40, 123456, tzinfo=UTC)


def test_heartbeat_and_transaction_with_schemas():
    beat = {"schema": {"type": "struct", "name": "io.debezium.connector.common.Heartbeat", "fields": [
        {"type": "int64", "optional": False, "field": "ts_ms"}]}, "payload": {"ts_ms": 1718490400000}}
    (h,) = changes(decode(orjson.dumps(beat), msg_keys=[b'{"serverName":"dbserver1"}']))
    assert h["op"] == "HEARTBEAT" and h["stream"] == "dbserver1"
    end = {"schema": None, "payload": {"status": "END", "id": "0e4d5dcd-a5f1-11ee-9a2e-0242ac120002:7",
                                       "ts_ms": 1, "event_count": 1, "data_collections": [
                                           {"data_collection": "inventory.customers", "event_count": 1}]}}
    (e,) = changes(decode(orjson.dumps(end), topic="dbserver1.transaction"))
    assert e["op"] == "TX_COMMIT" and e["stream"] == "dbserver1"
    assert e["tx_id"] == "0e4d5dcd-a5f1-11ee-9a2e-0242ac120002:7"  # a GTID is not split like txId:LSN


def test_mongodb_legacy_oplog_filter_and_patch():
    src = {"version": "1.0.0.Final", "connector": "mongodb", "name": "legacy", "rs": "rs0", "ns": "inv.customers",
           "sec": 1, "ord": 4, "h": 99, "ts_ms": 1718486400000, "db": "inv", "collection": "customers",
           "snapshot": "false"}
    delete = {"after": None, "patch": None, "filter": '{"_id": {"$numberLong": "1004"}}', "source": src, "op": "d",
              "ts_ms": 1718486400100}
    (d,) = changes(decode(orjson.dumps(delete)))
    assert d["op"] == "DELETE" and d["before"] == {"_id": 1004} and d["key"] == {"_id": 1004}
    patch = {"after": None, "patch": '{"$set": {"name": "x"}}', "filter": '{"_id": 1004}', "source": src,
             "op": "u", "ts_ms": 1718486400200}
    rows = decode(orjson.dumps(patch))
    assert outcomes(rows) == [("quarantine", "unsupported_format")] and "change streams" in rows[0]["_message"]


def test_avro_file_of_kafka_records_is_its_messages(pg):
    rows = read(SPARK_DUMP)
    assert outcomes(rows) == outcomes(pg)
    assert [r["event_id"] for r in changes(rows)] == [r["event_id"] for r in changes(pg)]
    assert [(r["origin"]["partition"], r["origin"]["offset"]) for r in changes(rows)][:3] == [
        ("0", "0"), ("0", "1"), ("0", "0")]  # the transaction topic's own offsets
    assert [r["op"] for r in changes(rows) if "key_change" in r["flags"]] == ["DELETE", "INSERT"]


def test_protobuf_console_output_is_refused():
    ev = {"before": "", "after": {"id": "1"}, "source": {"version": "1.7.1.Final", "connector": "mysql",
                                                        "name": "dbserver1", "tsMs": "1639483000000",
                                                        "serverId": "223344", "file": "mysql-bin.000003",
                                                        "pos": "1234"}, "op": "c", "tsMs": "1639483000100"}
    rows = decode(orjson.dumps(ev))
    assert outcomes(rows) == [("quarantine", "unsupported_format")] and "ProtobufConverter" in rows[0]["_message"]


def test_a_sink_folder_of_a_kafka_internal_topic_is_listed_and_markers_are_not(spark, tmp_path):
    """Kafka Connect sinks name folders and objects after the topic: Debezium's heartbeat topic
    (`__debezium-heartbeat.<prefix>`) is input; Hadoop's one-underscore markers are not."""
    from cdcnorm.runtime.fs import list_files

    beat = tmp_path / "topics" / "__debezium-heartbeat.shop" / "partition=0"
    beat.mkdir(parents=True)
    (beat / "__debezium-heartbeat.shop+0+0000000000.json").write_text('{"ts_ms": 1718486007000}\n')
    (beat / "_SUCCESS").write_text("x")
    (tmp_path / "topics" / "_temporary" / "0").mkdir(parents=True)
    (tmp_path / "topics" / "_temporary" / "0" / "part").write_text("x")
    files, skipped = list_files(spark, [str(tmp_path)])
    assert [f.path.rsplit("/", 1)[-1] for f in files] == ["__debezium-heartbeat.shop+0+0000000000.json"]
    assert skipped == {"hidden_file": 1}


def test_lake_check_finds_a_transaction_whose_events_are_not_all_in_the_lake(spark, tmp_path):
    """BEGIN/END travel on their own topic, maybe in another run: completeness is a lake-level check."""
    import json

    import cdcnorm
    from cdcnorm.lake.admin.check import check

    lines = (SAMPLES / "kcat" / "pg_orders.jsonl").read_text().splitlines()
    whole, partial = tmp_path / "whole" / "pg.jsonl", tmp_path / "partial" / "pg.jsonl"
    for path in (whole, partial):
        path.parent.mkdir()
    whole.write_text("\n".join(lines) + "\n")

    def is_update(line: str) -> bool:
        payload = json.loads(line).get("payload")
        value = json.loads(payload) if isinstance(payload, str) else payload
        return isinstance(value, dict) and (value.get("payload") or value).get("op") == "u"

    partial.write_text("\n".join(line for line in lines if not is_update(line)) + "\n")
    for name, path in (("whole", whole), ("partial", partial)):
        cdcnorm.normalize([str(path)], "debezium", spark=spark, lake=str(tmp_path / f"lake-{name}"))
    complete = check(spark, str(tmp_path / "lake-whole")).to_dict()["checks"]["transactions"]
    assert complete == {"problem": False, "summary": "1 ended transaction(s) complete; 0 without an END yet",
                        "details": []}
    missing = check(spark, str(tmp_path / "lake-partial")).to_dict()["checks"]["transactions"]
    assert missing["problem"] is True
    assert [(d["tx_id"], d["data_collection"], d["expected"], d["rows"]) for d in missing["details"]] == [
        ("571", None, 3, 2), ("571", "public.orders", 3, 2)]
