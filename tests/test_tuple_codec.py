"""Tests for the order-preserving tuple codec: byte order must equal Python tuple order."""

from __future__ import annotations

import datetime as dt
import itertools
import math
import uuid
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdcnorm.canonical.tuple_codec import decode, encode

FAST = settings(max_examples=200, deadline=None)


def assert_consistent(a: tuple, b: tuple) -> None:
    """Byte order/equality of the encodings must match Python's, and both must round-trip."""
    ea, eb = encode(a), encode(b)
    assert (ea < eb) == (a < b), (a, b, ea.hex(), eb.hex())
    assert (ea == eb) == (a == b), (a, b, ea.hex(), eb.hex())
    assert decode(ea) == a
    assert decode(eb) == b


def assert_sorted_like_python(values: list) -> None:
    """Sorting by encoding gives the same order as sorting the values."""
    tuples = [(v,) for v in values]
    by_bytes = sorted(tuples, key=encode)
    assert by_bytes == sorted(tuples)
    for a, b in itertools.pairwise(by_bytes):
        assert (encode(a) == encode(b)) == (a == b)


# ---------------------------------------------------------------- strategies
huge_ints = st.integers(min_value=-(1 << 2200), max_value=1 << 2200)
any_ints = st.one_of(st.integers(), st.integers(-(10**40), 10**40), huge_ints)
floats = st.floats(allow_nan=False)
texts = st.one_of(st.text(), st.text(alphabet=["\x00", "\x01", "a", "\xff", "é", "\U0001f600", "\uffff"]))
binaries = st.one_of(st.binary(), st.binary().map(lambda b: b.replace(b"\x01", b"\x00")))
decimals = st.builds(
    lambda c, e: Decimal(f"{c}E{e}"),
    st.one_of(st.integers(-2000, 2000), st.integers(-(10**40), 10**40)),
    st.integers(-45, 12),
)
fixed_offsets = st.builds(
    dt.timezone, st.timedeltas(min_value=dt.timedelta(hours=-23), max_value=dt.timedelta(hours=23))
)
# Python compares aware times using their offsets in whole minutes only, so keep time offsets whole.
minute_offsets = st.builds(lambda m: dt.timezone(dt.timedelta(minutes=m)), st.integers(-23 * 60, 23 * 60))
naive_datetimes = st.datetimes()
aware_datetimes = st.datetimes(timezones=fixed_offsets)  # incl. instants outside UTC's year 1..9999
dates = st.dates()


def pairs(strategy: st.SearchStrategy) -> st.SearchStrategy:
    return st.tuples(strategy, strategy)


# ---------------------------------------------------------------- per-type ordering + round trip
@FAST
@given(pairs(any_ints))
def test_int_order(ab: tuple) -> None:
    assert_consistent((ab[0],), (ab[1],))


@FAST
@given(pairs(floats))
def test_float_order(ab: tuple) -> None:
    assert_consistent((ab[0],), (ab[1],))


@FAST
@given(pairs(texts))
def test_str_order(ab: tuple) -> None:
    assert_consistent((ab[0],), (ab[1],))


@FAST
@given(pairs(binaries))
def test_bytes_order(ab: tuple) -> None:
    assert_consistent((ab[0],), (ab[1],))


@FAST
@given(pairs(decimals))
def test_decimal_order(ab: tuple) -> None:
    assert_consistent((ab[0],), (ab[1],))


@FAST
@given(pairs(st.one_of(decimals, any_ints)))
def test_int_and_decimal_share_one_numeric_order(ab: tuple) -> None:
    assert_consistent((ab[0],), (ab[1],))


@FAST
@given(pairs(naive_datetimes))
def test_naive_datetime_order(ab: tuple) -> None:
    assert_consistent((ab[0],), (ab[1],))


@FAST
@given(pairs(aware_datetimes))
def test_aware_datetime_order(ab: tuple) -> None:
    assert_consistent((ab[0],), (ab[1],))


@FAST
@given(pairs(dates))
def test_date_order(ab: tuple) -> None:
    assert_consistent((ab[0],), (ab[1],))


@FAST
@given(pairs(st.times()))
def test_time_order(ab: tuple) -> None:
    assert_consistent((ab[0],), (ab[1],))


@FAST
@given(pairs(st.times(timezones=minute_offsets)))
def test_aware_time_order(ab: tuple) -> None:
    assert_consistent((ab[0],), (ab[1],))


@FAST
@given(pairs(st.timedeltas()))
def test_timedelta_order(ab: tuple) -> None:
    assert_consistent((ab[0],), (ab[1],))


@FAST
@given(pairs(st.uuids()))
def test_uuid_order(ab: tuple) -> None:
    assert_consistent((ab[0],), (ab[1],))


def test_bool_order() -> None:
    assert encode((False,)) < encode((True,))
    assert decode(encode((False, True))) == (False, True)


# ---------------------------------------------------------------- tuples, nesting, prefixes
@FAST
@given(pairs(st.lists(any_ints, max_size=5).map(tuple)))
def test_variable_length_int_tuples(ab: tuple) -> None:
    assert_consistent(*ab)


@FAST
@given(pairs(st.lists(texts, max_size=4).map(tuple)))
def test_variable_length_str_tuples_with_nul(ab: tuple) -> None:
    assert_consistent(*ab)


nested_ints = st.lists(st.lists(st.integers(-300, 300), max_size=3).map(tuple), max_size=3).map(tuple)


@FAST
@given(pairs(nested_ints))
def test_nested_tuples(ab: tuple) -> None:
    assert_consistent(*ab)


@FAST
@given(pairs(st.lists(st.lists(texts, max_size=3).map(tuple), max_size=3).map(tuple)))
def test_nested_str_tuples(ab: tuple) -> None:
    assert_consistent(*ab)


# One fixed schema per position, truncated to random lengths: sort_key-like tuples.
schema_row = st.tuples(texts, any_ints, decimals, aware_datetimes, binaries, floats, nested_ints)


@FAST
@given(schema_row, schema_row, st.integers(0, 7), st.integers(0, 7))
def test_schema_tuples_with_mixed_length_prefixes(a: tuple, b: tuple, la: int, lb: int) -> None:
    assert_consistent(a[:la], b[:lb])


@FAST
@given(st.lists(st.one_of(st.none(), texts, any_ints, decimals, floats, st.booleans()), max_size=6))
def test_prefix_sorts_first(items: list) -> None:
    full = encode(items)
    for i in range(len(items)):
        assert encode(items[:i]) < full
        assert full.startswith(encode(items[:i]))


@FAST
@given(
    st.recursive(
        st.one_of(st.none(), st.integers(), texts, binaries, decimals, st.booleans(), st.uuids()),
        lambda inner: st.lists(inner, max_size=4).map(tuple),
        max_leaves=12,
    )
)
def test_round_trip_nested_with_none(value: object) -> None:
    assert decode(encode((value, value))) == (value, value)


def test_nested_none_and_empty_ordering() -> None:
    assert encode(((),)) < encode(((None,),)) < encode(((None, None),)) < encode(((0,),))
    assert encode(((), 99)) < encode(((None,),))
    assert encode(((5,), None)) < encode(((5, None),))
    assert decode(encode(((None,), None, (None, (None,))))) == ((None,), None, (None, (None,)))


def test_list_encodes_as_tuple() -> None:
    assert encode([1, [2, "x"]]) == encode((1, (2, "x")))
    assert decode(encode([1, [2, "x"]])) == (1, (2, "x"))


# ---------------------------------------------------------------- specific cases
def test_35_digit_change_sequences_compare_numerically() -> None:
    a = 20240101123045000000000000000000123
    b = 20240101123045000000000000000000124
    c = 100000000000000000000000000000000000  # 36 digits
    assert len(str(a)) == 35
    assert encode((a,)) < encode((b,)) < encode((c,))
    assert encode((-b,)) < encode((-a,)) < encode((0,))
    assert decode(encode((a, b))) == (a, b)


def test_int_boundaries() -> None:
    values = {0}
    for bits in (7, 8, 16, 56, 63, 64, 65, 72, 2024, 2032, 2040, 2048, 2056, 5000):
        for base in (1 << bits, (1 << bits) - 1):
            for v in (base - 1, base, base + 1):
                values.update((v, -v))
    assert_sorted_like_python(sorted(values))
    for v in values:
        assert decode(encode((v,))) == (v,)


def test_decimal_scale_is_not_part_of_the_key() -> None:
    assert encode((Decimal("1.5"),)) == encode((Decimal("1.50"),)) == encode((Decimal("15E-1"),))
    assert encode((Decimal("5"),)) == encode((Decimal("5.000"),)) == encode((5,)) == encode((Decimal("5E0"),))
    assert encode((Decimal("-0.00"),)) == encode((0,))
    assert encode((Decimal("500"),)) == encode((Decimal("5E+2"),)) == encode((500,))
    assert decode(encode((Decimal("1.50"),))) == (Decimal("1.5"),)
    assert decode(encode((Decimal("5.00"),))) == (5,)


def test_decimal_mixed_scales_order() -> None:
    values = [
        Decimal(s)
        for s in (
            "-1E+40", "-123456789012345678901234567890.123456789", "-10.5", "-10.05", "-10", "-9.99",
            "-1", "-0.5", "-0.05", "-0.0500001", "-0.000000000000000000000000000000000000001", "0",
            "1E-38", "0.001", "0.0010001", "0.01", "0.1", "0.10000000000000000000000000000000000001",
            "0.5", "1", "1.00000000000000000000000000000000000001", "1.5", "1.55", "2", "10", "10.05",
            "99999999999999999999999999999999999999.9", "1E+38",
        )
    ]  # fmt: skip
    mixed = values + [-10, 0, 1, 2, 10, 10**38]
    assert_sorted_like_python(mixed)


def test_decimal_specials() -> None:
    assert encode((Decimal("-Infinity"),)) < encode((-(1 << 5000),))
    assert encode(((1 << 5000),)) < encode((Decimal("Infinity"),)) < encode((Decimal("NaN"),))
    (nan,) = decode(encode((Decimal("NaN"),)))
    assert nan.is_nan()
    with pytest.raises(ValueError):
        encode((Decimal("sNaN"),))


def test_float_specials() -> None:
    ordered = [-math.inf, -1e308, -1.0, -5e-324, 0.0, 5e-324, 1.0, 1e308, math.inf]
    assert [encode((f,)) for f in ordered] == sorted(encode((f,)) for f in ordered)
    assert encode((-0.0,)) == encode((0.0,))
    assert encode((math.inf,)) < encode((math.nan,)) == encode((-math.nan,))
    assert math.isnan(decode(encode((math.nan,)))[0])


def test_none_sorts_first_and_type_order() -> None:
    ordered = [
        None, b"", "", (), Decimal("-Infinity"), -(1 << 3000), 0, Decimal("0.5"), Decimal("Infinity"),
        Decimal("NaN"), -math.inf, math.nan, False, True, uuid.UUID(int=0), dt.date(1, 1, 1),
        dt.datetime(1, 1, 1), dt.datetime(2, 1, 1, tzinfo=dt.UTC), dt.time(0), dt.time(0, tzinfo=dt.UTC),
        dt.timedelta(0),
    ]  # fmt: skip
    encoded = [encode((v,)) for v in ordered]
    assert encoded == sorted(encoded)
    assert encode((None, "z")) < encode((b"",))
    assert encode(()) < encode((None,))


def test_str_nul_and_unicode() -> None:
    assert_sorted_like_python(
        [
            "",
            "\x00",
            "\x00\x00",
            "\x00a",
            "a",
            "a\x00",
            "a\x00\x00",
            "a\x01",
            "ab",
            "é",
            "\uffff",
            "\U0001f600",
        ]
    )


def test_bytes_escaping() -> None:
    assert encode((b"a\x00",)) == b"\x01a\x00\xff\x00"
    assert_sorted_like_python([b"", b"\x00", b"\x00\x00", b"\x00\xff", b"\x01", b"\xff", b"\xff\x00"])
    assert encode((bytearray(b"ab"),)) == encode((memoryview(b"ab"),)) == encode((b"ab",))


def test_datetime_kinds() -> None:
    plus5 = dt.timezone(dt.timedelta(hours=5))
    aware = dt.datetime(2024, 1, 1, 5, tzinfo=plus5)
    assert encode((aware,)) == encode((dt.datetime(2024, 1, 1, tzinfo=dt.UTC),))
    assert decode(encode((aware,))) == (aware,)
    assert encode((dt.datetime(2024, 1, 1),)) != encode((dt.datetime(2024, 1, 1, tzinfo=dt.UTC),))
    # Instants outside the UTC datetime range still round-trip (decoded with an extreme offset).
    for value in (
        dt.datetime.min.replace(tzinfo=plus5),
        dt.datetime.max.replace(tzinfo=dt.timezone(-dt.timedelta(hours=5))),
    ):
        assert decode(encode((value,))) == (value,)
    assert decode(encode((dt.date(1970, 1, 1), dt.date.min, dt.date.max))) == (
        dt.date(1970, 1, 1), dt.date.min, dt.date.max
    )  # fmt: skip


def test_aware_time_round_trip_outside_utc_day() -> None:
    plus5, minus5 = dt.timezone(dt.timedelta(hours=5)), dt.timezone(-dt.timedelta(hours=5))
    for t in (dt.time(1, tzinfo=plus5), dt.time(23, 30, 1, 7, tzinfo=minus5), dt.time(0, tzinfo=dt.UTC)):
        assert decode(encode((t,))) == (t,)


def test_subclasses_and_index_types() -> None:
    import enum

    class Color(enum.IntEnum):
        RED = 3

    class MyStr(str):
        pass

    assert encode((Color.RED,)) == encode((3,))
    assert encode((MyStr("x"),)) == encode(("x",))
    assert encode((True,)) != encode((1,))


def test_rejects_bad_input() -> None:
    with pytest.raises(TypeError):
        encode("abc")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        encode(({"a": 1},))
    for bad in (b"\x99", b"\x02abc", b"\x05\x15", b"\x15", b"\x1d\x09\x01", b"\x15\x01\xff12", b"\x21\x00"):
        with pytest.raises(ValueError):
            decode(bad)
