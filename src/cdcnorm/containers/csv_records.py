"""CSV files (DataHub TUPLE exports): records as lists of cells, streamed, RFC 4180 quoting.

Why a reader of its own: quoted fields may span lines, so records are not lines; `csv.reader` over a text
stream does the splitting and this module adds offsets, a bounded error for a record that cannot be split,
and gzip damage at the end. A UTF-8 BOM is dropped; undecodable bytes survive as surrogates so the caller can
tell `bad_encoding` per record instead of losing the file.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any

from cdcnorm.containers.errors import Damage, Record
from cdcnorm.containers.stream import Source


class _Raw(io.RawIOBase):
    """A Source as a raw binary stream (what io.TextIOWrapper reads from)."""

    def __init__(self, src: Source):
        self._src = src

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        data = self._src.read_some(len(b))
        b[: len(data)] = data
        return len(data)


def csv_records(src: Source, delimiter: str = ",") -> Iterator[Record | Damage]:
    """Non-blank records as `Record(value=cells, offset='line N')` (N: the line the record ends on)."""
    text = io.TextIOWrapper(io.BufferedReader(_Raw(src), 1 << 16), encoding="utf-8-sig",
                            errors="surrogateescape", newline="")
    reader = csv.reader(text, delimiter=delimiter)
    index = 0
    pending: Record | None = None  # held back one record: a cut gzip stream makes the last one incomplete
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            if pending is not None:
                yield pending
                pending = None
            yield Damage(index, f"line {reader.line_num}", b"", "bad_csv", f"unreadable CSV record: {exc}")
            index += 1
            continue
        if not cells:  # a blank line is not a record
            continue
        if pending is not None:
            yield pending
        pending = Record(index, f"line {reader.line_num}", None, cells)
        index += 1
    if src.damage is None:
        if pending is not None:
            yield pending
        return
    error_class, why = src.damage
    tail = ",".join(pending.value).encode("utf-8", "surrogateescape") if pending is not None else b""
    at = pending.offset if pending is not None else f"line {reader.line_num}"
    yield Damage(pending.index if pending is not None else index, at, tail, error_class,
                 f"{why}; the records before {at} were decoded, raw holds the incomplete last record - re-copy "
                 "the file and re-run")
