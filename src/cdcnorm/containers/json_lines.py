"""JSON-lines files cut into records with numpy, for the decode path where Spark parses the records.

Why: when the JVM parses JSON, Python's only work per file is to cut it into records and keep each record's
origin (line number, byte offset, raw bytes). :class:`~cdcnorm.containers.json_records.JsonRecords` does that one
line at a time in Python; :func:`split_json_lines` does it over the whole decompressed file in a few numpy passes
and gives exactly the records JsonRecords yields in lines mode when every line parses. A line the JVM cannot parse
goes to :func:`line_records`, which runs JsonRecords' own lines-mode code over that one line, so a damaged line,
several objects on a line or an object followed by garbage come out as the Python path has them.

:func:`split_json_lines` returns None for a file it does not cut exactly like JsonRecords; the caller then reads
the file again with the Python path: a file that is not JSON lines (a JSON array, objects back to back,
pretty-printed objects: JsonRecords' own first-line test decides), a damaged gzip stream, a line longer than
`max_record_bytes` (where the Python reader's answer depends on its chunk boundaries), a file with no record, and
a file larger than `max_file_bytes` once decompressed.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

import numpy as np
import pyarrow as pa

from cdcnorm.containers import open_source
from cdcnorm.containers.errors import Damage, Record
from cdcnorm.containers.json_records import JsonRecords, _any_object, loads_exact
from cdcnorm.containers.stream import Source

MAX_FILE_BYTES = 512 << 20
"""The largest decompressed file split in memory: the file and its records' bytes are both held (about twice
this), and Arrow's 32-bit binary offsets need the records' bytes under 2 GiB. Larger files take the Python path,
which streams."""

_BOM = b"\xef\xbb\xbf"
_SKIPPED_BEFORE = b" \t\r\n\f"  # what JsonRecords skips before a record
_STRIPPED_AFTER = b" \t\n\r\x0b\x0c"  # what bytes.rstrip() removes from a line's end
_NOT_SKIPPED = re.compile(rb"[^ \t\r\n\f]")
_READ_CHUNK = 16 << 20
_SCAN_BLOCK = 4 << 20
_NEWLINE, _CR = 0x0A, 0x0D


def _byte_table(members: bytes) -> np.ndarray:
    table = np.zeros(256, dtype=bool)
    table[list(members)] = True
    return table


_IS_SKIPPED = _byte_table(_SKIPPED_BEFORE)
_IS_STRIPPED = _byte_table(_STRIPPED_AFTER)


@dataclass
class Lines:
    """The records of a JSON-lines file, one entry each, in file order."""

    offsets: np.ndarray  # int64: byte offset of the record's first byte in the decompressed file (Record.offset)
    line_numbers: np.ndarray  # int64: 0-based line number of the record (JsonRecords.line_of)
    values: pa.BinaryArray  # the record's bytes (Record.raw): the line from its first non-blank byte, rstripped

    def __len__(self) -> int:
        return len(self.offsets)


def split_json_lines(
    src: IO[bytes] | Source,
    parse: Callable[[bytes], Any] = loads_exact,
    max_record_bytes: int = 16 << 20,
    max_file_bytes: int = MAX_FILE_BYTES,
) -> Lines | None:
    """The records JsonRecords(src, parse, max_record_bytes=...) yields in lines mode, assuming every line parses;
    None when the file is not one this cut reproduces exactly (see the module docstring). Reads `src` to its
    end (gzip undone), so after None the caller opens the file again for the Python path."""
    if max_file_bytes >= 1 << 31:
        raise ValueError(f"max_file_bytes={max_file_bytes}: Arrow binary offsets hold under 2 GiB")
    source = open_source(src)
    data = _read_all(source, max_file_bytes)
    if data is None or source.damage is not None:
        return None
    head = len(_BOM) if data.startswith(_BOM) else 0
    first = _NOT_SKIPPED.search(data, head)
    if first is None or data[first.start()] == ord("["):
        return None
    arr = np.frombuffer(data, dtype=np.uint8)
    newlines = _newlines(arr)
    line_starts = np.concatenate(([head], newlines + 1))
    line_ends = np.append(newlines, len(data))
    starts, line_numbers = _record_starts(data, arr, line_starts, line_ends)
    ends = line_ends[line_numbers]
    if bool((ends - starts > max_record_bytes).any()):
        return None
    if not _first_line_is_a_value(data, int(starts[0]), int(ends[0]), parse, max_record_bytes):
        return None
    stops = _stripped_ends(data, arr, starts, ends)
    return Lines(starts, line_numbers, _gather(arr, starts, stops))


def line_records(
    raw: bytes,
    offset: int,
    line_number: int,
    parse: Callable[[bytes], Any] = loads_exact,
    accept: Callable[[Any], bool] = _any_object,
    max_record_bytes: int = 16 << 20,
) -> list[tuple[int, Record | Damage]]:
    """(line number, item) for each item JsonRecords yields for this line of a JSON-lines file: `raw`, `offset`
    and `line_number` are one entry of :class:`Lines`. Offsets and messages are the file's (absolute); a Record's
    or Damage's `index` counts from 0 within the line.

    A line whose only text is characters rstrip removes but the reader does not skip (a vertical tab) has empty
    raw bytes; one vertical tab stands in for them, so the reader yields that line's damage (empty raw)."""
    reader = _InMemoryLines(raw or b"\x0b", offset, line_number, parse, accept, max_record_bytes)
    return list(reader.pieces())


# -- the cut -------------------------------------------------------------------------------------------------
def _read_all(source: Source, max_file_bytes: int) -> bytearray | None:
    """The decompressed file, None beyond the cap. A bytearray grows in place (a join would copy it again)."""
    data = bytearray()
    while chunk := source.read_some(_READ_CHUNK):
        data += chunk
        if len(data) > max_file_bytes:
            return None
    return data


def _newlines(arr: np.ndarray) -> np.ndarray:
    """Positions of the newline bytes, compared block by block into one reused mask (a whole-file mask costs
    its page faults)."""
    mask = np.empty(min(len(arr), _SCAN_BLOCK), dtype=bool)
    found = []
    for at in range(0, len(arr), _SCAN_BLOCK):
        block = arr[at:at + _SCAN_BLOCK]
        np.equal(block, _NEWLINE, out=mask[:len(block)])
        found.append(np.flatnonzero(mask[:len(block)]) + at)
    return np.concatenate(found)


def _record_starts(data: bytearray, arr: np.ndarray, line_starts: np.ndarray,
                   line_ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each record's first byte and its line number: a line's first byte JsonRecords does not skip; lines of
    skipped bytes only hold no record. A loop only over the lines that begin with a skipped byte."""
    line_numbers = np.flatnonzero(line_starts < line_ends)
    starts = line_starts[line_numbers]
    indented = np.flatnonzero(_IS_SKIPPED[arr[starts]])
    if len(indented):
        has_text = np.ones(len(starts), dtype=bool)
        for k in indented.tolist():
            text = _NOT_SKIPPED.search(data, int(starts[k]), int(line_ends[line_numbers[k]]))
            if text is None:
                has_text[k] = False
            else:
                starts[k] = text.start()
        line_numbers, starts = line_numbers[has_text], starts[has_text]
    return starts.astype(np.int64), line_numbers.astype(np.int64)


def _stripped_ends(data: bytearray, arr: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Each record's end after `rstrip()`: the line end, one byte less for a CRLF line; a loop only over lines
    with other trailing blanks. (A record's first byte is never CR, so a CR ending its line has a byte before it.)"""
    stops = ends.copy()
    last = arr[ends - 1]
    trailing = _IS_STRIPPED[last]
    if trailing.any():
        crlf = np.flatnonzero(trailing & (last == _CR))
        crlf = crlf[~_IS_STRIPPED[arr[ends[crlf] - 2]]]
        stops[crlf] -= 1
        trailing[crlf] = False
        for k in np.flatnonzero(trailing).tolist():
            start = int(starts[k])
            stops[k] = start + len(data[start:int(ends[k])].rstrip())
    return stops


def _gather(arr: np.ndarray, starts: np.ndarray, stops: np.ndarray) -> pa.BinaryArray:
    """The records' bytes in one contiguous buffer: the file's bytes seen as one list view per record (offset,
    length), flattened by Arrow in one pass of copies that leaves out what lies between records (newlines, CRs,
    blank lines, indentation)."""
    file_bytes = pa.UInt8Array.from_buffers(pa.uint8(), len(arr), [None, pa.py_buffer(arr)])
    lengths = (stops - starts).astype(np.int32)
    records = pa.ListViewArray.from_arrays(pa.array(starts.astype(np.int32)), pa.array(lengths), file_bytes)
    values = np.asarray(records.flatten())
    offsets = np.zeros(len(starts) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return pa.BinaryArray.from_buffers(pa.binary(), len(starts), [None, pa.py_buffer(offsets),
                                                                  pa.py_buffer(values)])


def _first_line_is_a_value(data: bytearray, start: int, end: int, parse: Callable[[bytes], Any],
                           max_record_bytes: int) -> bool:
    """JsonRecords' own test for lines mode, over the file's first line (all the bytes it reads)."""
    reader = _InMemoryLines(data[:end + 1], 0, 0, parse, _any_object, max_record_bytes)
    return reader._first_line_is_a_value(start)


# -- JsonRecords over bytes in memory -------------------------------------------------------------------------
class _InMemoryLines(JsonRecords):
    """JsonRecords in lines mode over bytes already read, placed at byte `base` and line `lines_before` of their
    file: its own code delimits, parses and words the damage of each piece."""

    def __init__(self, data: bytes | bytearray, base: int, lines_before: int, parse: Callable[[bytes], Any],
                 accept: Callable[[Any], bool], max_record_bytes: int):
        super().__init__(Source(io.BytesIO(b""), decompress=False), parse, accept, max_record_bytes)
        self._buf = bytearray(data)
        self._eof = True
        self._base = base
        self._lines_before = lines_before
        self.lines_mode = True

    def pieces(self) -> Iterator[tuple[int, Record | Damage]]:
        """JsonRecords.__iter__'s lines-mode loop (no BOM, array or first-line test: the bytes are one line)."""
        pos = 0
        while (start := self._skip(pos)) is not None:
            self._line_at(start)
            item, pos = self._next_line_piece(start)
            yield self.line_of(item), item
