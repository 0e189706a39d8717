"""What the adapter remembers per file (or message partition), and the schema versions it records from that:
each (table, version) once per file, typed from the Avro header, or - for JSON events and BigQuery rows, which
carry no types - with a per-column summary of every value the file held (cdcnorm.canonical.inferred)."""

from __future__ import annotations

from dataclasses import dataclass, field

from cdcnorm.adapters.datastream import types as dtypes
from cdcnorm.adapters.datastream.spec import SPEC
from cdcnorm.canonical.emit import BatchBuilder
from cdcnorm.canonical.inferred import TypeObserver
from cdcnorm.canonical.record import Change, SchemaColumn, SchemaVersion

FMT_JSON, FMT_AVRO, FMT_BIGQUERY = SPEC.formats

NAIVE_TEXT = "timestamp"
"""A JSON date-time text without a zone is UTC: Datastream writes UTC (the envelope's `source_timestamp` is
read the same way, cdcnorm.adapters.datastream.types.parse_ts), and the Avro files of the same sources carry
MySQL DATETIME, Oracle DATE and PostgreSQL timestamp columns as UTC `timestamp-micros` (reference §6)."""


@dataclass
class FileState:
    """What the adapter remembers while decoding one file (or one message partition)."""

    path: str | None
    fmt: str = FMT_JSON
    seen_schemas: set = field(default_factory=set)
    avro_fields: list[tuple[str, dtypes.FieldType]] | None = None
    avro_schema_id: str | None = None
    observed: TypeObserver = field(default_factory=lambda: TypeObserver(NAIVE_TEXT))
    pending: dict = field(default_factory=dict)
    """untyped versions seen in this file: ident -> (first change, binary columns), emitted by `flush_inferred`"""


def record_once(state: FileState, out: BatchBuilder, change: Change, binary: set[str]) -> None:
    """Record the change's (table, schema version) unless this file already did; `binary` columns are binary.

    Avro versions are recorded at once. Untyped ones (JSON) observe every change's values and are recorded
    by :func:`flush_inferred` when the file (or message partition) ends, with what all its changes held.
    """
    ident = (change.stream, change.database, change.schema, change.table, change.schema_version)
    if state.avro_fields is None:
        if ident not in state.pending:
            state.pending[ident] = (change, binary)
        state.observed.observe(ident, change.before, change.after)
        return
    if ident in state.seen_schemas:
        return
    state.seen_schemas.add(ident)
    pk_pos = {k.lower(): i + 1 for i, k in enumerate(change.primary_keys or [])}
    columns = [SchemaColumn(n, ft.vendor, "binary" if n in binary else ft.canonical, i + 1,
                            pk_pos.get(n.lower()), ft.nullable) for i, (n, ft) in enumerate(state.avro_fields)]
    _schema(out, change, columns)


def flush_inferred(state: FileState, out: BatchBuilder) -> None:
    """Record every untyped version seen since the last flush, each column with the summary of its values.

    `canonical_type` is left to the fold (cdcnorm.canonical.inferred.fold_versions) that merges the files'
    summaries; `binary_columns` are declared `binary` (a user's declaration wins over inference).
    """
    for ident, (change, binary) in state.pending.items():
        pk_pos = {k.lower(): i + 1 for i, k in enumerate(change.primary_keys or [])}
        summaries = state.observed.summaries(ident)
        columns = [SchemaColumn(n, "hex" if n in binary else s.vendor_type(), "binary" if n in binary else None,
                                i + 1, pk_pos.get(n.lower()), None) for i, (n, s) in enumerate(summaries.items())]
        _schema(out, change, columns)
    state.pending.clear()
    state.observed.tables.clear()


def _schema(out: BatchBuilder, change: Change, columns: list[SchemaColumn]) -> None:
    out.schema(SchemaVersion(vendor=SPEC.name, stream=change.stream, schema_version=change.schema_version,
                             columns=columns, source_db=change.source_db, database=change.database,
                             schema=change.schema, table=change.table, first_seen=change.source_ts))
