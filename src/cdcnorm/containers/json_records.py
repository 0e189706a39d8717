"""Streaming splitter for files of JSON objects: JSON lines, a JSON array, or objects back to back.

Why: DataHub's OSS connector appends BLOB payloads to a file with no separator, and such files can be large,
so they are never read whole. The splitter reads chunks, finds each object's end by counting braces outside
strings (regex jumps, not a byte loop), and parses one object at a time. A broken object (truncated, invalid
JSON, bad UTF-8) becomes one error piece and scanning resynchronises on the next object that parses and
looks like a record, so a damaged object in the middle costs only itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

import orjson

_OUTSIDE = re.compile(rb'[{}"]')
_STREAM_END = re.compile(rb"\}(?=[ \t\r\n]*(?:\{|\Z))")
_ARRAY_END = re.compile(rb"\}(?=[ \t\r\n]*(?:[{,\]]|\Z))")
_FAST_TRIES = 64
_INSIDE = re.compile(rb'["\\]')
_SEPARATORS = frozenset(b" \t\r\n\f,[]")
_OPEN, _CLOSE, _QUOTE, _BACKSLASH = 0x7B, 0x7D, 0x22, 0x5C


@dataclass(slots=True)
class Piece:
    """One object of the file (`value`) or one damaged region (`error`), with its byte offset."""

    offset: int
    raw: bytes
    value: Any = None
    error: str | None = None


_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")


def parse_json(raw: bytes) -> Any:
    """Parse one object; integers beyond 64 bits stay exact (orjson would turn them into floats).

    Raises ValueError when the bytes are not valid UTF-8 JSON.
    """
    shape = raw.translate(_DIGITS_TO_ZERO)  # a digit run beyond int64/uint64 needs the exact parser
    if b"00000000000000000000" in shape or b"-0000000000000000000" in shape:
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise ValueError(str(exc)) from None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ValueError(str(exc)) from None


class JsonObjects:
    """Iterate the top-level JSON objects of a binary file without reading it whole.

    `accept(value)` tells whether a parsed object looks like a record; it is used only while
    resynchronising, so that a complete inner object of a damaged record is not taken for a record.
    `max_object_bytes` bounds memory: an object that does not end within it is reported as damaged.
    """

    def __init__(
        self,
        fh: IO[bytes],
        accept: Callable[[Any], bool],
        max_object_bytes: int = 16 << 20,
        chunk_size: int = 1 << 20,
    ):
        self._fh, self._accept = fh, accept
        self._max, self._chunk = max_object_bytes, chunk_size
        self._buf = bytearray()
        self._base = 0
        self._eof = False
        self._ends = _STREAM_END

    def _more(self) -> bool:
        if self._eof:
            return False
        chunk = self._fh.read(self._chunk)
        if not chunk:
            self._eof = True
            return False
        self._buf += chunk
        return True

    def __iter__(self) -> Iterator[Piece]:
        while len(self._buf) < 3 and self._more():
            pass
        pos = 3 if self._buf.startswith(b"\xef\xbb\xbf") else 0
        # inside a JSON array a record may end before ',' or ']' too; elsewhere only before '{' or the end
        self._ends = _ARRAY_END if self._buf[pos:].lstrip().startswith(b"[") else _STREAM_END
        while True:
            if pos > self._chunk:  # drop consumed bytes so memory stays bounded
                del self._buf[:pos]
                self._base, pos = self._base + pos, 0
            pos = self._skip_separators(pos)
            if pos is None:
                return
            piece, pos = self._next_piece(pos)
            yield piece

    def _skip_separators(self, pos: int) -> int | None:
        buf = self._buf
        while True:
            while pos < len(buf) and buf[pos] in _SEPARATORS:
                pos += 1
            if pos < len(buf):
                return pos
            self._base += len(buf)
            buf.clear()
            pos = 0
            if not self._more():
                return None

    def _next_piece(self, pos: int) -> tuple[Piece, int]:
        buf = self._buf
        if buf[pos] != _OPEN:
            end = self._find_open(pos + 1, pos)
            return Piece(self._base + pos, bytes(buf[pos:end]), error="text outside any JSON object"), end
        fast = self._fast(pos)
        if fast is not None:
            return fast
        end, reason = self._match(pos)
        if end is not None:
            raw = bytes(buf[pos:end])
            try:
                value = parse_json(raw)
            except ValueError as exc:
                reason = f"invalid JSON ({exc})"
            else:
                return Piece(self._base + pos, raw, value), end
        nxt = self._resync(pos)
        if nxt < len(buf):
            reason = (
                f"broken JSON object: {reason}; scanning resumed at the next object (byte {self._base + nxt})"
            )
        return Piece(self._base + pos, bytes(buf[pos:nxt]), error=reason), nxt

    def _fast(self, start: int) -> tuple[Piece, int] | None:
        """Common case at C speed: try the '}' positions that could end a record (followed by the next '{' or
        the buffer end); the first prefix that parses is the object, since valid JSON text ends only once."""
        buf, i = self._buf, start
        for _ in range(_FAST_TRIES):
            m = self._ends.search(buf, i)
            if m is None:
                return None
            i = m.end()
            raw = bytes(buf[start:i])
            try:
                value = parse_json(raw)
            except ValueError:
                continue
            return Piece(self._base + start, raw, value), i
        return None

    def _find_open(self, pos: int, origin: int) -> int:
        """Index of the next '{' at or after pos; the buffer end at EOF or beyond the size limit."""
        while True:
            i = self._buf.find(b"{", pos)
            if i >= 0:
                return i
            pos = len(self._buf)
            if pos - origin > self._max or not self._more():
                return pos

    def _match(self, start: int) -> tuple[int | None, str]:
        """End (exclusive) of the object opening at `start`, or None and why it has none."""
        buf = self._buf
        i, depth, in_str = start, 0, False
        while True:
            if i < len(buf):
                if in_str:
                    m = _INSIDE.search(buf, i)
                    if m is None:
                        i = len(buf)
                    elif buf[m.start()] == _BACKSLASH:
                        i = m.start() + 2
                    else:
                        in_str, i = False, m.end()
                    continue
                m = _OUTSIDE.search(buf, i)
                if m is None:
                    i = len(buf)
                    continue
                c, i = buf[m.start()], m.end()
                if c == _QUOTE:
                    in_str = True
                elif c == _OPEN:
                    depth += 1
                else:
                    depth -= 1
                    if depth == 0:
                        return i, ""
                continue
            if i - start > self._max:
                return (
                    None,
                    f"the object is larger than max_object_bytes={self._max} (raise that option if it is a "
                    "real record)",
                )
            if not self._more():
                return None, "the object is not closed before the end of the file (truncated)"

    def _resync(self, start: int) -> int:
        """Start of the next object after a damaged one: a '{' whose object parses and is accepted."""
        t = start + 1
        while True:
            t = self._find_open(t, start)
            if t >= len(self._buf) or t - start > self._max:
                return min(t, len(self._buf))
            end, _ = self._match(t)
            if end is not None:
                try:
                    ok = self._accept(parse_json(bytes(self._buf[t:end])))
                except ValueError:
                    ok = False
                if ok:
                    return t
            t += 1
