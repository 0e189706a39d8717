"""Write the Debezium samples (run from the repository root: `python samples/debezium/make_samples.py`).

Every file is written from the Debezium documentation's event shapes (envelope, `source` blocks per connector,
transaction and heartbeat topics, schema-change topic), with values chosen so the tests can check them.
"""

from __future__ import annotations

import base64
import io
import json
from decimal import Decimal
from pathlib import Path

import fastavro

HERE = Path(__file__).resolve().parent


def dump(obj) -> str:
    return json.dumps(obj, separators=(",", ":"))


def b64_unscaled(d: Decimal, scale: int) -> str:
    n = int(d.scaleb(scale))
    size = max(1, (n.bit_length() + 8) // 8)
    return base64.b64encode(n.to_bytes(size, "big", signed=True)).decode()


# -- MySQL, JSON with schemas, a Kafka Connect sink's file (values only; keys by the `keys` option) ------------
CUSTOMER = {"type": "struct", "optional": True, "name": "dbserver1.inventory.customers.Value", "fields": [
    {"type": "int32", "optional": False, "field": "id"},
    {"type": "string", "optional": True, "field": "name"},
    {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
     "parameters": {"scale": "2", "connect.decimal.precision": "10"}, "field": "balance"},
    {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp", "version": 1, "field": "created"},
    {"type": "string", "optional": True, "name": "io.debezium.time.ZonedTimestamp", "version": 1,
     "field": "updated_at"},
]}
MYSQL_SOURCE = {"type": "struct", "optional": False, "name": "io.debezium.connector.mysql.Source", "fields": [
    {"type": "string", "optional": False, "field": f} for f in ("version", "connector", "name")] + [
    {"type": "int64", "optional": False, "field": "ts_ms"},
    {"type": "string", "optional": True, "name": "io.debezium.data.Enum", "version": 1,
     "parameters": {"allowed": "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"},
     "default": "false", "field": "snapshot"},
    {"type": "string", "optional": False, "field": "db"},
    {"type": "string", "optional": True, "field": "table"},
    {"type": "int64", "optional": False, "field": "server_id"},
    {"type": "string", "optional": True, "field": "gtid"},
    {"type": "string", "optional": False, "field": "file"},
    {"type": "int64", "optional": False, "field": "pos"},
    {"type": "int32", "optional": False, "field": "row"}]}
TX_BLOCK = {"type": "struct", "optional": True, "name": "event.block", "version": 1, "field": "transaction",
            "fields": [{"type": "string", "optional": False, "field": "id"},
                       {"type": "int64", "optional": False, "field": "total_order"},
                       {"type": "int64", "optional": False, "field": "data_collection_order"}]}
MYSQL_ENVELOPE = {"type": "struct", "optional": False, "name": "dbserver1.inventory.customers.Envelope",
                  "version": 1, "fields": [
                      {**CUSTOMER, "field": "before"}, {**CUSTOMER, "field": "after"},
                      {**MYSQL_SOURCE, "field": "source"}, {"type": "string", "optional": False, "field": "op"},
                      {"type": "int64", "optional": True, "field": "ts_ms"}, TX_BLOCK]}


def customer(i: int, name: str, balance: str, created_us: int, updated: str) -> dict:
    return {"id": i, "name": name, "balance": b64_unscaled(Decimal(balance), 2), "created": created_us,
            "updated_at": updated}


def mysql_event(op, before, after, pos, ts, snapshot="false", gtid=None, tx=None, row=0):
    source = {"version": "2.7.0.Final", "connector": "mysql", "name": "dbserver1", "ts_ms": ts, "snapshot": snapshot,
              "db": "inventory", "table": "customers", "server_id": 223344, "gtid": gtid,
              "file": "mysql-bin.000003", "pos": pos, "row": row}
    payload = {"before": before, "after": after, "source": source, "op": op, "ts_ms": ts + 250, "transaction": tx}
    return dump({"schema": MYSQL_ENVELOPE, "payload": payload})


def mysql_lines() -> list[str]:
    ann = customer(1, "Ann", "100.50", 1718486400123456, "2024-06-15T21:20:00.123456Z")
    bob = customer(2, "Bob", "-7.25", 1718486400000001, "2024-06-15T21:20:01Z")
    cy = customer(3, "Cy", "0.10", 1718486500000000, "2024-06-15T21:21:40.5Z")
    cy2 = {**cy, "balance": b64_unscaled(Decimal("12345678.90"), 2)}
    gtid = "0e4d5dcd-a5f1-11ee-9a2e-0242ac120002"
    return [
        mysql_event("r", None, ann, 154, 1718486400000, snapshot="first"),
        mysql_event("r", None, bob, 154, 1718486400000, snapshot="last"),
        mysql_event("c", None, cy, 420, 1718486500000, gtid=f"{gtid}:7",
                    tx={"id": f"{gtid}:7", "total_order": 1, "data_collection_order": 1}),
        mysql_event("u", cy, cy2, 760, 1718486600000, gtid=f"{gtid}:8",
                    tx={"id": f"{gtid}:8", "total_order": 1, "data_collection_order": 1}),
        mysql_event("d", cy2, None, 1100, 1718486700000, gtid=f"{gtid}:9",
                    tx={"id": f"{gtid}:9", "total_order": 1, "data_collection_order": 1}),
        dump({"schema": None, "payload": None}),  # the tombstone, as JsonConverter wrote it before KAFKA-3832
        mysql_event("c", None, cy, 1500, 1718486800000, gtid=f"{gtid}:10",
                    tx={"id": f"{gtid}:10", "total_order": 1, "data_collection_order": 1}),
    ]


# -- PostgreSQL without schemas, `kcat -J` lines (keys, headers, the transaction and heartbeat topics) ---------
def pg_source(lsn: int, ts: int, snapshot="false", last_commit: int | None = None, tx_id=571):
    return {"version": "2.7.0.Final", "connector": "postgresql", "name": "pg", "ts_ms": ts, "ts_us": ts * 1000 + 123,
            "ts_ns": (ts * 1000 + 123) * 1000, "snapshot": snapshot, "db": "shop",
            "sequence": json.dumps([None if last_commit is None else str(last_commit), str(lsn)]),
            "schema": "public", "table": "orders", "txId": tx_id, "lsn": lsn, "xmin": None}


def kcat(topic: str, offset: int, key, value, headers=None) -> str:
    line = {"topic": topic, "partition": 0, "offset": offset, "tstype": "create", "ts": 1718490000000 + offset,
            "broker": 1, "headers": headers or [], "key": None if key is None else dump(key),
            "payload": None if value is None else dump(value)}
    return dump(line)


def pg_event(op, before, after, lsn, ts, snapshot="false", last_commit=None, tx=None):
    return {"before": before, "after": after, "source": pg_source(lsn, ts, snapshot, last_commit), "op": op,
            "ts_ms": ts + 40, "transaction": tx}


def pg_lines() -> list[str]:
    t = "pg.public.orders"
    tx = lambda n, lsn: {"id": f"571:{lsn}", "total_order": n, "data_collection_order": n}  # noqa: E731
    return [
        kcat(t, 0, {"id": 1}, pg_event("r", None, {"id": 1, "note": "first", "amount": "10.00"}, 23911624,
                                       1718490000000, snapshot="true")),
        kcat(t, 1, {"id": 2}, pg_event("r", None, {"id": 2, "note": "second", "amount": "20.50"}, 23911624,
                                       1718490000000, snapshot="last")),
        kcat("pg.transaction", 0, {"id": "571:53195829"},
             {"status": "BEGIN", "id": "571:53195829", "ts_ms": 1718490100000, "event_count": None,
              "data_collections": None}),
        kcat(t, 2, {"id": 3}, pg_event("c", None, {"id": 3, "note": "third", "amount": "30.25"}, 53195829,
                                       1718490100000, last_commit=53195800, tx=tx(1, 53195829))),
        kcat(t, 3, {"id": 3}, pg_event("u", None, {"id": 3, "note": "__debezium_unavailable_value",
                                                   "amount": "31.00"}, 53195830, 1718490100000,
                                       last_commit=53195800, tx=tx(2, 53195830))),
        kcat(t, 4, {"id": 2}, pg_event("d", {"id": 2, "note": None, "amount": None}, None, 53195831, 1718490100000,
                                       last_commit=53195800, tx=tx(3, 53195831))),
        kcat(t, 5, {"id": 2}, None),  # tombstone
        kcat("pg.transaction", 1, {"id": "571:53195832"},
             {"status": "END", "id": "571:53195832", "ts_ms": 1718490100001, "event_count": 3,
              "data_collections": [{"data_collection": "public.orders", "event_count": 3}]}),
        kcat(t, 6, {"id": 1}, pg_event("d", {"id": 1, "note": None, "amount": None}, None, 53196000, 1718490200000,
                                       last_commit=53195900), headers=["__debezium.newkey", '{"id":10}']),
        kcat(t, 7, {"id": 1}, None),
        kcat(t, 8, {"id": 10}, pg_event("c", None, {"id": 10, "note": "first", "amount": "10.00"}, 53196000,
                                        1718490200000, last_commit=53195900),
             headers=["__debezium.oldkey", '{"id":1}']),
        kcat(t, 9, None, {"before": None, "after": None, "source": pg_source(53196100, 1718490300000,
                                                                             last_commit=53196050),
                          "op": "m", "ts_ms": 1718490300040, "transaction": None,
                          "message": {"prefix": "audit", "content": "aGVsbG8="}}),
        kcat("__debezium-heartbeat.pg", 0, {"serverName": "pg"}, {"ts_ms": 1718490400000}),
    ]


# -- MongoDB without schemas, `kcat -J` lines (keys name the document _id) -------------------------------------
def mongo_lines() -> list[str]:
    def ev(op, after, ts, order, before=None, desc=None):
        src = {"version": "2.7.0.Final", "connector": "mongodb", "name": "mongo", "ts_ms": ts, "snapshot": "false",
               "db": "inventory", "sequence": None, "collection": "customers", "ord": order, "lsid": None,
               "txnNumber": None, "wallTime": ts}
        return {"before": before, "after": after, "updateDescription": desc, "source": src, "op": op,
                "ts_ms": ts + 7, "transaction": None}

    oid = '{"$oid": "6650a0f1c2d3e4f5a6b7c8d9"}'
    key = {"id": oid}
    doc = ('{"_id": {"$oid": "6650a0f1c2d3e4f5a6b7c8d9"}, "name": "Dee", "visits": {"$numberLong": "9007199254740993"},'
           ' "since": {"$date": 1718486400123}, "score": {"$numberDecimal": "12.340"}}')
    doc2 = doc.replace('"Dee"', '"Dee B."')
    t = "mongo.inventory.customers"
    return [
        kcat(t, 0, key, ev("c", doc, 1718486400000, 1)),
        kcat(t, 1, key, ev("u", doc2, 1718486500000, 3,
                           desc={"removedFields": None, "updatedFields": '{"name": "Dee B."}',
                                 "truncatedArrays": None})),
        kcat(t, 2, key, ev("d", None, 1718486600000, 2)),
        kcat(t, 3, key, None),
    ]


# -- SQL Server with schemas: the schema-change topic and a data event -----------------------------------------
def sqlserver_lines() -> list[str]:
    src = {"version": "2.7.0.Final", "connector": "sqlserver", "name": "server1", "ts_ms": 1718491000000,
           "snapshot": "false", "db": "testDB", "schema": "dbo", "table": "items",
           "change_lsn": "00000025:00000d08:0025", "commit_lsn": "00000025:00000d08:0025", "event_serial_no": 1}
    ddl = {"source": src, "ts_ms": 1718491000100, "databaseName": "testDB", "schemaName": "dbo",
           "ddl": None, "tableChanges": [{"type": "CREATE", "id": '"testDB"."dbo"."items"', "table": {
               "defaultCharsetName": None, "primaryKeyColumnNames": ["id"], "columns": [
                   {"name": "id", "jdbcType": 4, "typeName": "int identity", "typeExpression": "int identity",
                    "length": 10, "scale": 0, "position": 1, "optional": False, "autoIncremented": False,
                    "generated": False},
                   {"name": "price", "jdbcType": 3, "typeName": "decimal", "typeExpression": "decimal",
                    "length": 12, "scale": 3, "position": 2, "optional": True, "autoIncremented": False,
                    "generated": False}]}}]}
    item = {"type": "struct", "optional": True, "name": "server1.testDB.dbo.items.Value", "fields": [
        {"type": "int32", "optional": False, "field": "id"},
        {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
         "parameters": {"scale": "3", "connect.decimal.precision": "12"}, "field": "price"}]}
    envelope = {"type": "struct", "optional": False, "name": "server1.testDB.dbo.items.Envelope", "fields": [
        {**item, "field": "before"}, {**item, "field": "after"},
        {"type": "struct", "optional": False, "name": "io.debezium.connector.sqlserver.Source", "field": "source",
         "fields": [{"type": "string", "optional": True, "field": k} for k in src]},
        {"type": "string", "optional": False, "field": "op"}, {"type": "int64", "optional": True, "field": "ts_ms"}]}
    data_src = {**src, "change_lsn": "00000025:00000d10:0002", "commit_lsn": "00000025:00000d10:0003",
                "event_serial_no": 2}
    before = {"id": 7, "price": b64_unscaled(Decimal("1.500"), 3)}
    after = {"id": 7, "price": b64_unscaled(Decimal("-1234.005"), 3)}
    upd = {"schema": envelope, "payload": {"before": before, "after": after, "source": data_src, "op": "u",
                                           "ts_ms": 1718491000200}}
    return [dump(ddl), dump(upd)]


# -- PostgreSQL as Avro: a sink's container file and Confluent-framed messages with a registry export ---------
AVRO_VALUE = {"type": "record", "name": "Value", "namespace": "pgavro.public.items", "fields": [
    {"name": "id", "type": "int"},
    {"name": "price", "type": ["null", {"type": "bytes", "scale": 2, "precision": 10, "connect.version": 1,
                                       "connect.parameters": {"scale": "2", "connect.decimal.precision": "10"},
                                       "connect.name": "org.apache.kafka.connect.data.Decimal",
                                       "logicalType": "decimal"}], "default": None},
    {"name": "seen", "type": ["null", {"type": "long", "connect.version": 1,
                                      "connect.name": "io.debezium.time.MicroTimestamp"}], "default": None}]}
AVRO_ENVELOPE = {"type": "record", "name": "Envelope", "namespace": "pgavro.public.items",
                 "connect.name": "pgavro.public.items.Envelope", "fields": [
                     {"name": "before", "type": ["null", AVRO_VALUE], "default": None},
                     {"name": "after", "type": ["null", "Value"], "default": None},
                     {"name": "source", "type": {"type": "record", "name": "Source",
                                                 "namespace": "io.debezium.connector.postgresql", "fields": [
                         {"name": "version", "type": "string"}, {"name": "connector", "type": "string"},
                         {"name": "name", "type": "string"}, {"name": "ts_ms", "type": "long"},
                         {"name": "snapshot", "type": ["string", "null"], "default": "false"},
                         {"name": "db", "type": "string"}, {"name": "sequence", "type": ["null", "string"]},
                         {"name": "schema", "type": "string"}, {"name": "table", "type": "string"},
                         {"name": "txId", "type": ["null", "long"]}, {"name": "lsn", "type": ["null", "long"]}]}},
                     {"name": "op", "type": "string"}, {"name": "ts_ms", "type": ["null", "long"]}]}
AVRO_KEY = {"type": "record", "name": "Key", "namespace": "pgavro.public.items", "fields": [{"name": "id",
                                                                                             "type": "int"}]}


def avro_src(lsn: int, snapshot="false"):
    return {"version": "2.7.0.Final", "connector": "postgresql", "name": "pgavro", "ts_ms": 1718492000000,
            "snapshot": snapshot, "db": "shop", "sequence": json.dumps(["0" if snapshot != "false" else "900",
                                                                        str(lsn)]),
            "schema": "public", "table": "items", "txId": 800, "lsn": lsn}


def avro_records() -> list[dict]:
    return [
        {"before": None, "after": {"id": 1, "price": Decimal("9.99"), "seen": 1718492000000001}, "source":
            avro_src(1000, "last"), "op": "r", "ts_ms": 1718492000100},
        {"before": None, "after": {"id": 2, "price": None, "seen": None}, "source": avro_src(1100), "op": "c",
         "ts_ms": 1718492000200},
    ]


def framed(schema_id: int, schema, record) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), record)
    return b"\x00" + schema_id.to_bytes(4, "big") + buf.getvalue()


KAFKA_RECORD = {"type": "record", "name": "topLevelRecord", "fields": [
    {"name": "key", "type": ["bytes", "null"]}, {"name": "value", "type": ["bytes", "null"]},
    {"name": "topic", "type": ["string", "null"]}, {"name": "partition", "type": ["int", "null"]},
    {"name": "offset", "type": ["long", "null"]},
    {"name": "headers", "type": [{"type": "array", "items": {"type": "record", "name": "headers", "fields": [
        {"name": "key", "type": ["string", "null"]}, {"name": "value", "type": ["bytes", "null"]}]}}, "null"]}]}
"""A Kafka record as Spark's Kafka source reads it (`includeHeaders`), saved by Spark's Avro writer."""


def kafka_records() -> list[dict]:
    """The PostgreSQL kcat lines as Kafka records: key and value bytes, topic, partition, offset, headers."""
    records = []
    for line in pg_lines():
        d = json.loads(line)
        h = d["headers"]
        headers = [{"key": h[i], "value": h[i + 1].encode()} for i in range(0, len(h), 2)]
        records.append({"key": None if d["key"] is None else d["key"].encode(),
                        "value": None if d["payload"] is None else d["payload"].encode(), "topic": d["topic"],
                        "partition": d["partition"], "offset": d["offset"], "headers": headers})
    return records


def main() -> None:
    sink = HERE / "sink" / "topics"
    f = sink / "dbserver1.inventory.customers" / "partition=0" / "dbserver1.inventory.customers+0+0000000000.json"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text("\n".join(mysql_lines()) + "\n")
    key_schema = {"type": "struct", "optional": False, "name": "dbserver1.inventory.customers.Key",
                  "fields": [{"type": "int32", "optional": False, "field": "id"}]}
    keys = [{"schema": key_schema, "payload": {"id": i}} for i in (1, 2, 3, 3, 3, 3, 3)]
    f.with_name(f.name.replace(".json", ".keys.json")).write_text("\n".join(map(dump, keys)) + "\n")
    (HERE / "kcat").mkdir(exist_ok=True)
    (HERE / "kcat" / "pg_orders.jsonl").write_text("\n".join(pg_lines()) + "\n")
    (HERE / "kcat" / "mongo_customers.jsonl").write_text("\n".join(mongo_lines()) + "\n")
    (HERE / "sqlserver").mkdir(exist_ok=True)
    (HERE / "sqlserver" / "server1.jsonl").write_text("\n".join(sqlserver_lines()) + "\n")
    a = sink / "pgavro.public.items" / "partition=0" / "pgavro.public.items+0+0000000000.avro"
    a.parent.mkdir(parents=True, exist_ok=True)
    with open(a, "wb") as fh:
        fastavro.writer(fh, fastavro.parse_schema(AVRO_ENVELOPE), avro_records(), codec="null", sync_marker=b"D" * 16)
    reg = HERE / "registry"
    reg.mkdir(exist_ok=True)
    (reg / "1.avsc").write_text(json.dumps(AVRO_ENVELOPE, indent=1) + "\n")
    (reg / "2.avsc").write_text(json.dumps(AVRO_KEY, indent=1) + "\n")
    conf = HERE / "confluent"
    conf.mkdir(exist_ok=True)
    upd = {"before": {"id": 1, "price": Decimal("9.99"), "seen": 1718492000000001},
           "after": {"id": 1, "price": Decimal("10.01"), "seen": 1718492100000000}, "source": avro_src(1200),
           "op": "u", "ts_ms": 1718492100100}
    (conf / "pgavro.public.items-0-5.bin").write_bytes(framed(1, AVRO_ENVELOPE, upd))
    spark_dump = HERE / "spark-kafka" / "pg.avro"
    spark_dump.parent.mkdir(exist_ok=True)
    with open(spark_dump, "wb") as fh:
        fastavro.writer(fh, fastavro.parse_schema(KAFKA_RECORD), kafka_records(), codec="null", sync_marker=b"K" * 16)
    (HERE / "malformed").mkdir(exist_ok=True)
    (HERE / "malformed" / "flattened.jsonl").write_text(dump({"id": 5, "name": "flat", "__op": "c", "__table":
                                                              "customers", "__deleted": "false"}) + "\n")


if __name__ == "__main__":
    main()
