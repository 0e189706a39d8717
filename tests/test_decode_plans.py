"""The second round of decode-kernel fast paths (issue 13) give exactly what the paths they replace give.

Why: each lever below skips work per record (a lookup, a re-encoding, a copy) on the condition that the
skipped work could not have changed the output; these tests hold each one against the original code on the
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


def _old_csv_row(line, cells, cols, header):
    """`tuple_topic._csv_row` before the lazy raw form (the reference)."""
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
    kind, what, raw = _old_csv_row(3, cells, cols, header)
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
