"""Where a DMS S3 file sits and what it is: `[bucketFolder/]<schema>/<table>/` and its file name.

Full-load files are `LOAD` + 8 uppercase hex digits (fixed width: string order is numeric order); CDC files
are named by time, `yyyymmdd-hhmmssSSS[S].csv|.parquet`. Their total order within a table is (full load
before CDC, then the file name, then the row index): DMS writes no per-row sequence. The identity of a row is
the file's and the row's index in it. A file is identified by the name DMS gave it (`<schema>/<table>/<file>`)
and its size: DMS writes an S3 object whole under a name it never reuses for the table, and never appends to
it. The bucket and the folders above it are left out, so a copied or mirrored bucket (`s3://` read again
through a mount, a local download) keeps every id; two tasks writing one table are told apart by their
`stream`, which every event id includes.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from cdcnorm.errors import DecodeError

_LOAD = re.compile(r"^LOAD[0-9A-F]{8}(?:\.|$)")
_CDC = re.compile(r"^(\d{8})-(\d{6})(\d{3,4})(?:\.|$)")


@dataclass(frozen=True, slots=True)
class S3File:
    """One DMS S3 object: its table, kind (full load or CDC) and the parts its rows' order and ids start with."""

    schema: str | None
    table: str
    name: str
    full_load: bool
    identity: str
    """The object's identity as text: `<schema>/<table>/<file name>#<size>` (where DMS put it, not where it is
    read from)."""
    written: dt.datetime | None = None
    """A CDC file's time from its name (when DMS wrote it, UTC): the rows' `capture_ts`, fixed for the object."""


def split_table(name: str) -> tuple[str | None, str]:
    """`schema.table` -> (schema, table); a bare name has no schema."""
    schema, _, table = name.rpartition(".")
    return (schema or None, table)


def s3_file(path: str, size: int, table_option: str | None) -> S3File:
    """The file's table (the option, else the two parent folders of a DMS-named file) and kind (by its name).

    Raises DecodeError (`missing_table`) when neither names the table."""
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    name = parts[-1] if parts else path
    if table_option:
        schema, table = split_table(table_option)
    elif len(parts) >= 3 and (_LOAD.match(name) or _CDC.match(name)):
        schema, table = parts[-3], parts[-2]
    else:
        raise DecodeError("missing_table", f"{path}: a DMS S3 file is named LOAD######## or by its time and sits in "
                                           "<schema>/<table>/; pass the option `table` (schema.table) for files "
                                           "kept or named otherwise")
    identity = f"{schema or ''}/{table}/{name}#{size}"
    return S3File(schema, table, name, bool(_LOAD.match(name)), identity, file_time(name))


def file_time(name: str) -> dt.datetime | None:
    """The time a CDC file is named by (`20240809-192717787` -> 2024-08-09 19:27:17.787 UTC); None otherwise."""
    m = _CDC.match(name)
    if m is None:
        return None
    try:
        day = dt.datetime.strptime(m[1] + m[2], "%Y%m%d%H%M%S")
    except ValueError:
        return None
    return day.replace(microsecond=int(m[3].ljust(6, "0")[:6]), tzinfo=dt.UTC)


def is_cdc_name(name: str) -> bool:
    """A time-named CDC file (`20240809-192717787.csv`)."""
    return bool(_CDC.match(name))
