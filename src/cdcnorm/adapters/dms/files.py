"""The rows of a DMS S3 file: CSV (with or without a header, `CsvNullValue`, `CsvDelimiter`) or Parquet.

Each yields `(record, values, header)`: the container record, the row's values in file order (CSV cells with
NULL applied, or a Parquet row's typed values) and the names the file gives (a header, a Parquet schema) or
None. A CSV header row is not a record.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import IO, Any

from cdcnorm import containers
from cdcnorm.adapters.dms.options import DmsOptions

Row = tuple[containers.Record | containers.Damage, list[Any] | None, list[str] | None]


def object_size(fh: IO[bytes]) -> int:
    """The stored object's size in bytes (the second half of its ledger identity)."""
    size = getattr(fh, "size", None)
    if isinstance(size, int):
        return size
    try:
        return os.fstat(fh.fileno()).st_size
    except (AttributeError, OSError, ValueError):
        pass
    at = fh.tell()
    end = fh.seek(0, os.SEEK_END)
    fh.seek(at)
    return end


def null_reader(o: DmsOptions):
    """The function that turns a CSV cell into its value: NULL per `CsvNullValue`, else per `empty_field`."""
    if o.csv_null_value is not None:
        marker = o.csv_null_value
        return lambda cells: [None if c == marker else c for c in cells]
    if o.empty_field == "null":
        return lambda cells: [c or None for c in cells]
    return lambda cells: cells


def csv_rows(src: containers.Source, o: DmsOptions, full_load: bool) -> Iterator[Row]:
    """CSV rows; the header is the first row when `csv_header`, or (unset) when a CDC file's first cell is `Op`
    (never an operation code)."""
    header: list[str] | None = None
    nulls = null_reader(o)
    first = True
    for item in containers.csv_records(src, o.csv_delimiter):
        if isinstance(item, containers.Damage):
            yield item, None, header
            continue
        if first:
            first = False
            if o.csv_header or (o.csv_header is None and not full_load and item.value[:1] == ["Op"]):
                header = list(item.value)
                continue
        yield item, nulls(item.value), header


def parquet_rows(src: containers.Source) -> Iterator[tuple[Row, Any]]:
    rows = containers.ParquetRows(src)
    for item in rows:
        if isinstance(item, containers.Damage):
            yield (item, None, None), rows.schema_arrow
        else:
            yield (item, list(item.value.values()), list(item.value)), rows.schema_arrow
