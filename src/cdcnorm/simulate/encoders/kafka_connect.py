"""Kafka Connect data as its converters write it: JsonConverter (with and without schemas) and Confluent's
AvroConverter (wire format and the schemas a registry holds).

Why a model apart from the vendor: a Kafka Connect source (Debezium) builds a Connect schema and a value once;
what lands on the topic depends only on the converter the user configured. Schemas here are plain dicts in
Kafka Connect's own terms (`type`, `optional`, `name`, `version`, `parameters`, `default`, `fields`, `items`),
values are typed Python values (int, float, bool, str, bytes, Decimal, dict, list). Written from the Kafka
Connect and Confluent documentation, never from a decoder.
"""

from __future__ import annotations

import base64
import io
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from fastavro import parse_schema, schemaless_writer

DECIMAL = "org.apache.kafka.connect.data.Decimal"
_AVRO_PRIMITIVE = {"int8": "int", "int16": "int", "int32": "int", "int64": "long", "float32": "float",
                   "float64": "double", "boolean": "boolean", "string": "string", "bytes": "bytes"}


def schema(type_: str, optional: bool = False, name: str | None = None, version: int | None = None,
           parameters: dict[str, str] | None = None, default: Any = None, **nested: Any) -> dict[str, Any]:
    """A Connect schema. `fields=[(name, schema), ...]` for a struct, `items=schema` for an array."""
    s: dict[str, Any] = {"type": type_, "optional": optional}
    for key, value in (("name", name), ("version", version), ("parameters", parameters), ("default", default)):
        if value is not None:
            s[key] = value
    s.update(nested)
    return s


def struct(name: str | None, fields: list[tuple[str, dict[str, Any]]], optional: bool = False,
           version: int | None = None) -> dict[str, Any]:
    return schema("struct", optional, name, version, fields=fields)


def decimal_schema(precision: int, scale: int, optional: bool) -> dict[str, Any]:
    """Connect's Decimal: bytes, the scale (and Debezium's precision) as string parameters."""
    return schema("bytes", optional, DECIMAL, 1, {"scale": str(scale), "connect.decimal.precision": str(precision)})


def unscaled_bytes(value: Decimal, scale: int) -> bytes:
    """The big-endian two's-complement unscaled integer of a decimal, as Java's BigInteger.toByteArray writes it
    (shortest form). Exact for any number of digits (no decimal context involved)."""
    sign, digits, exponent = value.as_tuple()
    n = int("".join(map(str, digits)) or "0") * 10 ** (int(exponent) + scale)
    if sign:
        n = -n
    width = (n if n >= 0 else ~n).bit_length() // 8 + 1
    return n.to_bytes(width, "big", signed=True)


# -- JsonConverter -------------------------------------------------------------------------------------------
def json_schema(s: dict[str, Any], field: str | None = None) -> dict[str, Any]:
    """JsonConverter's `schema` object for a Connect schema (struct fields named by `field`)."""
    out: dict[str, Any] = {"type": s["type"]}
    if s["type"] == "struct":
        out["fields"] = [json_schema(fs, fname) for fname, fs in s["fields"]]
    elif s["type"] == "array":
        out["items"] = json_schema(s["items"])
    out["optional"] = s["optional"]
    for key in ("name", "version", "parameters", "default"):
        if key in s:
            out[key] = s[key]
    if field is not None:
        out["field"] = field
    return out


def json_value(s: dict[str, Any], v: Any) -> Any:
    """JsonConverter's JSON value: bytes as base64, Decimal as the base64 of its unscaled bytes."""
    if v is None:
        return None
    t = s["type"]
    if t == "struct":
        return {fname: json_value(fs, v.get(fname)) for fname, fs in s["fields"]}
    if t == "array":
        return [json_value(s["items"], x) for x in v]
    if t == "bytes":
        raw = unscaled_bytes(v, int(s["parameters"]["scale"])) if s.get("name") == DECIMAL else v
        return base64.b64encode(raw).decode("ascii")
    return v


# -- AvroConverter -------------------------------------------------------------------------------------------
class _AvroNames:
    """Avro named types may be defined once per schema: later uses refer to the full name."""

    def __init__(self) -> None:
        self.defined: set[str] = set()


def avro_schema(s: dict[str, Any], names: _AvroNames | None = None) -> Any:
    """The Avro schema Confluent's AvroData derives from a Connect schema (optional -> union with null,
    `connect.*` properties, Decimal -> the `decimal` logical type)."""
    names = names or _AvroNames()
    base = _avro_type(s, names)
    if not s["optional"]:
        return base
    return [base, "null"] if "default" in s else ["null", base]


def _avro_type(s: dict[str, Any], names: _AvroNames) -> Any:
    t = s["type"]
    if t == "struct":
        full = s.get("name") or "io.confluent.connect.avro.ConnectDefault"
        if full in names.defined:
            return full
        names.defined.add(full)
        namespace, _, name = full.rpartition(".")
        fields = []
        for fname, fs in s["fields"]:
            f: dict[str, Any] = {"name": fname, "type": avro_schema(fs, names)}
            if "default" in fs:
                f["default"] = fs["default"]
            elif fs["optional"]:
                f["default"] = None
            fields.append(f)
        rec: dict[str, Any] = {"type": "record", "name": name}
        if namespace:
            rec["namespace"] = namespace
        rec["fields"] = fields
        _connect_props(rec, s)
        return rec
    if t == "array":
        return {"type": "array", "items": avro_schema(s["items"], names)}
    out: dict[str, Any] = {"type": _AVRO_PRIMITIVE[t]}
    if t in ("int8", "int16"):
        out["connect.type"] = t
    if s.get("name") == DECIMAL:
        p = s["parameters"]
        out.update(scale=int(p["scale"]), precision=int(p["connect.decimal.precision"]))
    _connect_props(out, s)
    if s.get("name") == DECIMAL:
        out["logicalType"] = "decimal"
    return out if len(out) > 1 else out["type"]


def _connect_props(out: dict[str, Any], s: dict[str, Any]) -> None:
    if "version" in s:
        out["connect.version"] = s["version"]
    if "parameters" in s:
        out["connect.parameters"] = s["parameters"]
    if "default" in s:
        out["connect.default"] = s["default"]
    if "name" in s:
        out["connect.name"] = s["name"]


def avro_value(s: dict[str, Any], v: Any) -> Any:
    """The datum fastavro writes for a Connect value (a Decimal stays a Decimal for the logical type)."""
    if v is None:
        return None
    if s["type"] == "struct":
        return {fname: avro_value(fs, v.get(fname)) for fname, fs in s["fields"]}
    if s["type"] == "array":
        return [avro_value(s["items"], x) for x in v]
    return v


class Registry:
    """A schema registry's contents: one id per distinct schema text (ids count up from `first_id`), and the
    Confluent wire format (magic byte 0, the 4-byte big-endian id, the Avro binary body)."""

    def __init__(self, first_id: int = 1):
        self.next_id = first_id
        self.ids: dict[str, int] = {}
        self.texts: dict[int, str] = {}
        self.subjects: dict[str, list[int]] = {}
        self.parsed: dict[int, Any] = {}
        self.known: dict[tuple[str, int], tuple[int, dict[str, Any]]] = {}

    def register(self, subject: str, connect: dict[str, Any]) -> int:
        """The schema's id under `subject`, registering it (and the subject's new version) when new."""
        hit = self.known.get((subject, id(connect)))
        if hit is not None and hit[1] is connect:
            return hit[0]
        text = json.dumps(avro_schema(connect), separators=(",", ":"))
        sid = self.ids.get(text)
        if sid is None:
            sid = self.ids[text] = self.next_id
            self.next_id += 1
            self.texts[sid] = text
            self.parsed[sid] = parse_schema(json.loads(text))
        versions = self.subjects.setdefault(subject, [])
        if sid not in versions:
            versions.append(sid)
        self.known[(subject, id(connect))] = (sid, connect)  # the schema is kept: its id stays its own
        return sid

    def encode(self, subject: str, connect: dict[str, Any], value: Any) -> bytes:
        sid = self.register(subject, connect)
        buf = io.BytesIO()
        buf.write(b"\x00" + sid.to_bytes(4, "big"))
        schemaless_writer(buf, self.parsed[sid], avro_value(connect, value))
        return buf.getvalue()

    def export(self, folder: Path) -> None:
        """`<id>.avsc` per schema (the registry's `GET /schemas/ids/<id>`) and `subjects.json` (subject ->
        its schema ids, oldest first)."""
        folder.mkdir(parents=True, exist_ok=True)
        for sid, text in self.texts.items():
            (folder / f"{sid}.avsc").write_text(text + "\n", encoding="utf-8")
        (folder / "subjects.json").write_text(json.dumps(self.subjects, indent=2, sort_keys=True) + "\n",
                                              encoding="utf-8")
