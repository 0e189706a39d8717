"""Write the Datastream samples (run: `python samples/datastream/make_samples.py`); the output is committed.

Why a script: Avro and gzip files are binary, so they are generated from the literal events below with
fastavro, reproducibly (fixed sync markers, no clocks). The JSON files are written from literal events too,
in Datastream's key order; exact decimals are written as raw JSON numbers. Every file sits in Datastream's
Cloud Storage layout `<schema>_<table>/yyyy/mm/dd/hh/mm/<schema_key>_<read_method>_<n>_<n>_<n>.<ext>`.
See README.md for what each file demonstrates.
"""

from __future__ import annotations

import copy
import datetime as dt
import gzip
import hashlib
import io
import json
import re
import shutil
from decimal import Decimal
from pathlib import Path

import fastavro

HERE = Path(__file__).resolve().parent
UTC = dt.UTC
SYNC = hashlib.md5(b"cdcnorm datastream samples").digest()  # fixed sync marker: byte-identical output


def key(name: str) -> str:
    """A 40-hex schema_key, like Datastream's (the file-name prefix equals the events' schema_key)."""
    return hashlib.sha1(name.encode()).hexdigest()


def uuids(prefix: str, n: int) -> list[str]:
    """Datastream-style uuids: a per-file prefix plus a counter written in binary digits."""
    return [f"{prefix}{int(bin(i)[2:]):08d}" for i in range(n)]


def ms(ts: str) -> int:
    return int(dt.datetime.fromisoformat(ts).replace(tzinfo=UTC).timestamp() * 1000)


def ts(s: str) -> dt.datetime:
    return dt.datetime.fromisoformat(s).replace(tzinfo=UTC)


def stream(name: str) -> str:
    return f"projects/123456789012/locations/us-central1/streams/{name}"


class Raw(str):
    """A JSON number written verbatim (exact decimals such as 12345.098760000000000000000000000000)."""


def dumps(ev: dict) -> str:
    text = json.dumps(ev, separators=(",", ":"), ensure_ascii=False,
                      default=lambda o: f"@@RAW@@{o}@@" if isinstance(o, Raw | Decimal) else str(o))
    return re.sub(r'"@@RAW@@(.*?)@@"', r"\1", text)


def write_jsonl(rel: str, events: list[dict | str], trailing_newline: bool = True) -> None:
    lines = [e if isinstance(e, str) else dumps(e) for e in events]
    write_bytes(rel, ("\n".join(lines) + ("\n" if trailing_newline else "")).encode())


def write_bytes(rel: str, data: bytes) -> None:
    path = HERE / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def write_avro(rel: str, schema: dict, records: list[dict], sync_interval: int = 16000) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(copy.deepcopy(schema)), records, codec="null",
                    sync_interval=sync_interval, sync_marker=SYNC)
    data = buf.getvalue()
    write_bytes(rel, data)
    return data


def nullable(t) -> list:
    return ["null", t]


def envelope(name: str, source_metadata: list, payload: list, sort_keys_last: bool = False) -> dict:
    """The 2024-25 Datastream Avro envelope (field order as in the real files)."""
    fields = [
        {"name": "uuid", "type": "string"},
        {"name": "read_timestamp", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "source_timestamp", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "object", "type": "string"},
        {"name": "read_method", "type": "string"},
        {"name": "stream_name", "type": "string"},
        {"name": "schema_key", "type": "string"},
    ]
    sort_keys = {"name": "sort_keys", "type": {"type": "array", "items": ["string", "long"]}}
    tail = [
        {"name": "source_metadata", "type": {"type": "record", "name": "source_metadata", "fields": source_metadata}},
        {"name": "payload", "type": {"type": "record", "name": "payload", "fields": payload}},
    ]
    fields += [*tail, sort_keys] if sort_keys_last else [sort_keys, *tail]
    return {"type": "record", "name": name, "fields": fields}


# ================================================================================================ MySQL
MYSQL_STREAM = stream("shop-mysql-stream")
MYSQL_ORDERS_JSON_KEY = key("mysql shop.orders json v1")


def mysql_event(uuid: str, read: str, src: str, read_method: str, change_type: str, log_file: str, pos: int,
                payload: dict, table: str = "orders", schema_key: str = MYSQL_ORDERS_JSON_KEY) -> dict:
    deleted = change_type in ("DELETE", "UPDATE-DELETE")
    return {
        "uuid": uuid, "read_timestamp": read, "source_timestamp": src, "object": f"shop_{table}",
        "read_method": read_method, "stream_name": MYSQL_STREAM, "schema_key": schema_key,
        "sort_keys": [ms(src.rstrip("Z").replace(" ", "T")), log_file, pos],
        "source_metadata": {"table": table, "database": "shop", "primary_keys": ["id"], "log_file": log_file,
                            "log_position": pos, "change_type": change_type, "is_deleted": deleted},
        "payload": payload,
    }


def mysql_json() -> None:
    base = "shop_orders/2025/01/21"
    u = uuids("5c1f0e2a-6f1d-4e55-9a0b-7d3e", 3)
    order1 = {"id": 1, "customer_id": 501, "amount": Raw("12345.098760000000000000000000000000"),
              "status": "NEW", "details": {"lines": [{"sku": "A-1", "qty": 2, "price": Raw("9.99")}], "gift": False},
              "created_at": "2025-01-21T10:59:01.000Z"}
    order2 = {"id": 2, "customer_id": 502, "amount": Raw("0.000000000000000000000000000001"),
              "status": "NEW", "details": None, "created_at": "2025-01-21T10:59:30.123Z"}
    # Backfill: change_type INSERT, empty position; the last line has no trailing newline (as in real files).
    write_jsonl(f"{base}/11/00/{MYSQL_ORDERS_JSON_KEY}_mysql-backfill-fulldump_-1296257282_5_0.jsonl", [
        mysql_event(u[0], "2025-01-21T11:00:02.123Z", "2025-01-21T11:00:00.000Z", "mysql-backfill-fulldump",
                    "INSERT", "", 0, order1),
        mysql_event(u[1], "2025-01-21T11:00:02.123Z", "2025-01-21T11:00:00.000Z", "mysql-backfill-fulldump",
                    "INSERT", "", 0, order2),
    ], trailing_newline=False)

    c = uuids("8a77c9d1-1b2e-4c3f-8d4e-0f1a", 6)
    order3 = {"id": 3, "customer_id": 503, "amount": Raw("250.500000000000000000000000000000"), "status": "NEW",
              "details": {"lines": [], "gift": True}, "created_at": "2025-01-21T11:05:10.000Z"}
    shipped = {**order1, "status": "SHIPPED"}
    renumbered = {**order2, "id": 20}
    cdc = [
        # INSERT in binlog file 9; the UPDATE-INSERT below is in file 10 (numeric order, not string order).
        mysql_event(c[0], "2025-01-21 11:05:12.000", "2025-01-21 11:05:10.000", "mysql-cdc-binlog", "INSERT",
                    "mysql-bin.000009", 98765, order3),
        "",  # a blank line: skipped, not a record
        # A non-key update is ONE UPDATE-INSERT event in MySQL.
        mysql_event(c[1], "2025-01-21T11:06:01.000Z", "2025-01-21T11:06:00.000Z", "mysql-cdc-binlog",
                    "UPDATE-INSERT", "mysql-bin.000010", 1200, shipped),
        # A primary-key change (id 2 -> 20): UPDATE-DELETE (old row) + UPDATE-INSERT (new row), same position.
        mysql_event(c[2], "2025-01-21T11:07:01.000Z", "2025-01-21T11:07:00.000Z", "mysql-cdc-binlog",
                    "UPDATE-DELETE", "mysql-bin.000010", 2550, order2),
        mysql_event(c[3], "2025-01-21T11:07:01.000Z", "2025-01-21T11:07:01.000Z", "mysql-cdc-binlog",
                    "UPDATE-INSERT", "mysql-bin.000010", 2550, renumbered),
        # DELETE: the payload is the full old row.
        mysql_event(c[4], "2025-01-21T11:08:01.000Z", "2025-01-21T11:08:00.000Z", "mysql-cdc-binlog",
                    "DELETE", "mysql-bin.000010", 4100, order3),
    ]
    write_jsonl(f"{base}/11/05/{MYSQL_ORDERS_JSON_KEY}_mysql-cdc-binlog_1296257282_6_0.jsonl", cdc)

    # gzip (JsonFileFormat compression GZIP): a later change, plus a re-delivery of the INSERT above.
    g = uuids("2d4b6f80-3a5c-4e7d-9f01-2b3c", 2)
    gz_events = [
        mysql_event(g[0], "2025-01-21T11:09:01.000Z", "2025-01-21T11:09:00.000Z", "mysql-cdc-binlog",
                    "UPDATE-INSERT", "mysql-bin.000011", 310, {**renumbered, "status": "PAID"}),
        {**cdc[0], "uuid": g[1], "read_timestamp": "2025-01-21T11:09:30.000Z"},  # at-least-once duplicate
    ]
    text = ("\n".join(dumps(e) for e in gz_events) + "\n").encode()
    write_bytes(f"{base}/11/09/{MYSQL_ORDERS_JSON_KEY}_mysql-cdc-binlog_1296257282_6_1.jsonl.gz",
                gzip.compress(text, mtime=0))
    # Objects the file lister skips: a zero-byte object and a folder marker.
    write_bytes(f"{base}/11/09/{MYSQL_ORDERS_JSON_KEY}_mysql-cdc-binlog_1296257282_6_2.jsonl", b"")
    write_bytes(f"{base}/_$folder$", b"")

    # A pretty-printed JSON array (what some tools save; Datastream itself writes JSON Lines).
    cust_key = key("mysql shop.customers json v1")
    a = uuids("71c0ffee-0a0b-4c0d-8e0f-1a2b", 2)
    arr = [
        mysql_event(a[0], "2025-01-21T12:00:01.000Z", "2025-01-21T12:00:00.000Z", "mysql-cdc-binlog", "INSERT",
                    "mysql-bin.000011", 900, {"id": 7, "name": "Ada", "avatar": "89504e47"}, "customers", cust_key),
        mysql_event(a[1], "2025-01-21T12:01:01.000Z", "2025-01-21T12:01:00.000Z", "mysql-cdc-binlog",
                    "UPDATE-INSERT", "mysql-bin.000011", 1400, {"id": 7, "name": "Ada L.", "avatar": "89504e47"},
                    "customers", cust_key),
    ]
    text = json.dumps(json.loads("[" + ",".join(dumps(e) for e in arr) + "]"), indent=2)
    write_bytes(f"shop_customers/2025/01/21/12/00/{cust_key}_mysql-cdc-binlog_1296257282_6_0.json", text.encode())


MYSQL_SM = [
    {"name": "table", "type": "string"}, {"name": "database", "type": "string"},
    {"name": "primary_keys", "type": {"type": "array", "items": "string"}},
    {"name": "log_file", "type": ["null", "string"]}, {"name": "log_position", "type": ["null", "long"]},
    {"name": "change_type", "type": ["null", "string"]}, {"name": "is_deleted", "type": ["null", "boolean"]},
]
MYSQL_PAYMENTS = [
    {"default": None, "name": "id", "type": nullable("int")},
    {"default": None, "name": "amount", "type": nullable(
        {"type": "bytes", "logicalType": "decimal", "precision": 65, "scale": 30})},
    {"default": None, "name": "fee", "type": nullable(
        {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2})},
    {"default": None, "name": "ledger_seq", "type": nullable({"type": "string", "logicalType": "number"})},
    {"default": None, "name": "paid_on", "type": nullable({"type": "long", "logicalType": "timestamp-micros"})},
    {"default": None, "name": "paid_at", "type": nullable({"type": "long", "logicalType": "timestamp-micros"})},
    {"default": None, "name": "cutoff", "type": nullable({"type": "long", "logicalType": "time-interval-micros"})},
    {"default": None, "name": "ref", "type": nullable("string")},
    {"default": None, "name": "token", "type": nullable("string")},
    {"default": None, "name": "rate", "type": nullable("float")},
]


def mysql_avro() -> None:
    skey = key("mysql shop.payments avro v1")
    schema = envelope("shop_payments", MYSQL_SM, MYSQL_PAYMENTS)
    base = "shop_payments/2025/01/21"

    def rec(uuid, src, method, ct, log_file, pos, payload):
        return {
            "uuid": uuid, "read_timestamp": ts(src) + dt.timedelta(seconds=2), "source_timestamp": ts(src),
            "object": "shop_payments", "read_method": method, "stream_name": MYSQL_STREAM, "schema_key": skey,
            "sort_keys": [ms(src), log_file, pos],
            "source_metadata": {"table": "payments", "database": "shop", "primary_keys": ["id"],
                                "log_file": log_file, "log_position": pos, "change_type": ct,
                                "is_deleted": ct in ("DELETE", "UPDATE-DELETE")},
            "payload": payload,
        }

    p1 = {"id": 1, "amount": Decimal("12345.098760000000000000000000000000"), "fee": Decimal("1.25"),
          "ledger_seq": "18446744073709551615", "paid_on": ts("2025-01-20T00:00:00"),
          "paid_at": ts("2025-01-20T09:15:30.123456"), "cutoff": 29730000000, "ref": "INV-1",
          "token": "deadbeef", "rate": 45.67}
    p2 = {**p1, "id": 2, "amount": Decimal("-0.000000000000000000000000000001"), "ledger_seq": "7",
          "cutoff": -3723000001, "ref": "INV-2", "token": "00ff", "rate": 1.2}
    u = uuids("c0ffee00-1111-4222-8333-4444", 2)
    write_avro(f"{base}/11/00/{skey}_mysql-backfill-fulldump_1296257282_6_0.avro", schema, [
        rec(u[0], "2025-01-21T11:00:00", "mysql-backfill-fulldump", "INSERT", "", 0, p1),
        rec(u[1], "2025-01-21T11:00:00", "mysql-backfill-fulldump", "INSERT", "", 0, p2),
    ])
    # A key change whose halves landed in two different files (Datastream rotates files any time).
    d = uuids("ee7534b0-71d8-4164-8ad8-1eaf", 2)
    write_avro(f"{base}/11/10/{skey}_mysql-cdc-binlog_1296257282_6_10.avro", schema, [
        rec(d[0], "2025-01-21T11:10:00", "mysql-cdc-binlog", "UPDATE-DELETE", "mysql-bin.000010", 7700, p2),
    ])
    write_avro(f"{base}/11/10/{skey}_mysql-cdc-binlog_1296257282_6_11.avro", schema, [
        rec(d[1], "2025-01-21T11:10:00", "mysql-cdc-binlog", "UPDATE-INSERT", "mysql-bin.000010", 7700,
            {**p2, "id": 3}),
    ])


# ================================================================================================ Oracle
ORACLE_STREAM = stream("hr-oracle-stream")
ORACLE_SM = [
    {"name": "schema", "type": "string"}, {"name": "table", "type": "string"}, {"name": "database", "type": "string"},
    {"name": "row_id", "type": ["null", "string"]}, {"name": "scn", "type": ["null", "long"]},
    {"name": "is_deleted", "type": ["null", "boolean"]}, {"name": "change_type", "type": ["null", "string"]},
    {"name": "ssn", "type": ["null", "long"]}, {"name": "rs_id", "type": ["null", "string"]},
    {"name": "tx_id", "type": ["null", "string"]}, {"name": "log_file", "type": ["null", "string"]},
    {"name": "primary_keys", "type": ["null", {"type": "array", "items": "string"}]},
]
ORACLE_EMP = [
    {"name": "EMPLOYEE_ID", "type": nullable("long")},
    {"name": "FIRST_NAME", "type": nullable({"logicalType": "varchar", "length": 20, "type": "string"})},
    {"name": "LAST_NAME", "type": nullable({"logicalType": "varchar", "length": 25, "type": "string"})},
    {"name": "HIRE_DATE", "type": nullable({"logicalType": "timestamp-micros", "type": "long"})},
    {"name": "SALARY", "type": nullable({"logicalType": "decimal", "precision": 8, "scale": 2, "type": "bytes"})},
    {"name": "COMMISSION_PCT", "type": nullable({"logicalType": "decimal", "precision": 2, "scale": 2,
                                                   "type": "bytes"})},
]
ORACLE_KEY = key("oracle HR.EMPLOYEES v1")


def oracle_rec(uuid, src, method, ct, scn, rs_id, ssn, row_id, payload, tx="CAACAAUKAAA="):
    cdc = method == "oracle-cdc-logminer"
    return {
        "uuid": uuid, "read_timestamp": ts(src) + dt.timedelta(seconds=3), "source_timestamp": ts(src),
        "object": "HR_EMPLOYEES", "read_method": method, "stream_name": ORACLE_STREAM, "schema_key": ORACLE_KEY,
        "sort_keys": [ms(src), scn, rs_id or "", ssn],
        "source_metadata": {
            "schema": "HR", "table": "EMPLOYEES", "database": "ORCL", "row_id": row_id, "scn": scn,
            "is_deleted": ct == "DELETE", "change_type": ct, "ssn": ssn, "rs_id": rs_id,
            "tx_id": tx if cdc else None,
            "log_file": "/u01/app/oracle/fast_recovery_area/ORCL/archivelog/2025_01_21/o1_mf_1_212_j5jm8lkk_.arc"
            if cdc else None,
            "primary_keys": ["EMPLOYEE_ID"],
        },
        "payload": payload,
    }


def oracle_avro() -> None:
    schema = envelope("HR_EMPLOYEES", ORACLE_SM, ORACLE_EMP, sort_keys_last=True)
    base = "HR_EMPLOYEES/2025/01/21"
    emp = {"EMPLOYEE_ID": 206, "FIRST_NAME": "William", "LAST_NAME": "Gietz", "HIRE_DATE": ts("2002-06-07T00:00:00"),
           "SALARY": Decimal("8300.00"), "COMMISSION_PCT": None}
    emp2 = {"EMPLOYEE_ID": 210, "FIRST_NAME": "Sean", "LAST_NAME": "Zhou", "HIRE_DATE": ts("2020-01-09T00:00:00"),
            "SALARY": Decimal("12131.00"), "COMMISSION_PCT": Decimal("0.35")}
    b = uuids("02a82e8e-e883-4b03-890c-2414", 2)
    # Backfill (2021-style): change_type null, no rs_id.
    write_avro(f"{base}/09/00/{ORACLE_KEY}_oracle-backfill_21989784_0_0.avro", schema, [
        oracle_rec(b[0], "2025-01-21T09:00:00", "oracle-backfill", None, 7040521, None, 0, "AAAE5XAAEAAAADNAAE", emp),
        oracle_rec(b[1], "2025-01-21T09:00:00", "oracle-backfill", None, 7040521, None, 0, "AAAE5XAAEAAAADNAAF",
                   emp2),
    ])
    c = uuids("eef07acc-81e8-4b03-97b0-678c", 5)
    moved = {**emp2, "EMPLOYEE_ID": 211}
    write_avro(f"{base}/09/30/{ORACLE_KEY}_oracle-cdc-logminer_21989784_0_1.avro", schema, [
        oracle_rec(c[0], "2025-01-21T09:30:00", "oracle-cdc-logminer", "INSERT", 7044811,
                   " 0x0000d4.000091be.0010 ", 1, "AAAE5XAAEAAAADMAAB",
                   {"EMPLOYEE_ID": 300, "FIRST_NAME": "Grace", "LAST_NAME": "Hopper",
                    "HIRE_DATE": ts("2025-01-21T00:00:00"), "SALARY": Decimal("99999.99"), "COMMISSION_PCT": None}),
        # Oracle non-key update: change_type UPDATE.
        oracle_rec(c[1], "2025-01-21T09:31:00", "oracle-cdc-logminer", "UPDATE", 7044834,
                   " 0x0000d5.00000002.0010 ", 0, "AAAE5XAAEAAAADNAAE", {**emp, "SALARY": Decimal("8400.00")}),
        # Key change 210 -> 211: identical scn/rs_id/ssn; Oracle's UPDATE-DELETE has is_deleted=false.
        oracle_rec(c[2], "2025-01-21T09:32:00", "oracle-cdc-logminer", "UPDATE-DELETE", 7044900,
                   " 0x0000d5.00000009.0010 ", 0, "AAAE5XAAEAAAADNAAF", emp2),
        oracle_rec(c[3], "2025-01-21T09:32:00", "oracle-cdc-logminer", "UPDATE-INSERT", 7044900,
                   " 0x0000d5.00000009.0010 ", 0, "AAAE5XAAEAAAADNAAF", moved),
        oracle_rec(c[4], "2025-01-21T09:33:00", "oracle-cdc-logminer", "DELETE", 7044930,
                   " 0x0000d6.00000002.0010 ", 0, "AAAE5XAAEAAAADNAAF", moved),
    ])


def oracle_json() -> None:
    """Oracle JSON with the 2021 timestamp forms: read '2025-01-21 09:40:04.408', source '...T09:40:04.408'."""
    jkey = key("oracle HR.JOBS json v1")
    ev = {
        "uuid": "00c32134-f50e-4460-a6c0-399900000000", "read_timestamp": "2025-01-21 09:40:04.408",
        "source_timestamp": "2025-01-21T09:40:04.408", "object": "HR_JOBS", "read_method": "oracle-cdc-logminer",
        "stream_name": ORACLE_STREAM, "schema_key": jkey, "sort_keys": [1737452404408, 7045000, " 0x0000d7.00000010.0010 ", 2],
        "source_metadata": {"schema": "HR", "table": "JOBS", "database": "ORCL", "row_id": "AAAEARAAEAAAAC9AAS",
                            "scn": 7045000, "is_deleted": False, "change_type": "INSERT", "ssn": 2,
                            "rs_id": " 0x0000d7.00000010.0010 ", "tx_id": "BAABACkBAAA=", "log_file": "",
                            "primary_keys": ["JOB_ID"]},
        "payload": {"JOB_ID": "PR_REP", "JOB_TITLE": "Public Relations Representative", "MIN_SALARY": 4500,
                    "MAX_SALARY": Raw("10500.50")},
    }
    write_jsonl(f"HR_JOBS/2025/01/21/09/40/{jkey}_oracle-cdc-logminer_21989784_0_2.jsonl", [ev])


# ============================================================================================ PostgreSQL
PG_STREAM = stream("ledger-postgres-stream")
PG_SM = [
    {"name": "schema", "type": "string"}, {"name": "table", "type": "string"},
    {"name": "is_deleted", "type": ["null", "boolean"]}, {"name": "change_type", "type": ["null", "string"]},
    {"name": "tx_id", "type": ["null", "long"]}, {"name": "lsn", "type": ["null", "string"]},
    {"name": "primary_keys", "type": ["null", {"type": "array", "items": "string"}]},
]


def md_array(col: str, elem) -> dict:
    name = f"multidimensionalArray_{col}"
    return {"type": "record", "name": name, "fields": [
        {"default": None, "name": "nestedArray", "type": ["null", {"type": "array", "items": name}]},
        {"default": None, "name": "elementValue", "type": ["null", elem]},
    ]}


PG_ACCOUNTS = [
    {"name": "id", "type": nullable("int")},
    {"name": "owner", "type": nullable({"logicalType": "varchar", "length": 64, "type": "string"})},
    {"name": "balance", "type": nullable({"logicalType": "decimal", "precision": 20, "scale": 4, "type": "bytes"})},
    {"name": "avatar", "type": nullable("bytes")},
    {"name": "tags", "type": nullable(md_array("tags", "string"))},
    {"name": "grid", "type": nullable(md_array("grid", "int"))},
    {"name": "profile", "type": nullable({"logicalType": "json", "type": "string"})},
    {"name": "opened_at", "type": nullable({"type": "record", "name": "timestampTz", "fields": [
        {"name": "timestamp", "type": {"logicalType": "timestamp-micros", "type": "long"}},
        {"name": "offset", "type": {"logicalType": "time-millis", "type": "int"}}]})},
    {"name": "valid_until", "type": nullable({"logicalType": "timestamp-micros", "type": "long"})},
]


def arr(values) -> dict:
    """A PostgreSQL array as Datastream's recursive multidimensionalArray record."""
    return {"nestedArray": [arr(v) if isinstance(v, list) else {"nestedArray": None, "elementValue": v}
                            for v in values], "elementValue": None}


def pg_avro() -> bytes:
    skey = key("postgresql public.accounts avro v1")
    schema = envelope("public_accounts", PG_SM, PG_ACCOUNTS)

    def rec(uuid, src, method, ct, lsn, tx, payload):
        return {
            "uuid": uuid, "read_timestamp": ts(src) + dt.timedelta(seconds=1), "source_timestamp": ts(src),
            "object": "public_accounts", "read_method": method, "stream_name": PG_STREAM, "schema_key": skey,
            "sort_keys": [ms(src), lsn],
            "source_metadata": {"schema": "public", "table": "accounts", "is_deleted": ct == "DELETE",
                                "change_type": ct, "tx_id": tx, "lsn": lsn, "primary_keys": ["id"]},
            "payload": payload,
        }

    acct = {"id": 1, "owner": "ada", "balance": Decimal("1000.5000"), "avatar": b"\x89PNG\r\n\x1a\n",
            "tags": arr(["vip", "eu"]), "grid": arr([[1, 2], [3, 4]]),
            "profile": '{"tier": "gold", "limit": 2500.75, "flags": [true, null]}',
            "opened_at": {"timestamp": 1737450000123456, "offset": 0},
            "valid_until": 9223372036825200000}  # PostgreSQL 'infinity'
    acct2 = {"id": 2, "owner": "bob", "balance": Decimal("-3.0001"), "avatar": None, "tags": arr([]),
             "grid": None, "profile": "[]", "opened_at": {"timestamp": 1737450000000000, "offset": 3600000},
             "valid_until": -9223372036832400000}  # '-infinity'
    b = "f22acc71-c2f9-440e-9e4a-9b3100000000"  # PostgreSQL backfill: one uuid for every event of the file
    write_avro(f"public_accounts/2025/01/21/10/00/{skey}_postgresql-backfill_-96622484_7_100.avro", schema, [
        rec(b, "2025-01-21T10:00:00", "postgresql-backfill", "INSERT", "", None, acct),
        rec(b, "2025-01-21T10:00:00", "postgresql-backfill", "INSERT", "", None, acct2),
    ])
    c = uuids("626eb68e-e6df-4fce-baf5-04bf", 3)
    cdc = [
        rec(c[0], "2025-01-21T10:05:00", "postgresql-cdc", "INSERT", "9/16B3748", 363550,
            {**acct, "id": 3, "owner": "cy", "valid_until": 1767225600000000}),
        rec(c[1], "2025-01-21T10:06:00", "postgresql-cdc", "UPDATE", "16/CB002DB0", 363552,
            {**acct, "balance": Decimal("999.0000")}),
        rec(c[2], "2025-01-21T10:07:00", "postgresql-cdc", "DELETE", "16/CB002E10", 363553, acct2),
    ]
    write_avro(f"public_accounts/2025/01/21/10/05/{skey}_postgresql-cdc_-96622484_7_531013.avro", schema, cdc)
    # The same three events in a file of one block per record, cut inside the last block (see broken/).
    return write_avro(f"broken/public_accounts/2025/01/21/10/05/{skey}_postgresql-cdc_-96622484_7_531014.avro",
                      schema, cdc, sync_interval=1)


def pg_json() -> None:
    skey = key("postgresql public.transfers json v1")

    def ev(uuid, read, src, method, ct, lsn, tx, payload):
        return {
            "uuid": uuid, "read_timestamp": read, "source_timestamp": src, "object": "public_transfers",
            "read_method": method, "stream_name": PG_STREAM, "schema_key": skey,
            "sort_keys": [ms(src.rstrip("Z")), lsn],
            "source_metadata": {"schema": "public", "table": "transfers", "is_deleted": ct == "DELETE",
                                "change_type": ct, "tx_id": tx, "lsn": lsn, "primary_keys": ["id"]},
            "payload": payload,
        }

    t1 = {"id": 10, "amount": Raw("55.066315446079813"), "meta": {"channel": "web", "fee": Raw("0.10")},
          "booked_at": "2025-01-21T10:10:00.745Z"}
    t2 = {"id": 11, "amount": Raw("1E+3"), "meta": None, "booked_at": "2025-01-21T10:10:01.000Z"}
    same = "bf1cccdd-5e71-4e04-8bc0-752c00000000"
    write_jsonl(f"public_transfers/2025/01/21/10/10/{skey}_postgresql-backfill_881162559_7_35668.jsonl", [
        ev(same, "2025-01-21T10:10:07.938Z", "2025-01-21T10:10:07.938Z", "postgresql-backfill", "INSERT", "", None,
           t1),
        ev(same, "2025-01-21T10:10:07.938Z", "2025-01-21T10:10:07.938Z", "postgresql-backfill", "INSERT", "", None,
           t2),
    ])
    c = uuids("f23df35c-01c0-4e72-bf69-d6c3", 2)
    write_jsonl(f"public_transfers/2025/01/21/10/12/{skey}_postgresql-cdc_881162559_7_35669.jsonl", [
        ev(c[0], "2025-01-21T10:12:46.698000Z", "2025-01-21T10:12:31.393000Z", "postgresql-cdc", "UPDATE",
           "BD/A0007310", 1186572, {**t1, "meta": {"channel": "web", "fee": Raw("0.15")}}),
        ev(c[1], "2025-01-21T10:13:46.698000Z", "2025-01-21T10:13:31.393000Z", "postgresql-cdc", "DELETE",
           "BD/A0007400", 1186573, t2),
    ])


# ============================================================================================ SQL Server
MSSQL_STREAM = stream("sales-sqlserver-stream")
MSSQL_SM = [
    {"name": "schema", "type": "string"}, {"name": "table", "type": "string"}, {"name": "database", "type": "string"},
    {"name": "lsn", "type": ["null", "string"]}, {"name": "tx_id", "type": ["null", "string"]},
    {"name": "is_deleted", "type": ["null", "boolean"]}, {"name": "change_type", "type": ["null", "string"]},
    {"name": "primary_keys", "type": ["null", {"type": "array", "items": "string"}]},
]
MSSQL_CUSTOMERS = [
    {"name": "customer_id", "type": nullable("int")},
    {"name": "name", "type": nullable({"logicalType": "varchar", "length": 100, "type": "string"})},
    {"name": "credit", "type": nullable({"logicalType": "decimal", "precision": 19, "scale": 4, "type": "bytes"})},
    {"name": "updated_at", "type": nullable({"logicalType": "timestamp-micros", "type": "long"})},
]


def mssql() -> None:
    skey = key("sqlserver dbo.customers v1")
    schema = envelope("dbo_customers", MSSQL_SM, MSSQL_CUSTOMERS)

    def rec(uuid, src, ct, lsn, payload):
        return {
            "uuid": uuid, "read_timestamp": ts(src) + dt.timedelta(seconds=1), "source_timestamp": ts(src),
            "object": "dbo_customers", "read_method": "sqlserver-cdc", "stream_name": MSSQL_STREAM,
            "schema_key": skey, "sort_keys": [ms(src)],
            "source_metadata": {"schema": "dbo", "table": "customers", "database": "sales", "lsn": lsn,
                                "tx_id": "0000:00000fa1", "is_deleted": ct == "DELETE", "change_type": ct,
                                "primary_keys": ["customer_id"]},
            "payload": payload,
        }

    c = {"customer_id": 101, "name": "Contoso", "credit": Decimal("1500.0000"),
         "updated_at": ts("2025-01-21T13:00:00.5")}
    u = uuids("9b1deb4d-3b7d-4bad-9bdd-2b0d", 3)
    write_avro(f"dbo_customers/2025/01/21/13/00/{skey}_sqlserver-cdc_5550001_1_0.avro", schema, [
        rec(u[0], "2025-01-21T13:00:00", "INSERT", "00000025:00000728:0003", c),
        rec(u[1], "2025-01-21T13:01:00", "UPDATE", "00000025:00000730:0002", {**c, "credit": Decimal("1750.5000")}),
        rec(u[2], "2025-01-21T13:02:00", "DELETE", "00000026:00000010:0001", {**c, "credit": Decimal("1750.5000")}),
    ])
    jkey = key("sqlserver dbo.orders json v1")
    ev = {
        "uuid": "00c32134-f50e-4460-a6c0-399900010011", "read_timestamp": "2025-01-21 13:05:04.408",
        "source_timestamp": "2025-01-21T13:05:04.408", "object": "dbo_orders", "read_method": "sqlserver-cdc",
        "stream_name": MSSQL_STREAM, "schema_key": jkey, "sort_keys": [1737464704408],
        # Keys in replication_index instead of primary_keys (DataflowTemplates issue #3805).
        "source_metadata": {"schema": "dbo", "table": "orders", "database": "sales", "lsn": "00000026:00000020:0004",
                            "tx_id": "0000:00000fa2", "is_deleted": False, "change_type": "INSERT",
                            "replication_index": ["order_id"]},
        "payload": {"order_id": 9001, "customer_id": 101, "total": Raw("250.00")},
    }
    write_jsonl(f"dbo_orders/2025/01/21/13/05/{jkey}_sqlserver-cdc_5550001_1_1.jsonl", [ev])


# ==================================================================== Salesforce, MongoDB, Spanner (unverified)
def unverified_sources() -> None:
    skey = key("salesforce Account v1")
    sf = [{
        "uuid": f"6a1f0c00-0000-4000-8000-00000000000{i}", "read_timestamp": f"2025-01-21T14:0{i}:02.000Z",
        "source_timestamp": f"2025-01-21T14:0{i}:00.000Z", "object": "Account", "read_method": "salesforce-cdc",
        "stream_name": stream("crm-salesforce-stream"), "schema_key": skey, "sort_keys": [ms(f"2025-01-21T14:0{i}:00")],
        "source_metadata": {"object_name": "Account", "domain": "acme.my.salesforce.com", "is_deleted": ct == "DELETE",
                            "change_type": ct, "primary_keys": ["Id"]},
        "payload": {"Id": "0015g00000XyZabAAB", "Name": name, "AnnualRevenue": Raw(rev),
                    "LastModifiedDate": f"2025-01-21T14:0{i}:00.000Z"},
    } for i, (ct, name, rev) in enumerate([("INSERT", "Acme", "1000000.00"), ("UPDATE", "Acme Corp", "1250000.50"),
                                           ("DELETE", "Acme Corp", "1250000.50")])]
    write_jsonl(f"Account/2025/01/21/14/00/{skey}_salesforce-cdc_777_0_0.jsonl", sf)

    mkey = key("mongodb inventory.products v1")

    def mongo(uuid, method, ct, secs, nanos, doc):
        return {
            "uuid": uuid, "read_timestamp": "2025-01-21T15:00:05.000Z",
            "source_timestamp": dt.datetime.fromtimestamp(secs, UTC).isoformat().replace("+00:00", "Z"),
            "object": "inventory_products", "read_method": method, "stream_name": stream("catalog-mongodb-stream"),
            "schema_key": mkey, "sort_keys": [str(secs), str(nanos)],
            "source_metadata": {"database": "inventory", "collection": "products", "change_type": ct,
                                "is_deleted": ct == "DELETE", "primary_key": ["_id"]},
            "payload": doc,
        }

    doc = {"_id": "6811235eaf8583310cb9d2e9", "name": "widget", "qty": 10, "price": Raw("10.99"),
           "tags": ["blue", "small"], "dims": {"w": 2, "h": Raw("3.5")}}
    write_jsonl(f"inventory_products/2025/01/21/15/00/{mkey}_backfill_888_0_0.jsonl", [
        mongo("2a9cf8eb-4f35-433c-899a-399200000000", "backfill", "READ", 1737471600, 184498000, doc)])
    write_jsonl(f"inventory_products/2025/01/21/15/01/{mkey}_cdc_888_0_1.jsonl", [
        mongo("2a9cf8eb-4f35-433c-899a-399300000000", "cdc", "CREATE", 1737471660, 1000,
              {**doc, "_id": "6811235eaf8583310cb9d2ea", "name": "gadget"}),
        mongo("2a9cf8eb-4f35-433c-899a-399300000001", "cdc", "UPDATE", 1737471660, 2000, {**doc, "qty": 9}),
        mongo("2a9cf8eb-4f35-433c-899a-399300000010", "cdc", "DELETE", 1737471661, 0, {**doc, "qty": 9}),
    ])

    skey = key("spanner Singers v1")

    def spanner(i, mod, seq, payload):
        commit = f"2025-01-21T16:00:0{i}.123456789Z"
        return {
            "uuid": f"3c9e1a2b-5d6f-4a8b-9c0d-1e2f0000000{i}", "read_timestamp": f"2025-01-21T16:00:0{i}.500Z",
            "source_timestamp": commit, "object": "Singers", "read_method": "spanner-cdc",
            "stream_name": stream("music-spanner-stream"), "schema_key": skey, "sort_keys": [ms(f"2025-01-21T16:00:0{i}")],
            "source_metadata": {
                "commit_timestamp": commit, "snapshot": False, "project_id": "acme-prod", "instance_id": "music",
                "database_id": "music-db", "change_stream_name": "SingersStream", "table": "Singers",
                "server_transaction_id": f"txn-{i}", "record_sequence": seq, "mod_index": 0,
                "transaction_tag": "", "system_transaction": False, "number_of_records_in_transaction": 1,
                "value_capture_type": "NEW_ROW", "mod_type": mod, "primary_keys": ["SingerId"],
                "is_deleted": mod == "DELETE"},
            "payload": payload,
        }

    write_jsonl(f"Singers/2025/01/21/16/00/{skey}_spanner-cdc_999_0_0.jsonl", [
        spanner(1, "INSERT", "00000000", {"SingerId": 1, "FirstName": "Marc", "LastName": "Richards"}),
        spanner(2, "UPDATE", "00000001", {"SingerId": 1, "FirstName": "Marc", "LastName": "Richardson"}),
        spanner(3, "DELETE", "00000002", {"SingerId": 1, "FirstName": "Marc", "LastName": "Richardson"}),
    ])


# ======================================================================================= BigQuery exports
def bigquery() -> None:
    """Rows exported (JSON lines) from Datastream-managed BigQuery tables; INT64 is exported as a string."""
    def row(values, **md):
        return {**values, "datastream_metadata": md}

    append = [
        row({"id": "1", "val": "10"}, uuid="ee7534b0-71d8-4164-8ad8-1eaf00000010", source_timestamp="1737457600000",
            change_sequence_number="1", change_type="INSERT", sort_keys=["1737457600000", "mysql-bin.000131", "1932"]),
        row({"id": "1", "val": "10"}, uuid="ee7534b0-71d8-4164-8ad8-1eaf00000000", source_timestamp="1737457695000",
            change_sequence_number="2", change_type="UPDATE-DELETE",
            sort_keys=["1737457695000", "mysql-bin.000131", "2550"]),
        row({"id": "10", "val": "10"}, uuid="ee7534b0-71d8-4164-8ad8-1eaf00000001", source_timestamp="1737457696000",
            change_sequence_number="3", change_type="UPDATE-INSERT",
            sort_keys=["1737457696000", "mysql-bin.000131", "2550"]),
        row({"id": "10", "val": "11"}, uuid="ee7534b0-71d8-4164-8ad8-1eaf00000011", source_timestamp="1737457700000",
            change_sequence_number="4", change_type="UPDATE-INSERT",
            sort_keys=["1737457700000", "mysql-bin.000131", "2900"]),
        row({"id": "10", "val": "11"}, uuid="ee7534b0-71d8-4164-8ad8-1eaf00000100", source_timestamp="1737457800000",
            change_sequence_number="5", change_type="DELETE", sort_keys=["1737457800000", "mysql-bin.000131", "3300"]),
    ]
    write_jsonl("bigquery/shop.my_table/000000000000.json", append)
    merge = [
        row({"sku": "A-1", "price": "9.99"}, uuid="4f1d2c3b-0000-4000-8000-000000000001",
            source_timestamp=1737457600000, is_deleted=False),
        row({"sku": "B-2", "price": "5.00"}, uuid="4f1d2c3b-0000-4000-8000-000000000002",
            source_timestamp=1737457601000, is_deleted=True),
    ]
    write_jsonl("bigquery/shop.prices/000000000000.json", merge)


# ================================================================================================= broken
def broken(pg_cdc_avro: bytes) -> None:
    skey = MYSQL_ORDERS_JSON_KEY
    good = mysql_event("8a77c9d1-1b2e-4c3f-8d4e-0f1a00000000", "2025-01-21T11:20:01.000Z", "2025-01-21T11:20:00.000Z",
                       "mysql-cdc-binlog", "INSERT", "mysql-bin.000012", 100,
                       {"id": 30, "customer_id": 530, "amount": Raw("1.000000000000000000000000000000"),
                        "status": "NEW", "details": None, "created_at": "2025-01-21T11:20:00.000Z"})
    no_payload = {k: v for k, v in good.items() if k != "payload"}
    unknown = copy.deepcopy(good)
    unknown["source_metadata"]["change_type"] = "MERGE"
    later = copy.deepcopy(good)
    later["source_metadata"]["log_position"] = 400
    later["payload"]["id"] = 31
    write_jsonl(f"broken/shop_orders/2025/01/21/11/20/{skey}_mysql-cdc-binlog_1296257282_6_9.jsonl", [
        good,
        '{"uuid":"8a77c9d1-1b2e-4c3f-8d4e-0f1a00000001","read_method":"mysql-cdc-binlog","payload":{"id":',
        no_payload,
        unknown,
        '{"kind": "storage#object", "name": "datastream/shop_orders/2025/01/21/", "bucket": "acme-cdc", "size": "0"}',
        later,
    ])
    # Cut inside the last block: the first two records survive, the rest is one quarantine record.
    cut = len(pg_cdc_avro) - 40
    write_bytes("broken/public_accounts/2025/01/21/10/05/"
                f"{key('postgresql public.accounts avro v1')}_postgresql-cdc_-96622484_7_531014.avro", pg_cdc_avro[:cut])
    write_bytes("broken/exports/not_datastream.csv", b"id,name\n1,ada\n2,bob\n")


def main() -> None:
    for child in HERE.iterdir():  # regenerate from scratch
        if child.is_dir():
            shutil.rmtree(child)
    mysql_json()
    mysql_avro()
    oracle_avro()
    oracle_json()
    pg_cdc = pg_avro()
    pg_json()
    mssql()
    unverified_sources()
    bigquery()
    broken(pg_cdc)


if __name__ == "__main__":
    main()
