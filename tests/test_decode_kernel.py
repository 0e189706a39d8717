"""The decode kernel's fast paths give exactly what the reference paths give (values, types and errors).

Why: the executor-side decode takes fast paths (one msgspec parse, per-table plans, caches); canonical
output must not depend on them. The golden digests and the corpus tests pin whole outputs; these tests pin
each fast path against the slower code it stands in for, on the inputs where the two could drift apart.
"""

from __future__ import annotations

import datetime as dt
import gc
import json
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdcnorm.adapters.datahub import tuple_topic
from cdcnorm.adapters.datastream import source_metadata as smd
from cdcnorm.adapters.datastream import types as dtypes
from cdcnorm.adapters.replicate.envelope import MAGIC, decoded_envelope, envelope_bytes, parse_envelope
from cdcnorm.canonical.inferred import ColumnSummary, TypeObserver
from cdcnorm.containers.json_records import (
    _WIDE_JSON,
    JsonTooDeep,
    loads_exact,
    loads_exact_reference,
    loads_wide_ints,
)
from cdcnorm.ingest.sources import GC_YOUNG, fewer_collections


def _outcome(fn, data):
    """(kind, value with exact types) or the exception class: what a caller can observe."""
    try:
        value = fn(data)
    except (ValueError, RecursionError) as exc:
        return ("error", type(exc).__name__)
    return ("ok", repr(value))


TRICKY = [
    b'{"a":1.50,"b":-0.0,"c":1E5,"d":1e400,"e":1e-400,"f":0.1e1}',
    b'{"n":123456789012345678901234567890,"m":-9223372036854775809,"u":18446744073709551616}',
    b'{"a":1,"b":2,"a":3.0}',  # duplicate keys: last value, first position
    b'[NaN, Infinity, -Infinity]',  # only the standard parser accepts these
    b'{"s":"\\ud800"}',  # a lone escaped surrogate
    b'{"s":"\xed\xa0\x80"}',  # a surrogate as raw UTF-8 bytes
    b'\xef\xbb\xbf{"a":1.5}',  # a BOM
    b'{"s":"\xff"}',  # not UTF-8
    b'{"a":1.5} trailing',
    b'{"a":"x\ty"}',  # a raw control character
    b"[" * 1100 + b"]" * 1100,  # beyond every depth limit
    b"[" * 1010 + b"1.5" + b"]" * 1010,  # between msgspec's and orjson's depth limits
    b"[" + b"9" * 4100 + b"]",  # beyond Python's int() digit limit
    b"[" + b"9" * 4050 + b", 1.5]",  # a 4,000-digit integer: Decimal in the reference parser
    b'{"s":"' + b"1" * 4000 + b'", "x": 2.5}',  # a long digit run inside a string
    b"", b"   ", b"01", b"1.", b"+1", b".5", b"[1,]", b"null", b'"\\u0000"', b"tru",
]


@pytest.mark.parametrize("data", TRICKY, ids=range(len(TRICKY)))
def test_loads_exact_matches_the_reference_parser(data):
    assert _outcome(loads_exact, data) == _outcome(loads_exact_reference, data)


def test_loads_exact_keeps_decimals_exact_and_ints_int():
    value = loads_exact(b'{"a":1.50,"b":7,"c":[0.1,2e3],"d":12345678901234567890123}')
    assert value == {"a": Decimal("1.50"), "b": 7, "c": [Decimal("0.1"), Decimal("2E+3")],
                     "d": 12345678901234567890123}
    assert str(value["a"]) == "1.50" and type(value["b"]) is int and type(value["d"]) is int
    with pytest.raises(JsonTooDeep):
        loads_exact(b"[" * 1100 + b"]" * 1100)


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**40), max_value=10**40),
    st.decimals(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)), max_leaves=12)


def _to_json(value) -> bytes:
    """JSON text with every Decimal written as its own text (exponents, trailing zeros), unlike json.dumps."""
    if isinstance(value, dict):
        return b"{" + b",".join(_to_json(k) + b":" + _to_json(v) for k, v in value.items()) + b"}"
    if isinstance(value, list):
        return b"[" + b",".join(_to_json(v) for v in value) + b"]"
    if isinstance(value, Decimal):
        return str(value).encode()
    return json.dumps(value).encode()


@settings(max_examples=300, deadline=None)
@given(_values)
def test_loads_exact_matches_the_reference_on_random_documents(value):
    data = _to_json(value)
    assert _outcome(loads_exact, data) == _outcome(loads_exact_reference, data)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(
    st.integers(min_value=-(10**40), max_value=10**40),
    st.decimals(allow_nan=False, allow_infinity=False).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["1e400", "-1e400", "0.12345678901234567", "3.141592653589793238", "1.00", "-0.0"]),
), max_size=8))
def test_loads_wide_ints_matches_the_standard_parser(numbers):
    data = ("[" + ", ".join([*(str(n) for n in numbers), '"123456789012345678901"']) + "]").encode()
    assert repr(loads_wide_ints(data)) == repr(_WIDE_JSON.decode(data.decode()))


@pytest.mark.parametrize("text", [
    "2024-03-31T16:23:07.938Z", "2024-03-31T16:23:07Z", "2024-03-31T16:23:07.123456Z",
    "2024-03-31T16:23:07.1234567Z", "2024-03-31T16:23:07,938Z", " 2024-03-31T16:23:07.938Z",
    "2021-12-25 05:42:04.408", "2024-03-31T16:23:07.938+02:00", "1714557600000", "1969-12-31T23:59:59.999Z",
    "2024-02-30T16:23:07.938Z", "2024-03-31T16:23:07.938ZZ",
])
def test_parse_ts_fast_path_matches_the_general_path(text):
    def general(v):
        dtypes._TS_CACHE.clear()
        try:
            ts = dtypes._parse_ts(" " + v) if not v.startswith(" ") else dtypes._parse_ts(v)
        except ValueError:
            return "error"
        return None if ts is not None and ts < dtypes.EPOCH else (ts, ts.tzinfo)

    def fast(v):
        try:
            ts = dtypes.parse_ts(v)
        except ValueError:
            return "error"
        return None if ts is None else (ts, ts.tzinfo)

    assert fast(text) == fast(text) == general(text)  # twice: the second answer comes from the cache


def test_binlog_numbers_and_read_method_prefixes_are_cached_faithfully():
    assert smd._mysql_pos({"log_file": "mysql-bin.000042", "log_position": 7}, []) == ((42, 7), "mysql-bin.000042:7")
    assert smd._mysql_pos({"log_file": "mysql-bin.000042", "log_position": 8}, []) == ((42, 8), "mysql-bin.000042:8")
    assert smd._mysql_pos({"binlog_file": "binlog", "binlog_position": "9"}, []) == ((None, 9), "binlog:9")
    assert smd.source_db(" MySQL-CDC", {}) == "mysql" and smd.source_db(" MySQL-CDC", {}) == "mysql"
    assert smd.source_db("x-cdc", {"collection": "c"}) == "mongodb"
    assert smd.source_db("x-cdc", {}) == "x"


def test_observer_summaries_are_unchanged_by_the_inline_paths():
    obs = TypeObserver("timestamp")
    images = [{"i": 1, "d": Decimal("12.345"), "t": "hello", "ts": "2024-01-02T03:04:05Z", "b": True},
              {"i": -(2**40), "d": Decimal("-1E+3"), "t": "2024-01-02", "ts": "2024-01-02 03:04:05", "b": None},
              {"i": 2**70, "d": Decimal("NaN"), "t": "x" * 30, "ts": 1.5, "b": False}]
    for image in images:
        obs.observe("t1", image)
    reference: dict[str, ColumnSummary] = {}
    for image in images:
        for name, value in image.items():
            if value is not None:
                reference.setdefault(name, ColumnSummary()).add(value, "timestamp")
    got = {n: s.vendor_type() for n, s in obs.summaries("t1").items()}
    assert got == {n: s.vendor_type() for n, s in reference.items()}
    assert got["i"] == "json:bigint,int,integer;digits=22;scale=0"
    assert got["d"] == "json:decimal,text;digits=4;scale=3"
    assert got["t"] == "json:date,text"


def _record(**overrides):
    rec = {"magic": MAGIC, "type": "DT", "headers": None, "messageSchemaId": "s1", "messageSchema": None,
           "message": b"\x02ab"}
    rec.update(overrides)
    return rec


@pytest.mark.parametrize("rec", [
    _record(), _record(type="MD", messageSchema="{}"), _record(messageSchemaId=None), _record(messageSchemaId=""),
    _record(headers={"k": "v"}),
])
def test_a_decoded_envelope_is_the_one_its_bytes_parse_to(rec):
    assert decoded_envelope(rec) == parse_envelope(envelope_bytes(rec))


@pytest.mark.parametrize("rec", [
    _record(magic=b"xxxxx"), _record(type="XX"), _record(message="text"), _record(messageSchemaId=5), "not a dict",
])
def test_odd_envelope_records_are_parsed_from_their_bytes(rec):
    assert decoded_envelope(rec) is None


def test_tuple_raw_lines_match_a_fresh_csv_writer():
    import csv
    import io

    for cells in (["a", "b,c", 'd"e', "f\ng"], ["1", "", " x "], ["\udcff", "é"]):
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow(cells)
        assert tuple_topic._raw_line(cells) == buf.getvalue().encode("utf-8", "surrogateescape")
        assert tuple_topic._header_line(cells) == tuple_topic._raw_line(cells)
    assert tuple_topic._int("0042", "INTEGER", "c") == 42
    assert tuple_topic._int(" -7 ", "BIGINT", "c") == -7
    assert tuple_topic._int("12.0", "BIGINT", "c") == 12
    with pytest.raises(Exception, match="range"):
        tuple_topic._int("9" * 30, "BIGINT", "c")


def test_fewer_collections_restores_the_thresholds():
    before = gc.get_threshold()
    with fewer_collections():
        assert gc.get_threshold()[0] == max(before[0], GC_YOUNG)
    assert gc.get_threshold() == before
    assert dt.UTC is dtypes.UTC
