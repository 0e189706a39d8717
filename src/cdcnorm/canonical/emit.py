"""Encode decoded records into Arrow batches of the internal "decoded" schema.

The decoded schema is the canonical columns plus bookkeeping columns (prefixed `_`) that carry each input
record's outcome through Spark: a change row, a quarantined record, a metadata-only record, a filtered record,
or a table schema version. `_records` is 1 on exactly one output row per input record, so outcome counts add up
to the records read; `_merged` counts records folded into another row by a later pairing step.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable
from decimal import Decimal
from enum import StrEnum
from typing import Any

import orjson
import pyarrow as pa
from pyspark.sql import types as T

from cdcnorm.canonical import tuple_codec, variant, variant_batch
from cdcnorm.canonical.record import Change, SchemaVersion, key_of
from cdcnorm.canonical.schema import COLUMNS, DERIVED, FLAGS


class Kind(StrEnum):
    """The outcome a decoded row stands for (`Bookkeeping.KIND`)."""

    CHANGE = "change"
    """a canonical change row"""
    QUARANTINE = "quarantine"
    """a record that could not be decoded (`RULE` is its error class, `MESSAGE` says why, `RAW` its bytes)"""
    METADATA = "metadata"
    """a record that carried only metadata (`RULE` names its kind)"""
    FILTERED = "filtered"
    """a record dropped by the named rule (`RULE`)"""
    SCHEMA = "schema"
    """a table schema version (`SCHEMA`); not an outcome of a record"""


KIND_CHANGE, KIND_QUARANTINE, KIND_METADATA, KIND_FILTERED, KIND_SCHEMA = (
    k.value for k in (Kind.CHANGE, Kind.QUARANTINE, Kind.METADATA, Kind.FILTERED, Kind.SCHEMA))
"""The kinds as plain strings, for the hot path (a row tuple holds these)."""


class Bookkeeping(StrEnum):
    """Names of the decoded rows' bookkeeping columns (after the canonical columns, in this order).

    Use these instead of bare strings: `F.col(Bookkeeping.PAIR)`, `row[Bookkeeping.KIND]`.
    """

    KIND = "_kind"
    """the row's outcome, a :class:`Kind`"""
    RECORDS = "_records"
    """1 on exactly one row per input record (so outcome counts add up to the records read), else 0"""
    MERGED = "_merged"
    """records folded into this row by a multi-record step (`Adapter.post_process` keeps RECORDS + MERGED)"""
    RULE = "_rule"
    """quarantine error class, metadata kind or filter rule"""
    MESSAGE = "_message"
    """the quarantine message"""
    RAW = "_raw"
    """the quarantined record's bytes"""
    PAIR = "_pair"
    """the pair id two halves of one change share until `post_process` joins them"""
    PAIR_ROLE = "_pair_role"
    """which half: `before` / `after` (DataHub), `delete` / `insert` (Datastream key changes)"""
    SCHEMA = "_schema"
    """a schema version document (JSON), on `Kind.SCHEMA` rows"""


KIND_LINE = "line"
"""A JSON line on its way to the Spark-expression decode (cdcnorm.ingest.jvm_decode); never leaves the decode."""
LINE = "_line"
"""The column holding such a line's bytes (not a decoded column: the decode consumes it)."""

_BOOKKEEPING_TYPES: dict[Bookkeeping, T.DataType] = {
    Bookkeeping.KIND: T.StringType(),
    Bookkeeping.RECORDS: T.IntegerType(),
    Bookkeeping.MERGED: T.IntegerType(),
    Bookkeeping.RULE: T.StringType(),
    Bookkeeping.MESSAGE: T.StringType(),
    Bookkeeping.RAW: T.BinaryType(),
    Bookkeeping.PAIR: T.StringType(),
    Bookkeeping.PAIR_ROLE: T.StringType(),
    Bookkeeping.SCHEMA: T.StringType(),
}
_EXTRA = tuple(T.StructField(str(name), dtype) for name, dtype in _BOOKKEEPING_TYPES.items())


def decoded_schema() -> T.StructType:
    """Spark schema of what adapters emit from `mapInArrow`: canonical columns (all nullable) + bookkeeping."""
    fields = [T.StructField(c.name, c.type, True) for c in COLUMNS if c.name not in DERIVED]
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

# Rows are buffered as flat tuples ("slots") and transposed once per batch, so a row costs one tuple instead
# of one list append per column. A VARIANT column takes two slots (value, metadata), `origin` five (its four
# fields and whether it is null). `BatchBuilder.change` writes its tuple in this order literally (the hot path);
# the import-time check below keeps the two in step.
_ORIGIN_FIELDS = ("uri", "partition", "offset", "index")


def _slot_names() -> list[str]:
    names: list[str] = []
    for name in _NAMES:
        if name in _VARIANT_COLS:
            names += [name, name + "#metadata"]
        elif name == "origin":
            names += [f"origin#{f}" for f in _ORIGIN_FIELDS] + ["origin#null"]
        else:
            names.append(name)
    return names


_SLOTS = _slot_names()
_SLOT_INDEX = {n: i for i, n in enumerate(_SLOTS)}
_CHANGE_SLOTS = [
    "vendor", "format", "stream", "source_db", "database", "schema", "table", "op", "vendor_op", "flags",
    "primary_keys", "key", "key#metadata", "key_bytes", "before", "before#metadata", "after", "after#metadata",
    "changed_columns", "missing_columns", "ddl", "ddl_changes", "schema_version", "source_ts", "capture_ts",
    "tx_id", "tx_seq", "tx_last", "position", "sort_key", "event_id", "origin#uri", "origin#partition",
    "origin#offset", "origin#index", "origin#null", *(b.value for b in Bookkeeping),
]
if _CHANGE_SLOTS != _SLOTS:  # pragma: no cover - a column was added to schema.COLUMNS: update change()
    raise RuntimeError("emit.BatchBuilder.change is out of step with the decoded schema")
_NO_ORIGIN = (None, None, None, None, True)
_VARIANT_FIELDS = list(variant.VARIANT_ARROW_TYPE)
_ORIGIN_ARROW = ARROW_SCHEMA.field("origin").type

_FLAG_NAMES = frozenset(FLAGS)

_ID_PREFIX: dict[tuple, bytes] = {}
_ID_PREFIX_MAX = 4096


def event_id_of(vendor: str, stream: str, table_ident: tuple, id_parts: tuple) -> str:
    """Deterministic event id: BLAKE2b-128 of the tuple encoding of stable identity fields.

    The encoding of a tuple is the concatenation of its elements' encodings, so the (vendor, stream, table)
    prefix is encoded once per table and cached.
    """
    head = (vendor, stream, *table_ident)
    try:
        prefix = _ID_PREFIX[head]
    except KeyError:
        if len(_ID_PREFIX) >= _ID_PREFIX_MAX:
            _ID_PREFIX.clear()
        prefix = _ID_PREFIX[head] = tuple_codec.encode(head)
    except TypeError:  # an unhashable identity part: not cached
        prefix = tuple_codec.encode(head)
    data = prefix + tuple_codec.encode(tuple(id_parts))
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _decimal_fits(value: Decimal) -> bool:
    try:
        variant.encode(value)
    except (variant.VariantEncodeError, ValueError):  # ValueError: beyond Python's 4300-digit int() limit
        return False
    return True


def _variant_safe(value: Any, flags: list[str]) -> Any:
    """Replace values VARIANT cannot hold exactly by their exact string, flagging why."""
    if isinstance(value, dict):
        return {k: _variant_safe(v, flags) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_variant_safe(v, flags) for v in value]
    if isinstance(value, Decimal):
        if not _decimal_fits(value):  # > 38 digits, or a scale/exponent decimal(38) cannot hold, or not finite
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


def _encode_variant(value: Any, flags: list[str]) -> tuple[bytes, bytes] | tuple[None, None]:
    """(value, metadata) of an image; numbers beyond decimal(38) become exact strings, flagged."""
    if value is None:
        return None, None
    try:
        encoded, metadata, widened = variant.encode_lenient(value)
    except (variant.VariantEncodeError, OverflowError, TypeError, ValueError):
        return variant.encode(_variant_safe(value, flags))
    if widened and "decimal_as_string" not in flags:
        flags.append("decimal_as_string")
    return encoded, metadata


class BatchBuilder:
    """Collects decoded outcomes of input records and turns them into Arrow record batches."""

    def __init__(self) -> None:
        self._rows: list[tuple] = []
        self._origin: tuple = _NO_ORIGIN
        self._raw: bytes | Callable[[], bytes] | None = None
        self._counted = True
        self._open = False
        self._vendor: str | None = None
        self._format: str | None = None

    def __len__(self) -> int:
        return len(self._rows)

    def set_context(self, vendor: str, fmt: str) -> None:
        """Vendor and format used for quarantine/metadata rows that carry no change."""
        self._vendor, self._format = vendor, fmt

    def begin_record(self, uri: str | None, index: int | None, partition: str | None = None,
                     offset: str | None = None, raw: bytes | Callable[[], bytes] | None = None) -> None:
        """Start the outcomes of one input record (its origin; raw bytes are kept for the quarantine).

        `raw` may be a function returning the bytes: called only if the record is quarantined (a container
        whose records must be re-encoded to give their message bytes pays for that only on failure).
        """
        self.end_record()
        self._origin = (uri, partition, offset, index, False)
        self._raw = raw
        self._counted = False
        self._open = True

    def end_record(self) -> None:
        """Close the current record; a record that produced no outcome is quarantined, never lost."""
        if not self._counted and self._open:
            self.quarantine("no_outcome", "the adapter produced no row for this record (a cdcnorm bug: report it)")

    @property
    def record_open(self) -> bool:
        return not self._counted

    def _row(self, kind: str, **values: Any) -> None:
        """A row of any kind from named values (the rare kinds; `change` builds its tuple directly)."""
        values.setdefault("vendor", self._vendor)
        values.setdefault("format", self._format)
        values[Bookkeeping.KIND] = kind
        values[Bookkeeping.RECORDS] = 0 if self._counted else 1
        values[Bookkeeping.MERGED] = 0
        self._counted = True
        for name in _VARIANT_COLS:
            pair = values.pop(name, None)
            if pair is not None:
                values[name], values[name + "#metadata"] = pair
        for name, v in zip(_SLOTS[_SLOT_INDEX["origin#uri"]:], self._origin, strict=False):
            values[name] = v
        self._rows.append(tuple(map(values.get, _SLOTS)))

    def change(self, c: Change) -> None:
        """Emit one canonical change row.

        Raises:
            ValueError: a flag that is not in `canonical.schema.FLAGS` (an adapter bug; the record is quarantined).
        """
        flags = list(c.flags)
        if flags and not _FLAG_NAMES.issuperset(flags):
            unknown = sorted(set(flags) - _FLAG_NAMES)
            raise ValueError(f"flags {unknown} are not in canonical.schema.FLAGS; declare them there first")
        pks = c.primary_keys
        key = c.key
        if key is None and pks:
            key = key_of(c.before if c.op == "DELETE" else (c.after or c.before), pks)
        key_bytes = None
        if key is not None and pks:
            key_bytes = _key_bytes(tuple(map(key.get, pks)))
        event_id = event_id_of(c.vendor, c.stream, (c.database, c.schema, c.table), c.id_parts)
        after = c.after if c.after is not None or c.content is None else c.content
        # key, before and after stay Python values here: flush() encodes each VARIANT column per batch
        # Top-level tuple encodings concatenate, so the event id is appended as one more string element.
        sort_key = tuple_codec.encode(tuple(c.sort_parts)) + b"\x02" + event_id.encode() + b"\x00"
        uri, partition, offset, index, no_origin = self._origin
        records = 0 if self._counted else 1
        self._counted = True
        self._rows.append((
            c.vendor, c.format, c.stream, c.source_db, c.database, c.schema, c.table, c.op, c.vendor_op, flags,
            pks, key, None, key_bytes, c.before, None, after, None, c.changed_columns,
            c.missing_columns, c.ddl, c.ddl_changes, c.schema_version, c.source_ts, c.capture_ts, c.tx_id,
            c.tx_seq, c.tx_last, c.position, sort_key, event_id, uri, partition, offset, index, no_origin,
            KIND_CHANGE, records, 0, None, None, self._raw, c.pair, c.pair_role, None,
        ))  # the record's raw bytes ride along until flush: the quarantine of an image that cannot be encoded

    def quarantine(self, error_class: str, message: str, raw: bytes | None = None) -> None:
        """Quarantine the current record with a stable reason tag and a message a person can act on."""
        if raw is None:
            raw = self._raw() if callable(self._raw) else self._raw
        self._row(KIND_QUARANTINE, _rule=error_class, _message=message, _raw=raw)

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
        """Return the collected rows as one Arrow batch and start empty.

        Change rows hold their key and images as Python values: each VARIANT column is encoded here for the
        whole batch (cdcnorm.canonical.variant_batch). A row whose image cannot be encoded at all becomes
        that record's quarantine row; the file's other records decode on.
        """
        rows, self._rows = self._rows, []
        n = len(rows)
        cols = list(zip(*rows, strict=True)) if rows else [()] * len(_SLOTS)
        encoded = {}
        failed: dict[int, tuple[str, Exception]] = {}
        for name in _VARIANT_COLS:
            enc = encoded[name] = variant_batch.encode_column(cols[_SLOT_INDEX[name]], _lenient_row)
            for r in enc.widened:
                flags = cols[_FLAGS_SLOT][r]
                if "decimal_as_string" not in flags:
                    flags.append("decimal_as_string")
            for r, exc in enc.failed.items():
                failed.setdefault(r, (name, exc))
        if failed:
            self._rows = [_failed_row(row, *failed[r]) if r in failed else row for r, row in enumerate(rows)]
            return self.flush()
        cols[_RAW_SLOT] = [None if kind == KIND_CHANGE else raw for kind, raw in zip(cols[_KIND_SLOT], cols[_RAW_SLOT],
                                                                                      strict=True)]
        arrays = []
        i = 0
        for f in ARROW_SCHEMA:
            if f.name in _VARIANT_COLS:
                enc = encoded[f.name]
                arrays.append(_variant_array(enc.values, enc.metadata, n))
                i += 2
            elif f.name == "origin":
                arrays.append(_origin_array(cols[i:i + 5], n))
                i += 5
            else:
                col = cols[i]
                # `count` compares every value with None: only when the first one is (a column of nulls)
                arrays.append(pa.nulls(n, f.type) if n and col[0] is None and col.count(None) == n
                              else pa.array(col, type=f.type))
                i += 1
        return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)


_FLAGS_SLOT = _SLOT_INDEX["flags"]
_KIND_SLOT = _SLOT_INDEX[Bookkeeping.KIND]
_RAW_SLOT = _SLOT_INDEX[Bookkeeping.RAW]


def _lenient_row(value: Any) -> tuple[bytes, bytes, bool]:
    """One image as `_encode_variant` encodes it, saying whether a number became text (the row's flag)."""
    flags: list[str] = []
    encoded, metadata = _encode_variant(value, flags)
    return encoded, metadata, bool(flags)  # type: ignore[return-value]


def _failed_row(row: tuple, column: str, exc: Exception) -> tuple:
    """The quarantine row of a change whose `column` cannot be encoded as VARIANT (same record, origin, counts)."""
    values = dict(zip(_SLOTS, row, strict=True))
    kept = {name: values[name] for name in ("vendor", "format", Bookkeeping.RECORDS, *_ORIGIN_SLOTS)}
    raw = values[Bookkeeping.RAW]
    kept[Bookkeeping.RAW] = raw() if callable(raw) else raw
    kept.update({Bookkeeping.KIND: KIND_QUARANTINE, Bookkeeping.MERGED: 0, Bookkeeping.RULE: "adapter_error",
                 Bookkeeping.MESSAGE: f"{type(exc).__name__}: {exc} while encoding the {column} of this record as "
                                      "VARIANT; the records around it were decoded"})
    return tuple(map(kept.get, _SLOTS))


_ORIGIN_SLOTS = tuple(f"origin#{f}" for f in _ORIGIN_FIELDS) + ("origin#null",)


def _variant_array(values: list, metadata: list, n: int) -> pa.StructArray:
    """VARIANT column: null rows are null structs over empty (non-null) child bytes, as Spark expects."""
    vals = pa.array(values, pa.binary())
    nulls = vals.null_count
    mask = vals.is_null() if nulls else pa.array([False] * n, pa.bool_())
    metas = pa.array(metadata, pa.binary())
    if nulls:
        vals, metas = vals.fill_null(b""), metas.fill_null(b"")
    return pa.StructArray.from_arrays([vals, metas], fields=_VARIANT_FIELDS, mask=mask)


def _origin_array(cols: list[tuple], n: int) -> pa.StructArray:
    uri, partition, offset, index, no_origin = cols
    children = [pa.array(c, type=f.type) for c, f in zip((uri, partition, offset, index), _ORIGIN_ARROW, strict=True)]
    mask = pa.array(no_origin, pa.bool_()) if True in no_origin else None
    return pa.StructArray.from_arrays(children, fields=list(_ORIGIN_ARROW), mask=mask)
