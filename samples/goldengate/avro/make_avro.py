"""Writes APP.PRODUCTS.avro (an Avro op formatter container file) and schemas/APP.PRODUCTS.avsc.

The schema follows the Avro op formatter's layout: metadata fields, then `before` / `after` records whose
every column has a `<col>_isMissing` companion. Run: python make_avro.py (deterministic bytes).
"""

import json
from decimal import Decimal
from pathlib import Path

from fastavro import parse_schema, writer

HERE = Path(__file__).parent
COLUMNS = [
    {"name": "PRODUCT_ID", "type": ["null", "long"], "default": None},
    {"name": "PRODUCT_ID_isMissing", "type": "boolean"},
    {"name": "NAME", "type": ["null", "string"], "default": None},
    {"name": "NAME_isMissing", "type": "boolean"},
    {"name": "PRICE", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}],
     "default": None},
    {"name": "PRICE_isMissing", "type": "boolean"},
    {"name": "UPDATED", "type": ["null", "string"], "default": None},
    {"name": "UPDATED_isMissing", "type": "boolean"},
]
SCHEMA = {
    "type": "record", "name": "PRODUCTS", "namespace": "APP", "fields": [
        {"name": "table", "type": "string"}, {"name": "op_type", "type": "string"},
        {"name": "op_ts", "type": "string"}, {"name": "current_ts", "type": "string"},
        {"name": "pos", "type": "string"},
        {"name": "primary_keys", "type": {"type": "array", "items": "string"}},
        {"name": "tokens", "type": {"type": "map", "values": "string"}, "default": {}},
        {"name": "before", "type": ["null", {"type": "record", "name": "columns", "fields": COLUMNS}],
         "default": None},
        {"name": "after", "type": ["null", "columns"], "default": None},
    ],
}


def image(pid, name, price, updated, missing=()):
    row = {"PRODUCT_ID": pid, "NAME": name, "PRICE": price, "UPDATED": updated}
    out = {}
    for k, v in row.items():
        out[k] = None if k in missing else v
        out[k + "_isMissing"] = k in missing
    return out


def meta(op, ts, pos):
    return {"table": "APP.PRODUCTS", "op_type": op, "op_ts": ts, "current_ts": ts.replace(" ", "T")[:-3] + "999",
            "pos": pos, "primary_keys": ["PRODUCT_ID"], "tokens": {"TX": f"tx-{pos[-4:]}"}}


RECORDS = [
    {**meta("I", "2024-03-07 08:00:00.000000", "00000000210000000100"),
     "before": None, "after": image(1, "Straße", Decimal("19.90"), "2024-03-07:08:00:00")},
    {**meta("U", "2024-03-07 08:05:00.000000", "00000000210000000350"),
     "before": image(1, None, Decimal("19.90"), None, missing=("NAME", "UPDATED")),
     "after": image(1, None, Decimal("17.50"), None, missing=("NAME", "UPDATED"))},
    {**meta("D", "2024-03-07 08:09:00.000000", "00000000210000000777"),
     "before": image(1, "Straße", Decimal("17.50"), "2024-03-07:08:05:00"), "after": None},
]

if __name__ == "__main__":
    (HERE / "schemas").mkdir(exist_ok=True)
    (HERE / "schemas" / "APP.PRODUCTS.avsc").write_text(json.dumps(SCHEMA, indent=2) + "\n")
    with open(HERE / "APP.PRODUCTS.avro", "wb") as fh:
        writer(fh, parse_schema(SCHEMA), RECORDS, codec="null", sync_marker=b"goldengate-avro!")
