"""One streaming reader for files of JSON records: JSON lines, objects back to back, or a JSON array.

Why one reader: every vendor writes some of these shapes (Datastream JSON lines and arrays, DataHub's OSS
connector appending objects with no separator, Replicate JSON lines and pretty-printed objects), and the same
damage must cost the same: only the broken record. The reader never holds more than a chunk plus one record.

- JSON lines (the first line is one whole value): each line is a record; a line that does not parse is one
  `bad_json` error holding that line, and reading goes on at the next line. Several objects on one line are
  split.
- Objects back to back, pretty-printed objects, a JSON array: each object's end is found by counting braces
  outside strings (regex jumps, not a byte loop). A broken object becomes one `bad_json` error, and scanning
  resynchronises on the next '{' whose object parses and is `accept`ed (so a complete inner object of the
  damaged record is not taken for a record).
- A UTF-8 BOM and CRLF line ends are accepted; an object that does not end within `max_record_bytes` is
  `json_too_large`; nesting beyond the parser's depth limit is `json_too_deep` (never a RecursionError).
- A gzip stream cut inside the file: the records before the cut, then one `truncated_gzip` / `corrupt_gzip`
  error holding the incomplete tail.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from decimal import Decimal, InvalidOperation
from typing import Any

import msgspec
import orjson

from cdcnorm.containers.errors import Damage, Record, capped
from cdcnorm.containers.stream import Source

_OUTSIDE = re.compile(rb'[{}"]')
_STREAM_END = re.compile(rb"\}(?=[ \t\r\n]*(?:\{|\Z))")
_NEXT_OBJECT = re.compile(rb"\}(?=[ \t\r\n]*\{)")
_ARRAY_END = re.compile(rb"\}(?=[ \t\r\n]*(?:[{,\]]|\Z))")
_FAST_TRIES = 64
_INSIDE = re.compile(rb'["\\]')
_SPACE = frozenset(b" \t\r\n\f")
_ARRAY_SEPARATORS = frozenset(b" \t\r\n\f,[]")
_OPEN, _CLOSE, _QUOTE, _BACKSLASH = 0x7B, 0x7D, 0x22, 0x5C
_BOM = b"\xef\xbb\xbf"


class JsonTooDeep(ValueError):
    """The record nests deeper than the parser allows."""


# -- parsers (an adapter picks the one its values need) ---------------------------------------------------------
def has_float(o: Any) -> bool:
    """True when orjson produced a float anywhere (the record is then re-parsed with exact decimals)."""
    t = type(o)
    if t is float:
        return True
    if t is dict:
        values: Any = o.values()
    elif t is list:
        values = o
    else:
        return False
    for v in values:  # a loop, not any(generator): scalars cost one type check (this runs on every record)
        tv = type(v)
        if tv is float or ((tv is dict or tv is list) and has_float(v)):
            return True
    return False


def loads_exact(data: bytes | str) -> Any:
    """Parse JSON with exact numbers, in one pass: msgspec hands every non-integer number's text to `Decimal`.

    Why msgspec: orjson cannot give exact decimals, so the previous path parsed with orjson, walked the result
    for floats and re-parsed nearly every line with the standard library (~8 us a Datastream line; msgspec
    ~2 us). Whatever msgspec refuses (NaN/Infinity, lone surrogates, a BOM, nesting near the depth limit,
    integers beyond Python's digit limit) and any line holding a 4,000-digit integer (which the exact parser
    keeps as Decimal) takes :func:`loads_exact_reference`, so the accepted input, the values and the errors
    are exactly those of the reference parser."""
    if len(data) < _LONG_INT or not _long_int_in(data):
        try:
            return _MSGSPEC_EXACT(data)
        except Exception:  # noqa: BLE001 - any refusal: the reference parser decides (and words the error)
            pass
    return loads_exact_reference(data)


def loads_exact_reference(data: bytes | str) -> Any:
    """The reference exact parser: orjson, then - only when it produced a float (a non-integer, or an integer
    beyond 64 bits) - again with `json.loads(parse_float=Decimal)`. :func:`loads_exact` gives the same values
    faster; this one is its fallback and the oracle its tests compare it with."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:  # e.g. NaN/Infinity, which only the standard parser accepts
        if "depth limit" in str(exc):
            raise JsonTooDeep(str(exc)) from None
        return _loads_decimal(data)
    try:
        floats = has_float(obj)
    except RecursionError:  # nesting orjson accepts (up to 1024) but Python's recursion limit does not
        raise JsonTooDeep("nesting beyond the parser's depth limit") from None
    if floats:
        return _loads_decimal(data)
    return obj


_MSGSPEC_EXACT = msgspec.json.Decoder(float_hook=Decimal).decode
_LONG_INT = 4000
_LONG_DIGITS_TEXT = re.compile(rf"\d{{{_LONG_INT}}}")
_LONG_ZEROS = b"0" * _LONG_INT


def _long_int_in(data: bytes | str) -> bool:
    """Whether the text holds a run of 4,000 digits (`_wide_int` keeps such an integer as Decimal).

    Bytes: every digit mapped to '0', then one substring search (a regex retried the run at every digit)."""
    if isinstance(data, str):
        return _LONG_DIGITS_TEXT.search(data) is not None
    return _LONG_ZEROS in bytes(data).translate(_DIGITS_TO_ZERO)


def _wide_int(text: str) -> int | Decimal:
    """An integer literal of any length: Python's int() refuses more than 4300 digits (a DoS guard), Decimal not."""
    return int(text) if len(text) < 4000 else Decimal(text)


def _float_or_decimal(text: str) -> float | Decimal:
    """A JSON number with a fraction or exponent: the float orjson would give when that float's shortest text is
    the same number, else an exact Decimal (`1e400`, 60-digit decimals)."""
    value = float(text)
    if repr(value) == text:  # the float's shortest text is the literal (most numbers): the float is exact
        return value
    exact = Decimal(text)
    return value if exact.is_finite() and value not in (_INF, -_INF) and Decimal(repr(value)) == exact else exact


_INF = float("inf")


_MSGSPEC_WIDE = msgspec.json.Decoder(float_hook=_float_or_decimal).decode
"""The standard-library `_WIDE_JSON` in one C pass: every non-integer number's text goes to the same hook."""
_EXACT_JSON = json.JSONDecoder(parse_float=Decimal, parse_constant=Decimal, parse_int=_wide_int)
_WIDE_JSON = json.JSONDecoder(parse_float=_float_or_decimal, parse_int=_wide_int)


def _loads_decimal(data: bytes | str) -> Any:
    """`json.loads(data, parse_float=Decimal, parse_constant=Decimal)` with one decoder reused: json.loads builds
    a new JSONDecoder per call when given hooks (a measurable share of a line's cost)."""
    try:
        if isinstance(data, bytes | bytearray):
            return _EXACT_JSON.decode(bytes(data).decode(json.detect_encoding(data), "surrogatepass"))
        if isinstance(data, str) and not data.startswith("\ufeff"):
            return _EXACT_JSON.decode(data)
        return json.loads(data, parse_float=Decimal, parse_constant=Decimal)  # its own errors for odd input
    except RecursionError:
        raise JsonTooDeep("nesting beyond the parser's depth limit") from None
    except InvalidOperation:  # an exponent beyond what a Decimal holds (`1e99999999999999999999`): not a number
        raise ValueError("a number whose exponent no decimal can hold") from None


_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")


def loads_wide_ints(raw: bytes) -> Any:
    """Parse one record; integers beyond 64 bits stay exact (orjson would reject them), and so do numbers no float
    holds (`1e400`, a 60-digit decimal: Decimal); other numbers as orjson gives them. Raises ValueError when the
    bytes are not valid UTF-8 JSON (UnicodeDecodeError for bad UTF-8), JsonTooDeep beyond the depth limit."""
    shape = raw.translate(_DIGITS_TO_ZERO)  # a long digit run needs the exact parser
    if b"000000000000000000" not in shape:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            if "depth limit" in str(exc):
                raise JsonTooDeep(str(exc)) from None
            if "number" not in str(exc):  # only a number orjson cannot hold (1e400) needs the exact parser
                raise ValueError(str(exc)) from None
    if len(raw) < _LONG_INT or not _long_int_in(raw):  # the common case (a 20-digit sequence string): one pass
        try:
            return _MSGSPEC_WIDE(raw)
        except Exception:  # noqa: BLE001 - any refusal: the reference parser decides (and words the error)
            pass
    try:
        return _WIDE_JSON.decode(bytes(raw).decode("utf-8"))
    except RecursionError:
        raise JsonTooDeep("nesting beyond the parser's depth limit") from None


def _value_error(raw: bytes, exc: ValueError) -> tuple[str, str]:
    """The error class of a record that does not parse: `bad_encoding` when its bytes are not UTF-8."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as bad:
        return "bad_encoding", f"byte {bad.start} of the record: {raw[bad.start:bad.start + 4]!r}"
    return "bad_json", str(exc)


def _any_object(value: Any) -> bool:
    return isinstance(value, dict)


# -- the reader --------------------------------------------------------------------------------------------------
class JsonRecords:
    """Iterate the records of a JSON file as :class:`Record` (value parsed with `parse`) or :class:`Damage`.

    `accept(value)` tells whether a parsed object looks like a record; it is used only while resynchronising.
    `Record.offset` is the record's byte offset, `line_of(record)` its 0-based line number.
    """

    def __init__(
        self,
        src: Source,
        parse: Callable[[bytes], Any] = loads_exact,
        accept: Callable[[Any], bool] = _any_object,
        max_record_bytes: int = 16 << 20,
        chunk_size: int = 1 << 20,
    ):
        self._src, self._parse, self._accept = src, parse, accept
        self._max, self._chunk = max_record_bytes, chunk_size
        self._buf = bytearray()
        self._base = 0
        self._eof = False
        self._ends = _STREAM_END
        self._separators = _SPACE
        self._index = 0
        self._lines_before = 0  # newlines in the bytes before self._counted
        self._counted = 0
        self._gzip_reported = False
        self.lines_mode = False
        self.array = False

    # -- buffer ------------------------------------------------------------------------------------------------
    def _more(self) -> bool:
        if self._eof:
            return False
        chunk = self._src.read_some(self._chunk)
        if not chunk:
            self._eof = True
            return False
        self._buf += chunk
        return True

    def _drop_consumed(self, pos: int) -> int:
        if pos > self._chunk:  # drop consumed bytes so memory stays bounded
            self._line_at(pos)
            del self._buf[:pos]
            self._base += pos
            self._counted -= pos
            return 0
        return pos

    def _line_at(self, pos: int) -> int:
        """0-based line number of buffer position `pos` (positions only move forward)."""
        self._lines_before += self._buf.count(b"\n", self._counted, pos)
        self._counted = pos
        return self._lines_before

    def _record(self, pos: int, end: int, value: Any, raw: bytes | None = None) -> Record:
        rec = Record(self._index, self._base + pos, bytes(self._buf[pos:end]) if raw is None else raw, value)
        self._index += 1
        return rec

    def _damage(self, pos: int, raw: bytes, error_class: str, message: str) -> Damage:
        kept, note = capped(raw)
        d = Damage(self._index, self._base + pos, kept, error_class, message + note)
        self._index += 1
        return d

    # -- iteration ---------------------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Record | Damage]:
        while len(self._buf) < 3 and self._more():
            pass
        pos = 3 if self._buf.startswith(_BOM) else 0
        self._counted = pos
        start = self._skip(pos)
        if start is not None:
            if self._buf[start] == ord("["):
                self.array, self._ends, self._separators = True, _ARRAY_END, _ARRAY_SEPARATORS
            else:
                self.lines_mode = self._first_line_is_a_value(start)
        pos = start if start is not None else len(self._buf)
        while True:
            pos = self._drop_consumed(pos)
            nxt = self._skip(pos)
            if nxt is None:
                break
            self._line_at(nxt)
            item, pos = self._next_line_piece(nxt) if self.lines_mode else self._next_piece(nxt)
            yield item
        if self._src.damage is not None and not self._gzip_reported:
            yield self._gzip_damage(len(self._buf), b"")

    def line_of(self, item: Record | Damage) -> int:
        """0-based line number of the record just yielded (lines are counted up to each record's start)."""
        return self._lines_before

    def _skip(self, pos: int) -> int | None:
        buf, seps = self._buf, self._separators
        while True:
            while pos < len(buf) and buf[pos] in seps:
                pos += 1
            if pos < len(buf):
                return pos
            if not self._more():
                return None

    def _first_line_is_a_value(self, start: int) -> bool:
        end = self._line_end(start)
        if end is None:
            return False
        if self._first_of_several(start, end):
            return False
        try:
            self._parse(bytes(self._buf[start:end]).rstrip())
        except ValueError:
            return False
        return True

    def _first_of_several(self, start: int, end: int) -> bool:
        """Whether the line at `start` begins with a whole value followed by another object (objects back to
        back, often a whole file on one line): then the line is not one value, and it need not be parsed whole.

        Why: that parse (and its failure) went over the whole line, i.e. the whole file, several times per file.
        A value that parses is followed only by whitespace in valid JSON text, so an object after it means the
        line does not parse; when the first candidate end does not give a value, the whole line is parsed."""
        m = _NEXT_OBJECT.search(self._buf, start, end)
        if m is None:
            return False
        try:
            self._parse(bytes(self._buf[start:m.end()]))
        except Exception:  # noqa: BLE001 - not a value there: the whole line decides, as before
            return False
        return True

    def _line_end(self, pos: int) -> int | None:
        """Index of the newline ending the line at `pos`; None when the line is longer than the size limit."""
        scan = pos
        while True:
            i = self._buf.find(b"\n", scan)
            if i >= 0:
                return i
            scan = len(self._buf)
            if scan - pos > self._max:
                return None
            if not self._more():
                return len(self._buf)

    def _gzip_damage(self, pos: int, raw: bytes) -> Damage:
        self._gzip_reported = True
        error_class, why = self._src.damage  # type: ignore[misc]
        held = "the incomplete tail"
        if not raw.strip():  # the damage is at a record boundary: keep the compressed bytes that did not inflate
            raw, total = self._src.damaged_bytes
            held = f"the compressed bytes from the damaged gzip member on ({total} bytes)"
        return self._damage(pos, raw, error_class, f"{why}; the records before byte {self._base + pos} were "
                            f"decoded, raw holds {held} - re-copy the file and re-run")

    # -- JSON lines --------------------------------------------------------------------------------------------
    def _next_line_piece(self, pos: int) -> tuple[Record | Damage, int]:
        """The rest of the line at `pos` as one record, else the object at `pos` if it ends on this line, else
        the rest of the line as damage."""
        end = self._line_end(pos)
        if end is None:
            return self._too_large(pos)
        if end >= len(self._buf) and self._src.damage is not None:  # the cut line of a broken gzip stream
            return self._gzip_damage(pos, bytes(self._buf[pos:end])), end
        raw = bytes(self._buf[pos:end]).rstrip()
        error_class, reason = "bad_json", ""
        try:
            return self._record(pos, end, self._parse(raw), raw), end + 1
        except JsonTooDeep as exc:
            error_class, reason = "json_too_deep", str(exc)
        except ValueError as exc:
            error_class, reason = _value_error(raw, exc)
            if self._buf[pos] == _OPEN:
                obj_end, _ = self._match(pos)
                if obj_end is not None and obj_end <= end:
                    try:
                        value = self._parse(bytes(self._buf[pos:obj_end]))
                    except ValueError:
                        pass
                    else:
                        return self._record(pos, obj_end, value), obj_end
        line = self._line_at(pos) + 1
        what = "is not valid UTF-8" if error_class == "bad_encoding" else "is not valid JSON"
        return self._damage(pos, raw, error_class, f"line {line} (byte {self._base + pos}) {what} "
                            f"({reason}); the lines after it were decoded - repair or drop it and re-run"), end + 1

    def _too_large(self, pos: int) -> tuple[Damage, int]:
        end = min(len(self._buf), pos + self._max)
        return self._damage(pos, bytes(self._buf[pos:end]), "json_too_large",
                            f"a record at byte {self._base + pos} does not end within max_object_bytes="
                            f"{self._max} (raise that option if it is a real record)"), end

    # -- objects back to back, arrays --------------------------------------------------------------------------
    def _next_piece(self, pos: int) -> tuple[Record | Damage, int]:
        buf = self._buf
        if buf[pos] != _OPEN:
            end = self._find_open(pos + 1, pos)
            return self._damage(pos, bytes(buf[pos:end]), "bad_json",
                                f"text outside any JSON object at byte {self._base + pos}"), end
        fast = self._fast(pos)
        if fast is not None:
            return fast
        end, reason = self._match(pos)
        error_class = "json_too_large" if end is None and "max_object_bytes" in reason else "bad_json"
        if end is None and self._eof and self._src.damage is not None:
            return self._gzip_damage(pos, bytes(buf[pos:])), len(buf)
        if end is not None:
            raw = bytes(buf[pos:end])
            try:
                return self._record(pos, end, self._parse(raw), raw), end
            except JsonTooDeep as exc:
                error_class, reason = "json_too_deep", str(exc)
            except ValueError as exc:
                error_class, why = _value_error(raw, exc)
                reason = f"{'invalid UTF-8' if error_class == 'bad_encoding' else 'invalid JSON'} ({why})"
        nxt = self._resync(pos)
        if nxt < len(buf):
            reason = f"{reason}; scanning resumed at the next object (byte {self._base + nxt})"
        return self._damage(pos, bytes(buf[pos:nxt]), error_class,
                            f"broken JSON object at byte {self._base + pos}: {reason}. The records after it "
                            "were decoded; repair or drop these bytes and re-run"), nxt

    def _fast(self, start: int) -> tuple[Record, int] | None:
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
                value = self._parse(raw)
            except ValueError:
                continue
            return self._record(start, i, value, raw), i
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
                return None, (f"the object is larger than max_object_bytes={self._max} (raise that option if "
                              "it is a real record)")
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
                    ok = self._accept(self._parse(bytes(self._buf[t:end])))
                except ValueError:
                    ok = False
                if ok:
                    return t
            t += 1
