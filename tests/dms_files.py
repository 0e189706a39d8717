"""A plain reader of the simulated DMS output (csv, pyarrow, json), independent of the adapter: the encoder's
tests and the simulator's replay table use it.

S3 files are replayed per table folder in DMS's order (the full load, then the CDC files by name, rows in
file order); Kinesis messages by commit time, stream position and record id, each position once (the
delivery quirks redeliver and shuffle them), full-load rows first and once.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from cdcnorm.simulate import Manifest

UTC = dt.UTC


def s3_files(out: Path, fmt: str, table: str) -> list[Path]:
    folder = out / "dms" / fmt / "shop" / table
    return sorted(folder.iterdir(), key=lambda p: (not p.name.startswith("LOAD"), p.name))


def s3_rows(path: Path) -> list[dict[str, Any]]:
    """A file's rows as written: CSV text (empty field: None) or Parquet values."""
    if path.suffix == ".parquet":
        return pq.read_table(path).to_pylist()
    with path.open(encoding="utf-8", newline="") as fh:
        return [{k: (v if v != "" else None) for k, v in r.items()} for r in csv.DictReader(fh)]


def csv_value(source_type: str, v: Any) -> Any:
    """CSV text as the source type (what a user's declaration gives)."""
    if isinstance(v, dt.datetime) and v.tzinfo is not None:  # Parquet: an instant, in UTC
        return v.astimezone(UTC)
    if v is None or not isinstance(v, str):
        return v
    base = source_type.split("(")[0]
    if base in ("int", "bigint"):
        return int(v)
    if base == "decimal":
        return Decimal(v)
    if base == "double":
        return float(v)
    if base == "boolean":
        return v == "true"
    if base == "date":
        return dt.date.fromisoformat(v)
    if base == "timestamp":
        return dt.datetime.strptime(v, "%Y-%m-%d %H:%M:%S.%f")
    if base == "binary":
        return bytes.fromhex(v)
    return v


def replay_s3(out: Path, fmt: str) -> dict[str, list[dict[str, Any]]]:
    info = Manifest.load(out).vendor_formats[f"dms-{fmt}"]
    result = {}
    for table, t in info["tables"].items():
        types = {c["name"]: c["source_type"] for c in t["columns"]}
        pk = t["primary_key"]
        keyed: dict[tuple, dict] = {}
        keyless: list[dict] = []
        for path in s3_files(out, fmt, table):
            for raw in s3_rows(path):
                op = raw.pop("Op", None)
                raw.pop("dms_commit_ts")
                old = {k[3:]: raw.pop(k) for k in list(raw) if k.startswith("BI_")}
                row = {k: csv_value(types.get(k, "string"), v) for k, v in raw.items()}
                if not pk:
                    keyless.append(row)
                    continue
                key = tuple(row[k] for k in pk)
                if op == "D":
                    keyed.pop(key, None)
                    continue
                if old and any(v is not None for v in old.values()):
                    was = tuple(csv_value(types[k], old[k]) for k in pk)
                    if was != key:
                        keyed.pop(was, None)
                keyed[key] = row
        result[table] = list(keyed.values()) if pk else keyless
    return result


def kinesis_file(path: Path) -> list[dict[str, Any]]:
    """The messages of one file (`json`: multi-line objects back to back)."""
    found = []
    decoder = json.JSONDecoder(parse_float=Decimal)
    text, pos = path.read_text(encoding="utf-8"), 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return found
        obj, pos = decoder.raw_decode(text, pos)
        found.append(obj)


def kinesis_messages(out: Path, table: str) -> list[dict[str, Any]]:
    """Every message of a table's shard files, in file order."""
    return [m for path in sorted((out / "dms" / "kinesis" / table).iterdir()) for m in kinesis_file(path)]


_DMS = {"INT32": int, "INT64": int, "REAL8": float, "BOOLEAN": bool, "STRING": str,
        "DATE": dt.date.fromisoformat, "BLOB": lambda v: bytes.fromhex(v[2:]),
        "TIMESTAMP": lambda v: dt.datetime.strptime(v, "%Y-%m-%dT%H:%M:%S.%fZ"), "NUMERIC": Decimal}


def replay_kinesis(out: Path) -> dict[str, list[dict[str, Any]]]:
    info = Manifest.load(out).vendor_formats["dms-kinesis"]
    result = {}
    for table in info["tables"]:
        msgs = kinesis_messages(out, table)
        create = next(m for m in msgs if m["metadata"]["operation"] == "create-table"
                      and m["metadata"]["table-name"] == table)
        types = {n: _DMS[c["type"]] for n, c in create["control"]["table-def"]["columns"].items()}
        pk = create["control"]["table-def"].get("primary-key") or []

        def typed(data: dict, types=types) -> dict:
            return {k: (types.get(k, str)(v) if v is not None else None) for k, v in data.items()}

        loads, seen_load, cdc, seen = [], set(), [], set()
        for m in msgs:
            meta = m["metadata"]
            if meta["record-type"] != "data":
                continue
            if meta["operation"] == "load":
                text = json.dumps(m["data"], sort_keys=True, default=str)
                if text not in seen_load:
                    seen_load.add(text)
                    loads.append(m)
            elif (meta["stream-position"], meta["transaction-record-id"]) not in seen:
                seen.add((meta["stream-position"], meta["transaction-record-id"]))
                cdc.append(m)
        cdc.sort(key=lambda m: (m["metadata"]["commit-timestamp"], m["metadata"]["stream-position"],
                                m["metadata"]["transaction-record-id"]))
        keyed: dict[tuple, dict] = {}
        keyless: list[dict] = []
        for m in loads + cdc:
            row, op = typed(m["data"]), m["metadata"]["operation"]
            if not pk:
                keyless.append(row)
                continue
            key = tuple(row[k] for k in pk)
            if op == "delete":
                keyed.pop(key, None)
                continue
            old = m.get("before-image") or {}
            if old:
                keyed.pop(tuple(typed(old)[k] for k in pk), None)
            keyed[key] = row
        result[table] = list(keyed.values()) if pk else keyless
    return result
