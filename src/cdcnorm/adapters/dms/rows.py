"""One row of a DMS S3 file as a canonical change.

A file's layout is fixed for all its rows: an optional `Op` column (I / U / D), an optional timestamp column
(`TimestampColumnName`), then the data columns, some of which may be before-image columns (`BI_` prefix).
Which of the optional columns a headerless CSV has follows from the declared task settings; a header or a
Parquet schema names them.

What a row cannot say: a full-load row has no operation (SNAPSHOT); with `CdcInsertsOnly` /
`CdcInsertsAndUpdates` and no `IncludeOpForFullLoad` a CDC row has none either (INSERT, or UPDATE as an
upsert, flagged `op_from_settings`); there is never a before image of an update unless `BI_` columns are
configured; a row's order and identity are its file's and its index (`file_order`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdcnorm.adapters.dms.options import DmsOptions
from cdcnorm.adapters.dms.paths import S3File
from cdcnorm.adapters.dms.values import TEXT, Decoder, decoder, timestamp_text
from cdcnorm.canonical.record import Change, SchemaColumn, SchemaVersion, image_hash, split_key_change
from cdcnorm.errors import DecodeError

OP_COLUMN = "Op"
OPS = {"I": "INSERT", "U": "UPDATE", "D": "DELETE"}
FILE_ORDER = "file_order"
OP_FROM_SETTINGS = "op_from_settings"
NO_SCHEMA = "no_schema"
INTEGERS = frozenset({"tinyint", "smallint", "int", "bigint"})


def lookup(by_table: dict[str, Any], schema: str | None, table: str) -> Any:
    """A per-table option by `schema.table`, else by `table`."""
    if schema is not None and f"{schema}.{table}" in by_table:
        return by_table[f"{schema}.{table}"]
    return by_table.get(table)


def cdc_has_op(o: DmsOptions) -> bool:
    """CDC rows carry `Op` unless only inserts (or inserts and updates) are written without
    `IncludeOpForFullLoad`."""
    return o.include_op_for_full_load or not (o.cdc_inserts_only or o.cdc_inserts_and_updates)


@dataclass
class Layout:
    """The columns of one file's rows and how each is read."""

    has_op: bool
    timestamp: bool
    names: list[str]
    decoders: list[Decoder | None]
    invented: bool = False
    """The names are positions (`col_1`, ...): no header, schema or table definition named them."""
    before: dict[str, str] = field(default_factory=dict)
    """before-image column -> the data column it is the old value of."""
    types: dict[str, str] = field(default_factory=dict)
    """data column -> its canonical type (declared, or the Parquet schema's), for the schema version."""


def layout(o: DmsOptions, f: S3File, header: list[str] | None, width: int,
           types: dict[str, str] | None = None) -> Layout:
    """The layout of a file from its header or schema names (`header`), else from the declared settings and
    table definition; `width` is the field count of its first row; `types` are types a schema gave."""
    declared: dict[str, str] = lookup(o.tables, f.schema, f.table) or {}
    if header is not None:
        has_op = bool(header) and header[0] == OP_COLUMN
        rest = header[1:] if has_op else header
        ts = bool(o.timestamp_column) and o.timestamp_column in rest[:1]
        names, invented = list(rest[1:] if ts else rest), False
    else:
        has_op = o.include_op_for_full_load if f.full_load else cdc_has_op(o)
        ts = bool(o.timestamp_column)
        n = width - has_op - ts
        if declared and len(declared) == n:
            names, invented = list(declared), False
        elif declared:
            raise DecodeError("bad_message", f"{f.name}: a row of {width} fields, but {f.schema}.{f.table} is declared "
                                             f"with {len(declared)} columns (plus {int(has_op)} Op and {int(ts)} "
                                             "timestamp columns by the declared settings): declare the table's "
                                             "columns as this file has them")
        else:
            names, invented = [f"col_{i + 1}" for i in range(max(n, 0))], True
    stated = types or {}
    typed = {**declared, **{n: t for n, t in stated.items() if t in INTEGERS}}  # what values are read as
    decs = [decoder(typed.get(n), not o.no_hex_prefix) if n in typed else None for n in names]
    prefix = o.before_image_prefix
    data = set(names)
    before = {n: n[len(prefix):] for n in names if prefix and n.startswith(prefix) and n[len(prefix):] in data}
    for i, n in enumerate(names):  # a BI_ column reads as its data column does
        if n in before and decs[i] is None and before[n] in typed:
            decs[i] = decoder(typed[before[n]], not o.no_hex_prefix)
    described = {**stated, **declared}
    return Layout(has_op, ts, names, decs, invented, before,
                  {n: described.get(n, "string") for n in names if n not in before})


class RowDecoder:
    """Rows of one file -> changes (one per row, two for a key change)."""

    def __init__(self, o: DmsOptions, f: S3File, lay: Layout, fmt: str, vendor: str, stream: str):
        self.o, self.f, self.lay, self.fmt, self.vendor, self.stream = o, f, lay, fmt, vendor, stream
        self.keys = lookup(o.keys, f.schema, f.table)
        mysql = (o.source_db or "").lower() in ("mysql", "mariadb", "aurora-mysql")
        self.database, self.schema = (f.schema, None) if mysql else (None, f.schema)
        self.start = 1 + lay.timestamp if lay.has_op else int(lay.timestamp)
        self.flags = [FILE_ORDER] + ([NO_SCHEMA] if lay.invented else [])

    def version(self, when: Any) -> SchemaVersion | None:
        """The table's schema version as this file lays it out (None for positional names): its columns, the
        declared or Parquet types and the declared key; `first_seen` = the file's first row time."""
        if self.lay.invented:
            return None
        keys = self.keys or []
        cols = [SchemaColumn(name=n, vendor_type=None, canonical_type=t, ordinal=i + 1,
                             pk_position=keys.index(n) + 1 if n in keys else None)
                for i, (n, t) in enumerate(self.lay.types.items())]
        version = f"dms-{image_hash({**self.lay.types, '': ','.join(keys)}).hex()[:16]}"
        return SchemaVersion(vendor=self.vendor, stream=self.stream, schema_version=version, columns=cols,
                             source_db=self.o.source_db, database=self.database, schema=self.schema,
                             table=self.f.table, first_seen=when)

    def changes(self, values: list[Any], index: int) -> list[Change]:
        """The change(s) of one row: `values` in file order (text cells, or a Parquet row's values)."""
        lay, f = self.lay, self.f
        width = self.start + len(lay.names)
        if len(values) != width:
            raise DecodeError("bad_message", f"{f.name}: row {index} has {len(values)} fields, the file's rows "
                                             f"have {width}")
        code = values[0] if lay.has_op else None
        flags = list(self.flags)
        if f.full_load:
            op = "SNAPSHOT"
        elif code is not None:
            op = OPS.get(code)
            if op is None:
                raise DecodeError("unknown_op", f"Op {str(code)[:20]!r} is not I, U or D")
        else:
            op = "INSERT" if self.o.cdc_inserts_only else "UPDATE"
            flags.append(OP_FROM_SETTINGS)
        stamp = values[1 if lay.has_op else 0] if lay.timestamp else None
        when = timestamp_text(stamp, True) if stamp not in (None, "") else None
        image: dict[str, Any] = {}
        old: dict[str, Any] = {}
        for name, dec, v in zip(lay.names, lay.decoders, values[self.start:], strict=True):
            if v is not None and dec is not None:
                v = None if v == "" and dec is not TEXT else dec(v)
            if name in lay.before:
                old[lay.before[name]] = v
            else:
                image[name] = v
        keys = self.keys or ()
        moved = op == "UPDATE" and bool(keys) and all(k in old for k in keys) and \
            any(old[k] != image.get(k) for k in keys)
        before = image if op == "DELETE" else None
        if op == "UPDATE" and not moved and set(old) - set(keys):
            before = old  # a before image beyond the key columns
        after = None if op == "DELETE" else image
        change = Change(
            vendor=self.vendor, format=self.fmt, stream=self.stream, op=op, vendor_op=code, flags=flags,
            source_db=self.o.source_db, database=self.database, schema=self.schema, table=f.table,
            primary_keys=self.keys, before=before, after=after,
            source_ts=None if f.full_load else when, capture_ts=when if f.full_load else f.written,
            position=f"{f.name}:{index}", sort_parts=(0 if f.full_load else 1, f.name, index),
            id_parts=(f.identity, index),
        )
        if moved:  # the old key's row: only what the before-image columns hold
            change.before = old
            return split_key_change(change)
        return [change]
