"""Tests for the pure-Python VARIANT encoder.

Most tests decode with PySpark's own reader (``VariantVal``), so no JVM is needed; one test
pushes the encoded column through a real Spark session and a Parquet round trip.
"""

from __future__ import annotations

import datetime as dt
import decimal
import enum
import os
import struct
import sys
from collections import OrderedDict
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.types import VariantVal

from cdcnorm.canonical import variant
from cdcnorm.canonical.variant import VariantEncodeError, arrow_field, encode, encode_many, to_arrow_array

UTC = dt.UTC


def decode(value):
    """Decode through PySpark's reader.

    The reader rebuilds decimals by multiplying in the ambient context (28 digits by default), so
    widen it or 38-digit values come back rounded.
    """
    v, m = encode(value)
    with decimal.localcontext() as ctx:
        ctx.prec = 80
        return VariantVal(v, m).toPython()


def to_json(value) -> str:
    with decimal.localcontext() as ctx:
        ctx.prec = 80
        return VariantVal(*encode(value)).toJson()


def primitive_type(value) -> int:
    first = encode(value)[0][0]
    assert first & 0x3 == 0, "expected a primitive"
    return first >> 2


def metadata_keys(metadata: bytes) -> list[str]:
    width = (metadata[0] >> 6) + 1
    n = int.from_bytes(metadata[1 : 1 + width], "little")
    offsets = [
        int.from_bytes(metadata[1 + width * (i + 1) : 1 + width * (i + 2)], "little") for i in range(n + 1)
    ]
    base = 1 + width * (n + 2)
    return [metadata[base + offsets[i] : base + offsets[i + 1]].decode() for i in range(n)]


# --------------------------------------------------------------------------- scalars


def test_null_and_booleans():
    assert encode(None) == (b"\x00", b"\x01\x00\x00")
    assert decode(True) is True and to_json(True) == "true"
    assert decode(False) is False and to_json(False) == "false"
    assert to_json(None) == "null"


@pytest.mark.parametrize(
    ("value", "type_id"),
    [
        (0, 3),
        (-128, 3),
        (127, 3),
        (128, 4),
        (-32768, 4),
        (32768, 5),
        (-(2**31), 5),
        (2**31, 6),
        (2**63 - 1, 6),
        (-(2**63), 6),
        (2**63, 10),
        (-(2**63) - 1, 10),
        (10**38 - 1, 10),
        (-(10**38) + 1, 10),
    ],
)
def test_int_uses_smallest_type(value, type_id):
    assert primitive_type(value) == type_id
    assert decode(value) == value
    assert to_json(value) == str(value)


@pytest.mark.parametrize("value", [10**38, -(10**38), 2**200])
def test_int_beyond_38_digits_raises(value):
    with pytest.raises(VariantEncodeError):
        encode(value)


def test_int_subclass():
    class Level(enum.IntEnum):
        HIGH = 3

    assert decode(Level.HIGH) == 3 and type(decode(Level.HIGH)) is int


@pytest.mark.parametrize("value", [1.5, -0.0, 1e300, -2.5e-310, 0.1])
def test_float_is_double(value):
    assert primitive_type(value) == 7
    assert decode(value) == value
    assert struct.pack("<d", decode(value)) == struct.pack("<d", value)


def test_float_nan():
    assert decode(float("nan")) != decode(float("nan"))


@pytest.mark.parametrize(
    ("value", "type_id", "scale"),
    [
        (Decimal("1.50"), 8, 2),
        (Decimal("-123.4500"), 8, 4),
        (Decimal("0.000"), 8, 3),
        (Decimal("999999999"), 8, 0),
        (Decimal("0.123456789"), 8, 9),
        (Decimal("0.1234567891"), 9, 10),  # 10 digits of scale no longer fit decimal4
        (Decimal("1234567890.12345678"), 9, 8),
        (Decimal("-99999999999999999.9"), 9, 1),
        (Decimal("1234567890123456789.0"), 10, 1),
        (Decimal("1234567890123456789012345678.9012345678"), 10, 10),
        (Decimal("-" + "9" * 38), 10, 0),
        (Decimal("1E-38"), 10, 38),
    ],
)
def test_decimal_keeps_exact_scale(value, type_id, scale):
    v, _ = encode(value)
    assert v[0] >> 2 == type_id
    assert v[1] == scale
    out = decode(value)
    assert out == value
    assert out.as_tuple().exponent == -scale
    assert to_json(value) in (str(value), format(value, "f"))


def test_decimal_json_text_is_exact():
    assert to_json(Decimal("1.50")) == "1.50"
    assert to_json({"a": Decimal("1234567890123456789012345678.9012345678")}) == (
        '{"a":1234567890123456789012345678.9012345678}'
    )


@pytest.mark.parametrize(("value", "expected"), [(Decimal("1E+3"), 1000), (Decimal("-12.5E+2"), -1250)])
def test_decimal_positive_exponent_normalised_to_scale_zero(value, expected):
    v, _ = encode(value)
    assert v[0] >> 2 == 8 and v[1] == 0
    out = decode(value)
    assert out == expected and out.as_tuple().exponent == 0


def test_decimal_is_independent_of_ambient_context():
    value = Decimal("1234567890123456789012345678.9012345678")
    expected = encode(value)
    with decimal.localcontext() as ctx:
        ctx.prec = 3
        assert encode(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        Decimal("NaN"),
        Decimal("-Infinity"),
        Decimal("sNaN"),
        Decimal("1" * 39),
        Decimal("1E+38"),
        Decimal("1E-39"),
        Decimal("0E-40"),
    ],
)
def test_decimal_unrepresentable_raises(value):
    with pytest.raises(VariantEncodeError):
        encode(value)


@pytest.mark.parametrize(
    "value",
    ["", "abc", "héllo wörld ✓ 😀", "\x00\n\"'\\", "日本語" * 7, "x" * 63, "é" * 31 + "x"],
)
def test_short_string(value):
    v, m = encode(value)
    assert v[0] & 0x3 == 1 and v[0] >> 2 == len(value.encode())
    assert decode(value) == value
    assert to_json(value) == VariantVal.parseJson(to_json(value)).toJson()


@pytest.mark.parametrize("value", ["x" * 64, "é" * 32, "😀" * 1000, "long string " * 5000])
def test_long_string(value):
    v, _ = encode(value)
    assert v[0] == 16 << 2
    assert int.from_bytes(v[1:5], "little") == len(value.encode())
    assert decode(value) == value


def test_lone_surrogate_raises():
    with pytest.raises(VariantEncodeError):
        encode("\ud800")
    with pytest.raises(VariantEncodeError):
        encode({"\ud800": 1})


@pytest.mark.parametrize(
    "value", [b"", b"\x00\xff\x10", bytearray(b"abc"), memoryview(b"0123456789")[2:5], b"z" * 70000]
)
def test_binary(value):
    assert primitive_type(value) == 15
    assert decode(value) == bytes(value)
    assert to_json(b"\x00\x01") == '"AAE="'


def test_binary_memoryview_of_wide_items():
    view = memoryview(struct.pack("<3i", 1, 2, 3)).cast("i")
    assert decode(view) == struct.pack("<3i", 1, 2, 3)


@pytest.mark.parametrize(
    "value",
    [
        dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC),
        dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=dt.timezone(dt.timedelta(hours=5, minutes=30))),
        dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        dt.datetime(1900, 3, 1, 0, 0, 0, 1, tzinfo=dt.timezone(dt.timedelta(hours=-8))),
        dt.datetime(1, 1, 1, tzinfo=UTC),
        dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    ],
)
def test_aware_datetime_is_timestamp(value):
    assert primitive_type(value) == 12
    out = decode(value)
    assert out == value and out.utcoffset() == dt.timedelta(0)
    micros = struct.unpack("<q", encode(value)[0][1:9])[0]
    assert micros == (value - dt.datetime(1970, 1, 1, tzinfo=UTC)) // dt.timedelta(microseconds=1)


def test_timestamp_json():
    value = dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert to_json(value) == '"2024-01-02 01:04:05.123456+00:00"'
    assert to_json(dt.datetime(1969, 12, 31, 23, 59, 59, 1)) == '"1969-12-31 23:59:59.000001"'


@pytest.mark.parametrize(
    "value",
    [
        dt.datetime(2024, 1, 2, 3, 4, 5, 123456),
        dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
        dt.datetime(1950, 6, 15, 12, 0, 0, 1),
        dt.datetime(1, 1, 1),
    ],
)
def test_naive_datetime_is_timestamp_ntz(value):
    assert primitive_type(value) == 13
    out = decode(value)
    assert out == value and out.tzinfo is None


@pytest.mark.parametrize(
    ("value", "days"),
    [
        (dt.date(1970, 1, 1), 0),
        (dt.date(1969, 12, 31), -1),
        (dt.date(1900, 1, 1), -25567),
        (dt.date(1, 1, 1), -719162),
        (dt.date(9999, 12, 31), 2932896),
        (dt.date(2024, 2, 29), 19782),
    ],
)
def test_date(value, days):
    v, _ = encode(value)
    assert v[0] >> 2 == 11 and struct.unpack("<i", v[1:5])[0] == days
    assert decode(value) == value
    assert to_json(value) == f'"{value}"'


@pytest.mark.parametrize(
    "value", [dt.time(1, 2), dt.timedelta(1), {1, 2}, object(), 1j, {1: "a"}, {("a",): 1}]
)
def test_unsupported_raises(value):
    with pytest.raises(VariantEncodeError):
        encode(value)
    with pytest.raises(VariantEncodeError):
        encode([{"nested": value}])


# --------------------------------------------------------------------------- containers


def test_spark_reference_bytes():
    # Bytes Spark's parse_json('{"a":1.50,"c":[1,2]}') writes; only the sorted flag differs.
    value, metadata = encode({"c": [1, 2], "a": Decimal("1.50")})
    assert value == bytes.fromhex("02 02 00 01 00 06 0f 20 02 96 00 00 00 03 02 00 02 04 0c 01 0c 02")
    assert metadata == b"\x11\x02\x00\x01\x02ac"


def test_empty_containers():
    assert encode({}) == (b"\x02\x00\x00", b"\x01\x00\x00")
    assert encode([]) == (b"\x03\x00\x00", b"\x01\x00\x00")
    assert encode(()) == (b"\x03\x00\x00", b"\x01\x00\x00")
    assert decode({"a": {}, "b": [], "c": [{}, []]}) == {"a": {}, "b": [], "c": [{}, []]}
    assert to_json({"a": {}, "b": []}) == '{"a":{},"b":[]}'


def test_nested_roundtrip_and_shared_dictionary():
    value = {
        "zeta": [1, "two", 3.0, None, True, {"k": "v", "a": [Decimal("1.50"), b"\x01"]}],
        "alpha": {"beta": {"gamma": [dt.date(1960, 1, 1), dt.datetime(2000, 1, 1, 0, 0, 0, 7)]}},
        "k": ("tuple", "becomes", "array"),
        "a": None,
    }
    expected = {**value, "k": ["tuple", "becomes", "array"]}
    assert decode(value) == expected
    _, metadata = encode(value)
    assert metadata[0] & 0x10, "sorted_strings must be set"
    assert metadata_keys(metadata) == ["a", "alpha", "beta", "gamma", "k", "zeta"]


def test_object_fields_in_key_order_regardless_of_insertion():
    value, metadata = encode({"b": 1, "c": 2, "a": 3})
    assert value[:5] == bytes([0x02, 3, 0, 1, 2])  # field ids 0(a) 1(b) 2(c)
    assert to_json({"b": 1, "c": 2, "a": 3}) == '{"a":3,"b":1,"c":2}'
    assert metadata_keys(metadata) == ["a", "b", "c"]


def test_keys_sort_by_utf8_bytes_not_insertion():
    keys = ["b", "B", "é", "a", "ab", "", "z"]
    _, metadata = encode({k: 1 for k in keys})
    assert metadata_keys(metadata) == sorted(keys, key=str.encode)
    assert decode({k: i for i, k in enumerate(keys)}) == {k: i for i, k in enumerate(keys)}


def test_supplementary_keys_follow_spark_utf16_order():
    # Spark orders (and binary-searches) fields with Java String.compareTo, i.e. UTF-16 units.
    keys = ["\uffff", "\U0001f600", "a"]
    _, metadata = encode({k: 1 for k in keys})
    assert metadata_keys(metadata) == ["a", "\U0001f600", "\uffff"]
    assert not metadata[0] & 0x10, "not byte-sorted, so sorted_strings must be clear"
    assert decode({k: i for i, k in enumerate(keys)}) == {k: i for i, k in enumerate(keys)}
    _, plain = encode({"\U0001f600": 1, "a": 2})
    assert plain[0] & 0x10


def test_object_subclass_and_str_key_subclass():
    class Key(str):
        pass

    assert decode(OrderedDict([(Key("b"), 1), ("a", 2)])) == {"a": 2, "b": 1}


def test_large_object_uses_is_large_and_wide_ids():
    value = {f"key{i:04d}": i for i in range(300)}
    v, m = encode(value)
    header = v[0] >> 2
    assert v[0] & 0x3 == 2
    assert header & 0x10, "is_large"
    assert (header >> 2) & 0x3 == 1, "2-byte field ids"
    assert int.from_bytes(v[1:5], "little") == 300
    assert decode(value) == value
    assert len(metadata_keys(m)) == 300


def test_large_array_uses_is_large():
    value = list(range(300))
    v, _ = encode(value)
    assert v[0] & 0x3 == 3 and (v[0] >> 2) & 0x4
    assert int.from_bytes(v[1:5], "little") == 300
    assert decode(value) == value


def test_255_elements_is_not_large():
    v, _ = encode(list(range(255)))
    assert not (v[0] >> 2) & 0x4 and v[1] == 255
    v, _ = encode({f"k{i}": None for i in range(255)})
    assert not (v[0] >> 2) & 0x10 and v[1] == 255


def test_offset_widths_grow_with_data():
    two = ["x" * 200, "y" * 200]
    v, _ = encode(two)
    assert (v[0] >> 2) & 0x3 == 1  # 2-byte offsets
    assert decode(two) == two
    three = ["x" * 70000, "y"]
    v, _ = encode(three)
    assert (v[0] >> 2) & 0x3 == 2  # 3-byte offsets
    assert decode(three) == three
    obj = {"a": "x" * 70000, "b": 1}
    v, _ = encode(obj)
    assert (v[0] >> 2) & 0x3 == 2
    assert decode(obj) == obj


def test_many_keys_need_three_byte_ids_and_metadata_offsets():
    value = [{f"k{i}": i} for i in range(70000)]
    v, m = encode(value)
    assert (m[0] >> 6) + 1 == 3
    last = decode(value)[-1]
    assert last == {"k69999": 69999}


@pytest.mark.slow
def test_four_byte_offsets():
    value = ["x" * (17 * 1024 * 1024), {"k": 1}]
    v, _ = encode(value)
    assert (v[0] >> 2) & 0x3 == 3
    assert decode(value) == value


def test_deep_nesting_beyond_recursion_limit():
    depth = sys.getrecursionlimit() * 3
    value: object = "leaf"
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    v, m = encode(value)
    assert metadata_keys(m) == ["k"]
    # Walk down with a tiny iterative reader (PySpark's own reader recurses).
    pos = 0
    for _ in range(depth):
        basic = v[pos] & 0x3
        off_w = ((v[pos] >> 2) & 0x3) + 1
        if basic == 3:
            pos += 2 + 2 * off_w
        else:
            assert basic == 2
            id_w = ((v[pos] >> 4) & 0x3) + 1
            pos += 2 + id_w + 2 * off_w
    assert v[pos:] == b"\x11leaf"


def test_moderately_deep_nesting_decodes():
    value: object = 1
    for _ in range(60):  # PySpark's reader recurses ~8 frames per level
        value = {"a": [value]}
    assert decode(value) == value


def test_cycle_raises():
    loop: list = []
    loop.append(loop)
    with pytest.raises(VariantEncodeError):
        encode(loop)
    obj: dict = {}
    obj["self"] = obj
    with pytest.raises(VariantEncodeError):
        encode({"wrap": obj})


def test_size_limit(monkeypatch):
    monkeypatch.setattr(variant, "SIZE_LIMIT", 1000)
    encode("x" * 1000)
    with pytest.raises(VariantEncodeError):
        encode("x" * 1001)
    with pytest.raises(VariantEncodeError):
        encode(b"x" * 1001)
    with pytest.raises(VariantEncodeError):
        encode(["x" * 600, "y" * 600])


def test_repeated_key_sets_reuse_dictionary_correctly():
    first = {"id": 1, "name": "a"}
    second = {"id": 2, "other": [{"name": "b"}]}
    for _ in range(3):
        assert decode(first) == first
        assert decode(second) == second
    assert encode({"name": "a", "id": 1}) == encode(first)


def test_shared_subtree_is_not_a_cycle():
    shared = {"x": [1, 2]}
    assert decode([shared, shared, {"y": shared}]) == [shared, shared, {"y": shared}]


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**38) + 1, max_value=10**38 - 1)
    | st.floats(allow_nan=False)
    | st.decimals(allow_nan=False, allow_infinity=False).filter(
        lambda d: max(len(d.as_tuple().digits) + max(d.as_tuple().exponent, 0), -d.as_tuple().exponent) <= 38
    )
    | st.text()
    | st.binary()
    | st.dates()
    | st.datetimes()
    | st.datetimes(timezones=st.just(UTC))
)
trees = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=8), children, max_size=6)
    ),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None, database=None)  # no .hypothesis/ dir in the repo
@given(trees)
def test_property_roundtrip_through_pyspark_reader(value):
    assert decode(value) == value


# --------------------------------------------------------------------------- columns (encode_many, Arrow fields)


def test_encode_many_separates_sql_null_from_variant_null():
    values, metadata = encode_many([None, {"a": None}, 1])
    assert values[0] is None and metadata[0] is None
    assert VariantVal(values[1], metadata[1]).toPython() == {"a": None}
    assert (values[2], metadata[2]) == encode(1)
    assert encode_many([]) == ([], [])
    assert encode_many(iter([[None]])) == ([encode([None])[0]], [encode([None])[1]])


def test_arrow_field_matches_spark_shape():
    field = arrow_field("payload")
    assert field.name == "payload" and field.nullable
    assert not arrow_field("payload", nullable=False).nullable
    assert [(f.name, f.type, f.nullable) for f in field.type] == [
        ("value", pa.binary(), False),
        ("metadata", pa.binary(), False),
    ]
    # PySpark recognises a variant by this tag on the *metadata child* (pyspark.sql.pandas.types.is_variant).
    assert field.type.field("metadata").metadata == {b"variant": b"true"}
    from pyspark.sql.pandas.types import is_variant

    assert is_variant(field.type)


def test_to_arrow_array():
    arr = to_arrow_array([{"a": 1}, None, "s"])
    assert isinstance(arr, pa.StructArray)
    assert arr.type == variant.VARIANT_ARROW_TYPE
    assert arr.type.field("metadata").metadata == {b"variant": b"true"}
    assert arr.is_null().to_pylist() == [False, True, False]
    assert arr.field("value").null_count == 0 and arr.field("metadata").null_count == 0
    row0 = arr[0].as_py()
    assert VariantVal(row0["value"], row0["metadata"]).toPython() == {"a": 1}
    assert arr[1].as_py() is None
    assert to_arrow_array([]).type == variant.VARIANT_ARROW_TYPE
    no_nulls = to_arrow_array([1, 2])
    assert no_nulls.null_count == 0


# --------------------------------------------------------------------------- Spark round trip


@pytest.fixture(scope="module")
def spark():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    existing = SparkSession.getActiveSession()
    session = (
        SparkSession.builder.master("local[1]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    if existing is None:
        session.stop()


SPARK_ROWS = [
    {
        "a": Decimal("1.50"),
        "big": Decimal("12345678901234567890.123456789012345678"),
        "neg": Decimal("-0.000123"),
        "wide": 2**70,
        "i": -7,
        "f": 2.5,
        "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=dt.timezone(dt.timedelta(hours=2))),
        "ntz": dt.datetime(1969, 7, 20, 20, 17, 40, 1),
        "d": dt.date(1900, 1, 1),
        "bin": b"\x00\xff\x10",
        "s": "héllo 😀",
        "long": "L" * 100,
        "arr": [1, None, "two", [True, False]],
        "nested": {"k": [{"x": Decimal("1.0")}], "e": {}},
    },
    None,
    {**{f"k{i:03d}": i for i in range(300)}, "\uffff": -1, "\U0001f600": -2},
    list(range(300)),
]

QUERIES = [
    "v is null",
    "variant_get(v, '$.a', 'decimal(3,2)')",
    "variant_get(v, '$.big', 'decimal(38,18)')",
    "variant_get(v, '$.neg', 'decimal(10,6)')",
    "variant_get(v, '$.wide', 'decimal(38,0)')",
    "variant_get(v, '$.i', 'int')",
    "variant_get(v, '$.f', 'double')",
    "unix_micros(variant_get(v, '$.ts', 'timestamp'))",
    "variant_get(v, '$.ntz', 'timestamp_ntz')",
    "variant_get(v, '$.d', 'date')",
    "variant_get(v, '$.bin', 'binary')",
    "variant_get(v, '$.s', 'string')",
    "variant_get(v, '$.long', 'string')",
    "to_json(variant_get(v, '$.arr'))",
    "to_json(variant_get(v, '$.nested'))",
    "schema_of_variant(v)",
    "variant_get(v, '$.k150', 'int')",
    "variant_get(v, '$[\"\\uffff\"]', 'int')",
    "variant_get(v, '$[\"\U0001f600\"]', 'int')",
    "variant_get(v, '$[299]', 'int')",
    "to_json(v)",
]


def test_spark_roundtrip_and_parquet(spark, tmp_path):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), arrow_field("v")])
    batch = pa.RecordBatch.from_arrays(
        [pa.array(range(len(SPARK_ROWS)), pa.int64()), to_arrow_array(SPARK_ROWS)], schema=schema
    )

    def emit(_batches):
        yield batch

    df = spark.range(1, numPartitions=1).mapInArrow(emit, "id long, v variant")
    rows = [tuple(r) for r in df.orderBy("id").selectExpr(*QUERIES).collect()]

    first = rows[0]
    assert first[:13] == (
        False,
        Decimal("1.50"),
        Decimal("12345678901234567890.123456789012345678"),
        Decimal("-0.000123"),
        Decimal(2**70),
        -7,
        2.5,
        1704157445123456,
        dt.datetime(1969, 7, 20, 20, 17, 40, 1),
        dt.date(1900, 1, 1),
        bytearray(b"\x00\xff\x10"),
        "héllo 😀",
        "L" * 100,
    )
    assert first[13] == '[1,null,"two",[true,false]]'
    assert first[14] == '{"e":{},"k":[{"x":1}]}'
    assert first[15] == (
        "OBJECT<a: DECIMAL(2,1), arr: ARRAY<VARIANT>, big: DECIMAL(38,18), bin: BINARY, d: DATE, "
        "f: DOUBLE, i: BIGINT, long: STRING, neg: DECIMAL(6,6), nested: OBJECT<e: OBJECT<>, "
        "k: ARRAY<OBJECT<x: DECIMAL(1,0)>>>, ntz: TIMESTAMP_NTZ, s: STRING, ts: TIMESTAMP, "
        "wide: DECIMAL(22,0)>"
    )
    assert first[20].startswith(
        '{"a":1.5,"arr":[1,null,"two",[true,false]],"big":12345678901234567890.123456789012345678,'
    )
    assert '"ts":"2024-01-02 01:04:05.123456+00:00"' in first[20]
    assert '"ntz":"1969-07-20 20:17:40.000001"' in first[20]
    assert '"d":"1900-01-01"' in first[20]
    assert '"bin":"AP8Q"' in first[20]
    assert rows[1][0] is True and all(x is None for x in rows[1][1:])
    assert rows[2][16:19] == (150, -1, -2)
    assert rows[3][19] == 299
    assert rows[3][20] == "[" + ",".join(map(str, range(300))) + "]"

    # Spark hands the bytes back untouched.
    collected = df.orderBy("id").collect()
    expected_values, expected_metadata = encode_many(SPARK_ROWS)
    for row, value, metadata in zip(collected, expected_values, expected_metadata, strict=True):
        if value is None:
            assert row.v is None
        else:
            assert (bytes(row.v.value), bytes(row.v.metadata)) == (value, metadata)

    path = str(tmp_path / "variant.parquet")
    df.write.parquet(path)
    back = spark.read.parquet(path)
    assert back.schema["v"].dataType.typeName() == "variant"
    assert [tuple(r) for r in back.orderBy("id").selectExpr(*QUERIES).collect()] == rows
