"""Kafka Connect schema nodes: the hashable :class:`Field` read from a JsonConverter schema or an Avro writer schema.

Every decoder is compiled from a `Field`, so both wire schemas become this one form first: a JSON schema node
names its Connect type directly, an Avro node says it through unions, `connect.*` properties and logical types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DECIMAL = "org.apache.kafka.connect.data.Decimal"
"""The logical name of Connect's Decimal (the unscaled integer's bytes, a `scale` parameter)."""


@dataclass(frozen=True)
class Field:
    """One Kafka Connect schema node: its type, logical name, parameters and members."""

    name: str | None
    type: str
    """Connect type: int8..int64, float32, float64, boolean, string, bytes, struct, array, map"""
    logical: str | None = None
    """schema `name`, e.g. `io.debezium.time.MicroTimestamp`"""
    parameters: tuple[tuple[str, str], ...] = ()
    optional: bool = True
    fields: tuple[Field, ...] = ()
    items: Field | None = None
    keys: Field | None = None
    values: Field | None = None
    default: Any = field(default=None, compare=False, hash=False)

    def __hash__(self) -> int:  # schemas are deep and hashed per lookup: compute once
        try:
            return self.__dict__["_hash"]
        except KeyError:
            h = hash((self.name, self.type, self.logical, self.parameters, self.optional, self.fields, self.items,
                      self.keys, self.values))
            object.__setattr__(self, "_hash", h)
            return h

    def __getstate__(self) -> dict:  # a cached hash is per process (string hashing is salted)
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    @property
    def params(self) -> dict[str, str]:
        return dict(self.parameters)


def _params(raw: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, dict):
        return ()
    return tuple(sorted((str(k), str(v)) for k, v in raw.items()))


def connect_field(schema: dict) -> Field:
    """A JsonConverter schema node (`{"type", "optional", "name", "parameters", "field", "fields", ...}`)."""
    typ = schema["type"]
    typ = _CONNECT_ALIASES.get(typ, typ)
    if typ not in _CONNECT_TYPES:
        raise ValueError(f"unknown Connect type {typ!r}")
    return Field(
        name=schema.get("field"),
        type=typ,
        logical=schema.get("name"),
        parameters=_params(schema.get("parameters")),
        optional=bool(schema.get("optional", False)),
        fields=tuple(connect_field(f) for f in schema.get("fields") or ()) if typ == "struct" else (),
        items=connect_field(schema["items"]) if typ == "array" else None,
        keys=connect_field(schema["keys"]) if typ == "map" else None,
        values=connect_field(schema["values"]) if typ == "map" else None,
        default=schema.get("default"),
    )


_CONNECT_TYPES = frozenset(
    ("int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string", "bytes", "struct", "array", "map"))
_CONNECT_ALIASES = {"double": "float64", "float": "float32"}
"""Flink CDC's Debezium-like JSON names its float columns `double` / `float`."""
_AVRO_PRIMITIVE = {"boolean": "boolean", "int": "int32", "long": "int64", "float": "float32", "double": "float64",
                   "bytes": "bytes", "string": "string"}
_AVRO_LOGICAL = {"date": "org.apache.kafka.connect.data.Date", "time-millis": "org.apache.kafka.connect.data.Time",
                 "timestamp-millis": "org.apache.kafka.connect.data.Timestamp"}


def avro_field(avro_schema: Any, name: str | None = None, names: dict[str, Any] | None = None) -> Field:
    """A Confluent AvroConverter schema node: a union with null is optional; `connect.name`,
    `connect.parameters`, `connect.type` (int8 / int16) and the Avro logical types give the Connect meaning.

    A named type is written once and referenced by name after that (two NUMERIC columns share one
    `io.debezium.data.VariableScaleDecimal` record): read a whole record in one call, or pass one `names`
    dict to the calls for the fields of one schema. Raises ValueError for what Connect cannot have written.
    """
    return _avro(avro_schema, name, {} if names is None else names, None)


def _avro(s: Any, name: str | None, named: dict[str, Any], space: str | None, default: Any = None) -> Field:
    if isinstance(s, list):
        branches = [b for b in s if b != "null"]
        if len(branches) != 1:
            raise ValueError(f"a union of {len(branches)} non-null types has no Connect type")
        inner = _avro(branches[0], name, named, space, default)
        return Field(inner.name, inner.type, inner.logical, inner.parameters, len(branches) < len(s), inner.fields,
                     inner.items, inner.keys, inner.values, default)
    if isinstance(s, str):
        if s in _AVRO_PRIMITIVE:
            return Field(name, _AVRO_PRIMITIVE[s], optional=False, default=default)
        ref = named.get(f"{space}.{s}") or named.get(s)
        if ref is None:
            raise ValueError(f"unknown Avro type {s!r}")
        return _avro(ref, name, named, space, default)
    if not isinstance(s, dict):
        raise ValueError(f"not an Avro schema: {s!r}")
    typ = s.get("type")
    if isinstance(typ, dict | list):
        return _avro(typ, name, named, space, s.get("default", default))
    ns = space
    if typ in ("record", "enum", "fixed") and "name" in s:
        full = s["name"] if "." in s["name"] else ".".join(filter(None, (s.get("namespace") or space, s["name"])))
        ns = full.rpartition(".")[0] or None
        s = named[full] = {**s, "name": full}  # a reference resolves it in its own namespace
        named.setdefault(full.rpartition(".")[2], s)
    params = dict(_params(s.get("connect.parameters")))
    logical = s.get("connect.name")
    avro_logical = s.get("logicalType")
    if avro_logical == "decimal" and logical is None:
        logical = DECIMAL
        params.setdefault("scale", str(s.get("scale", 0)))
        if s.get("precision") is not None:
            params.setdefault("connect.decimal.precision", str(s["precision"]))
    elif avro_logical in _AVRO_LOGICAL and logical is None:
        logical = _AVRO_LOGICAL[avro_logical]
    dflt = s.get("connect.default", default)
    ptuple = tuple(sorted(params.items()))
    if typ == "record":
        members = tuple(_avro(f["type"], f["name"], named, ns, f.get("default")) for f in s.get("fields") or ())
        return Field(name, "struct", logical, ptuple, False, members, default=dflt)
    if typ == "array":
        return Field(name, "array", logical, ptuple, False, items=_avro(s["items"], None, named, space), default=dflt)
    if typ == "map":
        return Field(name, "map", logical, ptuple, False, keys=Field(None, "string", optional=False),
                     values=_avro(s["values"], None, named, space), default=dflt)
    if typ == "enum":
        return Field(name, "string", logical, ptuple, False, default=dflt)
    if typ == "fixed":
        return Field(name, "bytes", logical, ptuple, False, default=dflt)
    if typ in _AVRO_PRIMITIVE:
        ctype = s.get("connect.type") if s.get("connect.type") in ("int8", "int16") else _AVRO_PRIMITIVE[typ]
        return Field(name, ctype, logical, ptuple, False, default=dflt)
    raise ValueError(f"unknown Avro type {typ!r}")
