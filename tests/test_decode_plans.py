"""The decode kernel's per-record shortcuts (typed values, lazy raw forms, cached digests and plans, ISO and float
fast paths, the Avro datum reader) give exactly what the reference paths give.

Why: each lever below skips work per record (a lookup, a re-encoding, a copy) on the condition that the
skipped work could not have changed the output; these tests hold each one against the reference code on the
inputs where they could drift apart (failures, flags, odd values), besides the whole-output golden digests.
"""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdcnorm.adapters.datahub import pairing, tuple_topic
from cdcnorm.adapters.datahub.adapter import DataHubAdapter
from cdcnorm.adapters.replicate import values
from cdcnorm.adapters.replicate.envelope import ENVELOPE_SCHEMA, MAGIC, envelope_bytes
from cdcnorm.adapters.replicate.files import container_messages
from cdcnorm.canonical.emit import BatchBuilder
from cdcnorm.containers import AvroFile, open_source
from cdcnorm.errors import DecodeError
from decoded import decode_files

TYPES = {f"c_{t.lower()}": t for t in values.TYPES} | {"c_unknown": "GEOMETRY", "c_none": None}

ODD = [
    None, True, False, 0, 1, 2, -5, 10**30, 1.5, -0.0, float("nan"), float("inf"), "", " 12 ", "1.50", "abc",
    "true", "0", "2024-02-30", "2024-01-02", "2024-01-02 03:04:05.1234567", "2024-01-02T03:04:05.123",
    "03:04:05", "03:04:05.1234567", "25:00:00", "0A0B", "zz", b"\x00\x01", Decimal("1.50"), Decimal("NaN"),
    Decimal("-0"), dt.date(2024, 1, 2), dt.time(3, 4, 5), dt.datetime(2024, 1, 2, 3, 4, 5),
    dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
    dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.timezone(dt.timedelta(hours=2))), [1], {"a": 1},
]


def _typed_outcome(fn):
    flags: list[str] = []
    try:
        out = fn(flags)
    except DecodeError as exc:
        return ("error", exc.error_class, exc.message, flags)
    except Exception as exc:  # noqa: BLE001 - whatever escapes must escape both paths alike
        return ("raised", type(exc).__name__, str(exc), flags)
    return ("ok", repr(out), [type(v).__name__ for v in (out or {}).values()], flags)


@pytest.mark.parametrize("value", ODD, ids=repr)
def test_typed_with_matches_typed_for_every_type_and_odd_value(value):
    convs = values.converters(TYPES)
    for name in [*TYPES, "c_not_in_plan"]:
        image = {"first": "x", name: value, "last": None}
        expected = _typed_outcome(lambda fl, img=image: values.typed(img, TYPES, fl))
        assert _typed_outcome(lambda fl, img=image: values.typed_with(img, TYPES, convs, fl)) == expected, name
    assert values.typed_with(None, TYPES, convs, []) is None


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(TYPES)), st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(max_size=12), st.decimals(allow_nan=False),
    st.dates(), st.datetimes(timezones=st.sampled_from([None, dt.UTC])), st.binary(max_size=4),
)))
def test_typed_with_matches_typed_on_random_images(image):
    convs = values.converters(TYPES)
    assert (_typed_outcome(lambda fl: values.typed_with(image, TYPES, convs, fl))
            == _typed_outcome(lambda fl: values.typed(image, TYPES, fl)))


def test_a_utc_datetime_is_made_naive_as_by_astimezone():
    for v in (dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC), dt.datetime(1, 1, 1, tzinfo=dt.UTC),
              dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=dt.UTC)):
        assert values._datetime(v) == v.astimezone(dt.UTC).replace(tzinfo=None)
        assert values._datetime(v).tzinfo is None


def _container(records: list[dict], schema: dict = ENVELOPE_SCHEMA) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, schema, records, sync_interval=64)  # several blocks
    return buf.getvalue()


_ENVELOPES = [
    {"magic": MAGIC, "type": t, "headers": h, "messageSchemaId": sid, "messageSchema": None, "message": m}
    for t, h, sid, m in [("DT", None, "s1", b"\x02ab"), ("MD", {"k": "v"}, None, b""), ("DT", {}, "", b"x" * 90),
                         ("DT", None, "s2", b"\x00")]
]


def test_lazy_envelope_raw_is_the_eager_re_encoding():
    data = _container(_ENVELOPES * 5)
    eager = list(container_messages(open_source(io.BytesIO(data))))
    lazy = list(container_messages(open_source(io.BytesIO(data)), lazy_raw=True))
    assert len(eager) == len(lazy) == 20
    for (e, e_body), (lz, lz_body) in zip(eager, lazy, strict=True):
        assert callable(lz.raw) and lz_body is None
        assert lz.raw() == e.raw == e_body == envelope_bytes(_ENVELOPES[e.index % 4])
        assert lz.value == e.value and lz.index == e.index and lz.offset == e.offset


def test_a_record_whose_re_encoding_fails_keeps_the_eager_path():
    schema = {**ENVELOPE_SCHEMA, "fields": [
        {**f, "type": ["null", {"type": "map", "values": "long"}]} if f["name"] == "headers" else f
        for f in ENVELOPE_SCHEMA["fields"]]}
    rec = {**_ENVELOPES[0], "headers": {"k": 1}}
    data = _container([rec], schema)
    (eager, _), = container_messages(open_source(io.BytesIO(data)))
    (lazy, _), = container_messages(open_source(io.BytesIO(data)), lazy_raw=True)
    assert isinstance(eager.value, DecodeError) and eager.value.error_class == "bad_envelope"
    assert isinstance(lazy.value, DecodeError) and lazy.raw == eager.raw and not callable(lazy.raw)


def test_a_quarantine_resolves_a_lazy_raw_once_asked():
    calls = []
    out = BatchBuilder()
    out.set_context("v", "f")
    out.begin_record("p", 0, raw=lambda: calls.append(1) or b"bytes")
    out.metadata()
    out.begin_record("p", 1, raw=lambda: calls.append(1) or b"bytes")
    out.quarantine("x", "why")
    batch = out.flush()
    assert calls == [1]
    assert batch.column("_raw").to_pylist() == [None, b"bytes"]


def test_avro_records_without_raw_are_the_records_with_it():
    records = [{"a": i, "b": "x" * (i % 7)} for i in range(50)]
    buf = io.BytesIO()
    fastavro.writer(buf, {"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"},
                                                                      {"name": "b", "type": "string"}]},
                    records, sync_interval=100)
    data = bytearray(buf.getvalue())
    data[len(data) // 2] ^= 0xFF  # one damaged block in the middle

    def read(keep_raw):
        f = AvroFile(open_source(io.BytesIO(bytes(data))), keep_raw=keep_raw)
        f.read_header()
        return list(f.records())

    with_raw, without = read(True), read(False)
    assert len(with_raw) == len(without)
    for a, b in zip(with_raw, without, strict=True):
        assert type(a) is type(b) and a.index == b.index and a.offset == b.offset
        if hasattr(a, "value"):
            assert a.value == b.value and b.raw is None and a.raw
        else:
            assert (a.error_class, a.message, a.raw) == (b.error_class, b.message, b.raw)


def _eager_csv_row(line, cells, cols, header):
    """`tuple_topic._csv_row` with its raw form built eagerly (the reference)."""
    raw = (tuple_topic._header_line(header) if header else b"") + tuple_topic._raw_line(cells)
    if any(tuple_topic._SURROGATE.search(c) for c in cells):
        return ("error", "bad_encoding", raw)
    if cols is None:
        return ("error", "missing_schema", raw)
    if len(cells) != len(cols):
        return ("error", "bad_csv", raw)
    return ("ok", dict(zip(cols, cells, strict=True)), raw)


@pytest.mark.parametrize("cells,cols,header", [
    (["1", "a,b", 'q"x', ""], ["w", "x", "y", "z"], ["w", "x", "y", "z"]),
    (["1", "a\nb"], ["x", "y"], None),
    (["1", "\udcff"], ["x", "y"], ["x", "y"]),
    (["1"], ["x", "y"], ["x", "y"]),
    (["1", "2"], None, None),
    (["é", "\udc80x"], None, None),
])
def test_csv_rows_match_the_eager_raw_form(cells, cols, header):
    row = tuple_topic._csv_row(3, list(cells), cols, header)
    kind, what, raw = _eager_csv_row(3, cells, cols, header)
    got_raw = row.raw() if callable(row.raw) else row.raw
    assert got_raw == raw and row.line == 3
    if kind == "ok":
        assert row.values == what and row.error is None and callable(row.raw)
    else:
        assert row.error.error_class == what and row.values is None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8),
                          st.decimals(allow_nan=False), st.floats(allow_nan=False),
                          st.datetimes(timezones=st.sampled_from([None, dt.UTC]))), max_size=12))
def test_cached_value_digests_are_the_digests(items):
    for v in items + items:  # the second round hits the cache
        assert pairing.value_digest(v) == pairing._digest(v)
    assert pairing.value_digest(1) != pairing.value_digest(True) != pairing.value_digest("1")


def test_a_topic_schema_plan_is_the_per_row_computation():
    fields = tuple_topic.parse_tuple_schema([{"name": "_sequence_id_", "type": "STRING"}, {"name": "id", "type": "BIGINT"},
                                       {"name": "v", "type": "DECIMAL"}])
    adapter = DataHubAdapter()
    types, data_fields, columns = adapter._fields_plan(fields)
    assert types == {f.name: f.type for f in fields}
    assert data_fields == [f.name for f in fields if f.name not in tuple_topic.META_COLUMNS] == ["id", "v"]
    assert columns == [("id", "BIGINT"), ("v", "DECIMAL")]
    assert adapter._fields_plan(fields)[0] is types  # cached per schema object
    assert adapter._fields_plan(tuple(fields))[0] == types


def test_an_envelope_quarantined_from_a_container_keeps_its_message_bytes(tmp_path):
    """End to end: a DT whose schema is unknown is quarantined with the Kafka message bytes (the lazy raw)."""
    path = tmp_path / "topic" / "part-00000.avro"
    path.parent.mkdir()
    path.write_bytes(_container([_ENVELOPES[0], _ENVELOPES[3]]))
    rows = decode_files("replicate", [path], prescan=False)
    assert [(r["_kind"], r["_rule"]) for r in rows] == [("quarantine", "schema_not_found")] * 2
    assert [r["_raw"] for r in rows] == [envelope_bytes(_ENVELOPES[0]), envelope_bytes(_ENVELOPES[3])]


# -- ISO dates and instants, floats, Blob columns, pair ids, the JSON-lines probe, Avro datums -------------------
def _regex_temporal(pattern, v, build):
    """The regular-expression path of `values._date` / `values._datetime` (the reference of their fast paths)."""
    try:
        return values._temporal(pattern, v, build)
    except values._KeepString:
        return "keep"


def _regex_date(v):
    return _regex_temporal(values._DATE, v, lambda m: dt.date(int(m[1]), int(m[2]), int(m[3])))


def _regex_datetime(v):
    return _regex_temporal(values._DATETIME, v, lambda m: dt.datetime(
        int(m[1]), int(m[2]), int(m[3]), int(m[4] or 0), int(m[5] or 0), int(m[6] or 0), values._micros(m[7])))


def _keep_or(fn, v):
    try:
        return fn(v)
    except values._KeepString:
        return "keep"


_DIGITISH = st.sampled_from(list("0123456789") + ["٣", "x", "-", " ", "+", "W", "Z", "."])


@st.composite
def _near_iso(draw):
    """Texts of the fast paths' shapes with some characters replaced (other digits, signs, letters)."""
    base = draw(st.one_of(st.dates().map(str), st.datetimes().map(str),
                          st.datetimes().map(lambda d: d.isoformat(timespec="seconds")),
                          st.datetimes().map(lambda d: d.isoformat(timespec="microseconds")),
                          st.sampled_from(["2024-02-30", "2024-13-01 00:00:00", "2024-01-01 24:00:00.000000",
                                           "2024-W01-1T11:56:26.332000", "2024-01-01 00:00:00.5+0000",
                                           "0000-01-01", "2024-01-01 00:00:60.000000"])))
    chars = list(base)
    for _ in range(draw(st.integers(0, 2))):
        if chars:
            chars[draw(st.integers(0, len(chars) - 1))] = draw(_DIGITISH)
    return "".join(chars)


@settings(max_examples=600, deadline=None)
@given(_near_iso())
def test_iso_fast_paths_read_what_the_regular_expressions_read(text):
    assert _keep_or(values._date, text) == _regex_date(text)
    assert _keep_or(values._datetime, text) == _regex_datetime(text)


def test_remembered_instants_are_the_instants():
    from cdcnorm.adapters.replicate import positions

    for text in ["2023-03-21T21:34:19.511", " 2023-03-21T21:34:19 ", "", "nope", "2023-03-21T21:34:19+02:00"] * 2:
        assert positions.instant(text) == positions._instant(text)
    assert positions.instant(None) is None and positions.instant(5) is None


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.floats(allow_nan=False, allow_infinity=False).map(repr),
                 st.decimals(allow_nan=False, allow_infinity=False).map(str),
                 st.sampled_from(["1e400", "-0.0", "0.1", "1E5", "1.0", "123456789012345678901.5", "5e-324"])))
def test_float_hook_fast_path_is_the_exact_rule(text):
    from cdcnorm.containers import json_records

    got = json_records._float_or_decimal(text)
    value, exact = float(text), Decimal(text)
    keep = exact.is_finite() and value not in (float("inf"), float("-inf")) and Decimal(repr(value)) == exact
    want = value if keep else exact
    assert type(got) is type(want) and (got == want or got != got) and str(got) == str(want)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]),
                          st.sampled_from(["LONG", "long", "DOUBLE", "FLOAT", "BOOLEAN", "DATE", "BYTES", "STRING",
                                           "GEOMETRY", None])), max_size=5),
       st.dictionaries(st.sampled_from(["a", "b", "c", "d"]),
                       st.one_of(st.none(), st.integers(-(2**60), 2**60), st.floats(allow_nan=False), st.text(max_size=6),
                                 st.booleans(), st.sampled_from(["true", "FALSE", "12", "AAE=", "1.5", "-3"])), max_size=4))
def test_blob_column_converters_are_blob_value(columns, values_):
    from cdcnorm.adapters.datahub.blob_values import blob_value, column_converters, typed_image

    types = dict(columns)

    def one(fn):
        try:
            return ("ok", fn())
        except DecodeError as exc:
            return ("error", exc.error_class, exc.message)

    want = one(lambda: {k: blob_value(v, types.get(k), k) for k, v in values_.items()})
    got = one(lambda: typed_image(values_, column_converters(tuple(columns))))
    assert got == want


def test_pair_ids_are_remembered_by_type():
    ids = [pairing.pair_id("s", "d", None, "t", seq) for seq in (1, True, 1.0, "1", 1, ("UPDATE", "a", "b"))]
    fresh = [pairing.event_id_of(pairing.VENDOR, "s", ("d", None, "t"), (seq, "UPDATE"))
             for seq in (1, True, 1.0, "1", 1, ("UPDATE", "a", "b"))]
    assert ids == fresh


_PIECES = st.sampled_from([b'{"a":1}', b'{"a":"}{"}', b'{"b":{"c":[1,2]}}', b" ", b"\n", b"{", b"}", b'"x"', b"[1]",
                           b'{"s":"1700000000000042449"}', b'{"n":1.5}', b"\r\n", b"{}", b"12", b"}{"])


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, min_size=1, max_size=8))
def test_objects_back_to_back_are_told_from_json_lines_as_the_whole_line_parse_tells(pieces):
    """The first-line probe's shortcut (an object after a whole value) picks the mode the whole-line parse picks,
    and the records and damage read are the same."""
    from cdcnorm.containers import JsonRecords, loads_wide_ints

    data = b"".join(pieces)

    def read(shortcut: bool):
        reader = JsonRecords(open_source(io.BytesIO(data)), loads_wide_ints)
        if not shortcut:
            reader._first_of_several = lambda start, end: False
        items = [(type(i).__name__, i.index, i.offset, i.raw, getattr(i, "value", None), getattr(i, "message", None))
                 for i in reader]
        return reader.lines_mode, items

    assert read(True) == read(False)


_DATUM_SCHEMA = {
    "type": "record", "name": "DataRecord", "namespace": "com.attunity.queue.msg.shop.t", "fields": [
        {"name": "data", "type": {"type": "record", "name": "Data", "fields": [
            {"name": "id", "type": ["null", "long"]}, {"name": "n", "type": ["null", "int"]},
            {"name": "s", "type": ["null", "string"]}, {"name": "b", "type": ["null", "bytes"]},
            {"name": "f", "type": ["null", "boolean"]}, {"name": "d", "type": ["null", "double"]},
            {"name": "r", "type": ["null", "float"]},
            {"name": "dec", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}]},
            {"name": "day", "type": ["null", {"type": "int", "logicalType": "date"}]},
            {"name": "ts", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
            {"name": "ms", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}]}]}},
        {"name": "beforeData", "type": ["null", "Data"]},
        {"name": "headers", "type": {"type": "record", "name": "Headers", "fields": [
            {"name": "operation", "type": {"type": "enum", "name": "operation", "symbols": ["INSERT", "UPDATE"]}},
            {"name": "changeSequence", "type": "string"}, {"name": "mask", "type": ["null", "bytes"]},
            {"name": "counter", "type": ["null", "long"]}, {"name": "last", "type": ["null", "boolean"]}]}}]}

_DATA = st.fixed_dictionaries({
    "id": st.none() | st.integers(-(2**63), 2**63 - 1), "n": st.none() | st.integers(-(2**31), 2**31 - 1),
    "s": st.none() | st.text(max_size=12), "b": st.none() | st.binary(max_size=12), "f": st.none() | st.booleans(),
    "d": st.none() | st.floats(), "r": st.none() | st.floats(width=32),
    "dec": st.none() | st.decimals(min_value=-(10**10) + 1, max_value=10**10 - 1, places=2),
    "day": st.none() | st.dates(), "ts": st.none() | st.datetimes(timezones=st.just(dt.UTC)),
    "ms": st.none() | st.datetimes(timezones=st.just(dt.UTC)).map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000)),
})
_RECORD = st.fixed_dictionaries({
    "data": _DATA, "beforeData": st.none() | _DATA,
    "headers": st.fixed_dictionaries({"operation": st.sampled_from(["INSERT", "UPDATE"]), "changeSequence": st.text(max_size=8),
                                      "mask": st.none() | st.binary(max_size=3), "counter": st.none() | st.integers(-5, 10**12),
                                      "last": st.none() | st.booleans()})})


@settings(max_examples=300, deadline=None)
@given(_RECORD, st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), max_size=3), st.integers(-3, 3))
def test_datum_reader_reads_what_fastavro_reads(record, edits, cut):
    """Valid datums: the same values (repr: Decimal exponents, tzinfo); damaged ones (bytes changed, cut or
    extended): either the same value as fastavro or NotRead, never a value fastavro would not give."""
    from cdcnorm.containers.avro_datum import NotRead, datum_reader

    read = datum_reader(_DATUM_SCHEMA)
    assert read is not None
    bio = io.BytesIO()
    fastavro.schemaless_writer(bio, fastavro.parse_schema(_DATUM_SCHEMA), record)
    good = bio.getvalue()
    assert repr(read(good)) == repr(fastavro.schemaless_reader(io.BytesIO(good), fastavro.parse_schema(_DATUM_SCHEMA), None))
    bad = bytearray(good)
    for at, byte in edits:
        if bad:
            bad[at % len(bad)] = byte
    bad = bytes(bad[:len(bad) + cut] if cut < 0 else bad + b"\x00" * cut)
    try:
        mine = read(bad)
    except NotRead:
        return
    bio = io.BytesIO(bad)
    theirs = fastavro.schemaless_reader(bio, fastavro.parse_schema(_DATUM_SCHEMA), None)
    assert bio.tell() == len(bad) and repr(mine) == repr(theirs)


def test_datum_reader_leaves_other_schemas_to_fastavro():
    from cdcnorm.containers.avro_datum import datum_reader

    for t in ({"type": "map", "values": "string"}, {"type": "array", "items": "long"}, ["null", "long", "string"],
              {"type": "fixed", "name": "F", "size": 2}, {"type": "string", "logicalType": "uuid"},
              {"type": "fixed", "name": "D", "size": 8, "logicalType": "decimal", "precision": 4}):
        assert datum_reader({"type": "record", "name": "R", "fields": [{"name": "x", "type": t}]}) is None
    twice = {"type": "record", "name": "R", "fields": [
        {"name": "a", "type": {"type": "record", "name": "X", "namespace": "p", "fields": []}},
        {"name": "b", "type": {"type": "record", "name": "X", "namespace": "q", "fields": []}}]}
    assert datum_reader(twice) is None
