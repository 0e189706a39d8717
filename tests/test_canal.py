"""Canal adapter: the contract on the samples, then decoding tests that check the values (no Spark)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import orjson
import pytest

from cdcnorm.adapters.base import MessageMeta
from cdcnorm.adapters.canal.adapter import CanalAdapter
from cdcnorm.adapters.canal.control import statement_table
from cdcnorm.adapters.canal.mysql_types import column_type
from cdcnorm.adapters.datahub.adapter import DataHubAdapter
from cdcnorm.canonical.emit import BatchBuilder
from cdcnorm.testing import AdapterContract
from decoded import changes, decode_files, outcomes, rows_of

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "canal"
SHOP, RESENT = SAMPLES / "shop.jsonl", SAMPLES / "shop_resent.jsonl"
TICDC, DRS = SAMPLES / "ticdc_items.jsonl", SAMPLES / "drs_labels.jsonl"
UTC = dt.UTC


class TestCanalContract(AdapterContract):
    vendor = "canal"
    inputs = [str(SAMPLES)]
    message_file = str(SHOP)

    def test_a_resent_batch_adds_nothing(self, result):
        # shop_resent.jsonl holds three messages of shop.jsonl again, renumbered (`id`) and rebuilt (`ts`)
        assert result.report["outcomes"]["duplicate"] == 3
        assert result.report["outcomes"]["emitted"] == 14 + 4 + 3

    def test_a_redelivered_file_adds_nothing(self, spark, tmp_path):
        from cdcnorm.ingest.pipeline import normalize

        lake = str(tmp_path / "lake")
        first = normalize([str(SHOP)], "canal", spark=spark, lake=lake)
        copy = tmp_path / "again" / "shop-redelivered.jsonl"  # the same messages in another object
        copy.parent.mkdir()
        copy.write_bytes(SHOP.read_bytes())
        again = normalize([str(copy)], "canal", spark=spark, lake=lake)
        assert first.report["outcomes"]["emitted"] == 14
        assert again.report["outcomes"]["emitted"] == 0 and again.report["outcomes"]["duplicate"] == 14


def decode(*messages: dict | bytes, partition: str = "0", **options) -> list[dict]:
    """Decode raw Kafka messages as the pipeline's message input does (offset = position in the call)."""
    adapter = CanalAdapter(options)
    out = BatchBuilder()
    for i, m in enumerate(messages):
        value = m if isinstance(m, bytes) else orjson.dumps(m)
        out.begin_record("topic", i, partition=partition, offset=str(i), raw=value)
        adapter.decode_message(value, MessageMeta(topic="t", partition=partition, offset=str(i)), out)
    out.end_record()
    return rows_of(out.flush())


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def message(typ="UPDATE", data=None, old=None, es=1700000000000, **extra) -> dict:
    m = {"data": data if data is not None else [{"id": "1", "v": "b"}], "database": "d", "es": es, "id": 5,
         "isDdl": False, "mysqlType": {"id": "int", "v": "varchar(8)"}, "old": old, "pkNames": ["id"], "sql": "",
         "sqlType": {"id": 4, "v": 12}, "table": "t", "ts": es + 123, "type": typ}
    return {**m, **extra}


@pytest.fixture(scope="module")
def shop() -> list[dict]:
    return changes(decode_files("canal", [SHOP]))


# -- values ----------------------------------------------------------------------------------------------------
def test_values_are_typed_from_mysql_type(shop):
    ann = shop[1]["after"]
    assert shop[1]["op"] == "INSERT" and shop[1]["vendor_op"] == "INSERT"
    assert ann["id"] == 1 and ann["name"] == "Ann"
    assert ann["tier"] == "silver"  # ENUM arrives as its index: 2
    assert ann["tags"] == "new,vip"  # SET arrives as its bitmask: 3
    assert ann["balance"] == Decimal("1250.50")
    assert ann["visits"] == 7  # INT(10) UNSIGNED ZEROFILL: "0000000007"
    assert ann["big"] == Decimal(18446744073709551615)  # BIGINT UNSIGNED beyond a long
    assert ann["created"] == dt.datetime(2024, 3, 1, 9, 15, 0, 125000)  # DATETIME(3): zone-less
    assert ann["seen"] == dt.datetime(2024, 3, 1, 9, 15, 0, 123456, tzinfo=UTC)  # TIMESTAMP(6) in Canal's zone
    assert ann["opens"] == "08:30:00.000000"
    assert ann["avatar"] == bytes([0x89, 0x50, 0x4E, 0x47, 0x00, 0xFF, 0x10])  # VARBINARY as ISO-8859-1 text
    assert ann["prefs"] == {"lang": "en", "limit": Decimal("1.50")}
    assert ann["born"] == dt.date(1990, 2, 28) and ann["rating"] == 4.5
    bob = shop[2]["after"]
    assert bob["tier"] == "bronze" and bob["tags"] == "" and bob["visits"] == 0
    assert bob["opens"] == "-01:00:00.500000"
    assert bob["born"] is None  # the zero date
    assert bob["email"] is None and bob["avatar"] is None


def test_type_names_are_read_case_blind():
    assert column_type("INT").canonical == column_type("int(11)").canonical == "int"
    assert column_type("INT").text == column_type("int").text
    assert column_type("INTEGER").canonical == "int"
    assert column_type("DECIMAL(8, 0)").canonical == "decimal(8,0)"
    assert column_type("NUMERIC(8,3)").canonical == "decimal(8,3)"
    assert column_type("decimal").canonical == "decimal"  # no precision
    assert column_type("decimal").decode("12345678901234567890.123") == Decimal("12345678901234567890.123")
    assert column_type("TINYINT(2) unsigned zerofill").canonical == "smallint"
    assert column_type("TINYINT(2) unsigned zerofill").decode("07") == 7
    assert column_type("int unsigned").canonical == "bigint"
    assert column_type("ENUM('Value1','it''s')").decode("2") == "it's"  # labels keep their case
    assert column_type("enum('a','b')").decode("b") == "b"  # a producer that sends the label
    assert column_type("set('a','b','c')").decode("5") == "a,c"
    assert column_type("SET('a','b')").decode("a,b") == "a,b"
    assert column_type("binary(4)").decode("\x00\x01\xfe\xff") == b"\x00\x01\xfe\xff"
    assert column_type("LONGBLOB").canonical == "binary" and column_type("geometry").canonical == "binary"
    assert column_type("bit(1)").decode("1") is True
    assert column_type("bit(10)").decode("513") == b"\x02\x01"
    assert column_type("timestamp(3)", "Asia/Shanghai").decode("2024-01-01 08:00:00.5") == \
        dt.datetime(2024, 1, 1, 0, 0, 0, 500000, tzinfo=UTC)
    assert column_type("year").decode("2024") == 2024
    assert column_type("json").decode("not json") == "not json"
    assert column_type("mediumtext").canonical == "string" and column_type(None).canonical == "string"


def test_a_bad_value_is_quarantined_with_its_column():
    rows = decode(message("INSERT", data=[{"id": "x1", "v": "a"}]))
    assert outcomes(rows) == [("quarantine", "bad_value")]
    assert "'id'" in rows[0]["_message"]
    rows = decode(message("INSERT", data=[{"id": "1", "v": "测"}], mysqlType={"id": "int", "v": "varbinary(4)"}))
    assert outcomes(rows) == [("quarantine", "bad_value")]


def test_time_zone_option_reads_timestamps_in_the_canal_server_zone():
    m = message("INSERT", data=[{"id": "1", "v": "2024-03-01 09:15:00"}], mysqlType={"id": "int", "v": "timestamp"})
    assert changes(decode(m, time_zone="Asia/Shanghai"))[0]["after"]["v"] == dt.datetime(2024, 3, 1, 1, 15, tzinfo=UTC)


# -- images, old, changed columns -----------------------------------------------------------------------------------
def test_update_before_image_is_the_row_overlaid_with_old(shop):
    u = shop[3]
    assert u["op"] == "UPDATE"
    assert u["before"]["email"] is None  # `"email": null` in old: was NULL
    assert u["before"]["tier"] == "bronze" and u["before"]["balance"] == Decimal("0.00")
    assert u["before"]["name"] == "Bob"  # not in old: from the row
    assert u["after"]["email"] == "bob@example.com" and u["after"]["tier"] == "gold"
    assert u["changed_columns"] == ["email", "tier", "balance"]
    assert "changed_columns_partial" in u["flags"]


def test_multi_row_messages_align_old_by_index():
    m = message(data=[{"id": "1", "v": "x"}, {"id": "2", "v": None}], old=[{"v": "a"}, {"v": None}])
    rows = changes(decode(m))
    assert [r["before"] for r in rows] == [{"id": 1, "v": "a"}, {"id": 2, "v": None}]
    assert [r["after"] for r in rows] == [{"id": 1, "v": "x"}, {"id": 2, "v": None}]
    assert [r["changed_columns"] for r in rows] == [["v"], ["v"]]
    assert len({r["event_id"] for r in rows}) == 2
    assert [r["_records"] for r in rows] == [1, 0]  # one input record, two rows


def test_a_null_to_value_change_missing_from_old_is_not_claimed_unchanged():
    # alibaba/canal#4574: v changed NULL -> 'b' but `old` names only w
    m = message(data=[{"id": "1", "v": "b", "w": "2"}], old=[{"w": "1"}],
                mysqlType={"id": "int", "v": "varchar(8)", "w": "int"})
    r = changes(decode(m))[0]
    assert r["changed_columns"] == ["w"] and "changed_columns_partial" in r["flags"]


def test_ticdc_old_of_null_for_an_insert_is_ignored():
    r = changes(decode(message("INSERT", old=[None])))[0]
    assert r["op"] == "INSERT" and r["before"] is None and r["changed_columns"] is None


def test_an_update_without_old_has_no_before_image():
    r = changes(decode(message("UPDATE", old=None)))[0]
    assert r["before"] is None and r["after"] == {"id": 1, "v": "b"} and r["changed_columns"] is None


def test_primary_key_change_is_a_delete_insert_pair(shop):
    delete, insert = shop[4], shop[5]
    assert (delete["op"], insert["op"]) == ("DELETE", "INSERT")
    assert "key_change" in delete["flags"] and "key_change" in insert["flags"]
    assert delete["before"]["id"] == 1 and insert["after"]["id"] == 11
    assert delete["key"] == {"id": 1} and insert["key"] == {"id": 11}


def test_delete_carries_the_before_image(shop):
    d = shop[6]
    assert d["op"] == "DELETE" and d["after"] is None and d["before"]["email"] == "bob@example.com"


def test_tables_without_a_key():
    rows = changes(decode_files("canal", [SHOP]))
    events = [r for r in rows if r["table"] == "events" and r["op"] == "INSERT"]
    assert [r["primary_keys"] for r in events] == [None, None]
    assert events[0]["after"] == events[1]["after"]  # two identical rows of one statement: two events
    assert events[0]["event_id"] != events[1]["event_id"]
    nulls = changes(decode(message("INSERT", pkNames=None)))[0]
    assert nulls["primary_keys"] is None and nulls["key"] is None


def test_extra_columns_missing_from_mysql_type_keep_their_text():
    m = message("INSERT", data=[{"id": "1", "v": "b", "other": "val1"}])
    r = changes(decode(m))[0]
    assert r["after"]["other"] == "val1" and "untyped_values" in r["flags"]


def test_columns_mysql_type_names_but_the_row_lacks_are_missing():
    r = changes(decode(message("INSERT", data=[{"id": "1"}])))[0]
    assert r["missing_columns"] == ["v"]


# -- DDL, snapshots, TiCDC -------------------------------------------------------------------------------------
def test_ddl_messages(shop):
    ddl = [(r["op"], r["vendor_op"], r["database"], r["table"]) for r in shop if r["op"] in ("DDL", "TRUNCATE")]
    assert ddl == [
        ("DDL", "CREATE", "shop", "customers"),
        ("DDL", "ALTER", "shop", "customers"),
        ("DDL", "CINDEX", "shop", "customers"),
        ("DDL", "CREATE", "audit", "events"),  # the statement's own schema, not the session's
        ("TRUNCATE", "TRUNCATE", "audit", "events"),
        ("DDL", "RENAME", "shop", "customers"),
        ("DDL", "DINDEX", "shop", "clients"),
        ("DDL", "ERASE", "audit", "events"),
        ("DDL", "QUERY", "shop", None),
    ]
    alter = next(r for r in shop if r["vendor_op"] == "ALTER")
    assert alter["ddl"] == "ALTER TABLE customers ADD COLUMN note VARCHAR(32)"
    assert [(c["action"], c["column"]) for c in alter["ddl_changes"]] == [("add", "note")]
    create = shop[0]
    assert [c["column"] for c in create["ddl_changes"]] == ["id", "name"]


def test_statement_table():
    assert statement_table("/* Query from DMS */ CREATE TABLE `xj_`.`user02` (`uid` int)") == ("xj_", "user02")
    assert statement_table("ALTER TABLE t ADD c INT") == (None, "t")
    assert statement_table("create unique index i on s.t (c)") == ("s", "t")
    assert statement_table("drop table if exists `a``b`.c") == ("a`b", "c")
    assert statement_table("GRANT ALL ON *.* TO x") == (None, None)


def test_two_ddls_sharing_a_batch_id_and_es_are_two_events():
    a = {"data": None, "database": "d", "es": 1683008290000, "id": 15, "isDdl": True, "mysqlType": None,
         "old": None, "pkNames": None, "sql": "ALTER TABLE t ADD COLUMN v2 INT", "sqlType": None, "table": "t",
         "ts": 1683008290044, "type": "ALTER"}
    rows = changes(decode(a, {**a, "sql": "ALTER TABLE t ADD COLUMN v3 INT"}))
    assert len({r["event_id"] for r in rows}) == 2


def test_init_rows_are_snapshots_ordered_before_the_log():
    rows = changes(decode_files("canal", [DRS]))
    assert [(r["op"], r["vendor_op"]) for r in rows] == [("SNAPSHOT", "INIT"), ("SNAPSHOT", "INIT"),
                                                        ("DDL", "INIT_DDL"), ("INSERT", "INSERT")]
    assert rows[0]["sort_key"] < rows[3]["sort_key"]


def test_ticdc_commit_ts_and_watermark():
    rows = changes(decode_files("canal", [TICDC]))
    assert [r["op"] for r in rows] == ["INSERT", "UPDATE", "HEARTBEAT", "DELETE"]
    assert {r["source_db"] for r in rows} == {"tidb"}
    ins = rows[0]
    assert ins["tx_id"] == "448161845264498689" and ins["position"] == "commitTs:448161845264498689"
    assert ins["source_ts"] == dt.datetime(2024, 3, 1, 8, 1, 40, 123000, tzinfo=UTC)
    assert "unknown_position" not in ins["flags"]
    assert rows[2]["after"] == {"watermarkTs": 448161845788786688} and rows[2]["table"] is None
    again = lines(TICDC)[0]
    again["ts"] += 5000  # a redelivery: ts rebuilt; the commit ts names the change
    assert changes(decode(again))[0]["event_id"] == ins["event_id"]


# -- order and identity ------------------------------------------------------------------------------------------
def test_a_redelivered_message_keeps_its_event_ids():
    first = lines(SHOP)[1]
    resent = {**first, "id": 999, "ts": first["ts"] + 60_000}  # Canal renumbers and re-times a resent batch
    assert [r["event_id"] for r in changes(decode(first))] == [r["event_id"] for r in changes(decode(resent))]


def test_an_identical_change_made_twice_is_two_events_where_the_input_tells():
    base = message()
    later = {**base, "es": base["es"] + 1000, "ts": base["ts"] + 1000}
    assert changes(decode(base))[0]["event_id"] != changes(decode(later))[0]["event_id"]  # another second
    g1, g2 = {**base, "gtid": "uuid:1"}, {**base, "gtid": "uuid:2"}
    assert changes(decode(g1))[0]["event_id"] != changes(decode(g2))[0]["event_id"]  # another transaction
    other_batch = {**base, "id": 6}
    # same second, no gtid: only the batch id differs, which Canal renumbers on a resend -> one event by default
    assert changes(decode(base))[0]["event_id"] == changes(decode(other_batch))[0]["event_id"]
    assert changes(decode(base, batch_id_identity=True))[0]["event_id"] != \
        changes(decode(other_batch, batch_id_identity=True))[0]["event_id"]
    assert "unknown_position" in changes(decode(base))[0]["flags"]


def test_ts_never_enters_the_event_id():
    base = message()
    assert changes(decode(base))[0]["event_id"] == changes(decode({**base, "ts": 1}))[0]["event_id"]


def test_order_is_es_then_kafka_partition_offset_then_row():
    a, b = message(es=1700000001000), message(es=1700000001000, data=[{"id": "1", "v": "c"}], old=[{"v": "b"}])
    rows = changes(decode(b, a))  # offsets 0, 1: b first
    assert rows[0]["sort_key"] < rows[1]["sort_key"] and rows[0]["after"]["v"] == "c"
    earlier = changes(decode(message(es=1700000000000), a))
    assert earlier[0]["sort_key"] < earlier[1]["sort_key"]
    multi = changes(decode(message("INSERT", data=[{"id": "1", "v": "a"}, {"id": "2", "v": "b"}])))
    assert multi[0]["sort_key"] < multi[1]["sort_key"]


def test_file_and_message_rows_share_event_ids():
    by_file = [r["event_id"] for r in changes(decode_files("canal", [SHOP]))]
    by_message = [r["event_id"] for r in changes(decode(*[x.encode() for x in
                                                          SHOP.read_text(encoding="utf-8").splitlines()]))]
    assert by_file == by_message


# -- what is not a change ----------------------------------------------------------------------------------------
def test_quarantine_and_filters():
    rows = decode(b"not json", b"", {"type": "INSERT"}, message("FOO"), message("MHEARTBEAT", data=None),
                  message("INSERT", table=None, database=None), b'\x0a\x05binary')
    assert outcomes(rows) == [("quarantine", "bad_json"), ("quarantine", "empty_message"),
                              ("quarantine", "bad_message"), ("quarantine", "unknown_op"),
                              ("filtered", "canal_protocol_event"), ("quarantine", "missing_table"),
                              ("quarantine", "bad_json")]


def test_table_option_names_the_table_of_degenerate_messages():
    rows = changes(decode({"data": [{"k": "1", "v": "Hi"}], "type": "INSERT"}, table="t", database="d"))
    assert [(r["database"], r["table"], r["after"]) for r in rows] == [("d", "t", {"k": "1", "v": "Hi"})]
    assert "untyped_values" in rows[0]["flags"]


def test_kcat_lines_order_by_partition_and_offset(tmp_path):
    msgs = lines(SHOP)[1:3]
    path = tmp_path / "dump.jsonl"
    path.write_text("\n".join(json.dumps({"topic": "shop", "partition": 2, "offset": 40 + i, "key": None,
                                          "payload": json.dumps(m)}) for i, m in enumerate(msgs)) + "\n")
    rows = decode_files("canal", [path])
    assert [r["origin"]["offset"] for r in changes(rows)] == ["40", "40", "41"]
    assert [r["event_id"] for r in changes(rows)] == [r["event_id"] for r in changes(decode(*msgs))]


# -- detection ---------------------------------------------------------------------------------------------------
def test_sniff_tells_canal_from_datahub():
    for p in sorted(SAMPLES.glob("*.jsonl")):
        head = p.read_bytes()[:65536]
        assert CanalAdapter.sniff(str(p), head) and not DataHubAdapter.sniff(str(p), head), p
    datahub = Path(__file__).resolve().parents[1] / "samples" / "datahub"
    for p in sorted(f for f in datahub.rglob("*") if f.is_file()):
        assert not CanalAdapter.sniff(str(p), p.read_bytes()[:65536]), p
    assert CanalAdapter.sniff("x.json", b'{"data":[{"id":"1"}],"type":"INSERT","database":"d"}')
    assert not CanalAdapter.sniff("x.json", b'{"payload":{"op":"INSERT","data":[]},"isDdl":false,"pkNames":[]}')
