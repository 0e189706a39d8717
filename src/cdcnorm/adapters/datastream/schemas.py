"""What the adapter remembers per file (or message partition), and the schema versions it records from that:
each (table, version) once per file, typed from the Avro header or inferred from the JSON values."""

from __future__ import annotations

from dataclasses import dataclass, field

from cdcnorm.adapters.datastream import types as dtypes
from cdcnorm.adapters.datastream.spec import SPEC
from cdcnorm.canonical.emit import BatchBuilder
from cdcnorm.canonical.record import Change, SchemaColumn, SchemaVersion

FMT_JSON, FMT_AVRO, FMT_BIGQUERY = SPEC.formats


@dataclass
class FileState:
    """What the adapter remembers while decoding one file (or one message partition)."""

    path: str | None
    fmt: str = FMT_JSON
    seen_schemas: set = field(default_factory=set)
    avro_fields: list[tuple[str, dtypes.FieldType]] | None = None
    avro_schema_id: str | None = None


def record_once(state: FileState, out: BatchBuilder, change: Change, binary: set[str]) -> None:
    """Record the change's (table, schema version) unless this file already did; `binary` columns are binary."""
    ident = (change.stream, change.database, change.schema, change.table, change.schema_version)
    if ident in state.seen_schemas:
        return
    state.seen_schemas.add(ident)
    pk_pos = {k.lower(): i + 1 for i, k in enumerate(change.primary_keys or [])}
    if state.avro_fields is not None:
        columns = [SchemaColumn(n, ft.vendor, "binary" if n in binary else ft.canonical, i + 1,
                                pk_pos.get(n.lower()), ft.nullable) for i, (n, ft) in enumerate(state.avro_fields)]
    else:
        payload = change.before if change.op == "DELETE" else change.after
        columns = [SchemaColumn(n, None, "binary" if n in binary else dtypes.infer_canonical(v), i + 1,
                                pk_pos.get(n.lower()), None) for i, (n, v) in enumerate((payload or {}).items())]
    out.schema(SchemaVersion(vendor=SPEC.name, stream=change.stream, schema_version=change.schema_version,
                             columns=columns, source_db=change.source_db, database=change.database,
                             schema=change.schema, table=change.table, first_seen=change.source_ts))
