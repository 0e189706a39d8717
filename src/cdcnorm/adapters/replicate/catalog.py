"""The Qlik Replicate metadata catalog: table versions learnt from metadata (MD) messages.

Why a catalog: data (DT) messages reference their table's metadata only through `messageSchemaId` (= the MD
`schemaId`), and the MD may be in another file or partition than its DTs, or arrive later. Catalog entries
are plain JSON-serialisable dicts so the pipeline's generic first pass can collect them (the adapter's
`first_pass_file` / `first_pass_message`), store them with the schema versions, and hand them back to the
adapter on the executors (`catalog_entries`). This module imports nothing from the adapter.

An entry::

    {"schema_id": "8FB9...", "server": "...", "task": "...", "schema": "employees", "table": "salaries",
     "table_version": 1, "timestamp": "2018-04-13T20:13:58.289", "origin": "md" | "registry",
     "columns": [{"name": "emp_no", "ordinal": 1, "type": "INT4", "length": 10, "precision": 0, "scale": 0,
                  "pk_position": 1, "nullable": false}, ...],
     "data_schema": "<the Avro DataRecord schema, JSON text>" | null}
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from cdcnorm.errors import DecodeError

ENTRY_KEYS = (
    "schema_id",
    "server",
    "task",
    "schema",
    "table",
    "table_version",
    "timestamp",
    "origin",
    "columns",
    "data_schema",
)


def _int_or_none(v: Any) -> int | None:
    try:
        return int(v) if v is not None and not isinstance(v, bool) else None
    except (TypeError, ValueError):
        return None


def entry_from_md(message: dict[str, Any]) -> dict[str, Any]:
    """A catalog entry from a decoded MD `message` (JSON object or Avro record: same field names).

    Raises:
        DecodeError: `bad_metadata` when the lineage or the column list is missing or malformed.
    """
    if not isinstance(message, dict):
        raise DecodeError(
            "bad_metadata",
            "the MD message is not an object; expected {schemaId, lineage, tableStructure, dataSchema}",
        )
    lineage = message.get("lineage")
    structure = message.get("tableStructure")
    cols = structure.get("tableColumns") if isinstance(structure, dict) else None
    if not isinstance(lineage, dict) or not lineage.get("table") or not isinstance(cols, dict):
        raise DecodeError(
            "bad_metadata",
            "the MD message lacks lineage.table or tableStructure.tableColumns; it cannot describe a table",
        )
    columns = []
    for name, c in cols.items():
        if not isinstance(c, dict) or _int_or_none(c.get("ordinal")) is None:
            raise DecodeError("bad_metadata", f"column {name!r} of the MD message has no integer ordinal")
        columns.append(
            {
                "name": name,
                "ordinal": int(c["ordinal"]),
                "type": c.get("type"),
                "length": _int_or_none(c.get("length")),
                "precision": _int_or_none(c.get("precision")),
                "scale": _int_or_none(c.get("scale")),
                "pk_position": _int_or_none(c.get("primaryKeyPosition")) or 0,
                "nullable": c.get("nullable") if isinstance(c.get("nullable"), bool) else None,
            }
        )
    columns.sort(key=lambda c: c["ordinal"])
    return {
        "schema_id": message.get("schemaId") or None,
        "server": lineage.get("server"),
        "task": lineage.get("task"),
        "schema": lineage.get("schema") or None,
        "table": lineage["table"],
        "table_version": _int_or_none(lineage.get("tableVersion")),
        "timestamp": lineage.get("timestamp") or None,
        "origin": "md",
        "columns": columns,
        "data_schema": message.get("dataSchema") or None,
    }


def _avro_type_name(t: Any) -> str:
    """A readable Avro type of a (nullable) field: `long`, `bytes:decimal(12,2)`, `long:timestamp-micros`."""
    if isinstance(t, list):
        non_null = [x for x in t if x != "null" and not (isinstance(x, dict) and x.get("type") == "null")]
        return _avro_type_name(non_null[0]) if len(non_null) == 1 else "union"
    if isinstance(t, dict):
        logical = t.get("logicalType")
        base = t.get("type")
        base = base if isinstance(base, str) else _avro_type_name(base)
        if logical == "decimal":
            return f"{base}:decimal({t.get('precision')},{t.get('scale', 0)})"
        return f"{base}:{logical}" if logical else base
    return str(t)


def entry_from_data_schema(schema_id: str, schema: dict[str, Any] | str) -> dict[str, Any]:
    """A catalog entry from a Schema Registry `DataRecord` schema (Confluent wire format, no MD messages).

    Field order gives the ordinals (Replicate writes `Data` fields in ordinal order); the table comes from the
    namespace `com.attunity.queue.msg.<schema>.<table>` when present [reference §3, inferred], else unknown.
    Primary keys and Replicate types are unknown: rows decoded with it are flagged `no_schema`.
    """
    doc = orjson.loads(schema) if isinstance(schema, str | bytes) else schema
    fields = {f["name"]: f for f in doc.get("fields", []) if isinstance(f, dict)}
    data_t = fields.get("data", {}).get("type")
    if not isinstance(data_t, dict) or data_t.get("type") != "record":
        raise DecodeError(
            "bad_schema",
            f"registry schema {schema_id} is not a Replicate DataRecord (no `data` record field)",
        )
    namespace = doc.get("namespace") or ""
    name = doc.get("name") or ""
    if "." in name:
        namespace, name = name.rsplit(".", 1)
    parts = namespace.split(".")
    sch, table = None, None
    if namespace.startswith("com.attunity.queue.msg.") and len(parts) >= 6:
        sch, table = parts[4], ".".join(parts[5:])
    columns = [
        {
            "name": f["name"],
            "ordinal": i + 1,
            "type": None,
            "avro_type": _avro_type_name(f.get("type")),
            "length": None,
            "precision": None,
            "scale": None,
            "pk_position": 0,
            "nullable": None,
        }
        for i, f in enumerate(data_t.get("fields", []))
    ]
    return {
        "schema_id": schema_id,
        "server": None,
        "task": None,
        "schema": sch,
        "table": table,
        "table_version": None,
        "timestamp": None,
        "origin": "registry",
        "columns": columns,
        "data_schema": orjson.dumps(doc).decode(),
    }


def type_label(col: dict[str, Any]) -> str | None:
    """The vendor type with its size, as people write it: `NUMERIC(12,2)`, `STRING(40)`, `INT4`."""
    t = col.get("type")
    if t is None:
        return col.get("avro_type")
    if t == "NUMERIC" and col.get("precision"):
        return f"NUMERIC({col['precision']},{col.get('scale') or 0})"
    if t in ("STRING", "WSTRING", "BYTES") and col.get("length"):
        return f"{t}({col['length']})"
    return t


def diff(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, str | None]]:
    """Structured DDL between two versions of a table: columns added, dropped, or whose type changed.

    A rename shows as a drop plus an add: MD messages carry no rename information.
    """
    before = {c["name"]: c for c in old["columns"]}
    after = {c["name"]: c for c in new["columns"]}
    changes: list[dict[str, str | None]] = []
    for name, c in after.items():
        if name not in before:
            changes.append({"action": "ADD_COLUMN", "column": name, "new_name": None, "type": type_label(c)})
        elif type_label(before[name]) != type_label(c):
            changes.append(
                {"action": "ALTER_COLUMN", "column": name, "new_name": None, "type": type_label(c)}
            )
    for name, c in before.items():
        if name not in after:
            changes.append({"action": "DROP_COLUMN", "column": name, "new_name": None, "type": type_label(c)})
    return changes


class Catalog:
    """Table versions by `schemaId` and by (schema, table, tableVersion); plain dicts, so it pickles."""

    def __init__(self, entries: list[dict[str, Any]] | tuple = ()) -> None:
        self._by_id: dict[str, dict[str, Any]] = {}
        self._by_table: dict[tuple[str | None, str], dict[int, dict[str, Any]]] = {}
        self._unversioned: list[dict[str, Any]] = []
        self._parsed: dict[str, Any] = {}
        self._parsed_text: dict[str, Any] = {}
        for e in entries:
            self.add(e)

    def __len__(self) -> int:
        return len(self._by_id) + len(self._unversioned)

    def entries(self) -> list[dict[str, Any]]:
        """Every entry, for serialisation."""
        return [*self._by_id.values(), *self._unversioned]

    def add(self, entry: dict[str, Any]) -> None:
        """Remember an entry (a repeated MD replaces the same id and version)."""
        if entry.get("schema_id"):
            self._by_id[entry["schema_id"]] = entry
        elif entry not in self._unversioned:
            self._unversioned.append(entry)
        if entry.get("table") and entry.get("table_version") is not None:
            versions = self._by_table.setdefault((entry.get("schema"), entry["table"]), {})
            versions[int(entry["table_version"])] = entry

    def get(self, schema_id: str | None) -> dict[str, Any] | None:
        """The entry of a `schemaId`, or None."""
        return self._by_id.get(schema_id) if schema_id else None

    def versions(self, schema: str | None, table: str) -> dict[int, dict[str, Any]]:
        """tableVersion -> entry for one table (schema None matches the table in any schema)."""
        if schema is not None:
            return self._by_table.get((schema, table), {})
        found: dict[int, dict[str, Any]] = {}
        for (_, t), versions in self._by_table.items():
            if t == table:
                found.update(versions)
        return found

    def previous(self, entry: dict[str, Any]) -> dict[str, Any] | None:
        """The highest known version of the same table below this entry's version (the DDL's old side)."""
        v = entry.get("table_version")
        if v is None:
            return None
        older = {k: e for k, e in self.versions(entry.get("schema"), entry["table"]).items() if k < int(v)}
        return older[max(older)] if older else None

    def match(self, schema: str | None, table: str | None, field_names: list[str]) -> dict[str, Any] | None:
        """The newest MD version whose columns are exactly these fields, within one table or, when the table
        is unknown, across the catalog if only one table fits. For DTs that carry no `messageSchemaId`."""
        names = list(field_names)
        if table is not None:
            candidates = list(self.versions(schema, table).items())
            if not candidates:
                folded = table.casefold()
                candidates = [
                    (v, e)
                    for (s, t), vs in self._by_table.items()
                    for v, e in vs.items()
                    if t.casefold() == folded and (schema is None or s == schema)
                ]
        else:
            candidates = [(v, e) for vs in self._by_table.values() for v, e in vs.items()]
        fits = [(v, e) for v, e in candidates if [c["name"] for c in e["columns"]] == names]
        if table is None and len({(e.get("schema"), e["table"]) for _, e in fits}) != 1:
            return None
        return max(fits, key=lambda ve: ve[0])[1] if fits else None

    def parsed_data_schema(self, entry: dict[str, Any]) -> Any:
        """The entry's Avro data schema parsed by fastavro (cached per schema id).

        Raises:
            DecodeError: `bad_schema` when the schema text is not a valid Avro schema.
        """
        key = entry.get("schema_id") or entry.get("data_schema") or ""
        if key not in self._parsed:
            self._parsed[key] = parse_avro_schema(entry.get("data_schema"), entry.get("schema_id"))
            self._parsed_text[key] = entry.get("data_schema")
        return self._parsed[key]

    def parsed_schema_text(self, entry: dict[str, Any]) -> Any:
        """The schema text :meth:`parsed_data_schema` parsed for this entry's key (a later MD with the same id
        does not replace it there), for a reader that must read what fastavro reads."""
        return self._parsed_text.get(entry.get("schema_id") or entry.get("data_schema") or "")


def parse_avro_schema(text: str | dict | None, what: str | None) -> Any:
    """Parse an Avro schema given as JSON text or dict; a broken schema becomes a `bad_schema` DecodeError."""
    from fastavro import parse_schema

    if text is None:
        raise DecodeError("schema_not_found", f"schema {what} has no Avro data schema (dataSchema is empty)")
    try:
        doc = orjson.loads(text) if isinstance(text, str | bytes) else text
        return parse_schema(doc)
    except Exception as exc:  # fastavro raises several types for bad schemas
        raise DecodeError(
            "bad_schema",
            f"the Avro schema of {what} cannot be parsed ({exc}); the MD message or the "
            "registry file is damaged",
        ) from None


def load_registry(source: str) -> dict[int, str]:
    """Confluent Schema Registry schemas by id, from a local folder or file.

    Accepted layouts (the `source` string is a location so an `http(s)://` registry URL can be added later):

    * a folder of `<id>.avsc` / `<id>.json` files, each the Avro schema itself or the registry's answer to
      `GET /schemas/ids/<id>` (`{"schema": "<schema text>"}`);
    * one JSON file: `{"<id>": <schema>, ...}`, or a list (or JSON lines) of
      `{"id": <id>, "schema": <schema>}` (the shape of the registry's `GET /schemas`).

    Raises:
        UsageError: when the location is a URL or cannot be read.
    """
    from pathlib import Path

    from cdcnorm.errors import UsageError

    if "://" in source:
        raise UsageError(f"schema_registry {source!r}: only a local file or folder is supported for now")
    path = Path(source)
    found: dict[int, str] = {}
    try:
        if path.is_dir():
            for f in sorted(path.iterdir()):
                if f.suffix in (".avsc", ".json") and f.stem.isdigit():
                    found[int(f.stem)] = _schema_text(orjson.loads(f.read_bytes()))
            return found
        data = path.read_bytes()
        try:
            doc: Any = orjson.loads(data)
        except orjson.JSONDecodeError:
            doc = [orjson.loads(line) for line in data.splitlines() if line.strip()]
    except (OSError, orjson.JSONDecodeError) as exc:
        raise UsageError(f"schema_registry {source!r} cannot be read: {exc}") from None
    items = doc.items() if isinstance(doc, dict) else ((d.get("id"), d) for d in doc if isinstance(d, dict))
    for sid, schema in items:
        if sid is not None and str(sid).isdigit():
            found[int(sid)] = _schema_text(schema)
    return found


def _schema_text(doc: Any) -> str:
    """The Avro schema text of a registry document (`{"schema": "..."}`) or of a bare schema."""
    if isinstance(doc, dict) and isinstance(doc.get("schema"), str) and "fields" not in doc:
        return doc["schema"]
    if isinstance(doc, dict) and isinstance(doc.get("schema"), dict) and "fields" not in doc:
        return orjson.dumps(doc["schema"]).decode()
    return doc if isinstance(doc, str) else orjson.dumps(doc).decode()


# -- entries from the pipeline's first pass and from the lake ----------------------------------------------
_SIZED = re.compile(r"([A-Z0-9_]+)(?:\((\d+)(?:,(\d+))?\))?")


def entry_from_schema_row(row: dict[str, Any]) -> dict[str, Any] | None:
    """Rebuild a catalog entry from a stored schema version (a `LAKE/schemas` row as a dict).

    A `definition` field (the entry itself, as JSON) is used when the lake stores one; otherwise the entry is
    rebuilt from the columns, which is enough for JSON data messages but lacks the Avro `dataSchema`.
    """
    if row.get("definition"):
        try:
            return orjson.loads(row["definition"])
        except orjson.JSONDecodeError:
            return None
    sid = row.get("schema_version")
    if not sid or str(sid).startswith("registry:"):
        return None
    columns = []
    for c in row.get("columns") or []:
        m = _SIZED.fullmatch(c.get("vendor_type") or "")
        t, a, b = (m[1], m[2], m[3]) if m else (c.get("vendor_type"), None, None)
        numeric = t == "NUMERIC"
        columns.append(
            {
                "name": c["name"],
                "ordinal": c["ordinal"],
                "type": t,
                "length": None if numeric or a is None else int(a),
                "precision": int(a) if numeric and a else None,
                "scale": int(b) if numeric and b else None,
                "pk_position": c.get("pk_position") or 0,
                "nullable": c.get("nullable"),
            }
        )
    return {
        "schema_id": sid,
        "server": None,
        "task": None,
        "schema": row.get("schema") or row.get("database"),
        "table": row.get("table"),
        "table_version": None,
        "timestamp": None,
        "origin": "md",
        "columns": sorted(columns, key=lambda c: c["ordinal"]),
        "data_schema": None,
    }


def merge_entries(*groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Union of entry lists, later groups winning for the same schemaId (a full MD beats a rebuilt one)."""
    by_key: dict[str, dict[str, Any]] = {}
    for group in groups:
        for e in group:
            key = e.get("schema_id") or orjson.dumps(e, option=orjson.OPT_SORT_KEYS).decode()
            by_key[key] = e
    return list(by_key.values())
