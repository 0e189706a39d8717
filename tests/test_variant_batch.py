"""The batch VARIANT encoder gives, row for row, exactly what the per-row encoder gives.

Why: `BatchBuilder.flush` encodes keys and images column by column (cdcnorm.canonical.variant_batch);
the golden digests pin whole outputs, these pin the column paths on the values where they could drift:
every width of int, decimals of every length, scale and notation (including the ones widened to text),
short and long texts, nulls, booleans, dates, UTC and other timestamps, mixed-type columns and nested values.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdcnorm.canonical import variant, variant_batch
from cdcnorm.canonical.emit import BatchBuilder
from cdcnorm.canonical.record import Change
from cdcnorm.canonical.variant_batch import encode_column

_UTC = dt.UTC
_TZ = dt.timezone(dt.timedelta(hours=5, minutes=30))

_INTS = st.one_of(st.integers(-(2**70), 2**70), st.sampled_from([-129, -128, 127, 128, -32769, 32767, 32768,
                                                                  2**31 - 1, 2**31, -(2**31) - 1, 2**63 - 1]))
_DECIMALS = st.one_of(
    st.integers(0, 8).flatmap(lambda p: st.decimals(allow_nan=False, allow_infinity=False, places=p)),
    st.builds(lambda d, e: Decimal(d).scaleb(e), st.integers(-(10**45), 10**45), st.integers(-45, 10)),
    st.sampled_from([Decimal("NaN"), Decimal("Infinity"), Decimal("-0.00"), Decimal("1E+5"), Decimal("0E-7"),
                     Decimal("0.00000003441694611721"), Decimal("49947960065445290406210.73275125502165715522"),
                     Decimal("-" + "9" * 38), Decimal("1" + "0" * 38), Decimal("0." + "1" * 39),
                     Decimal(-(2**63)), Decimal(2**63 - 1), Decimal(-(2**63)) / 1000, Decimal("-999999999"),
                     Decimal("-1000000000")]),
)
_TEXTS = st.one_of(st.text(max_size=80), st.sampled_from(["", "é" * 40, "😀" * 20, "x" * 63, "x" * 64]))
_TIMES = st.datetimes(timezones=st.sampled_from([None, _UTC, _TZ]))
_SCALAR = {"int": _INTS, "dec": _DECIMALS, "str": _TEXTS, "bool": st.booleans(), "date": st.dates(),
           "ts": _TIMES, "float": st.floats(allow_nan=False), "bytes": st.binary(max_size=70)}


@pytest.fixture(autouse=True, scope="module")
def _column_paths_for_small_groups():
    """The column paths run from 1,024 rows a group; here from 8, so small random columns exercise them."""
    old, variant_batch._MIN_GROUP = variant_batch._MIN_GROUP, 8
    yield
    variant_batch._MIN_GROUP = old


def _reference(image):
    flags: list[str] = []
    from cdcnorm.canonical.emit import _encode_variant

    value, metadata = _encode_variant(image, flags)
    return value, metadata, bool(flags)


def _check(images):
    """Row for row what the row encoder gives; a row it refuses is `failed`, alone."""
    got = encode_column(images, _reference)
    for i, image in enumerate(images):
        try:
            want = _reference(image) if image is not None else (None, None, False)
        except Exception as exc:  # noqa: BLE001 - whatever the row encoder raises
            assert type(got.failed.get(i)) is type(exc), image
            continue
        assert i not in got.failed
        assert (got.values[i], got.metadata[i], i in got.widened) == want, image


@st.composite
def _columns(draw):
    """Rows sharing one key set: each column one kind (with nulls), sometimes mixed or nested."""
    kinds = draw(st.lists(st.sampled_from([*_SCALAR, "mixed", "nested"]), min_size=1, max_size=6))
    n = draw(st.integers(8, 40))
    names = [f"c{i}_{k}" for i, k in enumerate(kinds)]
    rows = []
    for _ in range(n):
        row = {}
        for name, kind in zip(names, kinds, strict=True):
            if draw(st.integers(0, 4)) == 0:
                row[name] = None
            elif kind == "mixed":
                row[name] = draw(st.one_of(_INTS, _DECIMALS, _TEXTS))
            elif kind == "nested":
                row[name] = draw(st.one_of(_INTS, st.lists(_INTS, max_size=2), st.dictionaries(_TEXTS, _INTS, max_size=2)))
            else:
                row[name] = draw(_SCALAR[kind])
        rows.append(row)
    return rows


@settings(max_examples=150, deadline=None)
@given(_columns())
def test_batch_encoding_matches_the_row_encoder(rows):
    _check(rows)


@settings(max_examples=100, deadline=None)
@given(st.lists(_DECIMALS, min_size=8, max_size=60), st.lists(_INTS, min_size=8, max_size=60),
       st.lists(_TEXTS, min_size=8, max_size=60))
def test_one_type_columns_of_every_shape(decimals, ints, texts):
    _check([{"d": d} for d in decimals])
    _check([{"i": i, "t": None} for i in ints])
    _check([{"t": t, "k": 1} for t in texts])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.datetimes(), min_size=8, max_size=60), st.lists(st.datetimes(timezones=st.just(_UTC)), min_size=8,
       max_size=60), st.lists(st.floats(), min_size=8, max_size=60))
def test_timestamp_and_float_columns(naive, utc, floats):
    """Naive (timestamp_ntz) and UTC columns, and floats: infinities, -0.0, subnormals; a NaN sends its column per
    value."""
    _check([{"n": v, "u": None} for v in naive])
    _check([{"u": v} for v in utc])
    _check([{"f": v} for v in floats])
    _check([{"f": v} for v in [*floats, float("inf"), float("-inf"), -0.0, 5e-324, None]])


def test_groups_small_groups_odd_values_and_nulls_in_one_column():
    images = [None, {"a": 1}, "text", [1, 2], {"a": 2, "b": "x"}, {}, *({"id": i, "name": f"n{i}"} for i in range(20)),
              {1: "non-str key"}, {"big": "y" * 70_000, "n": 1}, *({"id": i, "name": None} for i in range(9))]
    _check(images)


def test_a_row_that_cannot_be_encoded_is_quarantined_alone():
    out = BatchBuilder()
    rows = [{"id": 1, "s": "ok"}, {"id": 2, "s": "lone \ud800 surrogate"}, {"id": 3, "s": "fine"}]
    for i, row in enumerate(rows * 4):
        out.begin_record("f", i, offset=str(i), raw=f"line {i}".encode())
        out.change(Change(vendor="v", format="f", stream="s", op="INSERT", sort_parts=(1, i), id_parts=(i,),
                          table="t", primary_keys=["id"], key={"id": row["id"]}, after=row))
    out.end_record()
    batch = pa.Table.from_batches([out.flush()])
    kinds = batch.column("_kind").to_pylist()
    assert kinds == ["change", "quarantine", "change"] * 4
    assert batch.column("_records").to_pylist() == [1] * 12
    bad = batch.filter(pa.compute.equal(batch.column("_kind"), "quarantine")).to_pylist()
    assert {r["_rule"] for r in bad} == {"adapter_error"}
    assert [r["origin"]["index"] for r in bad] == [1, 4, 7, 10]
    assert [r["_raw"] for r in bad] == [b"line 1", b"line 4", b"line 7", b"line 10"]
    assert "after" in bad[0]["_message"] and bad[0]["after"] is None and bad[0]["event_id"] is None
    good = batch.filter(pa.compute.equal(batch.column("_kind"), "change")).to_pylist()
    assert good[0]["after"]["value"] == variant.encode({"id": 1, "s": "ok"})[0]
    assert {r["_raw"] for r in good} == {None}


def test_groups_below_the_threshold_are_encoded_row_by_row(monkeypatch):
    monkeypatch.setattr(variant_batch, "_MIN_GROUP", 1024)
    calls = []
    monkeypatch.setattr(variant_batch, "_encode_group", lambda *a: calls.append(a) or False)
    _check([{"id": i, "d": Decimal(i) / 7} for i in range(1023)] + [None])
    assert calls == []
    _check([{"id": i} for i in range(1024)])
    assert len(calls) == 1
