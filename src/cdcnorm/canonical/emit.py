"""Encode decoded records into Arrow batches of the internal "decoded" schema.

The decoded schema is the canonical columns plus bookkeeping columns (prefixed `_`) that carry each input
record's outcome through Spark: a change row, a quarantined record, a metadata-only record, a filtered record,
or a table schema version. `_records` is 1 on exactly one output row per input record, so outcome counts add up
to the records read; `_merged` counts records folded into another row by a later pairing step.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from decimal import Decimal
from typing import Any

import orjson
import pyarrow as pa
from pyspark.sql import types as T

from cdcnorm.canonical import tuple_codec, variant
from cdcnorm.canonical.record import Change, SchemaVersion, key_of
from cdcnorm.canonical.schema import COLUMNS

KIND_CHANGE = "change"
KIND_QUARANTINE = "quarantine"
KIND_METADATA = "metadata"
KIND_FILTERED = "filtered"
KIND_SCHEMA = "schema"

_EXTRA = (
    T.StructField("_kind", T.StringType()),
    T.StructField("_records", T.IntegerType()),
    T.StructField("_merged", T.IntegerType()),
    T.StructField("_rule", T.StringType()),
    T.StructField("_message", T.StringType()),
    T.StructField("_raw", T.BinaryType()),
    T.StructField("_pair", T.StringType()),
    T.StructField("_pair_role", T.StringType()),
    T.StructField("_schema", T.StringType()),
)


def decoded_schema() -> T.StructType:
    """Spark schema of what adapters emit from `mapInArrow`: canonical columns (all nullable) + bookkeeping."""
    fields = [T.StructField(c.name, c.type, True) for c in COLUMNS]
    return T.StructType(fields + list(_EXTRA))


_UTC = dt.UTC
_TS = pa.timestamp("us", tz="UTC")
_STRS = pa.list_(pa.string())


def _arrow_type(dtype: T.DataType) -> pa.DataType:
    if isinstance(dtype, T.StringType):
        return pa.string()
    if isinstance(dtype, T.BinaryType):
        return pa.binary()
    if isinstance(dtype, T.LongType):
        return pa.int64()
    if isinstance(dtype, T.IntegerType):
        return pa.int32()
    if isinstance(dtype, T.BooleanType):
        return pa.bool_()
    if isinstance(dtype, T.TimestampType):
        return _TS
    if isinstance(dtype, T.ArrayType):
        return pa.list_(_arrow_type(dtype.elementType))
    if isinstance(dtype, T.StructType):
        return pa.struct([pa.field(f.name, _arrow_type(f.dataType)) for f in dtype.fields])
    raise TypeError(f"no Arrow mapping for {dtype}")


def _arrow_schema() -> pa.Schema:
    fields = []
    for f in decoded_schema().fields:
        if isinstance(f.dataType, T.VariantType):
            fields.append(variant.arrow_field(f.name))
        else:
            fields.append(pa.field(f.name, _arrow_type(f.dataType)))
    return pa.schema(fields)


ARROW_SCHEMA = _arrow_schema()
_NAMES = [f.name for f in ARROW_SCHEMA]
_VARIANT_COLS = ("key", "before", "after")


def event_id_of(vendor: str, stream: str, table_ident: tuple, id_parts: tuple) -> str:
    """Deterministic event id: BLAKE2b-128 of the tuple encoding of stable identity fields."""
    data = tuple_codec.encode((vendor, stream, *table_ident, *id_parts))
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _variant_safe(value: Any, flags: list[str]) -> Any:
    """Replace values VARIANT cannot hold exactly by their exact string, flagging why."""
    if isinstance(value, dict):
        return {k: _variant_safe(v, flags) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_variant_safe(v, flags) for v in value]
    if isinstance(value, Decimal):
        if not value.is_finite() or len(value.as_tuple().digits) > 38 or value.as_tuple().exponent < -38:
            if "decimal_as_string" not in flags:
                flags.append("decimal_as_string")
            return format(value, "f") if value.is_finite() else str(value)
        return value
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**38:
        if "decimal_as_string" not in flags:
            flags.append("decimal_as_string")
        return str(value)
    if isinstance(value, dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return str(value)
    return value


def _key_bytes(values: tuple) -> bytes:
    """Key encoding; values the tuple codec cannot order (objects) are keyed by their canonical JSON."""
    try:
        return tuple_codec.encode(values)
    except TypeError:
        safe = tuple(
            orjson.dumps(v, default=str, option=orjson.OPT_SORT_KEYS).decode() if isinstance(v, dict) else v
            for v in values
        )
        return tuple_codec.encode(safe)


def _encode_variant(value: Any, flags: list[str]) -> tuple[bytes, bytes] | None:
    if value is None:
        return None
    try:
        return variant.encode(value)
    except (variant.VariantEncodeError, OverflowError, TypeError, ValueError):
        return variant.encode(_variant_safe(value, flags))


class BatchBuilder:
    """Collects decoded outcomes of input records and turns them into Arrow record batches."""

    def __init__(self) -> None:
        self._cols: dict[str, list] = {n: [] for n in _NAMES}
        self._origin: dict[str, Any] | None = None
        self._raw: bytes | None = None
        self._counted = True
        self._vendor: str | None = None
        self._format: str | None = None

    def __len__(self) -> int:
        return len(self._cols["_kind"])

    def set_context(self, vendor: str, fmt: str) -> None:
        """Vendor and format used for quarantine/metadata rows that carry no change."""
        self._vendor, self._format = vendor, fmt

    def begin_record(self, uri: str | None, index: int | None, partition: str | None = None,
                     offset: str | None = None, raw: bytes | None = None) -> None:
        """Start the outcomes of one input record (its origin; raw bytes are kept for the quarantine)."""
        self.end_record()
        self._origin = {"uri": uri, "partition": partition, "offset": offset, "index": index}
        self._raw = raw
        self._counted = False

    def end_record(self) -> None:
        """Close the current record; a record that produced no outcome is quarantined, never lost."""
        if not self._counted and self._origin is not None:
            self.quarantine("no_outcome", "the adapter produced no row for this record (a cdcnorm bug: report it)")

    @property
    def record_open(self) -> bool:
        return not self._counted

    def _row(self, kind: str, **values: Any) -> None:
        cols = self._cols
        values.setdefault("vendor", self._vendor)
        values.setdefault("format", self._format)
        values["_kind"] = kind
        values["_records"] = 0 if self._counted else 1
        values["_merged"] = 0
        values["origin"] = self._origin
        self._counted = True
        for name in _NAMES:
            cols[name].append(values.get(name))

    def change(self, c: Change) -> None:
        """Emit one canonical change row."""
        flags = list(c.flags)
        pks = c.primary_keys
        key = c.key
        if key is None and pks:
            key = key_of(c.before if c.op == "DELETE" else (c.after or c.before), pks)
        key_bytes = None
        if key is not None and pks:
            key_bytes = _key_bytes(tuple(key.get(k) for k in pks))
        event_id = event_id_of(c.vendor, c.stream, (c.database, c.schema, c.table), c.id_parts)
        after = c.after if c.after is not None or c.content is None else c.content
        self._row(
            KIND_CHANGE,
            vendor=c.vendor, format=c.format, stream=c.stream, source_db=c.source_db, database=c.database,
            schema=c.schema, table=c.table, op=c.op, vendor_op=c.vendor_op, primary_keys=pks,
            key=_encode_variant(key, flags), key_bytes=key_bytes,
            before=_encode_variant(c.before, flags), after=_encode_variant(after, flags),
            changed_columns=c.changed_columns, missing_columns=c.missing_columns, ddl=c.ddl,
            ddl_changes=c.ddl_changes, schema_version=c.schema_version, source_ts=c.source_ts,
            capture_ts=c.capture_ts, tx_id=c.tx_id, tx_seq=c.tx_seq, tx_last=c.tx_last, position=c.position,
            sort_key=tuple_codec.encode((*c.sort_parts, event_id)), event_id=event_id,
            _pair=c.pair, _pair_role=c.pair_role, flags=flags,
        )

    def quarantine(self, error_class: str, message: str, raw: bytes | None = None) -> None:
        """Quarantine the current record with a stable reason tag and a message a person can act on."""
        self._row(KIND_QUARANTINE, _rule=error_class, _message=message,
                  _raw=raw if raw is not None else self._raw)

    def metadata(self, rule: str = "metadata") -> None:
        """The current record carried only metadata (e.g. a schema message)."""
        self._row(KIND_METADATA, _rule=rule)

    def filtered(self, rule: str) -> None:
        """The current record was filtered out by the named rule (counted in the run report)."""
        self._row(KIND_FILTERED, _rule=rule)

    def schema(self, sv: SchemaVersion) -> None:
        """Record a table schema version; not an outcome of the current record."""
        counted, self._counted = self._counted, True
        doc = {
            "vendor": sv.vendor, "stream": sv.stream, "source_db": sv.source_db, "database": sv.database,
            "schema": sv.schema, "table": sv.table, "schema_version": sv.schema_version,
            "first_seen": sv.first_seen.astimezone(_UTC).isoformat() if sv.first_seen else None,
            "definition": sv.definition,
            "columns": [
                {"name": c.name, "vendor_type": c.vendor_type, "canonical_type": c.canonical_type,
                 "ordinal": c.ordinal, "pk_position": c.pk_position, "nullable": c.nullable}
                for c in sv.columns
            ],
        }
        self._row(KIND_SCHEMA, vendor=sv.vendor, stream=sv.stream, _schema=orjson.dumps(doc).decode())
        self._counted = counted

    def flush(self) -> pa.RecordBatch:
        """Return the collected rows as one Arrow batch and start empty."""
        cols = self._cols
        arrays = []
        for f in ARROW_SCHEMA:
            values = cols[f.name]
            if f.name in _VARIANT_COLS:
                arrays.append(_variant_array(values))
            else:
                arrays.append(pa.array(values, type=f.type))
        self._cols = {n: [] for n in _NAMES}
        return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)


def _variant_array(pairs: list[tuple[bytes, bytes] | None]) -> pa.StructArray:
    vals = [p[0] if p is not None else None for p in pairs]
    metas = [p[1] if p is not None else None for p in pairs]
    mask = pa.array([p is None for p in pairs], type=pa.bool_())
    field = variant.arrow_field("v")
    return pa.StructArray.from_arrays(
        [pa.array([v or b"" for v in vals], pa.binary()), pa.array([m or b"" for m in metas], pa.binary())],
        fields=list(field.type), mask=mask,
    )
