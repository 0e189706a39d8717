"""The canonical change record (v1): defined once here, documented from this definition.

Every adapter produces rows of :func:`canonical_schema`; `docs/canonical.md` is checked against
:data:`COLUMNS` by the test suite so the two cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import types as T

from cdcnorm.containers.errors import CONTAINER_ERRORS

CANONICAL_VERSION = "2"
"""2 added `supersedes` (a paired UPDATE that replaces an orphan half emitted earlier)."""

OPS: tuple[str, ...] = (
    "INSERT",
    "UPDATE",
    "DELETE",
    "SNAPSHOT",
    "TRUNCATE",
    "DDL",
    "HEARTBEAT",
    "TX_BEGIN",
    "TX_COMMIT",
    "CONTROL",
)
"""The canonical operation vocabulary."""

DATA_OPS: frozenset[str] = frozenset({"INSERT", "UPDATE", "DELETE", "SNAPSHOT"})

FLAGS: dict[str, str] = {
    "key_change": "one half of a primary-key-changing update (DELETE of the old key or INSERT of the new key)",
    "orphan_before": "an update whose after image never arrived: `after` is null",
    "orphan_after": "an update whose before image never arrived: `before` is null",
    "before_unknown": "an update whose vendor sent no before image (GoldenGate's empty `before` object, "
                      "row-modeled output): `before` is null, not an empty row; a key change cannot be seen",
    "orphan_half": "a Datastream UPDATE-DELETE (old key of a primary-key change) emitted without its UPDATE-INSERT: "
                   "the partner did not arrive within the pairing wait, or an earlier run emitted it (as an UPDATE); "
                   "it is a whole DELETE on its own",
    "mask_bits_beyond_columns": "a change/column mask had bits set beyond the table's last column (ignored)",
    "decimal_as_string": "a decimal with more than 38 digits is kept as its exact decimal string",
    "timestamp_as_string": "a timestamp whose precision or UTC offset would be lost is kept as its original string",
    "column_mask_conflict": "a column mask marks a column as not captured although the row has a value for it (kept)",
    "no_schema": "decoded without the table's metadata (field order and names from the data only)",
    "delete_by_is_deleted": "no change type in the event; the delete was decided by the vendor's is_deleted flag",
    "unverified_source": "the source flavour's format is documented as unverified against real output",
    "untyped_values": "decoded without the vendor's schema: values as the JSON gives them or as the user declared "
                      "their columns (best effort: a Base64 decimal reads as text, epoch units are assumed)",
    "changed_columns_partial": "an update whose vendor names the changed columns' old values but can miss changes "
                               "(Canal's `old`, and Maxwell's with `output_nulls` off, leave out a NULL -> value "
                               "change): `changed_columns` lists the columns named, the before image's other columns "
                               "are copied from the after image",
    "unknown_position": "the event carries no usable log position (placeholders such as an empty binlog file): "
                        "its event id is made of its key, images and source time",
    "file_order": "the vendor writes no per-row position: the row's order is its file's name and its index in the "
                  "file, its event id the file's identity and that index (AWS DMS S3 files)",
    "op_from_settings": "the record has no operation column: its op follows from the declared task settings (AWS DMS "
                        "CdcInsertsOnly: INSERT; CdcInsertsAndUpdates: UPDATE, applied as an upsert)",
}
"""Named conditions a row can carry in `flags`."""

RECORD_ERRORS: dict[str, str] = {
    # not this vendor's output
    "unsupported_format": "the vendor's container, but a variant of it the adapter does not read",
    "not_datastream_avro": "an Avro file whose schema is not Datastream's",
    "gcs_notification": "a Cloud Storage notification, not a change record",
    "empty_message": "a message without a value",
    # vendor envelope and metadata
    "bad_event": "an event that lacks or mistypes a required envelope field",
    "bad_envelope": "a message envelope that cannot be decoded",
    "bad_magic": "an envelope whose magic is not the vendor's",
    "bad_message": "a message whose body does not match its declared shape",
    "bad_metadata": "a metadata message that cannot describe its table",
    "bad_schema": "a schema (metadata, registry or topic schema) that cannot be parsed",
    "missing_field": "a required field is absent",
    "missing_schema": "no schema is known for the record's topic or table",
    "missing_table": "nothing names the record's table",
    "schema_not_found": "the schema the record references is unknown (re-process once it is known)",
    "unknown_type": "an envelope type that is neither metadata nor data",
    # values and operations
    "unknown_op": "an operation code outside the vendor's documented set",
    "bad_value": "a column value that does not match its declared type",
    "bad_base64": "a BYTES value that is not Base64",
    "bad_hex": "a hex-encoded value that is not hex",
    "bad_image_flags": "TUPLE before/after image flags other than Y/N",
    "bad_change_sequence": "a change sequence that is not the vendor's number format",
    "missing_change_sequence": "a CDC change without the change sequence its order needs",
    "decode_failed": "the record could not be decoded for a reason the message states",
    # cdcnorm itself
    "adapter_error": "an unexpected error in the adapter (a cdcnorm bug: report it with the message)",
    "no_outcome": "the adapter produced no row for a record (a cdcnorm bug: report it)",
}
"""Record-level reasons: a record the container delimited, but whose vendor content cannot be decoded."""

ERROR_CLASSES: dict[str, str] = {**CONTAINER_ERRORS, **RECORD_ERRORS}
"""Every quarantine `error_class`: container damage (shared by all vendors, `cdcnorm.containers`) and record-level
reasons; the contract suite checks every quarantined record against this table, docs/canonical.md lists both."""

DDL_CHANGE = T.StructType(
    [
        T.StructField("action", T.StringType()),
        T.StructField("column", T.StringType()),
        T.StructField("new_name", T.StringType()),
        T.StructField("type", T.StringType()),
    ]
)

ORIGIN = T.StructType(
    [
        T.StructField("uri", T.StringType()),
        T.StructField("partition", T.StringType()),
        T.StructField("offset", T.StringType()),
        T.StructField("index", T.LongType()),
    ]
)


@dataclass(frozen=True)
class Column:
    """One canonical column: name, Spark type, nullability and meaning."""

    name: str
    type: T.DataType
    nullable: bool
    meaning: str


_S = T.StringType()
_ARR = T.ArrayType(T.StringType())

COLUMNS: tuple[Column, ...] = (
    Column("vendor", _S, False, "the adapter's name in the registry (see the vendors table)"),
    Column("format", _S, False, "vendor format, e.g. `datastream.json`, `replicate.avro`, `datahub.blob`"),
    Column("stream", _S, False, "the vendor-side pipeline that delivered the change (overridable)"),
    Column("source_db", _S, True, "source database engine, lower case: `mysql`, `oracle`, `postgresql`, ..."),
    Column("database", _S, True, "database name; for sources without a schema level (MySQL) `schema` is null"),
    Column("schema", _S, True, "schema name"),
    Column("table", _S, True, "source table / object / collection, spelled as the source spells it"),
    Column("op", _S, False, "canonical operation: " + ", ".join(f"`{o}`" for o in OPS)),
    Column("vendor_op", _S, True, "the vendor's operation, verbatim"),
    Column("flags", _ARR, True, "named conditions (see the flags table)"),
    Column("primary_keys", _ARR, True, "primary-key columns, from the event, else from the table's schema version"),
    Column("key", T.VariantType(), True, "object: primary-key column -> value"),
    Column("key_bytes", T.BinaryType(), True, "order-preserving encoding of the key values in `primary_keys` order"),
    Column("before", T.VariantType(), True, "DELETE: the deleted row; UPDATE: the old image when given; else null"),
    Column("after", T.VariantType(), True, "INSERT, SNAPSHOT, UPDATE: the new image; else null"),
    Column("changed_columns", _ARR, True, "known changed columns; null when unknown"),
    Column("missing_columns", _ARR, True, "columns whose value was not captured; empty when all present; null when unknown"),
    Column("ddl", _S, True, "DDL text"),
    Column("ddl_changes", T.ArrayType(DDL_CHANGE), True, "structured DDL where it can be derived"),
    Column("schema_version", _S, True, "vendor schema identifier (Datastream schema_key, Replicate schemaId, ...)"),
    Column("source_ts", T.TimestampType(), True, "when the change happened at the source"),
    Column("capture_ts", T.TimestampType(), True, "when the CDC tool read or emitted it"),
    Column("tx_id", _S, True, "transaction id"),
    Column("tx_seq", T.LongType(), True, "position in the transaction"),
    Column("tx_last", T.BooleanType(), True, "last change of its transaction"),
    Column("position", _S, True, "vendor-native position, readable (binlog file:pos, scn/rs_id/ssn, LSN, ...)"),
    Column("sort_key", T.BinaryType(), False, "order-preserving tuple: ascending = source change order per table"),
    Column("event_id", _S, False, "deterministic id from stable fields only: a redelivered change keeps its id"),
    Column("supersedes", _S, True, "event id of an orphan half this row replaces (its partner arrived after the "
                                   "orphan was emitted); `apply` ignores superseded rows; else null"),
    Column("origin", ORIGIN, True, "where the raw record came from: uri, partition, offset, index"),
)

COLUMN_NAMES: tuple[str, ...] = tuple(c.name for c in COLUMNS)

DERIVED: tuple[str, ...] = ("supersedes",)
"""Canonical columns set by the pipeline after decoding (pairing across runs), never by an adapter."""


def canonical_schema() -> T.StructType:
    """The Spark schema of a canonical change row, in canonical column order."""
    return T.StructType([T.StructField(c.name, c.type, c.nullable) for c in COLUMNS])


QUARANTINE_COLUMNS: tuple[Column, ...] = (
    Column("vendor", _S, True, "adapter that rejected the record"),
    Column("format", _S, True, "format the adapter was decoding"),
    Column("origin", ORIGIN, True, "where the raw record came from"),
    Column("raw", T.BinaryType(), True, "the raw bytes of the record (or of the damaged part of a file)"),
    Column("error_class", _S, False, "stable reason tag, e.g. `bad_json`, `truncated_avro`, `unknown_op`"),
    Column("message", _S, False, "what is wrong and what to do about it"),
    Column("quarantined_at", T.TimestampType(), False, "when the run quarantined it"),
    Column("quarantine_id", _S, False, "deterministic id of the quarantined record (from its origin and bytes)"),
)


def quarantine_schema() -> T.StructType:
    """Schema of `LAKE/quarantine/` rows."""
    return T.StructType([T.StructField(c.name, c.type, c.nullable) for c in QUARANTINE_COLUMNS])


SCHEMA_COLUMN = T.StructType(
    [
        T.StructField("name", T.StringType()),
        T.StructField("vendor_type", T.StringType()),
        T.StructField("canonical_type", T.StringType()),
        T.StructField("ordinal", T.IntegerType()),
        T.StructField("pk_position", T.IntegerType()),
        T.StructField("nullable", T.BooleanType()),
    ]
)

SCHEMA_VERSION_COLUMNS: tuple[Column, ...] = (
    Column("vendor", _S, False, "vendor"),
    Column("stream", _S, False, "stream"),
    Column("source_db", _S, True, "source engine"),
    Column("database", _S, True, "database"),
    Column("schema", _S, True, "schema"),
    Column("table", _S, True, "table"),
    Column("schema_version", _S, False, "vendor schema identifier"),
    Column("columns", T.ArrayType(SCHEMA_COLUMN), False, "columns with vendor and canonical types"),
    Column("first_seen", T.TimestampType(), True, "source time of the first change seen with this version"),
    Column("definition", _S, True, "the vendor's own schema document as JSON text (e.g. Replicate metadata)"),
    Column("version_id", _S, False, "deterministic id of this (vendor, stream, table, schema_version)"),
)


def schema_versions_schema() -> T.StructType:
    """Schema of `LAKE/schemas/` rows."""
    return T.StructType([T.StructField(c.name, c.type, c.nullable) for c in SCHEMA_VERSION_COLUMNS])
