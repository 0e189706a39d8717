"""Writes the DMS samples: S3 target files (CSV with and without a header, Parquet) and Kinesis / Kafka
messages (multi-line `json`, single-line `json-unformatted`). Run from the repository root:

    python samples/dms/make_samples.py

The shapes follow the DMS S3 and Kinesis / Kafka target documentation; the values are made up.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent


def write(rel: str, text: str) -> None:
    p = HERE / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8", newline="")


# -- S3, CSV without a header (the default): full load without Op, CDC with Op ------------------------------------
write("s3/public/customers/LOAD00000001.csv",
      '1,Ann,ann@example.com,100.50,2024-08-09 19:00:00\n'
      '2,"Bob, Jr.",,0.00,2024-08-09 19:00:01\n'
      '3,Cy,"say ""hi""",-7.25,\n')
write("s3/public/customers/20240809-192717787.csv",
      'I,4,Dee,dee@example.com,12.00,2024-08-09 19:27:10\n'
      'U,2,"Bob, Jr.",bob@example.com,0.00,2024-08-09 19:00:01\n'
      'U,2,"Bob, Jr.",bob@example.com,0.00,2024-08-09 19:00:01\n'
      'D,3,Cy,"say ""hi""",-7.25,\n'
      'X,9,broken,,,\n')

# -- S3, CSV with a header (AddColumnName=true): a CDC file's header starts with Op ---------------------------------
write("s3/hr/employees/20190118-184518184.csv",
      'Op,EMPLOYEE_ID,FIRST_NAME,LAST_NAME,SALARY,HIRE_DATE\n'
      'U,100,Steven,King,24000.00,2003-06-17 00:00:00\n'
      'U,101,Neena,Kochhar,17500.00,2005-09-21 00:00:00\n'
      'D,102,Lex,De Haan,17000.00,2001-01-13 00:00:00\n')

# -- S3, Parquet: full load (no Op) and CDC (Op first) --------------------------------------------------------------
ORDERS = pa.schema([("order_id", pa.int64()), ("customer", pa.string()), ("amount", pa.decimal128(15, 2)),
                    ("placed", pa.timestamp("ms", tz="UTC")), ("blob", pa.binary()), ("qty", pa.int16())])


def orders(rows: list[tuple], op: list[str] | None) -> pa.Table:
    cols = {f.name: [r[i] for r in rows] for i, f in enumerate(ORDERS)}
    table = pa.table(cols, schema=ORDERS)
    if op is not None:
        table = table.add_column(0, pa.field("Op", pa.string(), nullable=False), pa.array(op, pa.string()))
    return table


def ts(text: str):
    import datetime as dt

    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)


LOAD = [(10, "Ann", Decimal("99.90"), ts("2024-08-09T19:00:00.123"), b"\x00\x01", 1),
        (11, "Bob", Decimal("-0.01"), ts("2024-08-09T19:00:01"), None, 2)]
CDC = [(12, "Dee", Decimal("1234567890123.45"), ts("2024-08-09T19:30:00.500"), b"\xff", 3),
       (10, "Ann", Decimal("100.00"), ts("2024-08-09T19:00:00.123"), b"\x00\x01", 1),
       (11, "Bob", Decimal("-0.01"), ts("2024-08-09T19:00:01"), None, 2)]
for rel, table in (("s3/public/orders/LOAD00000001.parquet", orders(LOAD, None)),
                   ("s3/public/orders/20240809-193000123.parquet", orders(CDC, ["I", "U", "D"]))):
    (HERE / rel).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, HERE / rel, compression="NONE")


# -- Kinesis, MessageFormat=json (multi-line, tab-indented), PostgreSQL source with transaction details -------------
def meta(op: str, table: str, ts_: str, *, record="data", pk="schema-table", schema="public", tx=None, **more):
    m = {"timestamp": ts_, "record-type": record, "operation": op, "partition-key-type": pk,
         "schema-name": schema, "table-name": table}
    if tx is not None:
        m["transaction-id"] = tx
    m.update(more)
    return m


def txd(commit: str, lsn: str, rec: int, prev: int | None) -> dict:
    d = {"commit-timestamp": commit, "stream-position": f"{lsn}.{rec}.{lsn}", "transaction-record-id": rec}
    if prev is not None:
        d.update({"prev-transaction-id": prev, "prev-transaction-record-id": 1})
    return d


PG = [
    {"data": None, "metadata": meta("create-table", "items", "2024-08-09T19:00:00.000100Z", record="control",
                                    pk="task-id"),
     "control": {"table-def": {"columns": {"id": {"type": "INT32", "nullable": False},
                                           "name": {"type": "STRING", "length": 50, "nullable": True},
                                           "price": {"type": "NUMERIC", "precision": 10, "scale": 2,
                                                     "nullable": True},
                                           "attributes": {"type": "STRING", "nullable": True},
                                           "updated": {"type": "TIMESTAMP", "nullable": True}},
                               "primary-key": ["id"]}}},
    {"data": None, "metadata": meta("create-table", "awsdms_apply_exceptions", "2024-08-09T19:00:00.000200Z",
                                    record="control", pk="task-id", schema=""), "control": {}},
    {"data": {"id": 1, "name": "lamp", "price": "19.90", "attributes": "{\"foo\": \"bar\"}",
              "updated": "2024-08-09T19:00:00Z"},
     "metadata": meta("load", "items", "2024-08-09T19:00:01.000001Z", pk="primary-key")},
    {"data": {"id": 2, "name": "desk", "price": "120.00", "attributes": None, "updated": "2024-08-09T19:00:00Z"},
     "metadata": meta("load", "items", "2024-08-09T19:00:01.000002Z", pk="primary-key")},
    {"data": {"id": 3, "name": "chair", "price": "45.50", "attributes": "{}", "updated": "2024-08-09T19:05:00Z"},
     "metadata": meta("insert", "items", "2024-08-09T19:05:00.010000Z", tx=501,
                      **txd("2024-08-09T19:05:00.004000Z", "00000002/7C007178", 1, None))},
    {"data": {"id": 3, "name": "chair", "price": "44.00", "attributes": "{}", "updated": "2024-08-09T19:06:00Z"},
     "before-image": {},
     "metadata": meta("update", "items", "2024-08-09T19:06:00.010000Z", tx=502,
                      **txd("2024-08-09T19:06:00.004000Z", "00000002/7C007300", 1, 501))},
    {"data": {"id": 30, "name": "chair", "price": "44.00", "attributes": "{}", "updated": "2024-08-09T19:07:00Z"},
     "before-image": {"id": 3},
     "metadata": meta("update", "items", "2024-08-09T19:07:00.010000Z", tx=503,
                      **txd("2024-08-09T19:07:00.004000Z", "00000002/7C007400", 1, 502))},
    {"data": {"id": 2, "name": None, "price": None, "attributes": None, "updated": None},
     "metadata": meta("delete", "items", "2024-08-09T19:08:00.010000Z", tx=504,
                      **txd("2024-08-09T19:08:00.004000Z", "00000002/7C007500", 1, 503))},
    {"data": None, "metadata": meta("drop-table", "items", "2024-08-09T19:09:00.000000Z", record="control",
                                    pk="task-id"), "control": {}},
]
write("kinesis/postgres-items.json", "".join(json.dumps(m, indent="\t") + "\n" for m in PG))

# -- Kafka, MessageFormat=json-unformatted (one line each), MySQL source, BI_ before-image columns -----------------
MY = [
    {"data": {"id": 7, "name": "pen", "weight": None}, "metadata": meta(
        "insert", "tools", "2024-08-09T20:00:00.100000Z", schema="shop", tx=9001)},
    {"data": {"BI_id": 7, "BI_name": "pen", "BI_weight": None, "id": 7, "name": "pen", "weight": 3},
     "metadata": meta("update", "tools", "2024-08-09T20:00:01.100000Z", schema="shop", tx=9002)},
    {"data": {"id": 7, "name": "pen", "weight": 3}, "metadata": meta(
        "delete", "tools", "2024-08-09T20:00:02.100000Z", schema="shop", tx=9003)},
]
write("kafka/mysql-tools.jsonl", "".join(json.dumps(m, separators=(",", ":")) + "\n" for m in MY))
