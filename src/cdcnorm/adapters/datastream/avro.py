"""Datastream's Avro files: the writer schema compiled once per file into per-field converters, then each
record turned into the event (or BigQuery export row) the JSON path would have read."""

from __future__ import annotations

import hashlib
from typing import Any

from cdcnorm.adapters.datastream import types as dtypes
from cdcnorm.adapters.datastream.bigquery import FMT_BIGQUERY, meta_key_of
from cdcnorm.adapters.datastream.payload import dumps
from cdcnorm.adapters.datastream.schemas import FileState
from cdcnorm.errors import DecodeError

ROW = "__row__"
"""The converters key of a BigQuery export file: every top-level field but datastream_metadata is a column."""

_TIMESTAMPS = ("read_timestamp", "source_timestamp")


def converters(writer: dict, state: FileState) -> dict | None:
    """Per top-level field: its converter; payload fields also keep their FieldType for schema versions.

    None when the file is neither a Datastream event file nor a BigQuery export.
    """
    fields = {f["name"]: f for f in writer.get("fields", [])}
    types = dtypes.AvroTypes()
    convs: dict[str, Any] = {}
    if "datastream_metadata" in {n.lower() for n in fields}:
        state.fmt = FMT_BIGQUERY
        cols = [(n, types.field(f["type"])) for n, f in fields.items() if n.lower() != "datastream_metadata"]
        state.avro_fields = cols
        convs[ROW] = [(n, ft.conv) for n, ft in cols]
        return convs
    if "payload" not in fields or "source_metadata" not in fields:
        return None
    for name in _TIMESTAMPS:
        if name in fields:
            ft = types.field(fields[name]["type"])
            convs[name] = ft.conv or (lambda v, _fl: v)  # a plain long is epoch millis
    payload_type = fields["payload"]["type"]
    payload_type = next((b for b in payload_type if b != "null"), {}) if isinstance(payload_type, list) else payload_type
    cols = [(f["name"], types.field(f["type"])) for f in payload_type.get("fields", [])]
    state.avro_fields = cols
    state.avro_schema_id = "avro-" + hashlib.sha1(dumps(writer)).hexdigest()[:16]
    convs["payload"] = [(n, ft.conv) for n, ft in cols]
    return convs


def _convert(values: dict, convs: list, flags: list[str]) -> dict:
    get = values.get
    out = {}
    for n, c in convs:  # one lookup per field (a comprehension over the same expression made three)
        v = get(n)
        out[n] = c(v, flags) if c is not None and v is not None else v
    return out


def convert_record(rec: dict, convs: dict, flags: list[str]) -> dict:
    """The record with typed values: a BigQuery row (when `ROW in convs`) or an event; raises what fails."""
    if ROW in convs:
        row = _convert(rec, convs[ROW], flags)
        meta_key = meta_key_of(rec)
        row[meta_key] = rec[meta_key]
        return row
    ev = dict(rec)
    for name in _TIMESTAMPS:
        if name in convs and ev.get(name) is not None and isinstance(ev[name], int):
            value = convs[name](ev[name], flags)
            ev[name] = dtypes.millis_to_ts(value) if isinstance(value, int) else value
    payload = rec.get("payload")
    if isinstance(payload, dict):
        ev["payload"] = _convert(payload, convs["payload"], flags)
    return ev


def bad_value(where: str, rec: dict, exc: Exception) -> DecodeError:
    """The quarantine of a record the type mapping cannot convert; raw holds the record as JSON."""
    return DecodeError("bad_value", f"{where}: a payload value cannot be converted ({type(exc).__name__}: "
                       f"{exc}); raw holds the record as JSON", raw=dumps(rec))
