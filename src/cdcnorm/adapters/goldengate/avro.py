"""The Avro operation formatter (`format=avro_op`, reference §6).

Its records hold the op-modeled fields (`table`, `op_type`, `op_ts`, `current_ts`, `pos`, `primary_keys`,
`tokens`, `before`, `after`); each column of an image has a companion `<col>_isMissing` boolean: true means
the column was not captured (never NULL), so it goes to `missing_columns`. Where the records come from:

- Avro container files (the File Writer handler): the schema is in the file;
- Kafka messages (one Avro datum each): the table schemas the formatter generated (`generateSchema`,
  `<SCHEMA>.<TABLE>.avsc`), from the `avro_schemas` folder, chosen by the message's topic or, when the folder
  holds one table schema, that one; with `wrapMessageInGenericAvroMessage=true` every message is
  `oracle.goldengate.generic_wrapper {table_name, schema_fingerprint, payload}` and the payload's schema is the
  one whose fingerprint (CRC-64-AVRO of its parsing canonical form) the wrapper names.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import orjson
from fastavro import parse_schema, schemaless_reader
from fastavro.schema import fingerprint, to_parsing_canonical_form

from cdcnorm.adapters.goldengate.changes import Op
from cdcnorm.errors import DecodeError, UsageError

MISSING = "_isMissing"
WRAPPER = "oracle.goldengate.generic_wrapper"
WRAPPER_SCHEMA = {"type": "record", "name": "generic_wrapper", "namespace": "oracle.goldengate", "fields": [
    {"name": "table_name", "type": "string"}, {"name": "schema_fingerprint", "type": "long"},
    {"name": "payload", "type": "bytes"}]}
"""The wrapper GoldenGate documents (its own `generic_wrapper.avsc` is the same record)."""


def is_op_schema(schema: Any) -> bool:
    """An Avro op formatter record schema: the metadata fields and `before` / `after`."""
    if not isinstance(schema, dict):
        return False
    names = {f.get("name") for f in schema.get("fields") or () if isinstance(f, dict)}
    return {"table", "op_type", "pos"} <= names and bool({"before", "after"} & names)


_PAIRS: dict[tuple[str, ...], tuple[tuple[str, str], ...]] = {}
"""an image record's field names -> its (column, `<column>_isMissing`) pairs (one entry per schema)"""


def _pairs(keys: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    found = _PAIRS.get(keys)
    if found is None:
        names = set(keys)
        found = _PAIRS[keys] = tuple((k, k + MISSING) for k in keys
                                     if not (k.endswith(MISSING) and k[: -len(MISSING)] in names))
    return found


def image_of(v: Any) -> tuple[dict[str, Any] | None, list[str] | None]:
    """(columns, missing columns) of an Avro image record; `<col>_isMissing` fields are not columns."""
    if not isinstance(v, dict):
        return None, None
    image, missing = {}, []
    get = v.get
    for k, m in _pairs(tuple(v)):
        if get(m) is True:
            missing.append(k)
        else:
            image[k] = v[k]
    return image, missing


def op_of(rec: Any) -> Op:
    """The operation of one Avro op record."""
    if not isinstance(rec, dict) or "op_type" not in rec or not isinstance(rec.get("table"), str):
        raise DecodeError("bad_event", "not a GoldenGate Avro op record: expected `table`, `op_type`, `pos`")
    before, miss_b = image_of(rec.get("before"))
    after, miss_a = image_of(rec.get("after"))
    pks = rec.get("primary_keys")
    tokens = rec.get("tokens")
    return Op(table=rec["table"], op_type=rec["op_type"], op_ts=rec.get("op_ts"),
              current_ts=rec.get("current_ts"), pos=rec.get("pos"),
              primary_keys=list(pks) if isinstance(pks, list) and pks else None,
              tokens=tokens if isinstance(tokens, dict) else None, before=before, after=after,
              missing_before=miss_b, missing_after=miss_a, typed=True)


def _fingerprints(doc: Any) -> list[int]:
    """The schema's CRC-64-AVRO fingerprint as a signed long, in both byte orders (Java reads it as a long)."""
    raw = bytes.fromhex(fingerprint(to_parsing_canonical_form(doc), "CRC-64-AVRO"))
    return [int.from_bytes(raw, "big", signed=True), int.from_bytes(raw, "little", signed=True)]


class SchemaStore:
    """The `.avsc` files of one folder: table schemas by full name and by fingerprint."""

    def __init__(self, folder: str | None):
        self.by_name: dict[str, Any] = {}
        self.by_fingerprint: dict[int, Any] = {}
        self.docs: dict[int, Any] = {}
        """id of a parsed schema -> the schema as JSON (for its schema version)"""
        if not folder:
            return
        root = Path(folder)
        if not root.is_dir():
            raise UsageError(f"avro_schemas {folder!r} is not a folder of .avsc files")
        for path in sorted(root.glob("*.avsc")):
            try:
                doc = orjson.loads(path.read_bytes())
                parsed = parse_schema(doc)
            except Exception as exc:  # noqa: BLE001 - fastavro raises several types for bad schemas
                raise UsageError(f"{path}: not an Avro schema ({exc})") from None
            if not is_op_schema(doc):
                continue  # the wrapper's own schema, or another schema kept beside them
            name = f"{doc['namespace']}.{doc['name']}" if doc.get("namespace") else doc["name"]
            self.by_name[name.upper()] = parsed
            self.docs[id(parsed)] = doc
            for fp in _fingerprints(doc):
                self.by_fingerprint[fp] = parsed

    def read(self, value: bytes, topic: str | None) -> tuple[dict[str, Any], Any]:
        """One Kafka message value as its Avro op record, and the record's schema (as JSON)."""
        if not self.by_name:
            raise DecodeError("missing_schema", "an Avro GoldenGate message needs the formatter's schemas: give "
                                                "the folder of its .avsc files as option avro_schemas")
        wrapped = self._unwrap(value)
        if wrapped is not None:
            return wrapped
        schema = self.by_name.get((topic or "").upper())
        if schema is None and len(self.by_name) == 1:
            schema = next(iter(self.by_name.values()))
        if schema is None:
            raise DecodeError("missing_schema", f"no table schema is named after the topic {topic!r} and the "
                                                "message is not a generic_wrapper")
        return _read(value, schema, "the Avro op record"), self.docs[id(schema)]

    def _unwrap(self, value: bytes) -> tuple[dict[str, Any], Any] | None:
        try:
            wrapper = schemaless_reader(io.BytesIO(value), _WRAPPER_PARSED)
        except Exception:  # noqa: BLE001 - not a wrapper: a plain table record
            return None
        fp = wrapper.get("schema_fingerprint")
        schema = self.by_fingerprint.get(fp)
        if schema is None:
            if wrapper.get("table_name", "").upper() in self.by_name:
                raise DecodeError("schema_not_found", f"the wrapper's schema fingerprint {fp} of "
                                                      f"{wrapper['table_name']} matches no .avsc in avro_schemas")
            return None
        return (_read(wrapper["payload"], schema, f"the wrapped payload of {wrapper.get('table_name')}"),
                self.docs[id(schema)])


_WRAPPER_PARSED = parse_schema(WRAPPER_SCHEMA)


def _read(data: bytes, schema: Any, what: str) -> dict[str, Any]:
    buf = io.BytesIO(data)
    try:
        rec = schemaless_reader(buf, schema)
    except Exception as exc:  # noqa: BLE001 - truncated or foreign bytes
        raise DecodeError("bad_message", f"{what} cannot be read with its schema ({type(exc).__name__})") from None
    if buf.tell() != len(data):
        raise DecodeError("bad_message", f"{what} does not match its schema ({len(data) - buf.tell()} bytes left)")
    return rec
