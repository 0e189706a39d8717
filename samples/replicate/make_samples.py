"""Regenerate the Qlik Replicate samples in this folder (run: `python samples/replicate/make_samples.py`).

Why a generator: the Avro forms (Replicate `MessageEnvelope`, Confluent wire format, Event Hubs Capture files)
are binary and must be reproducible byte for byte. The cases themselves are hand-written below as Python
literals; each is written once and rendered as JSON and/or Avro the way Replicate does (see replicate.md):

* JSON: `{"magic":"atMSG","type":"MD"|"DT",...,"message":{...}}`, masks as big-endian hex strings,
  NUMERIC/DATE/TIME/DATETIME/UINT8 values as strings, BYTES as hex, MD `dataSchema` without logical types
  (as in the real 2018 sample).
* Avro: the envelope's `message` is Avro of `MetadataMessage` (schema embedded in `messageSchema`) or of the
  `DataRecord` named by `messageSchemaId`; logical types (decimal, date, time-millis, timestamp-micros),
  masks as bytes.
* Event Hubs Capture: Avro container of `EventData` records whose `Body` is the message; default path layout
  `{namespace}/{hub}/{partition}/{Y}/{M}/{D}/{h}/{m}/{s}.avro`, `EnqueuedTimeUtc` as `M/d/yyyy h:mm:ss tt`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import re
from decimal import Decimal
from pathlib import Path

from fastavro import parse_schema, schemaless_reader, schemaless_writer, writer

from cdcnorm.simulate.encoders.replicate import ENVELOPE_SCHEMA  # the documented envelope, written once

HERE = Path(__file__).resolve().parent

# --------------------------------------------------------------------------------------- table definitions
# (name, type, length, precision, scale, primaryKeyPosition)
ORDERS_WIDE = [
    ("ORDER_ID", "INT8", 8, 0, 0, 1),
    ("LINE_NO", "INT2", 2, 0, 0, 2),
    ("CUSTOMER", "STRING", 40, 0, 0, 0),
    ("AMOUNT", "NUMERIC", 0, 12, 2, 0),
    ("QTY", "UINT8", 8, 0, 0, 0),
    ("PRICE", "REAL8", 8, 0, 0, 0),
    ("ORDER_DATE", "DATE", 0, 0, 0, 0),
    ("SHIP_TIME", "TIME", 0, 0, 3, 0),
    ("CREATED_AT", "DATETIME", 0, 0, 6, 0),
    ("UPDATED_AT", "DATETIME", 0, 0, 6, 0),
    ("ACTIVE", "BOOLEAN", 1, 0, 0, 0),
    ("PAYLOAD", "BYTES", 16, 0, 0, 0),
    ("NOTES", "CLOB", 0, 0, 0, 0),
    ("REGION", "WSTRING", 10, 0, 0, 0),
    ("PRIORITY", "INT1", 1, 0, 0, 0),
    ("CODE", "UINT1", 1, 0, 0, 0),
    ("WEIGHT", "REAL4", 4, 0, 0, 0),
    ("STATUS", "STRING", 10, 0, 0, 0),
]
CUSTOMERS = [
    ("CUST_ID", "INT4", 4, 0, 0, 1),
    ("NAME", "STRING", 30, 0, 0, 0),
    ("BALANCE", "NUMERIC", 0, 10, 2, 0),
]
PRODUCTS_V1 = [
    ("ID", "INT4", 4, 0, 0, 1),
    ("NAME", "STRING", 20, 0, 0, 0),
    ("PRICE", "NUMERIC", 0, 8, 2, 0),
    ("OLD_CODE", "STRING", 5, 0, 0, 0),
]
PRODUCTS_V2 = [
    ("ID", "INT4", 4, 0, 0, 1),
    ("NAME", "STRING", 20, 0, 0, 0),
    ("PRICE", "NUMERIC", 0, 12, 2, 0),
    ("COLOR", "STRING", 10, 0, 0, 0),
]
WIDE72 = [(f"C{i:02d}", "INT4", 4, 0, 0, 1 if i == 1 else 0) for i in range(1, 73)]


def schema_id(table: str, version: int) -> str:
    """A Replicate-looking schemaId: 32 upper-case hex characters, stable per (table, version)."""
    return hashlib.md5(f"{table}/{version}".encode()).hexdigest().upper()


# --------------------------------------------------------------------------------------- Avro schemas
def _avro_field_type(t: str, p: int, s: int, logical: bool) -> object:
    if not logical and t in ("NUMERIC", "DATE", "TIME", "DATETIME", "UINT8"):
        return "string"
    return {
        "BOOLEAN": "boolean",
        "BYTES": "bytes",
        "BLOB": "bytes",
        "INT1": "int",
        "INT2": "int",
        "INT4": "int",
        "UINT1": "int",
        "UINT2": "int",
        "INT8": "long",
        "UINT4": "long",
        "REAL4": "float",
        "REAL8": "double",
        "UINT8": {"type": "bytes", "logicalType": "decimal", "precision": 20, "scale": 0},
        "NUMERIC": {"type": "bytes", "logicalType": "decimal", "precision": p, "scale": s},
        "DATE": {"type": "int", "logicalType": "date"},
        "TIME": {"type": "int", "logicalType": "time-millis"},
        "DATETIME": {"type": "long", "logicalType": "timestamp-micros"},
    }.get(t, "string")


def data_schema(cols: list[tuple], logical: bool) -> dict:
    """The `DataRecord` schema Replicate publishes in the MD `dataSchema` (newer Headers fields included)."""
    fields = [{"name": n, "type": ["null", _avro_field_type(t, p, s, logical)]} for n, t, _, p, s, _ in cols]
    return {
        "type": "record",
        "name": "DataRecord",
        "fields": [
            {"name": "data", "type": {"type": "record", "name": "Data", "fields": fields}},
            {"name": "beforeData", "type": ["null", "Data"]},
            {
                "name": "headers",
                "type": {
                    "type": "record",
                    "name": "Headers",
                    "fields": [
                        {
                            "name": "operation",
                            "type": {
                                "type": "enum",
                                "name": "operation",
                                "symbols": ["INSERT", "UPDATE", "DELETE", "REFRESH"],
                            },
                        },
                        {"name": "changeSequence", "type": "string"},
                        {"name": "timestamp", "type": "string"},
                        {"name": "streamPosition", "type": "string"},
                        {"name": "transactionId", "type": "string"},
                        {"name": "changeMask", "type": ["null", "bytes"]},
                        {"name": "columnMask", "type": ["null", "bytes"]},
                        {"name": "transactionEventCounter", "type": ["null", "long"]},
                        {"name": "transactionLastEvent", "type": ["null", "boolean"]},
                    ],
                },
            },
        ],
    }


def metadata_schema(cols: list[tuple]) -> dict:
    """The `MetadataMessage` schema (as in the real 2018 MD's `messageSchema`): one record per column."""
    col_fields = [
        {"name": k, "type": t}
        for k, t in (
            ("ordinal", "int"),
            ("type", "string"),
            ("length", "int"),
            ("precision", "int"),
            ("scale", "int"),
            ("primaryKeyPosition", "int"),
            ("nullable", "boolean"),
        )
    ]
    columns = [{"name": n, "type": {"type": "record", "name": n, "fields": col_fields}} for n, *_ in cols]
    return {
        "type": "record",
        "name": "MetadataMessage",
        "fields": [
            {"name": "schemaId", "type": "string"},
            {
                "name": "lineage",
                "type": {
                    "type": "record",
                    "name": "Lineage",
                    "fields": [
                        {"name": k, "type": "long" if k == "tableVersion" else "string"}
                        for k in ("server", "task", "schema", "table", "tableVersion", "timestamp")
                    ],
                },
            },
            {
                "name": "tableStructure",
                "type": {
                    "type": "record",
                    "name": "TableStructure",
                    "fields": [
                        {
                            "name": "tableColumns",
                            "type": {"type": "record", "name": "TableColumns", "fields": columns},
                        }
                    ],
                },
            },
            {"name": "dataSchema", "type": "string"},
        ],
    }


ENVELOPE = ENVELOPE_SCHEMA

EVENT_DATA = {
    "type": "record",
    "name": "EventData",
    "namespace": "Microsoft.ServiceBus.Messaging",
    "fields": [
        {"name": "SequenceNumber", "type": "long"},
        {"name": "Offset", "type": "string"},
        {"name": "EnqueuedTimeUtc", "type": "string"},
        {
            "name": "SystemProperties",
            "type": {"type": "map", "values": ["long", "double", "string", "bytes"]},
        },
        {"name": "Properties", "type": {"type": "map", "values": ["long", "double", "string", "bytes"]}},
        {"name": "Body", "type": ["null", "bytes"]},
    ],
}
EVENT_DATA_NULLABLE = json.loads(json.dumps(EVENT_DATA))
EVENT_DATA_NULLABLE["fields"][4]["type"]["values"] = ["long", "double", "string", "bytes", "null"]


def _avro(schema: dict, datum: object) -> bytes:
    buf = io.BytesIO()
    schemaless_writer(buf, parse_schema(schema), datum)
    return buf.getvalue()


# --------------------------------------------------------------------------------------- messages
def md_message(table: str, cols: list[tuple], version: int, logical: bool, ts: str) -> dict:
    return {
        "schemaId": schema_id(table, version),
        "lineage": {
            "server": "replicate-01.example.com",
            "task": "sales-to-eventhubs",
            "schema": "SALES",
            "table": table,
            "tableVersion": version,
            "timestamp": ts,
        },
        "tableStructure": {
            "tableColumns": {
                n: {
                    "ordinal": i + 1,
                    "type": t,
                    "length": ln,
                    "precision": p,
                    "scale": s,
                    "primaryKeyPosition": pk,
                    "nullable": pk == 0,
                }
                for i, (n, t, ln, p, s, pk) in enumerate(cols)
            }
        },
        "dataSchema": json.dumps(data_schema(cols, logical), separators=(",", ":")),
    }


def json_md(table: str, cols: list[tuple], version: int, ts: str) -> str:
    msg = md_message(table, cols, version, False, ts)
    return json.dumps(
        {
            "magic": "atMSG",
            "type": "MD",
            "headers": None,
            "messageSchemaId": msg["schemaId"],
            "messageSchema": json.dumps(metadata_schema(cols), separators=(",", ":")),
            "message": msg,
        }
    )


def avro_md(table: str, cols: list[tuple], version: int, ts: str) -> bytes:
    msg = md_message(table, cols, version, True, ts)
    schema = metadata_schema(cols)
    return _avro(
        ENVELOPE,
        {
            "magic": b"atMSG",
            "type": "MD",
            "headers": None,
            "messageSchemaId": msg["schemaId"],
            "messageSchema": json.dumps(schema, separators=(",", ":")),
            "message": _avro(schema, msg),
        },
    )


def headers(
    op: str,
    seq: int | str | None = None,
    ts: str = "",
    change: str | bytes | None = None,
    column: str | bytes | None = None,
    counter: int | None = None,
    last: bool | None = None,
    tx: str = "",
    pos: str = "",
) -> dict:
    """Data-message headers; `seq` is the change counter (or a verbatim changeSequence), none on REFRESH."""
    sequence = seq if isinstance(seq, str) else "" if seq is None else cs(ts, seq)
    return {
        "operation": op,
        "changeSequence": sequence,
        "timestamp": ts,
        "streamPosition": pos,
        "transactionId": tx,
        "changeMask": change,
        "columnMask": column,
        "transactionEventCounter": counter,
        "transactionLastEvent": last,
    }


def json_dt(sid: str | None, data: dict | None, before: dict | None, hdr: dict) -> str:
    return json.dumps(
        {
            "magic": "atMSG",
            "type": "DT",
            "headers": None,
            "messageSchemaId": sid,
            "messageSchema": None,
            "message": {"data": data, "beforeData": before, "headers": hdr},
        },
        ensure_ascii=False,
    )


def avro_dt(
    table: str, cols: list[tuple], version: int, data: dict | None, before: dict | None, hdr: dict
) -> bytes:
    """An Avro envelope DT: typed values, masks as the same big-endian bytes as the JSON hex strings."""
    h = dict(hdr)
    for k in ("changeMask", "columnMask"):
        h[k] = bytes.fromhex(h[k]) if h[k] is not None else None
    record = {"data": _typed(cols, data), "beforeData": _typed(cols, before), "headers": h}
    return _avro(
        ENVELOPE,
        {
            "magic": b"atMSG",
            "type": "DT",
            "headers": None,
            "messageSchemaId": schema_id(table, version),
            "messageSchema": None,
            "message": _avro(data_schema(cols, True), record),
        },
    )


def _typed(cols: list[tuple], row: dict | None) -> dict | None:
    """JSON-form values -> Avro values with logical types (the same source values)."""
    if row is None:
        return None
    types = {n: t for n, t, *_ in cols}
    out = {}
    for k, v in row.items():
        t = types[k]
        if v is None:
            out[k] = None
        elif t in ("NUMERIC", "UINT8"):
            out[k] = Decimal(v)
        elif t == "DATE":
            out[k] = dt.date.fromisoformat(v)
        elif t == "TIME":
            out[k] = dt.time.fromisoformat(v)
        elif t == "DATETIME":
            out[k] = dt.datetime.fromisoformat(v).replace(tzinfo=dt.UTC)
        elif t in ("BYTES", "BLOB"):
            out[k] = bytes.fromhex(v)
        else:
            out[k] = v
    return out


# --------------------------------------------------------------------------------------- the cases
ROW_1001_1 = {
    "ORDER_ID": 9007199254740993,
    "LINE_NO": 1,
    "CUSTOMER": "ACME GmbH",
    "AMOUNT": "12345678.90",
    "QTY": "18446744073709551615",
    "PRICE": 19.99,
    "ORDER_DATE": "2024-05-01",
    "SHIP_TIME": "13:45:10.123",
    "CREATED_AT": "2024-05-01 10:00:00.123456",
    "UPDATED_AT": None,
    "ACTIVE": True,
    "PAYLOAD": "DEADBEEF00",
    "NOTES": "first line\nsecond line",
    "REGION": "Zürich",
    "PRIORITY": -3,
    "CODE": 200,
    "WEIGHT": 1.5,
    "STATUS": "NEW",
}
ROW_1001_2 = {**ROW_1001_1, "LINE_NO": 2, "AMOUNT": "0.05", "QTY": "7", "PAYLOAD": "00", "STATUS": "NEW"}
ROW_1002_1 = {
    **ROW_1001_1,
    "ORDER_ID": 1002,
    "CUSTOMER": "Globex",
    "AMOUNT": "-42.00",
    "QTY": "3",
    "CREATED_AT": "2024-05-01 10:05:00.000001",
    "PAYLOAD": None,
    "NOTES": None,
}
ROW_1002_1_UPD = {
    **ROW_1002_1,
    "AMOUNT": "-40.50",
    "UPDATED_AT": "2024-05-01 10:06:00.500000",
    "STATUS": "PAID",
}
ROW_1001_1_PARTIAL_BEFORE = {**ROW_1001_1, "PAYLOAD": None, "NOTES": None}
ROW_1001_1_PARTIAL = {**ROW_1001_1_PARTIAL_BEFORE, "STATUS": "SHIPPED"}
ROW_1001_3 = {**ROW_1001_2, "LINE_NO": 3}


def cs(ts: str, n: int) -> str:
    """A changeSequence: `YYYYMMDDHHmmSShh` of the change time + a 19-digit counter (35 digits)."""
    digits = re.sub(r"\D", "", ts)
    return digits[:16].ljust(16, "0") + f"{n:019d}"


ORACLE_POS = "00000000.01ab5068.00000001.0000.02.0000:88.{}.16"
ALL18 = "03FFFF"


def orders_messages() -> list[tuple[dict | None, dict | None, dict]]:
    """REFRESH x2, INSERT, UPDATE (AMOUNT, UPDATED_AT, STATUS), partial UPDATE (PAYLOAD/NOTES not captured),
    key-changing UPDATE (LINE_NO 2 -> 3), DELETE (PK-only change mask, left-padded)."""
    tx1, tx2, tx3 = (
        "00000000000000000000000000010001",
        "00000000000000000000000000020002",
        "00000000000000000000000000030003",
    )
    return [
        (ROW_1001_1, None, headers("REFRESH")),
        (ROW_1001_2, None, headers("REFRESH")),
        (
            ROW_1002_1,
            None,
            headers(
                "INSERT", 101, "2024-05-01T10:05:00.000", ALL18, ALL18, 1, False, tx1, ORACLE_POS.format(101)
            ),
        ),
        (
            ROW_1002_1_UPD,
            ROW_1002_1,
            headers(
                "UPDATE",
                102,
                "2024-05-01T10:06:00.500",
                "020208",
                ALL18,
                2,
                True,
                tx1,
                ORACLE_POS.format(102),
            ),
        ),
        (
            ROW_1001_1_PARTIAL,
            ROW_1001_1_PARTIAL_BEFORE,
            headers(
                "UPDATE",
                103,
                "2024-05-01T10:07:00.000",
                "020000",
                "03E7FF",
                1,
                True,
                tx2,
                ORACLE_POS.format(103),
            ),
        ),
        (
            ROW_1001_3,
            ROW_1001_2,
            headers(
                "UPDATE",
                104,
                "2024-05-01T10:08:00.000",
                "000002",
                ALL18,
                1,
                False,
                tx3,
                ORACLE_POS.format(104),
            ),
        ),
        (
            ROW_1002_1_UPD,
            None,
            headers(
                "DELETE",
                105,
                "2024-05-01T10:09:00.000",
                "00000003",
                ALL18,
                2,
                True,
                tx3,
                ORACLE_POS.format(105),
            ),
        ),
    ]


def capture_file(
    path: Path,
    bodies: list[bytes],
    enqueued: list[str],
    schema: dict = EVENT_DATA,
    codec: str = "null",
    first_seq: int = 0,
) -> None:
    records = [
        {
            "SequenceNumber": first_seq + i,
            "Offset": str(4096 * (first_seq + i)),
            "EnqueuedTimeUtc": t,
            "SystemProperties": {"x-opt-enqueued-time": t},
            "Properties": {},
            "Body": b,
        }
        for i, (b, t) in enumerate(zip(bodies, enqueued, strict=True))
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        writer(fh, parse_schema(schema), records, codec=codec, sync_marker=b"cdcnorm-replicat")


def envelope_container(path: Path, envelopes: list[bytes]) -> None:
    """An Avro container file of MessageEnvelope records: what a Kafka-to-storage sink (e.g. the S3/GCS
    connectors with the Avro format) writes for a Replicate topic; each record is one message value."""
    parsed = parse_schema(ENVELOPE)
    records = [schemaless_reader(io.BytesIO(e), parsed, None) for e in envelopes]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        writer(fh, parsed, records, sync_marker=b"cdcnorm-replicat")


def write_lines(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> None:
    ts_md = "2024-05-01T09:59:00.000"
    eh = HERE / "eventhubs" / "replicate-ns"

    # 1. wide table (18 columns, 3-byte masks) in JSON, and the same changes as Avro envelopes (Capture file)
    orders = orders_messages()
    write_lines(
        HERE / "json" / "orders_wide.jsonl",
        [json_md("ORDERS_WIDE", ORDERS_WIDE, 1, ts_md)]
        + [json_dt(schema_id("ORDERS_WIDE", 1), d, b, h) for d, b, h in orders],
    )
    bodies = [avro_md("ORDERS_WIDE", ORDERS_WIDE, 1, ts_md)] + [
        avro_dt("ORDERS_WIDE", ORDERS_WIDE, 1, d, b, h) for d, b, h in orders
    ]
    capture_file(
        eh / "orders-avro" / "0" / "2024/05/01/10/10/00.avro",
        bodies,
        [f"5/1/2024 10:10:{i:02d} AM" for i in range(len(bodies))],
    )
    # ... and as a sink's Avro container file of the envelopes themselves
    envelope_container(HERE / "avro" / "orders_wide_sink.avro", bodies)

    # 2. DT before its MD: Avro DTs in partition 0, their MD in partition 1 (another file)
    cust_rows = [
        (
            {"CUST_ID": 1, "NAME": "Ada", "BALANCE": "100.25"},
            None,
            headers("INSERT", 201, "2024-05-01T11:00:00.000", "07", "07", 1, True, "T201"),
        ),
        (
            {"CUST_ID": 1, "NAME": "Ada L.", "BALANCE": "100.25"},
            {"CUST_ID": 1, "NAME": "Ada", "BALANCE": "100.25"},
            headers("UPDATE", 202, "2024-05-01T11:01:00.000", "02", "07", 1, True, "T202"),
        ),
    ]
    capture_file(
        eh / "customers" / "0" / "2024/05/01/11/02/00.avro",
        [avro_dt("CUSTOMERS", CUSTOMERS, 1, d, b, h) for d, b, h in cust_rows],
        ["5/1/2024 11:02:00 AM", "5/1/2024 11:02:01 AM"],
        first_seq=40,
    )
    capture_file(
        eh / "customers" / "1" / "2024/05/01/11/05/00.avro",
        [avro_md("CUSTOMERS", CUSTOMERS, 1, "2024-05-01T10:59:00.000")],
        ["5/1/2024 11:05:00 AM"],
        first_seq=7,
    )
    # ... and in one JSON file, DT first: the adapter's prescan finds the MD below it
    # (its own schemaId: the JSON task's data schema differs from the Avro task's, and a schemaId names one schema)
    json_sid = schema_id("CUSTOMERS/json", 1)
    write_lines(
        HERE / "json" / "customers_dt_before_md.jsonl",
        [json_dt(json_sid, d, b, h) for d, b, h in cust_rows]
        + [json_md("CUSTOMERS", CUSTOMERS, 1, "2024-05-01T10:59:00.000").replace(schema_id("CUSTOMERS", 1), json_sid)],
    )

    # 3. DDL: PRODUCTS v1 -> v2 (COLOR added, OLD_CODE dropped, PRICE NUMERIC(8,2) -> NUMERIC(12,2))
    write_lines(
        HERE / "json" / "products_ddl.jsonl",
        [
            json_md("PRODUCTS", PRODUCTS_V1, 1, "2024-05-01T08:00:00.000"),
            json_dt(
                schema_id("PRODUCTS", 1),
                {"ID": 7, "NAME": "Widget", "PRICE": "9.99", "OLD_CODE": "W7"},
                None,
                headers("INSERT", 301, "2024-05-01T08:00:01.000", "0F", "0F", 1, True, "T301"),
            ),
            json_md("PRODUCTS", PRODUCTS_V2, 2, "2024-05-01T08:30:00.000"),
            json_dt(
                schema_id("PRODUCTS", 2),
                {"ID": 7, "NAME": "Widget", "PRICE": "1234567890.99", "COLOR": "red"},
                {"ID": 7, "NAME": "Widget", "PRICE": "9.99", "COLOR": None},
                headers("UPDATE", 302, "2024-05-01T08:31:00.000", "0C", "0F", 1, True, "T302"),
            ),
        ],
    )

    # 4. 72 columns: masks of 10 bytes (left-padded), one bit beyond the last column (ordinal 73)
    change = (1 << 1) | (1 << 8) | (1 << 63) | (1 << 64) | (1 << 71)  # ordinals 2, 9, 64, 65, 72
    column = (1 << 73) - 1  # ordinals 1..73
    row = {n: i for i, (n, *_) in enumerate(WIDE72, start=1)}
    write_lines(
        HERE / "json" / "wide72.jsonl",
        [
            json_md("WIDE72", WIDE72, 1, "2024-05-01T07:00:00.000"),
            json_dt(
                schema_id("WIDE72", 1),
                {**row, "C02": 200},
                row,
                headers(
                    "UPDATE",
                    401,
                    "2024-05-01T07:00:01.000",
                    f"{change:020X}",
                    f"{column:020X}",
                    1,
                    True,
                    "T401",
                ),
            ),
        ],
    )

    # 5. control table: attrep_apply_exceptions in its own hub, JSON body, nullable Properties, deflate codec
    exc = {
        "TASK_NAME": "sales-to-eventhubs",
        "TABLE_OWNER": "SALES",
        "TABLE_NAME": "ORDERS_WIDE",
        "ERROR_TIME": "2024-05-01 12:00:00.000000",
        "STATEMENT": "UPDATE ...",
        "ERROR": "RetCode: SQL_ERROR  SqlState: 23000 NativeError: 1 Message: duplicate key",
    }
    capture_file(
        eh / "attrep_apply_exceptions" / "0" / "2024/05/01/12/00/00.avro",
        [
            json_dt(
                None,
                exc,
                None,
                headers("INSERT", 501, "2024-05-01T12:00:00.000", None, None, 1, True, "T501"),
            ).encode()
        ],
        ["5/1/2024 12:00:00 PM"],
        schema=EVENT_DATA_NULLABLE,
        codec="deflate",
    )

    # 6. Confluent Schema Registry wire format: DataRecord of SALES.ITEMS, schema id 1001 in a local folder
    items = data_schema(
        [
            ("ITEM_ID", "INT8", 8, 0, 0, 1),
            ("NAME", "STRING", 20, 0, 0, 0),
            ("PRICE", "NUMERIC", 0, 10, 2, 0),
            ("UPDATED", "DATETIME", 0, 0, 6, 0),
        ],
        True,
    )
    items["namespace"] = "com.attunity.queue.msg.SALES.ITEMS"
    (HERE / "registry").mkdir(exist_ok=True)
    (HERE / "registry" / "1001.avsc").write_text(json.dumps(items, indent=1) + "\n")
    for name, d, b, h in [
        (
            "items_insert",
            {
                "ITEM_ID": 5,
                "NAME": "Bolt",
                "PRICE": Decimal("0.10"),
                "UPDATED": dt.datetime(2024, 5, 1, 13, 0, 0, 250000, tzinfo=dt.UTC),
            },
            None,
            headers("INSERT", 601, "2024-05-01T13:00:00.250", b"\x0f", b"\x0f", 1, True, "T601"),
        ),
        (
            "items_update",
            {
                "ITEM_ID": 5,
                "NAME": "Bolt",
                "PRICE": Decimal("0.12"),
                "UPDATED": dt.datetime(2024, 5, 1, 13, 5, tzinfo=dt.UTC),
            },
            {
                "ITEM_ID": 5,
                "NAME": "Bolt",
                "PRICE": Decimal("0.10"),
                "UPDATED": dt.datetime(2024, 5, 1, 13, 0, 0, 250000, tzinfo=dt.UTC),
            },
            headers("UPDATE", 602, "2024-05-01T13:05:00.000", b"\x0c", b"\x0f", 1, True, "T602"),
        ),
    ]:
        (HERE / "confluent").mkdir(exist_ok=True)
        body = _avro(items, {"data": d, "beforeData": b, "headers": h})
        (HERE / "confluent" / f"{name}.bin").write_bytes(b"\x00" + (1001).to_bytes(4, "big") + body)

    # 7. malformed messages: each must be quarantined with a clear reason, the good one decoded
    good = json_dt(None, {"ID": 1}, None, headers("INSERT", 701, "2024-05-01T14:00:00.000", "01", "01"))
    write_lines(
        HERE / "malformed" / "bad_messages.jsonl",
        [
            json_dt(
                None, {"ID": 1}, {"ID": 0}, headers("UPDATE", 702, "2024-05-01T14:01:00.000", "ZZ01", "01")
            ),  # bad hex
            '{"magic": "atMSG", "type": "DT", "message": {"data": {"ID": 1},',  # bad JSON (cut)
            json_dt(
                None, {"ID": 1}, None, headers("MERGE", 703, "2024-05-01T14:02:00.000", "01", "01")
            ),  # unknown operation
            good,
            json.dumps({"magic": "atMSX", "type": "DT", "message": {}}),  # bad magic
            json_dt(
                None, {"ID": 1}, None, headers("INSERT", "2024-05-01", "", "01", "01")
            ),  # bad changeSequence
        ],
    )
    whole = avro_dt("ORDERS_WIDE", ORDERS_WIDE, 1, *orders[2])
    (HERE / "malformed" / "truncated_envelope.bin").write_bytes(whole[:40])
    inner_cut = _avro(
        ENVELOPE,
        {
            "magic": b"atMSG",
            "type": "DT",
            "headers": None,
            "messageSchemaId": schema_id("ORDERS_WIDE", 1),
            "messageSchema": None,
            "message": _avro(
                data_schema(ORDERS_WIDE, True),
                {
                    "data": _typed(ORDERS_WIDE, orders[2][0]),
                    "beforeData": None,
                    "headers": {**orders[2][2], "changeMask": b"\x03\xff\xff", "columnMask": b"\x03\xff\xff"},
                },
            )[:25],
        },
    )
    capture_file(
        HERE / "malformed" / "eventhubs" / "replicate-ns" / "broken" / "0" / "2024/05/01/15/00/00.avro",
        [avro_md("ORDERS_WIDE", ORDERS_WIDE, 1, ts_md), inner_cut, whole[:60], None],
        ["5/1/2024 3:00:00 PM", "5/1/2024 3:00:01 PM", "5/1/2024 3:00:02 PM", "5/1/2024 3:00:03 PM"],
    )
    full = io.BytesIO()
    writer(
        full,
        parse_schema(EVENT_DATA),
        [
            {
                "SequenceNumber": i,
                "Offset": str(i),
                "EnqueuedTimeUtc": "5/1/2024 4:00:00 PM",
                "SystemProperties": {},
                "Properties": {},
                "Body": good.encode(),
            }
            for i in range(3)
        ],
        sync_marker=b"cdcnorm-replicat",
        sync_interval=1,
    )
    (HERE / "malformed" / "truncated_capture.avro").write_bytes(full.getvalue()[:-30])


if __name__ == "__main__":
    main()
