"""Datastream adapter: decoding without Spark (BatchBuilder), then the canonical output through normalize()."""

from __future__ import annotations

import datetime as dt
import decimal
import gzip
import io
import json
from decimal import Decimal
from pathlib import Path
from typing import ClassVar

import fastavro
import orjson
import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import VariantVal

from cdcnorm.adapters.base import MessageMeta
from cdcnorm.adapters.datastream.adapter import DatastreamAdapter
from cdcnorm.canonical import tuple_codec
from cdcnorm.canonical.emit import BatchBuilder
from cdcnorm.testing import AdapterContract

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "datastream"
UTC = dt.UTC


# -- decoding -------------------------------------------------------------------------------------------------
def decode(data: bytes, path: str = "x.jsonl", **options) -> list[dict]:
    """All rows (changes, quarantine, schema versions) one file produces."""
    out = BatchBuilder()
    out.set_context("datastream", "datastream.json")
    for _ in DatastreamAdapter(options).read_file(path, io.BytesIO(data), out):
        pass
    out.end_record()
    return out.flush().to_pylist()


def changes(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["_kind"] == "change"]


def quarantined(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["_kind"] == "quarantine"]


def var(v: dict | None):
    """VARIANT -> Python; a wide decimal context, since PySpark's toPython uses the default 28 digits."""
    if v is None:
        return None
    with decimal.localcontext() as ctx:
        ctx.prec = 100
        return VariantVal(v["value"], v["metadata"]).toPython()


def order(rows: list[dict]) -> list[dict]:
    return sorted(changes(rows), key=lambda r: r["sort_key"])


def ts(s: str) -> dt.datetime:
    return dt.datetime.fromisoformat(s).replace(tzinfo=UTC)


def mysql(ct: str | None, payload: dict, log_file: str = "mysql-bin.000014", pos: int = 59424,
          src: str = "2025-01-21T11:08:15.000Z", method: str = "mysql-cdc-binlog", uuid: str = "u-0",
          is_deleted: bool | None = None, **extra) -> dict:
    return {
        "uuid": uuid, "read_timestamp": "2025-01-21T11:09:21.898Z", "source_timestamp": src,
        "object": "shop_orders", "read_method": method, "stream_name": "projects/1/locations/l/streams/s",
        "schema_key": "491139293433ac07c1895612433c0d61c5265fdb",
        "source_metadata": {"table": "orders", "database": "shop", "primary_keys": ["id"], "log_file": log_file,
                            "log_position": pos, "change_type": ct,
                            "is_deleted": ct in ("DELETE", "UPDATE-DELETE") if is_deleted is None else is_deleted,
                            **extra},
        "payload": payload,
    }


def lines(*events) -> bytes:
    return b"\n".join(e if isinstance(e, bytes) else json.dumps(e).encode() for e in events) + b"\n"


def avro_file(schema: dict, records: list[dict], sync_interval: int = 16000) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, sync_interval=sync_interval)
    return buf.getvalue()


MYSQL_SM = {"type": "record", "name": "source_metadata", "fields": [
    {"name": "table", "type": "string"}, {"name": "database", "type": "string"},
    {"name": "primary_keys", "type": {"type": "array", "items": "string"}},
    {"name": "log_file", "type": ["null", "string"]}, {"name": "log_position", "type": ["null", "long"]},
    {"name": "change_type", "type": ["null", "string"]}, {"name": "is_deleted", "type": ["null", "boolean"]}]}


def envelope(payload_fields: list, sm: dict = MYSQL_SM) -> dict:
    return {"type": "record", "name": "shop_t", "fields": [
        {"name": "uuid", "type": "string"},
        {"name": "read_timestamp", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "source_timestamp", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "object", "type": "string"}, {"name": "read_method", "type": "string"},
        {"name": "stream_name", "type": "string"}, {"name": "schema_key", "type": "string"},
        {"name": "sort_keys", "type": {"type": "array", "items": ["string", "long"]}},
        {"name": "source_metadata", "type": sm},
        {"name": "payload", "type": {"type": "record", "name": "payload", "fields": payload_fields}}]}


def avro_rec(payload: dict, ct: str = "INSERT", pos: int = 100, method: str = "mysql-cdc-binlog",
             uuid: str = "u-0", table: str = "t", log_file: str = "mysql-bin.000001") -> dict:
    return {"uuid": uuid, "read_timestamp": 1737457761898, "source_timestamp": 1737457695000, "object": f"shop_{table}",
            "read_method": method, "stream_name": "projects/1/locations/l/streams/s", "schema_key": "k1",
            "sort_keys": [1737457695000, log_file, pos],
            "source_metadata": {"table": table, "database": "shop", "primary_keys": ["id"], "log_file": log_file,
                                "log_position": pos, "change_type": ct, "is_deleted": ct == "DELETE"},
            "payload": payload}


# -- ops ----------------------------------------------------------------------------------------------------
def test_mysql_change_types():
    row = {"id": 1, "val": 10}
    rows = changes(decode(lines(
        mysql("INSERT", row, pos=100),
        mysql("UPDATE-INSERT", {"id": 1, "val": 11}, pos=200),
        mysql("UPDATE-DELETE", {"id": 1, "val": 11}, pos=300),
        mysql("UPDATE-INSERT", {"id": 10, "val": 11}, pos=300),
        mysql("DELETE", {"id": 10, "val": 11}, pos=400),
    )))
    assert [(r["op"], r["vendor_op"], r["flags"]) for r in rows] == [
        ("INSERT", "INSERT", []), ("UPDATE", "UPDATE-INSERT", []), ("DELETE", "UPDATE-DELETE", ["key_change"]),
        ("UPDATE", "UPDATE-INSERT", []), ("DELETE", "DELETE", []),
    ]
    ins, upd, kdel, kins, dele = rows
    assert var(ins["after"]) == row and ins["before"] is None and ins["missing_columns"] == []
    # A lone UPDATE-INSERT: after only, no before, changed columns unknown, nothing missing.
    assert var(upd["after"]) == {"id": 1, "val": 11} and upd["before"] is None
    assert upd["changed_columns"] is None and upd["missing_columns"] == []
    assert var(kdel["before"]) == {"id": 1, "val": 11} and kdel["after"] is None and var(kdel["key"]) == {"id": 1}
    assert var(dele["before"]) == {"id": 10, "val": 11} and dele["after"] is None
    # The pair shares `_pair` (table + position) so post_process can link it; a lone UPDATE-INSERT has none.
    assert kdel["_pair"] == kins["_pair"] and (kdel["_pair_role"], kins["_pair_role"]) == ("delete", "insert")
    assert kdel["_pair"].endswith("mysql-bin.000014:300")
    assert upd["_pair"] is not None and upd["_pair"] != kdel["_pair"]
    for r in rows:
        assert (r["source_db"], r["database"], r["schema"], r["table"]) == ("mysql", "shop", None, "orders")
        assert r["primary_keys"] == ["id"] and r["format"] == "datastream.json"
        assert r["schema_version"] == "491139293433ac07c1895612433c0d61c5265fdb"
        assert r["stream"] == "projects/1/locations/l/streams/s"
    assert ins["position"] == "mysql-bin.000014:100"
    assert ins["source_ts"] == ts("2025-01-21T11:08:15") and ins["capture_ts"] == ts("2025-01-21T11:09:21.898")


def test_backfill_empty_and_null_change_types():
    rows = changes(decode(lines(
        mysql("INSERT", {"id": 1}, log_file="", pos=0, method="mysql-backfill-fulldump"),
        mysql(None, {"id": 2}, log_file="", pos=0, method="oracle-backfill"),
        mysql(None, {"id": 3}, log_file="", pos=0, method="oracle_dump"),
        mysql("", {"id": 4}),  # empty change type in a CDC read: an INSERT
        mysql(None, {"id": 5}, is_deleted=True),  # no change type: is_deleted decides, flagged
        mysql("UPDATE-DELETE", {"id": 6}, is_deleted=False),  # Oracle's UPDATE-DELETE has is_deleted=false
        mysql("DELETE", {"id": 7}, is_deleted=False),
    )))
    assert [(r["op"], r["vendor_op"], r["flags"]) for r in rows] == [
        ("SNAPSHOT", "INSERT", []), ("SNAPSHOT", None, []), ("SNAPSHOT", None, []), ("INSERT", "", []),
        ("DELETE", None, ["delete_by_is_deleted"]), ("DELETE", "UPDATE-DELETE", ["key_change"]), ("DELETE", "DELETE", []),
    ]
    assert [r["source_db"] for r in rows[:3]] == ["mysql", "oracle", "oracle"]
    assert all(r["position"] is None for r in rows[:3])
    assert var(rows[0]["after"]) == {"id": 1} and rows[0]["before"] is None


def test_unknown_change_type_is_quarantined():
    rows = decode(lines(mysql("MERGE", {"id": 1})))
    (q,) = quarantined(rows)
    assert q["_rule"] == "unknown_op" and "'MERGE'" in q["_message"] and q["_raw"].startswith(b'{"uuid"')


def test_identity_and_keys_per_source():
    base = {"uuid": "u", "read_timestamp": "2025-01-21T10:00:00Z", "source_timestamp": "2025-01-21T10:00:00Z",
            "object": "o", "stream_name": "s", "schema_key": "k"}
    events = [
        {**base, "read_method": "postgresql-cdc", "source_metadata": {
            "schema": "public", "table": "t", "change_type": "INSERT", "lsn": "16/CB002DB0", "tx_id": 363552,
            "primary_keys": ["id"]}, "payload": {"id": 1}},
        {**base, "read_method": "oracle-cdc-logminer", "source_metadata": {
            "database": "XE", "schema": "HR", "table": "JOBS", "change_type": "INSERT", "scn": 1, "rs_id": " 0x1.2.3 ",
            "ssn": 0, "tx_id": "CAACAAUKAAA="}, "payload": {"JOB_ID": "X"}},
        {**base, "read_method": "sqlserver-cdc", "source_metadata": {
            "database": "mydb", "schema": "dbo", "table": "ORDERS", "change_type": "INSERT",
            "lsn": "00000025:00000728:0003", "replication_index": ["order_id"]}, "payload": {"ORDER_ID": 1}},
        {**base, "read_method": "cdc", "sort_keys": ["1745957556", "184498000"], "source_metadata": {
            "database": "inventory", "collection": "products", "change_type": "CREATE", "is_deleted": False,
            "primary_key": ["_id"]}, "payload": {"_id": {"$oid": "6811235eaf8583310cb9d2e9"}, "qty": 1}},
        {**base, "read_method": "salesforce-cdc", "source_metadata": {
            "object_name": "Account", "domain": "acme.my.salesforce.com", "change_type": "UPDATE",
            "primary_keys": ["Id"]}, "payload": {"Id": "001"}},
        {**base, "read_method": "spanner-cdc", "source_metadata": {
            "database_id": "music-db", "table": "Singers", "mod_type": "DELETE", "record_sequence": "00000002",
            "mod_index": 0, "commit_timestamp": "2025-01-21T16:00:03.123456789Z", "server_transaction_id": "txn-3",
            "primary_keys": ["SingerId"]}, "payload": {"SingerId": 1}},
    ]
    rows = changes(decode(lines(*events)))
    got = [(r["source_db"], r["database"], r["schema"], r["table"], r["op"], r["primary_keys"], var(r["key"]),
            r["position"], r["tx_id"], r["flags"]) for r in rows]
    assert got == [
        ("postgresql", None, "public", "t", "INSERT", ["id"], {"id": 1}, "16/CB002DB0", "363552", []),
        ("oracle", "XE", "HR", "JOBS", "INSERT", None, None, "scn=1,rs_id=0x1.2.3,ssn=0", "CAACAAUKAAA=", []),
        ("sqlserver", "mydb", "dbo", "ORDERS", "INSERT", ["order_id"], {"order_id": 1}, "00000025:00000728:0003",
         None, ["unverified_source"]),
        ("mongodb", "inventory", None, "products", "INSERT", ["_id"], {"_id": "6811235eaf8583310cb9d2e9"},
         "1745957556.184498000", None, ["unverified_source"]),
        ("salesforce", "acme.my.salesforce.com", None, "Account", "UPDATE", ["Id"], {"Id": "001"}, None, None,
         ["unverified_source"]),
        ("spanner", "music-db", None, "Singers", "DELETE", ["SingerId"], {"SingerId": 1},
         "2025-01-21T16:00:03.123456789Z,00000002,0", "txn-3", ["unverified_source"]),
    ]
    assert [r["vendor_op"] for r in rows] == ["INSERT", "INSERT", "INSERT", "CREATE", "UPDATE", "DELETE"]


# -- values from JSON -------------------------------------------------------------------------------------------
def test_json_numbers_stay_exact():
    line = (b'{"uuid":"u","read_timestamp":"2024-03-31T16:23:07.938Z","source_timestamp":"2024-03-31T16:23:07.938Z",'
            b'"object":"o","read_method":"mysql-cdc-binlog","stream_name":"s","schema_key":"k",'
            b'"source_metadata":{"table":"t","database":"d","primary_keys":["id"],"log_file":"mysql-bin.000001",'
            b'"log_position":4,"change_type":"INSERT","is_deleted":false},"payload":{"id":1,'
            b'"amount":12345.098760000000000000000000000000,"tiny":0.000000000000000000000000000001,'
            b'"big":123456789012345678901234567890,"price":9.90,"sci":1E+3,"doc":{"limit":2500.75,"n":[1,2.50]},'
            b'"ts":"2023-04-07T08:17:39.745Z","flag":true,"none":null}}')
    (row,) = changes(decode(line))
    after = var(row["after"])
    assert str(after["amount"]) == "12345.098760000000000000000000000000"
    assert after["tiny"] == Decimal("1E-30") and after["price"] == Decimal("9.90") and str(after["price"]) == "9.90"
    assert after["big"] == 123456789012345678901234567890 and after["sci"] == Decimal("1E+3")
    assert after["doc"] == {"limit": Decimal("2500.75"), "n": [1, Decimal("2.50")]}
    assert type(after["id"]) is int
    # JSON payload timestamps have no type information: they stay strings.
    assert after["ts"] == "2023-04-07T08:17:39.745Z" and after["flag"] is True and after["none"] is None


@pytest.mark.parametrize(("text", "expected"), [
    ("2024-03-31T16:23:07.938Z", ts("2024-03-31T16:23:07.938")),
    ("2021-12-25 05:42:04.408", ts("2021-12-25T05:42:04.408")),
    ("2021-12-25T05:42:04.408", ts("2021-12-25T05:42:04.408")),
    ("2025-11-05T18:23:46.698000Z", ts("2025-11-05T18:23:46.698")),
    ("2025-11-05T18:23:46.123456Z", ts("2025-11-05T18:23:46.123456")),
    ("2019-11-07T02:15:39", ts("2019-11-07T02:15:39")),
    ("2025-01-21T16:00:03.123456789Z", ts("2025-01-21T16:00:03.123456")),
    ("2025-01-21T12:00:00.5+02:00", ts("2025-01-21T10:00:00.5")),
    (1711902187938, ts("2024-03-31T16:23:07.938")),
])
def test_envelope_timestamp_forms(text, expected):
    (row,) = changes(decode(lines(mysql("INSERT", {"id": 1}, src=text))))
    assert row["source_ts"] == expected


def test_unparseable_timestamp_is_a_bad_event():
    (q,) = quarantined(decode(lines(mysql("INSERT", {"id": 1}, src="yesterday"))))
    assert q["_rule"] == "bad_event" and "source_timestamp" in q["_message"]


# -- order --------------------------------------------------------------------------------------------------
def test_mysql_binlog_files_order_numerically():
    rows = order(decode(lines(
        mysql("INSERT", {"id": 4}, log_file="mysql-bin.1000000", pos=4, src="2025-01-21T11:00:00Z"),
        mysql("INSERT", {"id": 3}, log_file="mysql-bin.999999", pos=90000, src="2025-01-21T11:00:00Z"),
        mysql("INSERT", {"id": 2}, log_file="mysql-bin.000010", pos=5, src="2025-01-21T10:00:00Z"),
        mysql("INSERT", {"id": 1}, log_file="mysql-bin.000009", pos=99999, src="2025-01-21T12:00:00Z"),
        mysql("INSERT", {"id": 0}, log_file="", pos=0, method="mysql-backfill-fulldump", src="2025-01-21T13:00:00Z"),
    )))
    # Backfill first (even with the latest timestamp), then binlog file number, then position.
    assert [var(r["key"])["id"] for r in rows] == [0, 1, 2, 3, 4]
    decoded = tuple_codec.decode(rows[1]["sort_key"])
    assert decoded[:5] == (1, 9, 99999, ts("2025-01-21T12:00:00"), 1) and decoded[5] == rows[1]["event_id"]
    assert tuple_codec.decode(rows[0]["sort_key"])[:3] == (0, ts("2025-01-21T13:00:00"), (0,))


def test_mysql_gtid_mode_position_fields():
    ev = mysql("INSERT", {"id": 1})
    sm = ev["source_metadata"]
    del sm["log_file"], sm["log_position"]
    sm.update(binlog_file="mysql-bin.000131", binlog_position=2550)
    (row,) = changes(decode(lines(ev)))
    assert row["position"] == "mysql-bin.000131:2550"
    assert tuple_codec.decode(row["sort_key"])[:3] == (1, 131, 2550)


def oracle(ct: str, key: int, scn: int, rs_id: str, ssn: int) -> dict:
    return {"uuid": "u", "read_timestamp": "2021-11-04T01:45:28.283Z", "source_timestamp": "2021-11-04T01:44:31Z",
            "object": "HR_EMPLOYEES", "read_method": "oracle-cdc-logminer", "stream_name": "s", "schema_key": "k",
            "source_metadata": {"schema": "HR", "table": "EMPLOYEES", "database": "xe", "scn": scn, "rs_id": rs_id,
                                "ssn": ssn, "change_type": ct, "is_deleted": False, "primary_keys": ["EMPLOYEE_ID"]},
            "payload": {"EMPLOYEE_ID": key}}


def test_oracle_order_scn_rs_id_ssn():
    rows = order(decode(lines(
        oracle("INSERT", 5, 382471, " 0x000004.00000001.0010 ", 0),
        oracle("INSERT", 4, 382470, " 0x000004.00000a00.0010 ", 0),
        oracle("INSERT", 3, 382470, " 0x000004.000009ff.0010 ", 10),
        oracle("INSERT", 2, 382470, " 0x000004.000009ff.0010 ", 2),
        oracle("UPDATE-INSERT", 1, 382469, " 0x000004.00000705.0010 ", 0),
        oracle("UPDATE-DELETE", 0, 382469, " 0x000004.00000705.0010 ", 0),
    )))
    assert [var(r["key"])["EMPLOYEE_ID"] for r in rows] == [0, 1, 2, 3, 4, 5]
    assert rows[0]["position"] == "scn=382469,rs_id=0x000004.00000705.0010,ssn=0"
    assert tuple_codec.decode(rows[2]["sort_key"])[:4] == (1, 382470, (4, 0x9FF, 0x10), 2)


def pg(ct: str, key: int, lsn: str) -> dict:
    return {"uuid": "u", "read_timestamp": "2025-02-11T23:06:55.396Z", "source_timestamp": "2025-02-11T23:06:37.151Z",
            "object": "public_t", "read_method": "postgresql-cdc", "stream_name": "s", "schema_key": "k",
            "source_metadata": {"schema": "public", "table": "t", "change_type": ct, "lsn": lsn, "tx_id": 1,
                                "primary_keys": ["id"], "is_deleted": ct == "DELETE"},
            "payload": {"id": key}}


def test_postgresql_lsn_orders_as_64_bit_number():
    rows = order(decode(lines(pg("UPDATE", 2, "16/CB002DB0"), pg("INSERT", 1, "9/16B3748"),
                              pg("DELETE", 3, "16/CB002E10"))))
    assert [r["position"] for r in rows] == ["9/16B3748", "16/CB002DB0", "16/CB002E10"]
    assert tuple_codec.decode(rows[1]["sort_key"])[1] == (0x16 << 32) | 0xCB002DB0


def test_sqlserver_lsn_and_mongo_positions_order_numerically():
    base = {"uuid": "u", "read_timestamp": "2025-01-21T10:00:00Z", "source_timestamp": "2025-01-21T10:00:00Z",
            "object": "o", "stream_name": "s", "schema_key": "k"}

    def ss(lsn, k):
        return {**base, "read_method": "sqlserver-cdc", "payload": {"id": k}, "source_metadata": {
            "database": "d", "schema": "dbo", "table": "t", "change_type": "INSERT", "lsn": lsn, "primary_keys": ["id"]}}

    def mg(secs, nanos, k):
        return {**base, "read_method": "cdc", "sort_keys": [secs, nanos], "payload": {"_id": k}, "source_metadata": {
            "database": "d", "collection": "c", "change_type": "UPDATE", "primary_key": ["_id"]}}

    rows = order(decode(lines(ss("0000000A:00000001:0001", 2), ss("00000009:FFFFFFFF:0002", 1),
                              mg("1745957556", "184498000", "b"), mg(1745957556, 9000000, "a"))))
    assert [var(r["key"])["id"] for r in rows if r["table"] == "t"] == [1, 2]
    assert [var(r["key"])["_id"] for r in rows if r["table"] == "c"] == ["a", "b"]


def test_update_delete_sorts_before_update_insert_at_one_position():
    rows = order(decode(lines(
        mysql("UPDATE-INSERT", {"id": 10, "val": 10}, pos=2550, src="2025-01-21T11:08:15Z"),
        mysql("UPDATE-DELETE", {"id": 1, "val": 10}, pos=2550, src="2025-01-21T11:08:15Z"),
    )))
    assert [r["vendor_op"] for r in rows] == ["UPDATE-DELETE", "UPDATE-INSERT"]


# -- event ids ---------------------------------------------------------------------------------------------------
def test_event_id_is_stable_across_redelivery_and_ignores_uuid():
    first = mysql("UPDATE-INSERT", {"id": 1, "val": 11}, pos=200, uuid="aaaa-0000")
    again = {**first, "uuid": "bbbb-0001", "read_timestamp": "2025-01-22T00:00:00Z"}
    moved = mysql("UPDATE-INSERT", {"id": 1, "val": 11}, pos=201, uuid="aaaa-0000")
    a, b, c = changes(decode(lines(first, again, moved)))
    assert a["event_id"] == b["event_id"] and a["sort_key"] == b["sort_key"]
    assert c["event_id"] != a["event_id"]
    # The Avro and JSON copies of one change (same position and key) share the id too.
    avro = avro_file(envelope([{"name": "id", "type": ["null", "int"]}, {"name": "val", "type": ["null", "int"]}]),
                     [avro_rec({"id": 1, "val": 11}, ct="UPDATE-INSERT", pos=200, table="orders",
                               log_file="mysql-bin.000014")])
    (x,) = changes(decode(avro, "x.avro"))
    assert x["format"] == "datastream.avro" and x["event_id"] == a["event_id"]


def test_backfill_event_ids_use_key_and_payload_not_the_shared_uuid():
    same_uuid = "f22acc71-c2f9-440e-9e4a-9b3100000000"
    rows = changes(decode(lines(*[pg(ct, k, "") | {"read_method": "postgresql-backfill", "uuid": same_uuid}
                                  for ct, k in (("INSERT", 1), ("INSERT", 2), ("INSERT", 1))])))
    assert [r["op"] for r in rows] == ["SNAPSHOT"] * 3
    assert rows[0]["event_id"] != rows[1]["event_id"]
    assert rows[0]["event_id"] == rows[2]["event_id"]  # the same row read twice is one change


# -- files, formats and damage ------------------------------------------------------------------------------------
def test_blank_lines_last_line_without_newline_gzip_and_arrays():
    data = lines(mysql("INSERT", {"id": 1}), b"", b"   ", mysql("DELETE", {"id": 1}, pos=2)).rstrip(b"\n")
    rows = decode(data)
    assert [r["op"] for r in changes(rows)] == ["INSERT", "DELETE"]
    assert sum(r["_records"] for r in rows) == 2  # blank lines are not records
    assert [r["origin"]["index"] for r in changes(rows)] == [0, 3]
    assert [r["op"] for r in changes(decode(gzip.compress(data), "x.jsonl.gz"))] == ["INSERT", "DELETE"]
    pretty = json.dumps([mysql("INSERT", {"id": 1, "p": "P"}), mysql("DELETE", {"id": 1}, pos=2)], indent=2)
    got = changes(decode(pretty.replace('"P"', "1.10").encode(), "x.json"))
    assert [r["op"] for r in got] == ["INSERT", "DELETE"] and str(var(got[0]["after"])["p"]) == "1.10"
    assert decode(b"") == [] and decode(b"\n\n") == []


def test_broken_json_line_is_quarantined_and_the_rest_continues():
    bad = b'{"uuid":"u","read_method":"mysql-cdc-binlog","payload":{"id":'
    rows = decode(lines(mysql("INSERT", {"id": 1}), bad, mysql("INSERT", {"id": 2}, pos=2)), "dir/f.jsonl")
    assert [var(r["key"])["id"] for r in changes(rows)] == [1, 2]
    (q,) = quarantined(rows)
    assert q["_rule"] == "bad_json" and q["_raw"] == bad
    assert "dir/f.jsonl: line 2 (byte" in q["_message"] and q["origin"]["index"] == 1


@pytest.mark.parametrize(("event", "field"), [
    ({"read_method": "mysql-cdc-binlog", "source_metadata": {}}, "payload"),
    ({"source_metadata": {}, "payload": {}}, "read_method"),
    ({"read_method": "mysql-cdc-binlog", "source_metadata": "x", "payload": {}}, "source_metadata"),
])
def test_missing_envelope_fields_are_bad_events(event, field):
    (q,) = quarantined(decode(lines(event)))
    assert q["_rule"] == "bad_event" and f"field {field}" in q["_message"]


def test_gcs_notification_and_non_datastream_files():
    note = {"kind": "storage#object", "name": "ds/public_t/2024/03/29/", "bucket": "b", "size": "0"}
    (q,) = quarantined(decode(lines(note)))
    assert q["_rule"] == "gcs_notification" and "gs://b/ds/public_t/2024/03/29/" in q["_message"]
    (q,) = decode(b"id,name\n1,ada\n", "x.csv")
    assert q["_rule"] == "unknown_format" and q["_raw"] == b"id,name\n1,ada\n" and q["_records"] == 1
    assert not DatastreamAdapter().accepts_file("samples/README.md")
    assert DatastreamAdapter().accepts_file("a/b/x_mysql-cdc-binlog_1_2_3.jsonl.gz")
    assert DatastreamAdapter().accepts_file("exports/not_datastream.csv")  # read, and quarantined


PAYMENT_FIELDS = [
    {"name": "id", "type": ["null", "int"]},
    {"name": "amount", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 65, "scale": 30}]},
    {"name": "paid_at", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
]


def test_truncated_avro_keeps_the_records_before_the_damage():
    recs = [avro_rec({"id": i, "amount": Decimal(i), "paid_at": 1}, pos=i, uuid=f"u-{i}") for i in range(3)]
    data = avro_file(envelope(PAYMENT_FIELDS), recs, sync_interval=1)  # one block per record
    last_block = next(b.offset for i, b in enumerate(fastavro.block_reader(io.BytesIO(data))) if i == 2)
    rows = decode(data[:-20], "dir/t.avro")
    assert [var(r["key"])["id"] for r in changes(rows)] == [0, 1]
    (q,) = quarantined(rows)
    assert q["_rule"] == "truncated_avro" and q["_raw"] == data[last_block:-20]
    assert "dir/t.avro" in q["_message"] and "record 2" in q["_message"]
    assert q["origin"]["index"] == 2 and q["origin"]["offset"] == str(last_block)


def test_corrupt_avro_and_header_damage():
    recs = [avro_rec({"id": i, "amount": None, "paid_at": None}, pos=i) for i in range(2)]
    data = bytearray(avro_file(envelope(PAYMENT_FIELDS), recs, sync_interval=1))
    data[-3] ^= 0xFF  # the last block's sync marker
    rows = decode(bytes(data), "t.avro")
    assert len(changes(rows)) == 1 and quarantined(rows)[0]["_rule"] == "corrupt_avro"
    (q,) = decode(bytes(data[:30]), "t.avro")
    assert q["_rule"] == "truncated_avro" and q["_raw"] == bytes(data[:30])


def test_avro_values():
    varchar2020 = {"type": "record", "name": "varchar", "fields": [{"name": "value", "type": "string"},
                                                                   {"name": "length", "type": "int"}]}
    tstz = {"type": "record", "name": "timestampTz", "fields": [
        {"name": "timestamp", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "offset", "type": {"type": "int", "logicalType": "time-millis"}}]}
    arr = {"type": "record", "name": "multidimensionalArray_grid", "fields": [
        {"default": None, "name": "nestedArray", "type": ["null", {"type": "array", "items": "multidimensionalArray_grid"}]},
        {"default": None, "name": "elementValue", "type": ["null", "int"]}]}
    fields = [
        {"name": "id", "type": ["null", "int"]},
        {"name": "d65", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 65, "scale": 30}]},
        {"name": "ts", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
        {"name": "inf", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
        {"name": "ninf", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
        {"name": "day", "type": ["null", {"type": "int", "logicalType": "date"}]},
        {"name": "tod", "type": ["null", {"type": "long", "logicalType": "time-micros"}]},
        {"name": "mysql_time", "type": ["null", {"type": "long", "logicalType": "time-interval-micros"}]},
        {"name": "blob", "type": ["null", "bytes"]},
        {"name": "hexed", "type": ["null", "string"]},
        {"name": "f32", "type": ["null", "float"]},
        {"name": "ubig", "type": ["null", {"type": "string", "logicalType": "number"}]},
        {"name": "doc", "type": ["null", {"type": "string", "logicalType": "json"}]},
        {"name": "name", "type": ["null", varchar2020]},
        {"name": "city", "type": "varchar"},
        {"name": "utc", "type": ["null", tstz]},
        {"name": "local", "type": ["null", "timestampTz"]},
        {"name": "grid", "type": ["null", arr]},
        {"name": "empty", "type": ["null", "multidimensionalArray_grid"]},
        {"name": "vc", "type": ["null", {"type": "string", "logicalType": "varchar", "length": 20}]},
    ]
    payload = {
        "id": 1, "d65": Decimal("-12345.098760000000000000000000000001"), "ts": 1737457695123456,
        "inf": 9223372036825200000, "ninf": -9223372036832400000, "day": 19000, "tod": 29730000001,
        "mysql_time": -3723000001, "blob": b"\xde\xad\xbe\xef", "hexed": "deadbeef", "f32": 45.67,
        "ubig": "18446744073709551615", "doc": '{"a": 2500.75, "b": [1, null]}',
        "name": {"value": "Roma", "length": 40}, "city": {"value": "Rome", "length": 30},
        "utc": {"timestamp": 1602599400056483, "offset": 0}, "local": {"timestamp": 1602599400056483, "offset": 3600000},
        "grid": {"nestedArray": [{"nestedArray": [{"nestedArray": None, "elementValue": 1}], "elementValue": None},
                                 {"nestedArray": [], "elementValue": None}], "elementValue": None},
        "empty": {"nestedArray": None, "elementValue": None}, "vc": "x",
    }
    (row,) = changes(decode(avro_file(envelope(fields), [avro_rec(payload)]), "t.avro"))
    after = var(row["after"])
    assert str(after["d65"]) == "-12345.098760000000000000000000000001" and "decimal_as_string" not in row["flags"]
    assert after["ts"] == dt.datetime(2025, 1, 21, 11, 8, 15, 123456, tzinfo=UTC)
    assert (after["inf"], after["ninf"]) == ("infinity", "-infinity")
    assert after["day"] == dt.date(2022, 1, 8)
    assert (after["tod"], after["mysql_time"]) == ("08:15:30.000001", "-01:02:03.000001")
    assert after["blob"] == b"\xde\xad\xbe\xef" and after["hexed"] == "deadbeef"
    assert after["f32"] == 45.67 and after["ubig"] == 18446744073709551615
    assert after["doc"] == {"a": Decimal("2500.75"), "b": [1, None]}
    assert (after["name"], after["city"], after["vc"]) == ("Roma", "Rome", "x")
    assert after["utc"] == dt.datetime(2020, 10, 13, 14, 30, 0, 56483, tzinfo=UTC)
    assert after["local"] == "2020-10-13T15:30:00.056483+01:00"
    assert after["grid"] == [[1], []] and after["empty"] == []
    assert row["flags"] == ["timestamp_as_string"]
    assert row["source_ts"] == ts("2025-01-21T11:08:15") and row["capture_ts"] == ts("2025-01-21T11:09:21.898")


def test_decimal_beyond_38_digits_is_kept_as_exact_string():
    big = Decimal("12345678901234567890123456789012345.098760000000000000000000000001")
    (row,) = changes(decode(avro_file(envelope(PAYMENT_FIELDS), [avro_rec({"id": 1, "amount": big, "paid_at": None})]),
                            "t.avro"))
    assert var(row["after"])["amount"] == "12345678901234567890123456789012345.098760000000000000000000000001"
    assert row["flags"] == ["decimal_as_string"]


def test_avro_schema_version_from_the_writer_schema():
    rows = decode(avro_file(envelope(PAYMENT_FIELDS), [avro_rec({"id": 1, "amount": None, "paid_at": None}),
                                                      avro_rec({"id": 2, "amount": None, "paid_at": None}, pos=2)]),
                  "t.avro")
    (sv,) = [orjson.loads(r["_schema"]) for r in rows if r["_kind"] == "schema"]
    assert (sv["source_db"], sv["database"], sv["schema"], sv["table"], sv["schema_version"]) == (
        "mysql", "shop", None, "t", "k1")
    assert sv["columns"] == [
        {"name": "id", "vendor_type": "int", "canonical_type": "int", "ordinal": 1, "pk_position": 1, "nullable": True},
        {"name": "amount", "vendor_type": "decimal(65,30)", "canonical_type": "decimal(65,30)", "ordinal": 2,
         "pk_position": None, "nullable": True},
        {"name": "paid_at", "vendor_type": "timestamp-micros", "canonical_type": "timestamp", "ordinal": 3,
         "pk_position": None, "nullable": True},
    ]
    assert sv["first_seen"] == "2025-01-21T11:08:15+00:00"
    assert sum(r["_records"] for r in rows) == 2  # the schema row is not a record outcome


def test_json_schema_versions_are_inferred_once_per_table_and_key():
    """One row per (table, key) per file, written after the file's last record with a summary of all its
    values (the canonical type is derived when the rows are folded: cdcnorm.canonical.inferred)."""
    rows = decode(lines(mysql("INSERT", {"id": 1, "p": 1.5, "s": "x"}),
                        mysql("INSERT", {"id": 2, "p": 22.25, "s": "2025-01-21T11:08:15Z"})))
    (sv,) = [orjson.loads(r["_schema"]) for r in rows if r["_kind"] == "schema"]
    assert rows[-1]["_kind"] == "schema"
    assert [(c["name"], c["vendor_type"], c["canonical_type"], c["pk_position"]) for c in sv["columns"]] == [
        ("id", "json:int;digits=1;scale=0", None, 1), ("p", "json:decimal;digits=2;scale=2", None, None),
        ("s", "json:text,timestamp", None, None)]


def test_binary_columns_option():
    ev = mysql("INSERT", {"id": 1, "token": "deadbeef", "name": "x"})
    (row,) = changes(decode(lines(ev), binary_columns=["shop.orders.token"]))
    assert var(row["after"])["token"] == b"\xde\xad\xbe\xef"
    (row,) = changes(decode(lines(ev), binary_columns=["orders.token"]))
    assert var(row["after"])["token"] == b"\xde\xad\xbe\xef"
    (row,) = changes(decode(lines(ev), binary_columns=["other.token"]))
    assert var(row["after"])["token"] == "deadbeef"
    (q,) = quarantined(decode(lines(ev), binary_columns=["orders.name"]))
    assert q["_rule"] == "bad_hex" and "name" in q["_message"]


# -- BigQuery exports and messages ------------------------------------------------------------------------------
def bq(values: dict, **md) -> dict:
    return {**values, "datastream_metadata": md}


def test_bigquery_append_only_rows():
    data = lines(
        bq({"id": "10", "val": "10"}, uuid="u1", source_timestamp="1737457696000", change_sequence_number="10",
           change_type="UPDATE-INSERT", sort_keys=["1737457696000", "mysql-bin.000131", "2550"]),
        bq({"id": "1", "val": "10"}, uuid="u0", source_timestamp="1737457695000", change_sequence_number="9",
           change_type="UPDATE-DELETE", sort_keys=["1737457695000", "mysql-bin.000131", "2550"]),
        bq({"id": "10", "val": "11"}, uuid="u2", source_timestamp=1737457696000, change_sequence_number="11",
           change_type="DELETE", sort_keys=["1737457696000", "mysql-bin.000131", "2900"]),
    )
    rows = order(decode(data, "exports/shop.my_table/000000000000.json", primary_keys=["id"]))
    assert [(r["op"], r["vendor_op"], r["flags"]) for r in rows] == [
        ("DELETE", "UPDATE-DELETE", ["unverified_source", "key_change"]),
        ("UPDATE", "UPDATE-INSERT", ["unverified_source"]), ("DELETE", "DELETE", ["unverified_source"])]
    assert {(r["database"], r["schema"], r["table"], r["format"]) for r in rows} == {
        ("shop", None, "my_table", "datastream.bigquery")}
    assert rows[0]["_pair"] == rows[1]["_pair"] and rows[0]["position"] == "mysql-bin.000131:2550"
    assert var(rows[0]["key"]) == {"id": "1"} and var(rows[2]["before"]) == {"id": "10", "val": "11"}
    assert rows[1]["source_ts"] == ts("2025-01-21T11:08:16")
    other = changes(decode(data, "x/y.json", bigquery_table="db.sch.tbl"))
    assert {(r["database"], r["schema"], r["table"]) for r in other} == {("db", "sch", "tbl")}


def test_bigquery_merge_mode_rows_are_current_state():
    rows = changes(decode(lines(
        bq({"sku": "A"}, uuid="u1", source_timestamp=1737457600000, is_deleted=False),
        bq({"sku": "B"}, uuid="u2", source_timestamp=1737457601000, is_deleted=True),
    ), "exports/shop.prices/0.json"))
    assert [(r["op"], r["flags"]) for r in rows] == [
        ("SNAPSHOT", ["unverified_source"]), ("DELETE", ["unverified_source", "delete_by_is_deleted"])]
    assert var(rows[1]["before"]) == {"sku": "B"} and rows[0]["primary_keys"] is None


def test_bigquery_parquet_export(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"id": [1, 2], "amount": pa.array([Decimal("1.50"), Decimal("2.25")], pa.decimal128(38, 9)),
                      "datastream_metadata": [{"uuid": "a", "source_timestamp": 1737457600000},
                                              {"uuid": "b", "source_timestamp": 1737457601000}]})
    path = tmp_path / "shop.orders" / "000000000000.parquet"
    path.parent.mkdir()
    pq.write_table(table, path)
    rows = changes(decode(path.read_bytes(), str(path), primary_keys=["id"]))
    assert [(r["op"], var(r["key"]), var(r["after"])["amount"]) for r in rows] == [
        ("SNAPSHOT", {"id": 1}, Decimal("1.500000000")), ("SNAPSHOT", {"id": 2}, Decimal("2.250000000"))]
    assert rows[0]["table"] == "orders" and rows[0]["format"] == "datastream.bigquery"


def test_decode_message():
    adapter = DatastreamAdapter()
    out = BatchBuilder()
    for i, value in enumerate([json.dumps(mysql("INSERT", {"id": 1, "x": 0.5})).encode(), b"", b"{nope"]):
        out.begin_record("topic", i, partition="0", offset=str(i), raw=value)
        adapter.decode_message(value, MessageMeta(topic="topic", partition="0", offset=str(i)), out)
    out.end_record()
    rows = out.flush().to_pylist()
    assert [r["op"] for r in changes(rows)] == ["INSERT"] and var(changes(rows)[0]["after"])["x"] == Decimal("0.5")
    assert [q["_rule"] for q in quarantined(rows)] == ["bad_event", "bad_json"]


def test_sniff():
    avro = avro_file(envelope(PAYMENT_FIELDS), [])
    assert DatastreamAdapter.sniff("x.avro", avro[:4096])
    assert DatastreamAdapter.sniff("x.jsonl", lines(mysql("INSERT", {"id": 1})))
    assert DatastreamAdapter.sniff("x.jsonl.gz", gzip.compress(lines(mysql("INSERT", {"id": 1}))))
    assert DatastreamAdapter.sniff("x.json", lines(bq({"id": 1}, uuid="u", source_timestamp=1)))
    assert not DatastreamAdapter.sniff("x.jsonl", b'{"magic": "atMSG", "type": "DT"}\n')
    assert not DatastreamAdapter.sniff("x.avro", avro_file({"type": "record", "name": "r", "fields": []}, []))
    assert not DatastreamAdapter.sniff("x.csv", b"id,name\n")


# -- canonical output through normalize() (Spark) ---------------------------------------------------------------
class TestDatastreamContract(AdapterContract):
    vendor = "datastream"
    message_file = str(SAMPLES / "inventory_products" / "2025/01/21/15/01/4e7ee7dfa54196df4b9a059e02a3040d34b217e0_cdc_888_0_1.jsonl")
    inputs: ClassVar[list[str]] = [str(SAMPLES)]

    def test_key_change_pairs_across_files(self, rows):
        got = sorted((r["table"], r["op"], r["vendor_op"], tuple(r["flags"])) for r in rows
                     if r["vendor_op"] in ("UPDATE-DELETE", "UPDATE-INSERT") and r["table"] in ("payments", "orders"))
        assert got == [
            ("orders", "DELETE", "UPDATE-DELETE", ("key_change",)),
            ("orders", "INSERT", "UPDATE-INSERT", ("key_change",)),
            ("orders", "UPDATE", "UPDATE-INSERT", ()),
            ("orders", "UPDATE", "UPDATE-INSERT", ()),
            ("payments", "DELETE", "UPDATE-DELETE", ("key_change",)),
            ("payments", "INSERT", "UPDATE-INSERT", ("key_change",)),
        ]

    def test_report_counts_duplicates_and_quarantine(self, result):
        report = result.report
        # The INSERT re-delivered in the .jsonl.gz, and the 2 records recovered from broken/'s truncated copy of
        # the PostgreSQL CDC file: same changes, same event ids.
        assert report["outcomes"]["duplicate"] == 3
        assert report["quarantine_by_reason"] == {
            "bad_json": 1, "bad_event": 1, "unknown_op": 1, "gcs_notification": 1, "truncated_avro": 1,
            "unknown_format": 1}
        # README.md and make_samples.py are not read.
        assert report["skipped_objects"] == {"zero_byte_object": 1, "hidden_file": 1, "not_data_file": 2}
        assert report["filters_by_rule"] == {}

    def test_values_in_spark(self, result):
        pay = (result.changes.where((F.col("table") == "payments") & (F.col("op") == "SNAPSHOT"))
               .orderBy("sort_key").select(F.to_json("after").alias("a"),
                                          F.expr("variant_get(after, '$.amount', 'decimal(35,30)')").alias("amount"))
               .collect())
        first = json.loads(pay[0]["a"], parse_float=Decimal)
        assert first["amount"] == Decimal("12345.09876")  # to_json drops trailing zeros; the value is exact
        assert str(pay[0]["amount"]) == "12345.098760000000000000000000000000"
        assert pay[1]["amount"] == Decimal("-1E-30") and pay[1]["amount"].as_tuple().exponent == -30
        assert first["cutoff"] == "08:15:30.000000" and first["ledger_seq"] == 18446744073709551615
        schemas = result.schemas.where(F.col("table") == "payments").collect()
        assert len(schemas) == 1 and schemas[0]["columns"][1]["canonical_type"] == "decimal(65,30)"


@pytest.mark.parametrize("text", [
    b'{"a": [1, -2.5e3]}', b'{"a" : 1e5}', b'{"n": -9223372036854775809}', b'{"s": "16:23:07.938Z", "i": 3}',
    b'{"a":[1,\n 2.50]}', b'{"u": 18446744073709551615}', b'{"x": 123456789012345678901234567890}',
    b'{"k": [[0.5]]}', b'{"t": 1E400}',
])
def test_loads_exact_never_yields_floats(text):
    from cdcnorm.containers import loads_exact

    got = loads_exact(text)
    assert got == json.loads(text, parse_float=Decimal)
    assert "float" not in repr(got) and not any(isinstance(v, float) for v in _leaves(got))


def _leaves(o):
    if isinstance(o, dict):
        for v in o.values():
            yield from _leaves(v)
    elif isinstance(o, list):
        for v in o:
            yield from _leaves(v)
    else:
        yield o


def test_json_array_streams_across_chunk_boundaries():
    from cdcnorm.containers import Damage, JsonRecords, Source

    events = [mysql("INSERT", {"id": i, "p": "P"}, pos=i) for i in range(5)]
    text = json.dumps(events, indent=1).replace('"P"', "12.50").encode()
    got = list(JsonRecords(Source(io.BytesIO(text)), chunk_size=7))
    assert [r.index for r in got] == [0, 1, 2, 3, 4]
    assert [r.value["payload"] for r in got] == [{"id": i, "p": Decimal("12.50")} for i in range(5)]
    assert json.loads(got[2].raw) == json.loads(json.dumps(events[2]).replace('"P"', "12.50"))
    broken = list(JsonRecords(Source(io.BytesIO(text[:-40])), accept=lambda v: "read_method" in v, chunk_size=7))
    assert [r.index for r in broken] == [0, 1, 2, 3, 4] and isinstance(broken[-1], Damage)
    assert broken[-1].error_class == "bad_json"


def test_truncated_gzip_keeps_the_lines_before_the_break():
    data = lines(*[mysql("INSERT", {"id": i, "pad": "x" * 2000}, pos=i) for i in range(40)])
    packed = gzip.compress(data)
    rows = decode(packed[: len(packed) // 2], "t.jsonl.gz")
    got = changes(rows)
    assert 0 < len(got) < 40 and [var(r["key"])["id"] for r in got] == list(range(len(got)))
    (q,) = quarantined(rows)
    assert q["_rule"] == "truncated_gzip" and "the records before byte" in q["_message"]
    assert q["origin"]["index"] == len(got) and data.splitlines()[len(got)].startswith(q["_raw"])


def test_real_file_handles_with_short_reads(tmp_path):
    """Buffered files return short read1() results; big Avro blocks and long JSON lines must still decode whole."""
    recs = [avro_rec({"id": i, "amount": Decimal(i), "paid_at": 1}, pos=i) for i in range(2000)]
    path = tmp_path / "big.avro"
    path.write_bytes(avro_file(envelope(PAYMENT_FIELDS), recs, sync_interval=1 << 20))  # one ~100 KB block
    out = BatchBuilder()
    with open(path, "rb") as fh:
        for _ in DatastreamAdapter().read_file(str(path), fh, out):
            pass
    rows = out.flush().to_pylist()
    assert len(changes(rows)) == 2000 and not quarantined(rows)
    path = tmp_path / "long.jsonl"
    path.write_bytes(lines(*[mysql("INSERT", {"id": i, "pad": "x" * 100_000}, pos=i) for i in range(3)]))
    out = BatchBuilder()
    with open(path, "rb") as fh:
        for _ in DatastreamAdapter().read_file(str(path), fh, out):
            pass
    assert [r["op"] for r in out.flush().to_pylist() if r["_kind"] == "change"] == ["INSERT"] * 3


def test_bigquery_avro_export():
    schema = {"type": "record", "name": "Root", "fields": [
        {"name": "id", "type": ["null", "long"]},
        {"name": "price", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 9}]},
        {"name": "datastream_metadata", "type": ["null", {"type": "record", "name": "dm", "fields": [
            {"name": "uuid", "type": ["null", "string"]}, {"name": "source_timestamp", "type": ["null", "long"]},
            {"name": "change_sequence_number", "type": ["null", "string"]},
            {"name": "change_type", "type": ["null", "string"]},
            {"name": "sort_keys", "type": ["null", {"type": "array", "items": "string"}]}]}]}]}
    recs = [{"id": 1, "price": Decimal("9.990000000"), "datastream_metadata": {
        "uuid": "u", "source_timestamp": 1737457600000, "change_sequence_number": "7", "change_type": "INSERT",
        "sort_keys": ["1737457600000", "mysql-bin.000131", "1932"]}}]
    rows = decode(avro_file(schema, recs), "exports/shop.items/000000000000.avro", primary_keys=["id"])
    (row,) = changes(rows)
    assert (row["op"], row["format"], row["table"], var(row["after"])) == (
        "INSERT", "datastream.bigquery", "items", {"id": 1, "price": Decimal("9.990000000")})
    (sv,) = [orjson.loads(r["_schema"]) for r in rows if r["_kind"] == "schema"]
    assert [(c["name"], c["canonical_type"], c["pk_position"]) for c in sv["columns"]] == [
        ("id", "bigint", 1), ("price", "decimal(38,9)", None)]
