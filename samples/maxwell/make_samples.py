"""Writes the Maxwell samples (run from this folder: `python make_samples.py`). Hand-written messages in the
shapes Maxwell's RowMap / DDLMap write (field order included); the encrypted ones with a fixed IV so the files
are reproducible. Needs the `cryptography` package for the encrypted sample."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAMPLE_KEY = "cdcnorm-sample-k"
"""The sample producer's `secret_key` (16 bytes: AES-128), given as the `encryption_key` option."""


def num(text: str) -> str:
    """A DECIMAL as Maxwell writes it: a JSON number with the column's scale (`10.00`)."""
    return f"#num:{text}"


def line(**fields) -> str:
    return re.sub(r'"#num:([-0-9.]+)"', r"\1", json.dumps(fields, separators=(",", ":")))


def shop() -> list[str]:
    """Default configuration plus output_primary_key_columns: xid, commit, ts in seconds, no position."""
    o = dict(database="shop", table="orders")
    row1 = {"id": 1, "customer": "ada", "amount": num("10.00"), "status": "new", "tags": ["gift"], "note": "first",
            "created": "2026-03-01 10:00:00.250000", "payload": "AAECAw=="}
    row2 = {"id": 2, "customer": "bob", "amount": num("5.50"), "status": "new", "tags": [], "note": "gift wrap",
            "created": "2026-03-01 10:00:01.000000", "payload": None}
    row3 = {"id": 3, "customer": "cy", "amount": num("7.25"), "status": "new", "tags": ["rush", "gift"], "note": None,
            "created": "2026-03-01 10:00:01.500000", "payload": "/w=="}
    pk = dict(primary_key_columns=["id"])
    return [
        line(**o, type="insert", ts=1772359200, xid=1001, commit=True, **pk, data=row1),
        line(**o, type="insert", ts=1772359201, xid=1002, **pk, data=row2),
        line(**o, type="insert", ts=1772359201, xid=1002, commit=True, **pk, data=row3),
        line(**o, type="update", ts=1772359260, xid=1003, commit=True, **pk,
             data={**row1, "amount": num("12.00")}, old={"amount": num("10.00")}),
        # output_nulls=false: the note became NULL, so it is gone from `data` and only `old` names it
        line(**o, type="update", ts=1772359261, xid=1004, commit=True, **pk,
             data={k: v for k, v in row2.items() if k not in ("note", "payload")}, old={"note": "gift wrap"}),
        line(**o, type="delete", ts=1772359262, xid=1005, commit=True, **pk, data=row3),
        # the same change twice (12 -> 10 -> 12 within one second): told apart by their xid
        line(**o, type="update", ts=1772359320, xid=1006, commit=True, **pk,
             data={**row1, "amount": num("10.00")}, old={"amount": num("12.00")}),
        line(**o, type="update", ts=1772359320, xid=1007, commit=True, **pk,
             data={**row1, "amount": num("12.00")}, old={"amount": num("10.00")}),
        line(**o, type="update", ts=1772359320, xid=1008, commit=True, **pk,
             data={**row1, "amount": num("10.00")}, old={"amount": num("12.00")}),
    ]


def positioned() -> list[str]:
    """output_binlog_position, output_xoffset, output_gtid_position, output_server_id, output_thread_id and
    output_naming_strategy=underscore_to_camelcase."""
    o = dict(database="shop", table="items")
    g = "3E11FA47-71CA-11E1-9E33-C80AA9429562"
    return [
        line(**o, type="insert", ts=1772359400, xid=2001, xoffset=0, position="mysql-bin.000003:4711",
             gtid=f"{g}:23", serverId=1, threadId=42, primaryKeyColumns=["sku"], data={"sku": "A-1", "qty": 3}),
        line(**o, type="insert", ts=1772359400, xid=2001, xoffset=1, position="mysql-bin.000003:4711",
             gtid=f"{g}:23", serverId=1, threadId=42, primaryKeyColumns=["sku"], data={"sku": "B-2", "qty": 1}),
        line(**o, type="insert", ts=1772359400, xid=2001, commit=True, position="mysql-bin.000003:4711",
             gtid=f"{g}:23", serverId=1, threadId=42, primaryKeyColumns=["sku"], data={"sku": "C-3", "qty": 9}),
        line(**o, type="update", ts=1772359401, xid=2002, commit=True, position="mysql-bin.000003:5120",
             gtid=f"{g}:24", serverId=1, threadId=42, primaryKeyColumns=["sku"], data={"sku": "A-1", "qty": 2},
             old={"qty": 3}),
        line(**o, type="delete", ts=1772359402, xid=2003, commit=True, position="mysql-bin.000003:5501",
             gtid=f"{g}:25", serverId=1, threadId=42, primaryKeyColumns=["sku"], data={"sku": "B-2", "qty": 1}),
    ]


def bootstrap() -> list[str]:
    """`maxwell-bootstrap --database shop --table customers`, run twice (the first run crashed and re-ran)."""
    o = dict(database="shop", table="customers")
    rows = [{"id": 1, "name": "ada"}, {"id": 2, "name": "bob"}]
    trigger = line(database="maxwell", table="bootstrap", type="insert", ts=1772359500, xid=3001, commit=True,
                   data={"id": 1, "database_name": "shop", "table_name": "customers", "is_complete": 0})
    out = [trigger]
    for ts in (1772359501, 1772359560):
        out.append(line(**o, type="bootstrap-start", ts=ts, data={}))
        out += [line(**o, type="bootstrap-insert", ts=ts, data=r) for r in rows]
        out.append(line(**o, type="bootstrap-complete", ts=ts, data={}))
    out.append(line(**o, type="update", ts=1772359600, xid=3002, commit=True, data={"id": 2, "name": "bo"},
                    old={"name": "bob"}))
    return out


def ddl() -> list[str]:
    """output_ddl=true: database and table events, `ts` in milliseconds."""
    col = [{"type": "varchar", "name": "sku", "charset": "utf8mb4"}, {"type": "int", "name": "qty", "signed": True}]
    d1 = {"database": "shop", "charset": "utf8mb4", "table": "items", "columns": col, "primary-key": ["sku"]}
    d2 = {**d1, "columns": [*col, {"type": "decimal", "name": "price", "precision": 10, "scale": 2}]}
    return [
        line(type="database-create", database="shop", sql="CREATE DATABASE shop", charset="utf8mb4",
             ts=1772359000000, position="mysql-bin.000003:120"),
        line(type="table-create", database="shop", table="items", ts=1772359001000,
             sql="CREATE TABLE items (sku varchar(20) PRIMARY KEY, qty int)", position="mysql-bin.000003:300",
             **{"def": d1}),
        line(type="table-alter", database="shop", table="items", old=d1, ts=1772359002000,
             sql="ALTER TABLE items ADD COLUMN price decimal(10,2)", position="mysql-bin.000003:900",
             **{"def": d2}),
        line(type="table-drop", database="shop", table="scratch", ts=1772359003000, sql="DROP TABLE scratch",
             position="mysql-bin.000003:1300"),
    ]


def _encrypt(plain: str, iv: bytes) -> dict:
    from cryptography.hazmat.primitives import padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    padder = padding.PKCS7(128).padder()
    data = padder.update(plain.encode()) + padder.finalize()
    enc = Cipher(algorithms.AES(SAMPLE_KEY.encode()), modes.CBC(iv)).encryptor()
    return {"iv": base64.b64encode(iv).decode(), "bytes": base64.b64encode(enc.update(data) + enc.finalize()).decode()}


def encrypted() -> list[str]:
    """encrypt=data (data and old encrypted) and encrypt=all (the whole message)."""
    inner = json.dumps({"data": {"id": 7, "name": "eve"}, "old": {"name": "ev"}}, separators=(",", ":"))
    whole = line(database="shop", table="customers", type="insert", ts=1772359700, xid=4002, commit=True,
                 data={"id": 8, "name": "fay"})
    return [
        line(database="shop", table="customers", type="update", ts=1772359699, xid=4001, commit=True,
             encrypted=_encrypt(" " + inner, bytes(range(16)))),
        line(encrypted=_encrypt(whole, bytes(range(16, 32)))),
    ]


def main() -> None:
    for name, lines in (("kafka/shop.orders.jsonl", shop()), ("positioned/shop.items.jsonl", positioned()),
                        ("bootstrap/shop.customers.jsonl", bootstrap()), ("ddl/schema-changes.jsonl", ddl()),
                        ("encrypted/shop.customers.jsonl", encrypted())):
        path = HERE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
    # a redelivered batch: the producer re-sent three messages after a restart
    (HERE / "kafka" / "shop.orders.redelivered.jsonl").write_text("\n".join(shop()[3:6]) + "\n")


if __name__ == "__main__":
    main()
