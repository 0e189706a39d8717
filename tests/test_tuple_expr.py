"""`tuple_expr` (the tuple codec as Spark expressions) against `tuple_codec.encode`, byte for byte.

The property test draws a row shape (kinds per position, nested tuples, arrays) with hypothesis and a batch of
200 rows of edge-heavy values from a seeded generator: one DataFrame and one Spark job per example. Input
columns are built from values whose Spark conversion involves no time zone (micros, day numbers, ISO strings),
and the session time zone is set to a non-UTC zone, which must not change a byte.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import random
from collections.abc import Iterator
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import DecimalType

from cdcnorm.canonical import tuple_codec
from cdcnorm.canonical.tuple_expr import encodable, encode
from conftest import benchmark_module

LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1
MICROS_MIN = (dt.datetime.min - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
MICROS_MAX = (dt.datetime.max - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
DAYS_MIN = dt.date.min.toordinal() - dt.date(1970, 1, 1).toordinal()
DAYS_MAX = dt.date.max.toordinal() - dt.date(1970, 1, 1).toordinal()
EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
EPOCH_NAIVE = dt.datetime(1970, 1, 1)
EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
NTZ_FORMAT = "yyyy-MM-dd HH:mm:ss.SSSSSS"
ROWS = 200


@contextlib.contextmanager
def session_zone(spark, name: str) -> Iterator[None]:
    """The session time zone set to `name` for a block, restored afterwards."""
    saved = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", name)
    try:
        yield
    finally:
        spark.conf.set("spark.sql.session.timeZone", saved)


# --------------------------------------------------------------------------- leaves: Spark input and Python value
# A leaf spec is a tuple: (kind,) or ("decimal", precision, scale) or ("array", inner) or ("tuple", [specs]).
# Each leaf is one input column; `raw` values are what the DataFrame holds, `py` what Python encodes.

def _int_edges() -> list[int]:
    edges = [0, 1, -1, LONG_MIN, LONG_MAX, LONG_MIN + 1, LONG_MAX - 1, 4095, 4096, -256, -257]
    for n in range(1, 8):
        edges += [(1 << (8 * n)) + d for d in (-1, 0, 1)] + [-(1 << (8 * n)) + d for d in (-1, 0, 1)]
    return edges


INT_EDGES = _int_edges()
CHARS = ["\x00", "\x01", "\x10", "\x7f", "a", "0", "é", "\u0100", "\u0800", "\uffff", "\U0001d11e", "\xff"]


def random_int(rng: random.Random) -> int:
    pick = rng.random()
    if pick < 0.3:
        return rng.choice(INT_EDGES)
    if pick < 0.5:
        return rng.randint(-300, 5000)
    magnitude = rng.getrandbits(rng.randint(1, 63))
    return -magnitude - rng.randint(0, 1) if rng.random() < 0.5 else magnitude


def random_str(rng: random.Random) -> str:
    out = []
    for _ in range(rng.choice((0, 1, 2, 3, 5, 12))):
        if rng.random() < 0.7:
            out.append(rng.choice(CHARS))
        else:
            code = rng.randint(0, 0x10FFFF)
            out.append(chr(code) if not 0xD800 <= code < 0xE000 else "z")
    return "".join(out)


def random_micros(rng: random.Random) -> int:
    pick = rng.random()
    if pick < 0.25:
        return rng.choice([0, 1, -1, MICROS_MIN, MICROS_MAX, 86_400_000_000, -86_400_000_000, 999_999, -1_000_001])
    if pick < 0.6:
        return rng.randint(-10**15, 10**15)  # 1938..2001, with micros
    return rng.randint(MICROS_MIN, MICROS_MAX)


def random_days(rng: random.Random) -> int:
    if rng.random() < 0.3:
        return rng.choice([0, 1, -1, DAYS_MIN, DAYS_MAX, -719_162 + 1, 18_000])
    return rng.randint(DAYS_MIN, DAYS_MAX)


def random_decimal(rng: random.Random, precision: int, scale: int) -> Decimal:
    top = 10**precision - 1
    pick = rng.random()
    if pick < 0.2:
        unscaled = rng.choice([0, 1, -1, top, -top, 10**scale, -(10**scale), 5 * 10 ** max(scale - 1, 0)])
    elif pick < 0.5:
        unscaled = rng.randint(-1000, 1000) * 10 ** rng.randint(0, precision)  # trailing zeros
    else:
        unscaled = rng.randint(-top, top) // 10 ** rng.randint(0, precision)  # any number of digits
    unscaled = max(-top, min(top, unscaled))
    return Decimal(f"{unscaled}E-{scale}")


ARRAY_INNER = {"int": ("long", random_int), "str": ("string", random_str), "bool": ("boolean", None)}


def leaf_raw(spec: tuple, rng: random.Random):
    """A random input value of a leaf (None sometimes)."""
    if rng.random() < 0.12:
        return None
    kind = spec[0]
    if kind in ("int", "int32"):
        value = random_int(rng)
        return value if kind == "int" else max(-(1 << 31), min((1 << 31) - 1, value))
    if kind == "str":
        return random_str(rng)
    if kind == "bytes":
        return bytes(rng.choice([0, 0, 1, 0x10, 0xFF, rng.randint(0, 255)]) for _ in range(rng.randint(0, 6)))
    if kind == "bool":
        return rng.random() < 0.5
    if kind in ("ts", "ts_ntz"):
        micros = random_micros(rng)
        return micros if kind == "ts" else (EPOCH_NAIVE + dt.timedelta(microseconds=micros)).isoformat(" ", "microseconds")
    if kind == "date":
        return random_days(rng)
    if kind == "decimal":
        return format(random_decimal(rng, spec[1], spec[2]), "f")
    if kind == "array":
        make = ARRAY_INNER[spec[1]][1] or (lambda r: r.random() < 0.5)
        return [None if rng.random() < 0.15 else make(rng) for _ in range(rng.choice((0, 1, 2, 3, 5)))]
    raise AssertionError(spec)


def leaf_python(spec: tuple, raw):
    """The Python value the tuple codec encodes for a leaf's input value."""
    if raw is None:
        return None
    kind = spec[0]
    if kind == "ts":
        return EPOCH_UTC + dt.timedelta(microseconds=raw)
    if kind == "ts_ntz":
        return dt.datetime.strptime(raw, "%Y-%m-%d %H:%M:%S.%f")
    if kind == "date":
        return dt.date.fromordinal(raw + EPOCH_ORDINAL)
    if kind == "decimal":
        return Decimal(raw)
    return raw


def leaf_type(spec: tuple) -> str:
    kind = spec[0]
    if kind == "array":
        return f"array<{ARRAY_INNER[spec[1]][0]}>"
    return {"int": "long", "int32": "int", "str": "string", "bytes": "binary", "bool": "boolean", "ts": "long",
            "ts_ntz": "string", "date": "int", "decimal": "string"}[kind]


def leaf_element(spec: tuple, col: Column) -> tuple[str, Column]:
    kind = spec[0]
    if kind == "ts":
        return "ts", F.timestamp_micros(col)
    if kind == "ts_ntz":
        return "ts_ntz", F.to_timestamp_ntz(col, F.lit(NTZ_FORMAT))
    if kind == "date":
        return "date", F.date_from_unix_date(col)
    if kind == "decimal":
        return "decimal", col.cast(DecimalType(spec[1], spec[2]))
    if kind == "array":
        return f"array<{spec[1]}>", col
    return ("int" if kind == "int32" else kind), col


def leaves(specs: list[tuple]) -> list[tuple]:
    out = []
    for spec in specs:
        out.extend(leaves(spec[1]) if spec[0] == "tuple" else [spec])
    return out


def elements(specs: list[tuple], names: list[str]) -> list:
    """The `encode` elements of a shape, consuming input column names in leaf order."""
    out = []
    for spec in specs:
        if spec[0] == "tuple":
            out.append(("tuple", elements(spec[1], names)))
        else:
            out.append(leaf_element(spec, F.col(names.pop(0))))
    return out


def python_row(specs: list[tuple], raws: list) -> tuple:
    out = []
    for spec in specs:
        if spec[0] == "tuple":
            out.append(python_row(spec[1], raws))
        else:
            out.append(leaf_python(spec, raws.pop(0)))
    return tuple(out)


def fits_long(values) -> bool:
    """Whether every Decimal of a (nested) row has a floor a long holds: what `encodable` promises."""
    for value in values:
        if isinstance(value, tuple) and not fits_long(value):
            return False
        if isinstance(value, Decimal) and not LONG_MIN <= math.floor(value) <= LONG_MAX:
            return False
    return True


def check_batch(spark, specs: list[tuple], raw_rows: list[list]) -> None:
    """Encode the rows in Spark and in Python and compare them row by row (with `encodable`)."""
    flat = leaves(specs)
    names = [f"c{i}" for i in range(len(flat))]
    schema = ", ".join(f"{n} {leaf_type(s)}" for n, s in zip(names, flat, strict=True)) or "_ int"
    rows = [[i, *raw] for i, raw in enumerate(raw_rows)]
    df = spark.createDataFrame(rows, f"row_id int, {schema}" if flat else "row_id int")
    items = elements(specs, list(names))
    got = df.select("row_id", encode(items).alias("bytes"), encodable(items).alias("ok")).collect()
    assert len(got) == len(raw_rows)
    for row in sorted(got, key=lambda r: r.row_id):
        values = python_row(specs, list(raw_rows[row.row_id]))
        ok = fits_long(values)
        assert row.ok is ok, (values, row.ok)
        if ok:
            assert row.bytes is not None, values
            assert bytes(row.bytes) == tuple_codec.encode(values), values
        else:
            assert row.bytes is None, values


# --------------------------------------------------------------------------- shapes
SCALAR_SPECS = st.one_of(
    st.sampled_from([("int",), ("int32",), ("str",), ("bytes",), ("bool",), ("ts",), ("ts_ntz",), ("date",),
                     ("array", "int"), ("array", "str"), ("array", "bool")]),
    st.integers(1, 38).flatmap(lambda p: st.tuples(st.just("decimal"), st.just(p), st.integers(0, p))),
)
SPECS = st.recursive(SCALAR_SPECS, lambda children: st.lists(children, max_size=3).map(lambda c: ("tuple", c)),
                     max_leaves=8)


SHAPES = {"specs": st.lists(SPECS, min_size=1, max_size=5), "seed": st.integers(0, 2**32 - 1)}


def check_random_batch(spark, specs: list[tuple], seed: int) -> None:
    rng = random.Random(seed)
    flat = leaves(specs)
    with session_zone(spark, "America/Los_Angeles"):
        check_batch(spark, specs, [[leaf_raw(s, rng) for s in flat] for _ in range(ROWS)])


@settings(max_examples=10, deadline=None, database=None)
@given(**SHAPES)
def test_encode_equals_tuple_codec(spark, specs, seed):
    check_random_batch(spark, specs, seed)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, database=None)
@given(**SHAPES)
def test_encode_equals_tuple_codec_many(spark, specs, seed):
    check_random_batch(spark, specs, seed)


def test_generated_code_equals_tuple_codec(codegen):
    """The same comparison through Spark's generated code (the session's default is the interpreter)."""
    specs = [("str",), ("int",), ("ts",), ("ts_ntz",), ("date",), ("decimal", 38, 10), ("decimal", 10, 0),
             ("bytes",), ("bool",), ("tuple", [("int32",), ("array", "int"), ("tuple", [])]), ("array", "str")]
    rng = random.Random(20240607)
    flat = leaves(specs)
    with session_zone(codegen, "Asia/Kathmandu"):
        check_batch(codegen, specs, [[leaf_raw(s, rng) for s in flat] for _ in range(1000)])


# --------------------------------------------------------------------------- hand-written values
def val(value, cast: str | None = None) -> Column:
    """A one-row value Spark cannot fold into a constant while planning: the expressions run as on data."""
    literal = F.lit(value) if cast is None else F.lit(value).cast(cast)
    return F.when(F.col("id") >= 0, literal)


def one(spark, items_of) -> tuple[bytes | None, bool]:
    """`encode` and `encodable` of elements built over a one-row frame (column `id`)."""
    row = spark.range(1).select(encode(items_of()).alias("b"), encodable(items_of()).alias("ok")).first()
    return (None if row.b is None else bytes(row.b)), row.ok


@pytest.mark.parametrize(("items_of", "expected"), [
    (lambda: [("int", val(0))], "14"),
    (lambda: [("int", val(-256))], "12feff"),
    (lambda: [("int", val(255))], "15ff"),
    (lambda: [("int", val(LONG_MIN))], "0c7fffffffffffffff"),
    (lambda: [("int", val(LONG_MAX))], "1c7fffffffffffffff"),
    (lambda: [("int", val(-(1 << 48)))], "0dfeffffffffffff"),  # header 0x0D: an odd count of hex digits
    (lambda: [("int", val(-(1 << 56) + 1))], "0d00000000000000"),
    (lambda: [("int", val(-(1 << 56)))], "0cfeffffffffffffff"),
    (lambda: [("int", val((1 << 56) - 1))], "1bffffffffffffff"),
    (lambda: [("int", val(1 << 56))], "1c0100000000000000"),
    (lambda: [("str", val("a\x00b"))], "026100ff6200"),
    (lambda: [("str", val("\x10\x01"))], "02100100"),  # hex "1001": no 0x00 byte
    (lambda: [("str", val(""))], "0200"),
    (lambda: [("bool", val(True)), ("bool", val(False))], "2726"),
    (lambda: [("ts", F.timestamp_micros(val(0)))], "428000000000000000"),
    (lambda: [("ts", F.timestamp_micros(val(-1)))], "427fffffffffffffff"),
    (lambda: [("date", F.date_from_unix_date(val(-1)))], "407fffffff"),
    (lambda: [("ts_ntz", F.to_timestamp_ntz(val("1970-01-01 00:00:01")))], "4180000000000f4240"),
    (lambda: [("decimal", val(Decimal("-1.2500")))], "13fdff373500"),
    (lambda: [("decimal", val(Decimal("0.050")))], "14ff303500"),
    (lambda: [("decimal", val(Decimal("7.000")))], "1507"),
    (lambda: [("str", val(None, "string")), ("tuple", [("int", val(None, "long"))])], "000500ff00"),
    (lambda: [("array<int>", F.array(val(1), val(None, "long"))), ("tuple", [])], "05150100ff000500"),
    (lambda: [("array<str>", val(None, "array<string>"))], "00"),
    (lambda: [], ""),
])
def test_known_bytes(spark, items_of, expected):
    got, ok = one(spark, items_of)
    assert ok is True
    assert got.hex() == expected
    assert got == tuple_codec.encode(tuple_codec.decode(got))


def test_concatenation_is_the_longer_tuple(spark):
    """A sort key is the sort parts' encoding followed by the event id's: one `encode` or two concatenated."""
    def parts():
        return [("int", val(7)), ("ts", F.timestamp_micros(val(5)))]
    row = spark.range(1).select(F.concat(encode(parts()), encode([("str", val("ab12"))])).alias("a"),
                                encode([*parts(), ("str", val("ab12"))]).alias("b")).first()
    assert row.a == row.b
    assert bytes(row.a) == tuple_codec.encode((7, EPOCH_UTC + dt.timedelta(microseconds=5))) + b"\x02ab12\x00"


@pytest.mark.parametrize(("items_of", "why"), [
    (lambda: [("ts", F.timestamp_micros(val(MICROS_MAX + 1)))], "year 10000"),
    (lambda: [("ts", F.timestamp_micros(val(MICROS_MIN - 1)))], "before year 1"),
    (lambda: [("ts_ntz", F.expr("if(id >= 0, TIMESTAMP_NTZ'1970-01-01 00:00:00' + make_interval(8100), NULL)"))],
     "year 10070"),
    (lambda: [("date", F.date_from_unix_date(val(DAYS_MAX + 1)))], "year 10000"),
    (lambda: [("decimal", val(Decimal("9223372036854775808")))], "floor beyond a long"),
    (lambda: [("decimal", val(Decimal("9999999999999999999")))], "floor beyond a long, scale 0"),
    (lambda: [("decimal", val(Decimal("-9223372036854775808.5")))], "floor below a long"),
    (lambda: [("str", F.unhex(val("61FF")).cast("string"))], "not UTF-8"),
    (lambda: [("str", F.unhex(val("EDA080")).cast("string"))], "a surrogate"),
    (lambda: [("int", val(1)), ("tuple", [("array<ts>", F.array(F.timestamp_micros(val(MICROS_MAX + 1))))])],
     "inside an array inside a tuple"),
])
def test_routed_to_python(spark, items_of, why):
    got, ok = one(spark, items_of)
    assert ok is False, why
    assert got is None, why


def test_edges_of_what_is_encodable(spark):
    """The last values kept: Python's first and last instants and days, a floor of exactly Long.MIN_VALUE."""
    cases = [
        (lambda: [("ts", F.timestamp_micros(val(MICROS_MAX)))], (dt.datetime.max.replace(tzinfo=dt.UTC),)),
        (lambda: [("ts", F.timestamp_micros(val(MICROS_MIN)))], (dt.datetime.min.replace(tzinfo=dt.UTC),)),
        (lambda: [("date", F.date_from_unix_date(val(DAYS_MIN)))], (dt.date.min,)),
        (lambda: [("decimal", val(Decimal("-9223372036854775807.5")))], (Decimal("-9223372036854775807.5"),)),
        (lambda: [("decimal", val(Decimal("9223372036854775807.99")))], (Decimal("9223372036854775807.99"),)),
    ]
    for items_of, values in cases:
        got, ok = one(spark, items_of)
        assert ok is True, values
        assert got == tuple_codec.encode(values)


def test_unknown_kind_is_refused(spark):
    with pytest.raises(ValueError, match="kind"):
        encode([("float", F.lit(1.0))])
    with pytest.raises(ValueError, match="kind"):
        encodable([("array<float>", F.array(F.lit(1.0)))])


# --------------------------------------------------------------------------- time zones and order
def test_session_time_zone_changes_nothing(spark):
    """Timestamps, naive timestamps (a DST gap wall time included) and dates encode alike in every zone."""
    rows = [(m, s, d) for m, s, d in [
        (0, "1970-01-01 00:00:00.000000", 0),
        (1_585_449_000_123_456, "2020-03-29 02:30:00.123456", 18_350),  # a DST gap wall time in Europe
        (1_583_656_200_000_001, "2020-03-08 02:30:00.000001", -1),  # ... in America/Los_Angeles
        (1_603_593_000_000_001, "2020-10-25 02:30:00.000001", 1),  # a repeated wall time in Europe
        (-1, "1969-12-31 23:59:59.999999", -719_162 + 1),
        (-62_135_596_800_000_000, "0001-01-01 00:00:00.000000", -719_162),
        (253_402_300_799_999_999, "9999-12-31 23:59:59.999999", 2_932_896),
    ]]
    df = spark.createDataFrame(rows, "m long, s string, d int")

    def items():
        return [("ts", F.timestamp_micros("m")), ("ts_ntz", F.to_timestamp_ntz("s", F.lit(NTZ_FORMAT))),
                ("date", F.date_from_unix_date("d"))]

    expected = [tuple_codec.encode((EPOCH_UTC + dt.timedelta(microseconds=m),
                                    dt.datetime.strptime(s, "%Y-%m-%d %H:%M:%S.%f"),
                                    dt.date.fromordinal(d + EPOCH_ORDINAL))) for m, s, d in rows]
    for name in ("UTC", "Europe/Berlin", "America/Los_Angeles", "Asia/Kathmandu"):
        with session_zone(spark, name):
            got = [bytes(r.b) for r in df.select(encode(items()).alias("b")).collect()]
        assert got == expected, name


@pytest.mark.parametrize(("kind", "values", "column_of"), [
    ("int", sorted(set(INT_EDGES)), lambda c: c),
    ("str", ["", "\x00", "\x00\x00", "\x00a", "\x01", "a", "a\x00", "a\x00\x00", "a\x00b", "a\x01", "ab", "\x7f",
             "\xe9", "\u0100", "\uffff", "\U0001d11e"], lambda c: c),
    ("ts", [MICROS_MIN, -86_400_000_001, -1_000_000, -1, 0, 1, 999_999, 1_000_000, 10**15, MICROS_MAX],
     F.timestamp_micros),
])
def test_binary_order_is_value_order(spark, kind, values, column_of):
    """Spark's binary (unsigned) order of the encodings is the order of the values."""
    assert values == sorted(values)
    shuffled = list(enumerate(values))
    random.Random(1).shuffle(shuffled)
    spark_type = "string" if kind == "str" else "long"
    df = spark.createDataFrame(shuffled, f"i int, v {spark_type}")
    got = [r.i for r in df.orderBy(encode([(kind, column_of(F.col("v"))), ("int", F.lit(0))])).collect()]
    assert got == list(range(len(values)))


@pytest.mark.slow
def test_cost_benchmark_measures_the_codec(spark):
    """`benchmarks/tuple_expr_cost.py` encodes what the Python codec does and runs its sides."""
    bench = benchmark_module("tuple_expr_cost")
    bench.check(spark, 2000)
    results = bench.run(spark, 2000, warm=0, repeat=1)
    assert set(results) == {"inputs", "encode", "encode+encodable"}
