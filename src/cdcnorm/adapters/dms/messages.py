"""One DMS Kinesis / Kafka message (`{"data", "metadata", "before-image", "control"}`) as canonical rows.

`metadata.operation`: `load` (a full-load row: SNAPSHOT), `insert`, `update`, `delete`; control records
`create-table` (its `table-def` gives the columns and the primary key: a DDL row and a schema version),
`drop-table`, `rename-table`, `add-column`, `drop-column`, `rename-column` (DDL rows). DMS's own
`awsdms_*` tables are a counted filter.

Order and identity: `commit-timestamp` (with `IncludeTransactionDetails`), else the DMS-side `timestamp`;
then `stream-position` and `transaction-record-id`. The event id is (`stream-position`,
`transaction-record-id`), else (`transaction-id`, `transaction-record-id`), else the row itself (key, op,
image hash, commit time): `timestamp` is DMS's processing time and never enters it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from cdcnorm.adapters.dms.options import DmsOptions
from cdcnorm.adapters.dms.paths import split_table
from cdcnorm.adapters.dms.rows import lookup
from cdcnorm.adapters.dms.values import decoder, dms_type
from cdcnorm.canonical.record import Change, SchemaColumn, SchemaVersion, image_hash, key_of, split_key_change
from cdcnorm.errors import DecodeError

DATA_OPS = {"load": "SNAPSHOT", "insert": "INSERT", "update": "UPDATE", "delete": "DELETE"}
DDL_OPS = frozenset({"create-table", "drop-table", "rename-table", "add-column", "drop-column", "rename-column",
                     "change-columns", "column-type-change"})
INTERNAL_RULE = "dms_internal_table"


def is_message(obj: Any) -> bool:
    """A DMS stream message: `metadata` with `record-type` and `operation` (hyphenated keys)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return isinstance(meta, dict) and "record-type" in meta and "operation" in meta


def _time(v: Any) -> dt.datetime | None:
    if not isinstance(v, str) or not v:
        return None
    try:
        t = dt.datetime.fromisoformat(v)
    except ValueError:
        raise DecodeError("bad_event", f"metadata time {v[:40]!r} is not ISO-8601") from None
    return t.replace(tzinfo=dt.UTC) if t.tzinfo is None else t.astimezone(dt.UTC)


def _us(t: dt.datetime | None) -> int:
    return 0 if t is None else (t - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class TableDef:
    """A table's columns (canonical types, in order) and primary key, from `create-table` or the options."""

    columns: dict[str, str]
    keys: list[str] | None


def table_def(control: dict[str, Any]) -> TableDef | None:
    """The columns and key of a `create-table` control record's `table-def`."""
    tdef = control.get("table-def") if isinstance(control, dict) else None
    if not isinstance(tdef, dict):
        return None
    cols = tdef.get("columns") if isinstance(tdef.get("columns"), dict) else {}
    pk = tdef.get("primary-key")
    return TableDef({str(n): dms_type(c if isinstance(c, dict) else {}) for n, c in cols.items()},
                    [str(k) for k in pk] if isinstance(pk, list) and pk else None)


class MessageDecoder:
    """Messages -> canonical rows, with the table definitions learnt from `create-table` records and options."""

    def __init__(self, o: DmsOptions, vendor: str, fmt: str):
        self.o, self.vendor, self.fmt = o, vendor, fmt
        self.defs: dict[tuple[str | None, str], TableDef] = {}
        self._decoders: dict[tuple[str | None, str], dict[str, Any]] = {}
        self.mysql = (o.source_db or "").lower() in ("mysql", "mariadb", "aurora-mysql")
        for d in o.table_defs:
            self.defs[(d.get("schema"), d["table"])] = TableDef(dict(d.get("columns") or {}), d.get("keys") or None)

    def learn(self, schema: str | None, table: str, tdef: TableDef) -> None:
        self.defs[(schema, table)] = tdef
        self._decoders.pop((schema, table), None)

    def _columns(self, schema: str | None, table: str) -> dict[str, Any]:
        found = self._decoders.get((schema, table))
        if found is None:
            learnt = self.defs.get((schema, table))
            types = {**(learnt.columns if learnt else {}), **(lookup(self.o.tables, schema, table) or {})}
            found = self._decoders[(schema, table)] = {n: decoder(t, not self.o.no_hex_prefix)
                                                       for n, t in types.items()}
        return found

    def _keys(self, schema: str | None, table: str) -> list[str] | None:
        declared = lookup(self.o.keys, schema, table)
        if declared:
            return list(declared)
        learnt = self.defs.get((schema, table))
        return learnt.keys if learnt else None

    def decode(self, obj: dict[str, Any], stream: str) -> tuple[str, list[Change], list[SchemaVersion]]:
        """`("filtered", [], [])` for an internal table, else `("change", rows, schema versions)`."""
        meta = obj["metadata"]
        schema = meta.get("schema-name") or None
        table = meta.get("table-name")
        if not isinstance(table, str) or not table:
            raise DecodeError("missing_table", "the message's metadata has no table-name")
        if table.lower().startswith("awsdms_"):
            return "filtered", [], []
        operation = str(meta.get("operation") or "")
        if meta.get("record-type") == "control":
            return "change", *self._control(obj, meta, operation, schema, table, stream)
        op = DATA_OPS.get(operation)
        if op is None:
            raise DecodeError("unknown_op", f"metadata.operation {operation[:40]!r} is not load, insert, update or "
                                            "delete")
        changes = self._data(obj, meta, op, schema, table, stream)
        return "change", changes, self._grown(obj.get("data"), schema, table, stream, changes[0])

    def _where(self, schema: str | None) -> tuple[str | None, str | None]:
        return (schema, None) if self.mysql else (None, schema)

    def _image(self, values: Any, schema: str | None, table: str) -> dict[str, Any]:
        if not isinstance(values, dict):
            raise DecodeError("bad_event", "a DMS data message's `data` is not an object")
        decs = self._columns(schema, table)
        image = {}
        for name, v in values.items():
            dec = decs.get(name)
            image[name] = dec(v) if dec is not None and v is not None else v
        for name in decs:  # IncludeNullAndEmpty=false leaves NULL columns out: absent is NULL, not unchanged
            if name not in image and not name.startswith(self.o.before_image_prefix):
                image[name] = None
        return image

    def _data(self, obj: dict[str, Any], meta: dict[str, Any], op: str, schema: str | None, table: str,
              stream: str) -> list[Change]:
        image = self._image(obj.get("data"), schema, table)
        prefix = self.o.before_image_prefix
        old = {k[len(prefix):]: image.pop(k) for k in [k for k in image if k.startswith(prefix)]} if prefix else {}
        field_image = obj.get(self.o.before_image_field)
        if isinstance(field_image, dict) and field_image:
            old = {**self._image_only(field_image, schema, table), **old}
        keys = self._keys(schema, table)
        commit = _time(meta.get("commit-timestamp"))
        processed = _time(meta.get("timestamp"))
        tx_id = meta.get("transaction-id")
        rec_id = meta.get("transaction-record-id")
        spos = meta.get("stream-position")
        snapshot = op == "SNAPSHOT"
        if rec_id is not None and (spos or tx_id is not None):
            id_parts: tuple = (str(spos or tx_id), int(rec_id))
            position = f"{spos or tx_id}:{rec_id}"
        else:
            key = key_of(image, keys) if keys else None
            # the row as DMS wrote it: what the decoder adds (columns a definition fills) never changes the id
            id_parts = (op, str(sorted(key.items())) if key else "", image_hash(obj.get("data")),
                        None if snapshot else str(tx_id), _us(commit))
            position = None
        when = commit or (None if snapshot else processed)
        before = image if op == "DELETE" else None
        moved = op == "UPDATE" and bool(keys) and set(keys) <= set(old) and key_of(old, keys) != key_of(image, keys)
        if op == "UPDATE" and old and not moved and set(old) - set(keys or ()):
            before = old  # a before image beyond the key columns (ColumnFilter non-lob / all)
        d, s = self._where(schema)
        change = Change(
            vendor=self.vendor, format=self.fmt, stream=stream, op=op, vendor_op=meta.get("operation"),
            source_db=self.o.source_db, database=d, schema=s, table=table, primary_keys=keys,
            before=before, after=None if op == "DELETE" else image,
            source_ts=commit, capture_ts=processed, tx_id=None if tx_id is None else str(tx_id),
            tx_seq=int(rec_id) if rec_id is not None else None, position=position,
            sort_parts=(0 if snapshot else 1, _us(when), str(spos or ""), int(rec_id or 0)), id_parts=id_parts,
        )
        if moved:  # the old key's row: only what the before image holds (pk-only by default)
            change.before = old
            return split_key_change(change)
        return [change]

    def _grown(self, data: Any, schema: str | None, table: str, stream: str, change: Change) -> list[SchemaVersion]:
        """A schema version when a message has columns its table's definition lacks (a column added after the
        `create-table`: `add-column` control records carry no definition), typed by the values."""
        learnt = self.defs.get((schema, table))
        if learnt is None or not isinstance(data, dict):
            return []
        prefix = self.o.before_image_prefix
        extra = {n: value_type(v) for n, v in data.items() if n not in learnt.columns and not n.startswith(prefix)}
        if not extra:
            return []
        grown = TableDef({**learnt.columns, **extra}, learnt.keys)
        self.learn(schema, table, grown)
        return [self._version(grown, schema, table, stream, change.source_ts or change.capture_ts)]

    def _version(self, tdef: TableDef, schema: str | None, table: str, stream: str,
                 when: dt.datetime | None) -> SchemaVersion:
        keys = tdef.keys or []
        cols = [SchemaColumn(name=n, vendor_type=None, canonical_type=t, ordinal=i + 1,
                             pk_position=keys.index(n) + 1 if n in keys else None)
                for i, (n, t) in enumerate(tdef.columns.items())]
        d, s = self._where(schema)
        return SchemaVersion(vendor=self.vendor, stream=stream, schema_version=version_of(tdef), columns=cols,
                             source_db=self.o.source_db, database=d, schema=s, table=table, first_seen=when)

    def _image_only(self, values: dict[str, Any], schema: str | None, table: str) -> dict[str, Any]:
        decs = self._columns(schema, table)
        return {n: decs[n](v) if n in decs and decs[n] is not None and v is not None else v for n, v in values.items()}

    def _control(self, obj: dict[str, Any], meta: dict[str, Any], operation: str, schema: str | None, table: str,
                 stream: str) -> tuple[list[Change], list[SchemaVersion]]:
        control = obj.get("control") if isinstance(obj.get("control"), dict) else {}
        when = _time(meta.get("timestamp"))
        d, s = self._where(schema)
        versions: list[SchemaVersion] = []
        tdef = table_def(control) if operation == "create-table" else None
        if tdef is not None:
            self.learn(schema, table, tdef)
            versions.append(self._version(tdef, schema, table, stream, when))
        op = "DDL" if operation in DDL_OPS else "CONTROL"
        content = control or None
        change = Change(
            vendor=self.vendor, format=self.fmt, stream=stream, op=op, vendor_op=operation, source_db=self.o.source_db,
            database=d, schema=s, table=table, primary_keys=tdef.keys if tdef else None,
            ddl=operation if op == "DDL" else None, capture_ts=when, content=content,
            schema_version=versions[0].schema_version if versions else None,
            sort_parts=(1, _us(when), "", 0), id_parts=(operation, image_hash({"c": str(control)}), _us(when)),
        )
        return [change], versions


def learnt_def(obj: Any) -> dict[str, Any] | None:
    """A first-pass item: the table definition of a `create-table` control record (None for other records)."""
    if not is_message(obj):
        return None
    meta = obj["metadata"]
    if meta.get("record-type") != "control" or meta.get("operation") != "create-table":
        return None
    tdef = table_def(obj.get("control") or {})
    names = table_name(meta)
    if tdef is None or names is None or names[1].lower().startswith("awsdms_"):
        return None
    return {"schema": names[0], "table": names[1], "columns": tdef.columns, "keys": tdef.keys}


def stored_def(row: dict[str, Any]) -> dict[str, Any] | None:
    """A table definition from a schema version an earlier run stored (a `LAKE/schemas` row)."""
    cols = sorted(row.get("columns") or [], key=lambda c: c.get("ordinal") or 0)
    if not cols or not row.get("table"):
        return None
    keyed = sorted((c["pk_position"], c["name"]) for c in cols if c.get("pk_position"))
    return {"schema": row.get("schema") or row.get("database"), "table": row["table"],
            "columns": {c["name"]: c.get("canonical_type") or "string" for c in cols},
            "keys": [n for _, n in keyed] or None}


def version_of(tdef: TableDef) -> str:
    """A schema version id from the columns, their types and the key."""
    return f"dms-{image_hash({**tdef.columns, '': ','.join(tdef.keys or ())}).hex()[:16]}"


_VALUE_TYPES = {bool: "boolean", int: "bigint", float: "double", str: "string"}


def value_type(v: Any) -> str:
    """The canonical type a JSON value suggests (a column no definition types); NULL: string."""
    if isinstance(v, Decimal):
        exp = v.as_tuple().exponent
        scale = -exp if isinstance(exp, int) and exp < 0 else 0
        return f"decimal(38,{min(scale, 38)})"
    return _VALUE_TYPES.get(type(v), "string")


def table_name(meta: dict[str, Any]) -> tuple[str | None, str] | None:
    """(schema, table) of a message's metadata."""
    t = meta.get("table-name")
    return (meta.get("schema-name") or None, t) if isinstance(t, str) and t else None


__all__ = ["MessageDecoder", "is_message", "learnt_def", "split_table", "stored_def", "table_def", "table_name"]
