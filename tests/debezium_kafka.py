"""A tiny reader of the simulator's Debezium output with plain `json` / `fastavro` (never a cdcnorm adapter).

It knows Kafka Connect's converters and Debezium's envelope: `kcat -J` lines or Avro files of Kafka records,
keys and values with or without the JsonConverter schema, Confluent-framed Avro with the exported registry,
and how a consumer replays the data events (distinct by source position, in source order, a TOAST
placeholder keeping the previous value). Used by the simulator's own tests.
"""

from __future__ import annotations

import base64
import datetime as dt
import io
import json
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro

UTC = dt.UTC
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
UNAVAILABLE = "__debezium_unavailable_value"
DECIMAL = "org.apache.kafka.connect.data.Decimal"


@dataclass
class Msg:
    """One Kafka record: key and value decoded (a Connect struct as a dict), schemas when the format has them."""

    topic: str
    partition: int
    offset: int
    ts: int
    headers: dict[str, bytes]
    key: Any
    value: Any
    key_schema: Any = None
    value_schema: Any = None


def read_json(root: Path) -> list[Msg]:
    """Every `kcat -J` line: key and payload are converter text (JsonConverter, with or without schemas)."""
    out = []
    for p in sorted(root.rglob("*.jsonl")):
        for line in p.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            assert set(r) - {"headers"} == {"topic", "partition", "offset", "tstype", "ts", "broker", "key", "payload"}
            h = r.get("headers", [])
            headers = {h[i]: h[i + 1].encode() for i in range(0, len(h), 2)}
            key = None if r["key"] is None else json.loads(r["key"])
            value = None if r["payload"] is None else json.loads(r["payload"], parse_float=Decimal)
            m = Msg(r["topic"], r["partition"], r["offset"], r["ts"], headers, key, value)
            if isinstance(key, dict) and set(key) == {"schema", "payload"}:
                m.key_schema, m.key = key["schema"], key["payload"]
            if isinstance(value, dict) and set(value) == {"schema", "payload"}:
                m.value_schema, m.value = value["schema"], value["payload"]
            out.append(m)
    return out


def read_avro(root: Path, registry: Path) -> list[Msg]:
    """Avro container files of Kafka records whose key and value are Confluent-framed (0, 4-byte id, body)."""
    schemas = {int(p.stem): json.loads(p.read_text()) for p in registry.glob("*.avsc")}
    parsed = {sid: fastavro.parse_schema(s) for sid, s in schemas.items()}

    def decode(b: bytes | None) -> tuple[Any, Any]:
        if b is None:
            return None, None
        assert b[0] == 0
        sid = int.from_bytes(b[1:5], "big")
        return fastavro.schemaless_reader(io.BytesIO(b[5:]), parsed[sid], None), schemas[sid]

    out = []
    for p in sorted(root.rglob("*.avro")):
        with p.open("rb") as fh:
            for r in fastavro.reader(fh):
                key, ks = decode(r["key"])
                value, vs = decode(r["value"])
                headers = {h["key"]: h["value"] for h in r["headers"] or []}
                ms = (r["timestamp"] - EPOCH) // dt.timedelta(milliseconds=1)
                out.append(Msg(r["topic"], r["partition"], r["offset"], ms, headers, key, value, ks, vs))
    return out


def read(out: Path, folder: str) -> list[Msg]:
    """Every record of one Debezium format of a simulation under OUT."""
    root = out / "debezium" / folder
    return read_avro(root, out / "schemas" / "debezium-avro") if folder == "avro" else read_json(root)


def data_events(msgs: list[Msg]) -> list[Msg]:
    return [m for m in msgs if isinstance(m.value, dict) and "op" in m.value]


def position(m: Msg) -> tuple:
    """The connector's source position: MySQL (file, pos, row), PostgreSQL (lsn)."""
    s = m.value["source"]
    return (s["file"], s["pos"], s["row"]) if s["connector"] == "mysql" else (s["lsn"],)


# -- column values -----------------------------------------------------------------------------------------------
def _avro_fields(value_schema: dict, side: str) -> dict[str, Any]:
    """An Avro envelope's row fields -> their (non-null) type, as a Connect-like dict (`name`, `parameters`)."""
    field = next(f for f in value_schema["fields"] if f["name"] == side)
    record = next(t for t in field["type"] if t != "null")
    if isinstance(record, str):  # `after` refers to the `Value` record `before` defined
        other = next(f for f in value_schema["fields"] if f["name"] != side and f["name"] in ("before", "after"))
        record = next(t for t in other["type"] if t != "null")
    out = {}
    for f in record["fields"]:
        t = f["type"]
        t = next(x for x in t if x != "null") if isinstance(t, list) else t
        out[f["name"]] = {"name": t.get("connect.name"), "parameters": t.get("connect.parameters")} \
            if isinstance(t, dict) else {"name": None}
    return out


def _json_fields(value_schema: dict, side: str) -> dict[str, Any]:
    field = next(f for f in value_schema["fields"] if f["field"] == side)
    return {c["field"]: c for c in field["fields"]}


_DECLARED_AS = {"date": "io.debezium.time.Date", "timestamp_ntz": "io.debezium.time.MicroTimestamp",
                "timestamp": "io.debezium.time.ZonedTimestamp", "binary": "bytes"}


def column_value(field: dict[str, Any] | None, v: Any) -> Any:
    """A Connect value as Python: Decimal (base64 unscaled + the schema's scale, Avro's Decimal, or a string
    under `decimal.handling.mode=string`), Date days -> date, MicroTimestamp µs -> naive UTC wall clock,
    ZonedTimestamp text -> aware datetime, bytes (base64 in JSON) -> bytes; JSON fractions -> float."""
    if v is None or v == UNAVAILABLE:
        return v
    name = (field or {}).get("name")
    if name == DECIMAL:
        if isinstance(v, Decimal):
            return v
        if isinstance(v, str) and field.get("type") == "bytes":
            unscaled = int.from_bytes(base64.b64decode(v), "big", signed=True)
            return Decimal(f"{unscaled}E-{int(field['parameters']['scale'])}")  # from text: exact at any length
        return Decimal(v)
    if name == "io.debezium.time.Date":
        return dt.date(1970, 1, 1) + dt.timedelta(days=v)
    if name == "io.debezium.time.MicroTimestamp":
        return (EPOCH + dt.timedelta(microseconds=v)).replace(tzinfo=None)
    if name == "io.debezium.time.ZonedTimestamp":
        return dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
    if name == "bytes" or (field or {}).get("type") == "bytes":
        return v if isinstance(v, bytes) else base64.b64decode(v)
    if isinstance(v, Decimal):  # a JSON number with a fraction: Connect float64
        return float(v)
    return v


def declared_fields(declared: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Declared column types (the schemaless format's `column_types`) as the fields `column_value` reads."""
    out = {}
    for col, type_ in declared.items():
        if type_.startswith("decimal"):
            out[col] = {"name": DECIMAL, "type": "string"}
        else:
            out[col] = {"name": _DECLARED_AS.get(type_)}
    return out


def image(m: Msg, side: str, declared: dict[str, dict[str, str]] | None = None) -> dict[str, Any] | None:
    """A `before` / `after` row with Python values, typed by the message's schema, else by `declared`
    (`{"<db or schema>.<table>": {column: type}}`)."""
    row = m.value[side]
    if row is None:
        return None
    if m.value_schema is not None and "fields" in m.value_schema and "type" in m.value_schema:
        fields = _json_fields(m.value_schema, side) if m.value_schema["type"] == "struct" \
            else _avro_fields(m.value_schema, side)
    else:
        s = m.value["source"]
        collection = f"{s['db'] if s['connector'] == 'mysql' else s['schema']}.{s['table']}"
        fields = declared_fields((declared or {}).get(collection, {}))
    return {name: column_value(fields.get(name), x) for name, x in row.items()}


# -- replay ------------------------------------------------------------------------------------------------------
def replay(msgs: list[Msg], declared: dict[str, dict[str, str]] | None = None) -> dict[str, dict[str, dict]]:
    """Apply each connector's distinct data events in source order (snapshot first, then by position and the
    transaction's order): {table: {key text: row}}. A TOAST placeholder keeps the column's previous value;
    keyless rows are keyed by their content."""
    seen, events = set(), []
    for m in data_events(msgs):
        ident: tuple = (m.topic, json.dumps(m.key, sort_keys=True, default=str), m.value["op"], position(m))
        if m.value["op"] == "r":  # snapshot rows share one position: a keyless one is told apart by its row
            ident = (m.topic, repr(m.value["after"]))
        if ident in seen:
            continue
        seen.add(ident)
        tx = m.value["transaction"]
        order = (m.value["source"]["connector"], m.value["op"] != "r", position(m), tx["total_order"] if tx else 0,
                 m.partition, m.offset)
        events.append((order, m))
    events.sort(key=lambda e: e[0])
    state: dict[str, dict[str, dict]] = defaultdict(dict)
    for _, m in events:
        rows = state[m.value["source"]["table"]]
        op = m.value["op"]
        if op == "t":
            rows.clear()
            continue
        after = image(m, "after", declared)
        key = json.dumps(m.key, sort_keys=True, default=str) if m.key is not None else repr(after)
        if op == "d":
            rows.pop(key, None)
        else:
            old = rows.get(key, {})
            rows[key] = {c: old.get(c) if v == UNAVAILABLE else v for c, v in after.items()}
    return state
