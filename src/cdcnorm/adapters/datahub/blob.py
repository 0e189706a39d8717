"""Blob messages (`schema`, `payload`, `version`): DML, DDL and control ops turned into canonical rows.

An UPDATE arrives as two messages (`UPDATE_BEFOR` + `UPDATE_AFTER`, one image each) or, in DataWorks'
aliyun-json shape, as one `UPDATE_AFTER` (or `UPDATE_BEFOR`) carrying both `before` and `after`: that is a
complete UPDATE (:func:`~cdcnorm.adapters.datahub.changes.whole_update`). Full-load records carry
`sequenceId: "-1"` and `eventTime`/`checkpointTime` `-1`: sentinels for "unknown", so they become SNAPSHOT rows
with a null `source_ts` (:func:`~cdcnorm.adapters.datahub.scalars.is_unset`). Any `version` is accepted.

GTID, XACOMMIT and XAROLLBACK become CONTROL rows (XA outcomes are not the transaction boundaries TX_BEGIN/TX_COMMIT
describe); control, heartbeat and transaction rows keep the rest of the payload (e.g. `timestamp`) in `after`; a
DDL row keeps `ddlMeta` verbatim, undecoded, as the Base64 string `after.ddlMeta` (it is a Java-serialized
FastSQL object only a JVM can read).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from cdcnorm.adapters.datahub.blob_values import (
    BLOB_TYPES,
    column_converters,
    millis_to_datetime,
    typed_image,
)
from cdcnorm.adapters.datahub.changes import Base, SchemaVersions, dml_change, event_change, whole_update
from cdcnorm.adapters.datahub.options import Where
from cdcnorm.adapters.datahub.scalars import is_unset
from cdcnorm.adapters.datahub.scalars import text_or_none as _text
from cdcnorm.adapters.datahub.vocabulary import (
    CONTROL_OPS,
    DDL_OPS,
    DML_OPS,
    FMT_BLOB,
    MYSQL_FAMILY,
    source_db_of,
)
from cdcnorm.adapters.ddl import apply_changes, parse_ddl
from cdcnorm.canonical.memo import Memo
from cdcnorm.errors import DecodeError

StreamOf = Callable[[Where, "str | None"], str]
"""The adapter's stream naming: (where the record came from, fallback) -> stream."""


def _object(value: Any, what: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise DecodeError("bad_message", f"{what} is {type(value).__name__}, expected a JSON object")
    return value


def decode_blob(msg: dict, where: Where, stream: StreamOf, versions: SchemaVersions) -> list:
    """The rows of one Blob message: a DML row, a DDL/TRUNCATE row or a control row, and a schema version."""
    schema = _object(msg.get("schema"), "schema")
    payload = _object(msg.get("payload"), "payload")
    op = payload.get("op")
    if op is None:  # e.g. another vendor's record among DataHub files
        raise DecodeError("unknown_op", "the payload has no `op`: not a DataHub / DataWorks Blob record")
    if not isinstance(op, str) or op not in (*DML_OPS, *DDL_OPS, *CONTROL_OPS):
        raise DecodeError(
            "unknown_op",
            f"unknown DataWorks op {op!r} (ops are case-sensitive: INSERT, "
            "UPDATE_BEFOR, UPDATE_AFTER, DELETE, DDL ops, TRANSACTION_BEGIN/END, MHEARTBEAT, ...)",
        )
    b = _base(schema, payload, op, where, stream)
    columns = _columns(schema)
    if op in DML_OPS:
        return _dml(b, payload, columns, versions)
    if op in DDL_OPS:
        return _ddl(b, payload, columns, versions)
    content = {k: v for k, v in payload.items() if k not in ("op", "sequenceId")} or None
    return [event_change(b, CONTROL_OPS[op], content=content)]


def _envelope_time(ts: dict, name: str) -> dt.datetime | None:
    """`payload.timestamp.<name>` (epoch ms); the sentinel -1 of full-load records is unknown, never 1969."""
    value = ts.get(name)
    field = f"payload.timestamp.{name}"
    if type(value) is int and value >= 0:  # the usual form: remembered (the halves of an UPDATE, a transaction)
        times = _TIMES.get(field)
        if times is None:
            times = _TIMES[field] = Memo(lambda ms, field=field: millis_to_datetime(ms, field))
        return times[value]
    return None if is_unset(value) else millis_to_datetime(value, field)


_TIMES: dict[str, Memo] = {}
"""Envelope times by epoch milliseconds, one memo per field (its name is in a bad value's error)."""


def _sequence(seq_raw: str | None) -> Any:
    """sequenceId as an integer (digits), None when absent or the full-load sentinel, else the raw text."""
    if seq_raw is None:
        return None
    if seq_raw.isdigit():  # the usual form (never the sentinel): no regex
        return int(seq_raw)
    return None if is_unset(seq_raw) else seq_raw


def _base(schema: dict, payload: dict, op: str, where: Where, stream: StreamOf) -> Base:
    source = _object(schema.get("source"), "schema.source")
    source_db = source_db_of(source.get("dbType"))
    database = _text(source.get("dbName"))
    ts = _object(payload.get("timestamp"), "payload.timestamp")
    seq_raw = _text(payload.get("sequenceId"))
    pks = schema.get("primaryKey")
    if pks is not None and not (isinstance(pks, list) and all(isinstance(k, str) for k in pks)):
        raise DecodeError("bad_message", f"schema.primaryKey {pks!r} is not a list of column names")
    return Base(
        FMT_BLOB,
        stream(where, database),
        source_db,
        database,
        None if source_db in MYSQL_FAMILY else _text(source.get("schemaName")),
        _text(source.get("tableName")),
        _sequence(seq_raw),
        seq_raw,
        op,
        _envelope_time(ts, "eventTime"),
        _envelope_time(ts, "systemTime") or where.capture_ts,
        pks,
        full_load=seq_raw is not None and not seq_raw.isdigit() and is_unset(seq_raw),
    )


def _columns(schema: dict) -> list[tuple[str, str | None]] | None:
    cols = schema.get("dataColumn")
    if cols is None:
        return None
    if not isinstance(cols, list) or not all(
        isinstance(c, dict) and isinstance(c.get("name"), str) for c in cols
    ):
        raise DecodeError("bad_message", "schema.dataColumn must be an array of {name, type} objects")
    return [(c["name"], _text(c.get("type"))) for c in cols]


def _data_column(payload: dict, role: str) -> dict | None:
    """`payload.<role>.dataColumn` when it is a JSON object, else None."""
    side = payload.get(role)
    data = side.get("dataColumn") if isinstance(side, dict) else None
    return data if isinstance(data, dict) else None


def _dml(b: Base, payload: dict, columns: list | None, versions: SchemaVersions) -> list:
    canon, role = DML_OPS[b.vendor_op]
    data = _data_column(payload, role)
    if data is None:
        raise DecodeError(
            "bad_message", f"{b.vendor_op} message without payload.{role}.dataColumn object"
        )
    if b.table is None:
        raise DecodeError("missing_field", f"{b.vendor_op} message without schema.source.tableName")
    convs = column_converters(tuple(columns)) if columns else {}

    def typed(values: dict) -> tuple[dict, list[str] | None]:
        image = typed_image(values, convs)
        return image, ([n for n, _ in columns if n not in image] if columns is not None else None)

    out: list = []
    if columns is not None:
        out.extend(versions.version(b, columns, BLOB_TYPES))
    other = _data_column(payload, "after" if role == "before" else "before") if canon == "UPDATE" else None
    if other:  # one message carrying both images: a complete UPDATE
        (before, missing_before), (after, missing_after) = (
            (typed(data), typed(other)) if role == "before" else (typed(other), typed(data))
        )
        out.extend(whole_update(b, before, after, missing_before, missing_after))
        return out
    image, missing = typed(data)
    out.append(dml_change(b, canon, role, image, missing))
    return out


def _ddl(b: Base, payload: dict, columns: list | None, versions: SchemaVersions) -> list:
    ddl = _object(payload.get("ddl"), "payload.ddl")
    text = ddl.get("text") if isinstance(ddl.get("text"), str) else None
    info = parse_ddl(text, b.source_db)
    out: list = []
    if info.changes:
        base = columns if columns is not None else info.columns
        if base is not None:
            b.pks = b.pks or info.primary_key
            out.extend(versions.version(b, apply_changes(base, info.changes), BLOB_TYPES))
    content = {"ddlMeta": ddl["ddlMeta"]} if ddl.get("ddlMeta") is not None else None
    out.append(
        event_change(b, DDL_OPS[b.vendor_op], ddl=text, ddl_changes=info.changes, content=content)
    )
    return out

