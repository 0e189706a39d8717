"""split_json_lines and line_records give exactly what JsonRecords yields over the whole file.

The oracle is JsonRecords itself: for a file split_json_lines cuts, its records - each line the parser refuses
(or every line) replaced by line_records of that line - must be JsonRecords' items over the whole file, with the
same line numbers, offsets, raw bytes, values, error classes and messages; a file it routes away must be one of
the documented cases, and every documented case is routed away. No Spark here.
"""

from __future__ import annotations

import gzip
import io
import json
from decimal import Decimal
from unittest import mock

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, currently_in_test_context, event, given, settings
from hypothesis import strategies as st

from cdcnorm.containers import Damage, JsonRecords, Record, Source, json_lines, loads_exact, loads_wide_ints
from cdcnorm.containers.json_lines import Lines, line_records, split_json_lines

BOM = b"\xef\xbb\xbf"


# -- the oracle ------------------------------------------------------------------------------------------------
def _key(line: int, item: Record | Damage) -> tuple:
    if isinstance(item, Damage):
        return line, item.offset, item.raw, None, item.error_class, item.message
    return line, item.offset, item.raw, repr(item.value), None, None


def _entries(lines: Lines) -> list[tuple[int, int, bytes]]:
    return list(zip(lines.line_numbers.tolist(), lines.offsets.tolist(), lines.values.to_pylist(), strict=True))


def _reference(data: bytes, parse=loads_exact, max_record_bytes=16 << 20, chunk_size=1 << 20):
    reader = JsonRecords(Source(io.BytesIO(data)), parse, max_record_bytes=max_record_bytes, chunk_size=chunk_size)
    return reader, [_key(reader.line_of(item), item) for item in reader]


def _rebuilt(lines: Lines, parse=loads_exact, max_record_bytes=16 << 20, every_line=False) -> list[tuple]:
    """The file's items from the cut: a line that parses is one record; any other goes through line_records."""
    out = []
    for offset, line, raw in zip(lines.offsets.tolist(), lines.line_numbers.tolist(), lines.values.to_pylist(),
                                 strict=True):
        if not every_line:
            try:
                value = parse(raw)
            except ValueError:
                pass
            else:
                out.append((line, offset, raw, repr(value), None, None))
                continue
        out += [_key(n, item) for n, item in line_records(raw, offset, line, parse,
                                                          max_record_bytes=max_record_bytes)]
    return out


def _why_routed_away(data: bytes, reader: JsonRecords, max_record_bytes: int, max_file_bytes: int) -> str | None:
    """The documented case a file is, worked out without the numpy cut; None for a file to cut."""
    src = Source(io.BytesIO(data))
    text = src.read()
    if src.damage is not None:
        return "damaged gzip"
    if len(text) > max_file_bytes:
        return "too large"
    body = text.removeprefix(BOM)
    if not body.strip(b" \t\r\n\f"):
        return "no record"
    if reader.array:
        return "array"
    if not reader.lines_mode:
        return "not lines"
    if any(len(line.lstrip(b" \t\r\f")) > max_record_bytes for line in body.split(b"\n")):
        return "long line"
    return None


def _naive_cut(data: bytes) -> list[tuple[int, int, bytes]]:
    """(line number, offset, raw) of each line holding a byte JsonRecords does not skip, line by line."""
    text = Source(io.BytesIO(data)).read()
    pos = len(BOM) if text.startswith(BOM) else 0
    out = []
    for number, line in enumerate(text[pos:].split(b"\n")):
        text_start = len(line) - len(line.lstrip(b" \t\r\f"))
        if text_start < len(line):
            out.append((number, pos + text_start, line[text_start:].rstrip()))
        pos += len(line) + 1
    return out


def _check(data: bytes, parse=loads_exact, max_record_bytes=16 << 20, max_file_bytes=512 << 20,
           chunk_size=1 << 20) -> Lines | None:
    reader, expected = _reference(data, parse, max_record_bytes, chunk_size)
    lines = split_json_lines(io.BytesIO(data), parse, max_record_bytes, max_file_bytes)
    why = _why_routed_away(data, reader, max_record_bytes, max_file_bytes)
    assert (lines is None) == (why is not None), why
    if currently_in_test_context():
        event(f"routed away: {why}" if why else "cut")
    if lines is not None:
        assert lines.offsets.dtype == np.int64 and lines.line_numbers.dtype == np.int64
        assert lines.values.type == pa.binary() and len(lines.values) == len(lines)
        assert _entries(lines) == _naive_cut(data)
        assert _rebuilt(lines, parse, max_record_bytes) == expected
        assert _rebuilt(lines, parse, max_record_bytes, every_line=True) == expected
    return lines


# -- generated files -------------------------------------------------------------------------------------------
_scalars = (st.none() | st.booleans() | st.integers() | st.integers(min_value=2**63, max_value=2**80)
            | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=6))
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=8)
_number_text = st.from_regex(r"-?(0|[1-9][0-9]{0,25})(\.[0-9]{1,25})?([eE][+-]?[0-9]{1,3})?", fullmatch=True)


@st.composite
def _objects(draw) -> bytes:
    value = draw(st.dictionaries(st.text(max_size=5), _values, max_size=4))
    compact = draw(st.booleans())
    text = json.dumps(value, ensure_ascii=draw(st.booleans()),
                      separators=(",", ":") if compact else (", ", ": ")).encode()
    if draw(st.booleans()):  # a number literal only exact decimals hold
        text = b'{"n":' + draw(_number_text).encode() + (b"," + text[1:] if value else b"}")
    return text


_lead = st.text(alphabet=" \t\r\f", max_size=3).map(str.encode)
_trail = st.text(alphabet=" \t\r\x0b\x0c", max_size=3).map(str.encode)
_garbage = st.sampled_from([b"zz", b"}", b"]", b"{", b"[1]", b"\x0b x", b",", b'"s"', b"\xff", b"\x0b"])
_separator = st.sampled_from([b"", b" ", b"\t", b"\f", b"\x0b"])


@st.composite
def _lines(draw) -> bytes:
    """One line's bytes (no newline): a record, padding, blanks, or the damage JsonRecords handles."""
    kind = draw(st.sampled_from(["object", "object", "object", "padded", "blank", "scalar", "truncated", "utf8",
                                 "two", "garbage_after", "garbage", "deep", "bom", "vtab", "bytes", "pretty"]))
    obj = draw(_objects())
    if kind == "object":
        return obj
    if kind == "padded":
        return draw(_lead) + obj + draw(_trail)
    if kind == "blank":
        return draw(st.text(alphabet=" \t\r\f\x0b", max_size=4)).encode()
    if kind == "scalar":
        return json.dumps(draw(_scalars)).encode()
    if kind == "truncated":
        return obj[:draw(st.integers(1, max(1, len(obj) - 1)))]
    if kind == "utf8":
        return b'{"s":"' + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"a\x80b"])) + b'"}'
    if kind == "two":
        return obj + draw(_separator) + draw(_objects()) + draw(_trail)
    if kind == "garbage_after":
        return draw(_lead) + obj + draw(_separator) + draw(_garbage) + draw(_trail)
    if kind == "garbage":
        return draw(_garbage)
    if kind == "deep":
        depth = draw(st.sampled_from([10, 500, 1100]))
        return b'{"a":' + b"[" * depth + b"]" * depth + b"}"
    if kind == "bom":
        return BOM + obj
    if kind == "vtab":
        return b"\x0b" + draw(st.sampled_from([b"", b" ", obj, b"\r"]))
    if kind == "bytes":
        return draw(st.binary(max_size=12)).replace(b"\n", b"")
    return json.dumps(json.loads(obj), indent=draw(st.sampled_from([1, 2, "\t"]))).encode()


@st.composite
def _json_lines_files(draw, first=None) -> bytes:
    first_line = draw(first if first is not None else _objects() | _lines())
    rest = draw(st.lists(_lines(), max_size=8))
    parts = [BOM] if draw(st.booleans()) else []
    parts.append(draw(st.sampled_from([b"", b"\n", b" \r\n\t", b"\f\n\n"])))
    for line in [first_line, *rest]:
        parts += [line, draw(st.sampled_from([b"\n", b"\r\n", b"\n", b"\n\n", b"\r\n\r\n", b" \n"]))]
    if draw(st.booleans()):
        parts.pop()  # no newline after the last line
    return b"".join(parts)


@st.composite
def _other_files(draw) -> bytes:
    """Shapes that are not JSON lines: an array, pretty-printed or back-to-back objects, nothing."""
    objs = draw(st.lists(_objects(), min_size=1, max_size=4))
    shape = draw(st.sampled_from(["array", "pretty", "back_to_back", "blank"]))
    if shape == "array":
        return b"[" + draw(st.sampled_from([b",", b",\n", b", "])).join(objs) + b"]\n"
    if shape == "pretty":
        return b"\n".join(json.dumps(json.loads(o), indent=2).encode() for o in objs) + b"\n"
    if shape == "back_to_back":
        return draw(st.sampled_from([b"", b" ", b"\t"])).join(objs) + b"\n" + draw(_lines())
    return draw(st.sampled_from([b"", b"\n", BOM, BOM + b" \r\n", b"\f\t"]))


@st.composite
def _files(draw) -> bytes:
    data = draw(_json_lines_files() | _json_lines_files() | _other_files())
    if draw(st.booleans()):
        data = gzip.compress(data, mtime=0)
        if draw(st.booleans()):
            data = data[:draw(st.integers(2, len(data)))]
    return data


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=_files(), max_record_bytes=st.sampled_from([16 << 20, 16 << 20, 40, 120, 400]),
       chunk_size=st.sampled_from([1 << 20, 1 << 20, 5, 64]),
       parse=st.sampled_from([loads_exact, loads_wide_ints]), scan_block=st.sampled_from([4 << 20, 3, 64]))
def test_the_cut_and_its_lines_are_exactly_json_records_over_the_file(data, max_record_bytes, chunk_size, parse,
                                                                      scan_block):
    with mock.patch.object(json_lines, "_SCAN_BLOCK", scan_block):  # newlines found across scan blocks
        _check(data, parse, max_record_bytes, chunk_size=chunk_size)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=_json_lines_files(first=_objects()), gzipped=st.booleans())
def test_json_lines_starting_with_an_object_are_always_cut(data, gzipped):
    assert _check(gzip.compress(data) if gzipped else data) is not None


# -- actual values ---------------------------------------------------------------------------------------------
def test_bom_crlf_blank_lines_and_indentation():
    data = BOM + b'{"a": 1.10}\r\n\r\n \t{"b":2}\f \r\n\n\f[1, 2]\n"x"'
    lines = _check(data)
    assert _entries(lines) == [(0, 3, b'{"a": 1.10}'), (2, data.index(b'{"b"'), b'{"b":2}'),
                               (4, data.index(b"[1, 2]"), b"[1, 2]"), (5, data.index(b'"x"'), b'"x"')]


def test_a_damaged_line_is_the_python_path_damage_with_its_line_and_byte():
    data = b'{"a":1}\n{"a":2}\n  {"a":\n{"a":3}\n'
    lines = _check(data)
    line, offset, raw = _entries(lines)[2]
    assert (line, offset, raw) == (2, 18, b'{"a":')
    ((n, bad),) = line_records(raw, offset, line)
    assert (n, bad.offset, bad.raw, bad.error_class) == (2, 18, b'{"a":', "bad_json")
    assert bad.message.startswith("line 3 (byte 18) is not valid JSON (")


def test_several_objects_and_garbage_on_one_line():
    data = b'{"a":1}\n{"a":2}{"a":3} \n{"a":4} zz\r\n'
    lines = _check(data)
    assert _entries(lines)[1:] == [(1, 8, b'{"a":2}{"a":3}'), (2, 24, b'{"a":4} zz')]
    two = line_records(b'{"a":2}{"a":3}', 8, 1)
    assert [(n, r.offset, r.raw, r.value) for n, r in two] == [(1, 8, b'{"a":2}', {"a": 2}),
                                                              (1, 15, b'{"a":3}', {"a": 3})]
    obj, garbage = line_records(b'{"a":4} zz', 24, 2)
    assert (obj[1].value, garbage[1].offset, garbage[1].raw, garbage[1].error_class) == ({"a": 4}, 32, b"zz",
                                                                                      "bad_json")
    assert garbage[1].message.startswith("line 3 (byte 32) is not valid JSON")


def test_bad_utf8_and_too_deep_keep_their_error_classes():
    deep = b"[" * 1100 + b"]" * 1100
    data = b'{"a":1}\n{"s":"\xff"}\n' + deep + b"\n"
    lines = _check(data)
    _, offset, raw = _entries(lines)[1]
    ((_, utf8),) = line_records(raw, offset, 1)
    assert (utf8.error_class, utf8.message) == ("bad_encoding", "line 2 (byte 8) is not valid UTF-8 (byte 6 of the "
                                                "record: b'\\xff\"}'); the lines after it were decoded - repair or "
                                                "drop it and re-run")
    ((_, too_deep),) = line_records(deep, int(lines.offsets[2]), 2)
    assert too_deep.error_class == "json_too_deep" and too_deep.raw == deep


def test_a_line_of_a_vertical_tab_is_damage_with_empty_raw():
    data = b'{"a":1}\n \x0b \r\n{"a":2}\n'
    lines = _check(data)
    assert _entries(lines) == [(0, 0, b'{"a":1}'), (1, 9, b""), (2, 13, b'{"a":2}')]
    ((n, bad),) = line_records(b"", 9, 1)
    assert (n, bad.offset, bad.raw, bad.error_class) == (1, 9, b"", "bad_json")


def test_gzip_is_cut_like_the_plain_file_and_a_cut_gzip_is_routed_away():
    plain = b"".join(b'{"a":%d}\n' % i for i in range(3000))
    packed = gzip.compress(plain)
    assert _entries(_check(packed)) == _entries(_check(plain))
    assert _check(packed[:-100]) is None
    assert _check(gzip.compress(b'{"a":1}\n') + b"garbage!") is None


@pytest.mark.parametrize("data", [
    b"", b" \r\n\t\n", BOM, b'[{"a":1}, {"a":2}]', b'  [\n{"a":1}\n]', b'{"a":1}{"a":2}\n{"a":3}\n',
    b'{\n  "a": 1\n}\n{\n  "a": 2\n}\n', b'{"a":1} {"a":2}', b"not json\n{}\n",
])
def test_files_that_are_not_json_lines_are_routed_away(data):
    assert _check(data) is None


def test_a_line_longer_than_the_record_limit_routes_the_file_away():
    data = b'{"a":1}\n  {"a":"' + b"x" * 100 + b'"}\r\n'
    longest = len(b'{"a":"' + b"x" * 100 + b'"}\r')
    assert _check(data, max_record_bytes=longest - 1) is None
    assert len(_check(data, max_record_bytes=longest)) == 2


def test_a_file_larger_than_the_cap_routes_away_and_the_cap_stays_under_arrow_offsets():
    data = b'{"a":1}\n' * 10
    assert split_json_lines(io.BytesIO(data), max_file_bytes=len(data) - 1) is None
    assert len(split_json_lines(io.BytesIO(data), max_file_bytes=len(data))) == 10
    with pytest.raises(ValueError, match="2 GiB"):
        split_json_lines(io.BytesIO(data), max_file_bytes=2 << 30)


def test_an_open_source_is_read_from_where_it_stands():
    src = Source(io.BytesIO(gzip.compress(b'{"a": 1.5}\n{"b": 2}\n')))
    assert src.peek(4) == b'{"a"'
    lines = split_json_lines(src)
    assert _entries(lines) == [(0, 0, b'{"a": 1.5}'), (1, 11, b'{"b": 2}')]
    assert loads_exact(lines.values[0].as_py()) == {"a": Decimal("1.5")}
