"""Debezium typed values: every Connect / Debezium logical type and connector mode, decoded to the exact canonical
Python value. Expected values are written by hand (or with plain Python arithmetic), never by the decoder."""

from __future__ import annotations

import base64
import datetime as dt
import json
import pickle
from decimal import Decimal
from pathlib import Path

import pytest

from cdcnorm.adapters.debezium import values as V
from cdcnorm.adapters.debezium.fields import DECIMAL, Field, avro_field, connect_field
from cdcnorm.adapters.debezium.unavailable import TOAST, is_unavailable, unavailable_checker
from cdcnorm.adapters.debezium.untyped import UNTYPED_FLAG, untyped_decoder
from cdcnorm.adapters.debezium.values import Modes
from cdcnorm.errors import DecodeError, UsageError

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "debezium"
UTC = dt.UTC
MODES = Modes()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unscaled(n: int) -> str:
    """Base64 of the big-endian two's complement bytes of n (JsonConverter's Decimal form)."""
    return b64(n.to_bytes(max(1, (n.bit_length() + 8) // 8), "big", signed=True))


def dec_field(scale: int, precision: int | None = None, name: str = "d") -> Field:
    params = {"scale": str(scale)}
    if precision is not None:
        params["connect.decimal.precision"] = str(precision)
    return connect_field({"type": "bytes", "optional": True, "name": DECIMAL, "parameters": params,
                            "field": name})


def logical(typ: str, name: str | None, params: dict | None = None) -> Field:
    schema = {"type": typ, "optional": True, "field": "c"}
    if name:
        schema["name"] = name
    if params:
        schema["parameters"] = params
    return connect_field(schema)


def decode(field: Field, value, modes: Modes = MODES, flags: list | None = None):
    return V.value_decoder(field, modes)(value, flags)


# -- decimals -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("wire", "scale", "expected"), [
    ("Aw==", 0, Decimal("3")),                      # the Oracle 2.0 example
    ("/w==", 2, Decimal("-0.01")),                  # -1 in two's complement
    ("AA==", 2, Decimal("0.00")),
    ("AP8=", 2, Decimal("2.55")),                   # 255 needs a leading zero byte to stay positive
    ("/wE=", 0, Decimal("-255")),
    ("gA==", 1, Decimal("-12.8")),
    ("ASw=", 3, Decimal("0.300")),
])
def test_decimal_bytes(wire, scale, expected):
    got = decode(dec_field(scale, 10), wire)
    assert got == expected and str(got) == str(expected)


def test_decimal_beyond_38_digits_is_exact():
    n = int("1" * 35 + "2" * 30)  # MySQL decimal(65,30)
    got = decode(dec_field(30, 65), unscaled(n))
    assert str(got) == "11111111111111111111111111111111111.222222222222222222222222222222"
    neg = decode(dec_field(30, 65), unscaled(-n))
    assert str(neg) == "-11111111111111111111111111111111111.222222222222222222222222222222"
    assert V.column_types(dec_field(30, 65), MODES) == ("org.apache.kafka.connect.data.Decimal(65,30)",
                                                        "decimal(65,30)")


def test_decimal_38_digits():
    n = 10**38 - 1
    assert decode(dec_field(0, 38), unscaled(n)) == Decimal("99999999999999999999999999999999999999")


def test_decimal_raw_bytes_and_avro_decimal():
    assert decode(dec_field(2), b"\xff") == Decimal("-0.01")
    assert str(decode(dec_field(2), Decimal("1.5"))) == "1.50"


@pytest.mark.parametrize(("value", "expected"), [
    (12345.11, "12345.110"),          # Flink CDC: numbers under a Decimal schema
    (1.1, "1.100"),
    (11111, "11111.000"),
    (Decimal("12.5"), "12.500"),
    (Decimal("-0.0005"), "-0.0005"),  # more digits than the scale: as written, never rounded
    (1.2345678987654322e+32, "123456789876543220000000000000000.000"),
])
def test_decimal_given_as_number(value, expected):
    got = decode(dec_field(3, 8), value)
    assert str(got) == expected


def test_decimal_format_numeric_reads_text_as_decimal_text():
    numeric = Modes(decimal_format="numeric")
    assert str(decode(dec_field(2), "12.5", numeric)) == "12.50"
    assert str(decode(dec_field(2), "-7", numeric)) == "-7.00"
    # the default format reads text as Base64: '12.5' is not Base64
    with pytest.raises(DecodeError) as err:
        decode(dec_field(2), "12.5")
    assert err.value.error_class == "bad_base64"


def test_decimal_bad_values():
    with pytest.raises(DecodeError) as err:
        decode(dec_field(2), "@@@@")
    assert err.value.error_class == "bad_base64"
    with pytest.raises(DecodeError) as err:
        decode(dec_field(2), True)
    assert err.value.error_class == "bad_value"
    with pytest.raises(DecodeError) as err:
        decode(dec_field(2), float("nan"))
    assert err.value.error_class == "bad_value"


def test_variable_scale_decimal():
    f = connect_field({"type": "struct", "name": "io.debezium.data.VariableScaleDecimal", "optional": True,
                         "field": "price", "fields": [{"type": "int32", "optional": False, "field": "scale"},
                                                      {"type": "bytes", "optional": False, "field": "value"}]})
    assert str(decode(f, {"scale": 2, "value": unscaled(12345)})) == "123.45"
    assert str(decode(f, {"scale": 3, "value": "/w=="})) == "-0.001"
    assert str(decode(f, {"scale": 0, "value": unscaled(10**40)})) == "1" + "0" * 40
    assert decode(f, {"scale": 1, "value": b"\x0c"}) == Decimal("1.2")  # Avro bytes
    assert decode(f, None) is None
    with pytest.raises(DecodeError):
        decode(f, {"value": "AQ=="})
    assert V.column_types(f, MODES) == ("io.debezium.data.VariableScaleDecimal", "decimal")


def test_decimal_handling_string_and_double():
    source = {"__debezium.source.column.type": "DECIMAL", "__debezium.source.column.length": "10",
              "__debezium.source.column.scale": "3"}
    text = logical("string", None, source)
    string_mode = Modes(decimal_handling="string")
    got = decode(text, "12345.110", string_mode)
    assert type(got) is Decimal and str(got) == "12345.110"
    assert decode(text, "NaN", string_mode) == "NaN"  # PostgreSQL NUMERIC 'NaN' has no Decimal: its text
    assert V.column_types(text, string_mode) == ("string (DECIMAL(10,3))", "decimal(10,3)")
    plain = logical("string", None)
    assert decode(plain, "12345.110", string_mode) == "12345.110"  # no source type: a string is a string
    double = logical("float64", None, source)
    assert decode(double, 12345.11, Modes(decimal_handling="double")) == 12345.11
    assert V.column_types(double, Modes(decimal_handling="double")) == ("float64 (DECIMAL(10,3))", "double")


# -- integers, floats, booleans, strings ---------------------------------------------------------------------------
def test_int64_beyond_2_53_is_exact():
    f = logical("int64", None)
    assert decode(f, 9007199254740993) == 9007199254740993
    assert decode(f, "9007199254740993") == 9007199254740993  # Protobuf writes int64 as text
    assert decode(f, Decimal("9007199254740993")) == 9007199254740993
    assert decode(f, -9223372036854775808) == -9223372036854775808
    with pytest.raises(DecodeError) as err:
        decode(f, 9007199254740992.0)  # a float this large has lost digits already
    assert err.value.error_class == "bad_value"
    with pytest.raises(DecodeError):
        decode(f, str(2**63))
    assert decode(f, 5.0) == 5


@pytest.mark.parametrize(("typ", "good", "bad"), [
    ("int8", 127, 128), ("int16", -32768, -32769), ("int32", 2**31 - 1, 2**31),
])
def test_int_widths(typ, good, bad):
    """Integers the JSON gives pass as they are (the converter wrote them from a Java value of that width);
    text (Protobuf) and integral numbers in other forms are checked against the width."""
    f = logical(typ, None)
    assert decode(f, good) == good
    assert decode(f, str(good)) == good
    assert decode(f, Decimal(good)) == good
    with pytest.raises(DecodeError):
        decode(f, str(bad))
    with pytest.raises(DecodeError):
        decode(f, True)


def test_floats_kept_as_given():
    f32 = logical("float32", None)
    assert decode(f32, 3.140000104904175) == 3.140000104904175  # MySQL FLOAT widened: artefact kept
    assert decode(logical("float64", None), 1) == 1.0 and type(decode(logical("float64", None), 1)) is float
    assert decode(logical("float64", None), Decimal("1.000001")) == 1.000001
    nan = decode(logical("float64", None), "NaN")
    assert nan != nan


def test_boolean_and_strings():
    assert decode(logical("boolean", None), True) is True
    assert decode(logical("boolean", None), 0) is False
    assert decode(logical("boolean", None), "true") is True
    with pytest.raises(DecodeError):
        decode(logical("boolean", None), 2)
    assert decode(logical("string", None), "Apache Paimon") == "Apache Paimon"


@pytest.mark.parametrize("name", ["io.debezium.data.Uuid", "io.debezium.data.Xml", "io.debezium.data.Ltree",
                                  "io.debezium.data.Enum", "io.debezium.data.EnumSet"])
def test_text_types(name):
    assert decode(logical("string", name), "a,b") == "a,b"
    assert V.column_types(logical("string", name), MODES) == (name, "string")
    with pytest.raises(DecodeError):
        decode(logical("string", name), 1)


# -- dates and times ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "value", "expected"), [
    ("io.debezium.time.Date", 19439, dt.date(2023, 3, 23)),
    ("io.debezium.time.Date", -1, dt.date(1969, 12, 31)),
    ("io.debezium.time.Date", 0, dt.date(1970, 1, 1)),
    ("org.apache.kafka.connect.data.Date", 19439, dt.date(2023, 3, 23)),
    ("io.debezium.time.Timestamp", 1679581805000, dt.datetime(2023, 3, 23, 14, 30, 5)),
    ("io.debezium.time.Timestamp", 1679581805123, dt.datetime(2023, 3, 23, 14, 30, 5, 123000)),
    ("io.debezium.time.Timestamp", -86400001, dt.datetime(1969, 12, 30, 23, 59, 59, 999000)),
    ("io.debezium.time.MicroTimestamp", 1679581805123456, dt.datetime(2023, 3, 23, 14, 30, 5, 123456)),
    ("io.debezium.time.MicroTimestamp", -1, dt.datetime(1969, 12, 31, 23, 59, 59, 999999)),
    ("io.debezium.time.NanoTimestamp", 1679581805123456000, dt.datetime(2023, 3, 23, 14, 30, 5, 123456)),
    ("org.apache.kafka.connect.data.Timestamp", 1679581805123, dt.datetime(2023, 3, 23, 14, 30, 5, 123000)),
    ("io.debezium.time.Time", 1000, "00:00:01.000000"),
    ("io.debezium.time.MicroTime", 36803000000, "10:13:23.000000"),
    ("io.debezium.time.MicroTime", 36803000001, "10:13:23.000001"),
    ("io.debezium.time.MicroTime", -1, "-00:00:00.000001"),                    # MySQL TIME is an interval
    ("io.debezium.time.MicroTime", 3020399000000, "838:59:59.000000"),
    ("io.debezium.time.NanoTime", 1_000_000_001, "00:00:01.000000001"),
    ("io.debezium.time.NanoTime", 1_000_001_000, "00:00:01.000001"),
    ("org.apache.kafka.connect.data.Time", 45296789, "12:34:56.789000"),
    ("io.debezium.time.ZonedTime", "11:11:11.00001Z", "11:11:11.00001Z"),
    ("io.debezium.time.Year", 2023, 2023),
    ("io.debezium.time.MicroDuration", 93784500000, "PT26H3M4.5S"),
    ("io.debezium.time.MicroDuration", -93784500000, "PT-26H-3M-4.5S"),
    ("io.debezium.time.MicroDuration", 0, "PT0S"),
    ("io.debezium.time.Interval", "P1Y2M3DT4H5M6.78S", "P1Y2M3DT4H5M6.78S"),
    # time.precision.mode=isostring: the wall clock written with a 'Z'
    ("io.debezium.time.IsoDate", "2005-05-12Z", dt.date(2005, 5, 12)),
    ("io.debezium.time.IsoTime", "10:30:45.123456789Z", "10:30:45.123456789"),
    ("io.debezium.time.IsoTime", "10:30:01Z", "10:30:01.000000"),
    ("io.debezium.time.IsoTime", "02:30:00.5Z", "02:30:00.500000"),
    ("io.debezium.time.IsoTimestamp", "2024-11-20T15:44:43Z", dt.datetime(2024, 11, 20, 15, 44, 43)),
    ("io.debezium.time.IsoTimestamp", "1969-12-31T23:59:59.999999Z", dt.datetime(1969, 12, 31, 23, 59, 59, 999999)),
    ("io.debezium.time.IsoTimestamp", "2011-01-11T16:40:30.123456000Z", dt.datetime(2011, 1, 11, 16, 40, 30, 123456)),
])
def test_temporal(name, value, expected):
    typ = {str: "string"}.get(type(value), "int64")
    if name in ("io.debezium.time.Date", "io.debezium.time.Time", "io.debezium.time.Year",
                "org.apache.kafka.connect.data.Date", "org.apache.kafka.connect.data.Time"):
        typ = "int32"
    flags: list[str] = []
    got = decode(logical(typ, name), value, flags=flags)
    assert got == expected and type(got) is type(expected)
    assert flags == []


@pytest.mark.parametrize(("value", "expected"), [
    (1679581805123456789, "2023-03-23T14:30:05.123456789"),
    (-1, "1969-12-31T23:59:59.999999999"),
    (1, "1970-01-01T00:00:00.000000001"),
])
def test_nano_timestamp_beyond_micros_is_flagged_text(value, expected):
    """Nanoseconds a datetime cannot hold: the value as ISO text with 9 digits (apply reads it truncated)."""
    flags: list[str] = []
    assert decode(logical("int64", "io.debezium.time.NanoTimestamp"), value, flags=flags) == expected
    assert flags == ["timestamp_as_string"]


def test_iso_timestamp_nanos_kept_as_flagged_text():
    flags: list[str] = []
    f = logical("string", "io.debezium.time.IsoTimestamp")
    assert decode(f, "2011-01-11T16:40:30.123456789Z", flags=flags) == "2011-01-11T16:40:30.123456789Z"
    assert flags == ["timestamp_as_string"]
    assert V.column_types(f, MODES) == ("io.debezium.time.IsoTimestamp", "timestamp_ntz")
    with pytest.raises(DecodeError):
        decode(f, "soon")


def test_timestamp_out_of_range_is_flagged_text():
    flags: list[str] = []
    f = logical("int64", "io.debezium.time.MicroTimestamp")
    assert decode(f, 9223372036825200000, flags=flags) == "infinity"  # PostgreSQL 'infinity'
    assert decode(f, -9223372036832400000, flags=flags) == "-infinity"
    assert flags == ["timestamp_as_string"]
    assert decode(f, "1679581805123456") == dt.datetime(2023, 3, 23, 14, 30, 5, 123456)  # Protobuf text
    with pytest.raises(DecodeError):
        decode(f, 1.5)


def test_timestamps_from_fastavro():
    aware = dt.datetime(2023, 3, 23, 14, 30, 5, 123000, tzinfo=UTC)
    f = logical("int64", "org.apache.kafka.connect.data.Timestamp")
    assert decode(f, aware) == dt.datetime(2023, 3, 23, 14, 30, 5, 123000)
    assert decode(logical("int32", "org.apache.kafka.connect.data.Date"), dt.date(2023, 3, 23)) == dt.date(2023, 3, 23)
    assert decode(logical("int32", "org.apache.kafka.connect.data.Time"), dt.time(12, 34, 56, 789000)) == \
        "12:34:56.789000"


@pytest.mark.parametrize(("text", "expected"), [
    ("2023-03-23T22:00:10.123456Z", dt.datetime(2023, 3, 23, 22, 0, 10, 123456, tzinfo=UTC)),
    ("2024-12-17T15:23:38.79Z", dt.datetime(2024, 12, 17, 15, 23, 38, 790000, tzinfo=UTC)),
    ("2023-03-23T07:10:00Z", dt.datetime(2023, 3, 23, 7, 10, tzinfo=UTC)),
    ("2023-03-23T07:10:00.1Z", dt.datetime(2023, 3, 23, 7, 10, 0, 100000, tzinfo=UTC)),
    ("2023-03-23T07:10:00.123456000Z", dt.datetime(2023, 3, 23, 7, 10, 0, 123456, tzinfo=UTC)),
    ("2023-03-23T07:10:00+00:00", dt.datetime(2023, 3, 23, 7, 10, tzinfo=UTC)),
    ("2023-03-23T07:10:00.5+00:00", dt.datetime(2023, 3, 23, 7, 10, 0, 500000, tzinfo=UTC)),
    ("1969-12-31T23:59:59.999999Z", dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
])
def test_zoned_timestamp_utc(text, expected):
    flags: list[str] = []
    got = decode(logical("string", "io.debezium.time.ZonedTimestamp"), text, flags=flags)
    assert got == expected and got.tzinfo is UTC and got.utcoffset() == dt.timedelta(0)
    assert flags == []


@pytest.mark.parametrize("text", [
    "2023-03-23T22:00:10.123456789Z",  # nanoseconds
    "2023-03-23T22:00:10.1234567Z",
    "2023-03-23T22:00:10+02:00",       # SQL Server datetimeoffset / Oracle TIMESTAMP WITH TIME ZONE keep the offset
    "2023-03-23T22:00:10.5-05:30",
    "infinity",
    "-0044-03-15T12:00:00Z",           # BC, and years beyond 9999: outside a datetime
    "+10000-01-01T00:00:00Z",
])
def test_zoned_timestamp_kept_as_flagged_text(text):
    flags: list[str] = []
    assert decode(logical("string", "io.debezium.time.ZonedTimestamp"), text, flags=flags) == text
    assert flags == ["timestamp_as_string"]


def test_zoned_timestamp_bad():
    with pytest.raises(DecodeError) as err:
        decode(logical("string", "io.debezium.time.ZonedTimestamp"), "yesterday")
    assert err.value.error_class == "bad_value"
    with pytest.raises(DecodeError):
        decode(logical("string", "io.debezium.time.ZonedTimestamp"), "2023-03-23T22:00:10")  # no offset
    with pytest.raises(DecodeError):
        decode(logical("string", "io.debezium.time.ZonedTimestamp"), "12345")


def test_flags_are_optional_and_not_repeated():
    f = logical("int64", "io.debezium.time.NanoTimestamp")
    assert decode(f, 1) == "1970-01-01T00:00:00.000000001"  # no flag list: value only
    flags = ["key_change"]
    decode(f, 1, flags=flags)
    decode(f, 2, flags=flags)
    assert flags == ["key_change", "timestamp_as_string"]


# -- JSON, bits, geometry, bytes ------------------------------------------------------------------------------------
def test_json():
    f = logical("string", "io.debezium.data.Json")
    assert decode(f, '{"a": "b"}') == {"a": "b"}
    got = decode(f, '{"n": 1.10, "big": 123456789012345678901234567890, "l": [1, null, true]}')
    assert got == {"n": Decimal("1.10"), "big": 123456789012345678901234567890, "l": [1, None, True]}
    assert str(got["n"]) == "1.10"
    assert decode(f, "not json") == "not json"
    assert V.column_types(f, MODES) == ("io.debezium.data.Json", "json")


def test_bits_and_bit1():
    f = logical("bytes", "io.debezium.data.Bits", {"length": "64"})
    assert decode(f, "xwcAAAAAAAA=") == b"\xc7\x07\x00\x00\x00\x00\x00\x00"
    assert V.column_types(f, MODES) == ("io.debezium.data.Bits", "binary")
    assert decode(logical("boolean", None), True) is True  # BIT(1)


def test_geometry_point():
    point = connect_field({
        "type": "struct", "name": "io.debezium.data.geometry.Point", "optional": True, "field": "_point",
        "fields": [{"type": "float64", "optional": False, "field": "x"},
                   {"type": "float64", "optional": False, "field": "y"},
                   {"type": "bytes", "optional": True, "field": "wkb"},
                   {"type": "int32", "optional": True, "field": "srid"}]})
    got = decode(point, {"x": 1.0, "y": 1.0, "wkb": "AQEAAAAAAAAAAADwPwAAAAAAAPA/", "srid": None})
    # WKB little endian, type 1 (point), x = y = 1.0 (0x3ff0000000000000)
    assert got == {"x": 1.0, "y": 1.0, "wkb": bytes.fromhex("0101000000000000000000f03f000000000000f03f"),
                   "srid": None}
    vendor, canonical = V.column_types(point, MODES)
    assert vendor == "io.debezium.data.geometry.Point"
    assert canonical == "struct<x:double,y:double,wkb:binary,srid:int>"
    geometry = connect_field({
        "type": "struct", "name": "io.debezium.data.geometry.Geometry", "optional": True, "field": "g",
        "fields": [{"type": "bytes", "optional": False, "field": "wkb"},
                   {"type": "int32", "optional": True, "field": "srid"}]})
    assert decode(geometry, {"wkb": "AQ==", "srid": 4326}) == {"wkb": b"\x01", "srid": 4326}


RAW = b"\xfb\xff\x00binary"


@pytest.mark.parametrize(("mode", "text"), [
    ("bytes", "+/8AYmluYXJ5"),
    ("base64", "+/8AYmluYXJ5"),
    ("base64-url-safe", "-_8AYmluYXJ5"),
    ("hex", "fbff0062696e617279"),
])
def test_binary_handling(mode, text):
    modes = Modes(binary_handling=mode)
    blob = logical("string" if mode != "bytes" else "bytes", None, {"__debezium.source.column.type": "BLOB"})
    assert decode(blob, text, modes) == RAW
    assert V.column_types(blob, modes)[1] == "binary"
    assert untyped_decoder("binary", modes)(text) == RAW


def test_bytes_plain():
    f = logical("bytes", None)
    assert decode(f, "Ynl0ZXMAAAAAAA==") == b"bytes\x00\x00\x00\x00\x00"
    assert decode(f, b"raw avro") == b"raw avro"
    with pytest.raises(DecodeError) as err:
        decode(f, "not base64!")
    assert err.value.error_class == "bad_base64"
    with pytest.raises(DecodeError) as err:
        decode(logical("string", None, {"__debezium.source.column.type": "BYTEA"}), "zz", Modes(binary_handling="hex"))
    assert err.value.error_class == "bad_hex"
    # a text column stays text whatever the binary mode
    assert decode(logical("string", None, {"__debezium.source.column.type": "VARCHAR"}), "+/8A",
                  Modes(binary_handling="base64")) == "+/8A"


# -- composites --------------------------------------------------------------------------------------------------------
def test_struct_array_map_recursive():
    schema = {"type": "struct", "optional": False, "name": "srv.db.t.Value", "field": "after", "fields": [
        {"type": "int64", "optional": False, "field": "id"},
        {"type": "array", "optional": True, "field": "ts",
         "items": {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp"}},
        {"type": "map", "optional": True, "field": "prices",
         "keys": {"type": "string", "optional": False},
         "values": {"type": "bytes", "optional": True, "name": DECIMAL, "parameters": {"scale": "2"}}},
        {"type": "struct", "optional": True, "field": "inner", "fields": [
            {"type": "int32", "optional": True, "name": "io.debezium.time.Date", "field": "day"}]},
        {"type": "string", "optional": True, "field": "s"},
    ]}
    f = connect_field(schema)
    assert [m.name for m in f.fields] == ["id", "ts", "prices", "inner", "s"]
    got = decode(f, {"id": 9007199254740993, "ts": [0, None, -1], "prices": {"a": "/w==", "b": None},
                     "inner": {"day": 1}, "s": "x"})
    assert got == {"id": 9007199254740993,
                   "ts": [dt.datetime(1970, 1, 1), None, dt.datetime(1969, 12, 31, 23, 59, 59, 999999)],
                   "prices": {"a": Decimal("-0.01"), "b": None}, "inner": {"day": dt.date(1970, 1, 2)}, "s": "x"}
    assert V.column_types(f.fields[1], MODES) == ("array<io.debezium.time.MicroTimestamp>", "array<timestamp_ntz>")
    assert V.column_types(f.fields[2], MODES)[1] == "map<string,decimal>"
    # JsonConverter writes maps with non-string keys as [[key, value], ...]
    m = connect_field({"type": "map", "optional": True, "keys": {"type": "int32"}, "values": {"type": "string"}})
    assert decode(m, [[1, "a"], [2, None]]) == {"1": "a", "2": None}
    with pytest.raises(DecodeError):
        decode(f, [1, 2])


def test_null_for_every_type():
    fields = [dec_field(2), logical("int64", None), logical("int32", "io.debezium.time.Date"),
              logical("int64", "io.debezium.time.MicroTimestamp"), logical("string", "io.debezium.time.ZonedTimestamp"),
              logical("int64", "io.debezium.time.MicroTime"), logical("string", "io.debezium.data.Json"),
              logical("bytes", None), logical("float32", None), logical("boolean", None), logical("string", None),
              logical("int64", "io.debezium.time.MicroDuration"), logical("int64", "io.debezium.time.NanoTimestamp"),
              connect_field({"type": "array", "items": {"type": "int32"}}),
              connect_field({"type": "map", "keys": {"type": "string"}, "values": {"type": "int32"}}),
              connect_field({"type": "struct", "fields": [{"type": "int32", "field": "a"}]})]
    for f in fields:
        assert decode(f, None) is None, f


# -- schema versions -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("schema", "expected"), [
    ({"type": "int8"}, ("int8", "tinyint")),
    ({"type": "int16"}, ("int16", "smallint")),
    ({"type": "int32"}, ("int32", "int")),
    ({"type": "int64"}, ("int64", "bigint")),
    ({"type": "float32"}, ("float32", "float")),
    ({"type": "float64"}, ("float64", "double")),
    ({"type": "boolean"}, ("boolean", "boolean")),
    ({"type": "string"}, ("string", "string")),
    ({"type": "bytes"}, ("bytes", "binary")),
    ({"type": "bytes", "name": DECIMAL, "parameters": {"scale": "2", "connect.decimal.precision": "10"}},
     ("org.apache.kafka.connect.data.Decimal(10,2)", "decimal(10,2)")),
    ({"type": "bytes", "name": DECIMAL, "parameters": {"scale": "0"}},
     ("org.apache.kafka.connect.data.Decimal(,0)", "decimal")),
    ({"type": "int64", "name": "io.debezium.time.MicroTimestamp"}, ("io.debezium.time.MicroTimestamp", "timestamp_ntz")),
    ({"type": "int64", "name": "io.debezium.time.NanoTimestamp"}, ("io.debezium.time.NanoTimestamp", "timestamp_ntz")),
    ({"type": "string", "name": "io.debezium.time.ZonedTimestamp"}, ("io.debezium.time.ZonedTimestamp", "timestamp")),
    ({"type": "int32", "name": "io.debezium.time.Date"}, ("io.debezium.time.Date", "date")),
    ({"type": "int64", "name": "io.debezium.time.MicroTime"}, ("io.debezium.time.MicroTime", "time")),
    ({"type": "int32", "name": "io.debezium.time.Year"}, ("io.debezium.time.Year", "int")),
    ({"type": "int64", "name": "io.debezium.time.MicroDuration"}, ("io.debezium.time.MicroDuration", "interval")),
    ({"type": "int64", "name": "org.apache.kafka.connect.data.Timestamp"},
     ("org.apache.kafka.connect.data.Timestamp", "timestamp_ntz")),
    ({"type": "string", "parameters": {"__debezium.source.column.type": "VARCHAR",
                                       "__debezium.source.column.length": "255"}},
     ("string (VARCHAR(255))", "string")),
    ({"type": "bytes", "name": DECIMAL, "parameters": {
        "scale": "2", "connect.decimal.precision": "10", "__debezium.source.column.type": "DECIMAL",
        "__debezium.source.column.length": "10", "__debezium.source.column.scale": "2"}},
     ("org.apache.kafka.connect.data.Decimal(10,2) (DECIMAL(10,2))", "decimal(10,2)")),
    ({"type": "bytes", "name": DECIMAL, "parameters": {
        "scale": "0", "__debezium.source.column.type": "BIGINT UNSIGNED", "__debezium.source.column.length": "20"}},
     ("org.apache.kafka.connect.data.Decimal(20,0) (BIGINT UNSIGNED(20))", "decimal(20,0)")),
])
def test_column_types(schema, expected):
    assert V.column_types(connect_field(schema), MODES) == expected


# -- schemaless values -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("declared", "modes", "value", "expected"), [
    (None, MODES, {"a": 1}, {"a": 1}),
    ("decimal(10,2)", MODES, "/w==", Decimal("-0.01")),
    ("decimal(10,2)", MODES, 12.5, Decimal("12.50")),
    ("decimal(10,2)", Modes(decimal_handling="string"), "12.5", Decimal("12.50")),
    ("decimal(10,2)", Modes(decimal_handling="string"), "NaN", "NaN"),
    ("decimal(10,2)", Modes(decimal_handling="double"), 12.5, Decimal("12.50")),
    ("decimal(10,2)", Modes(decimal_format="numeric"), 12.5, Decimal("12.50")),
    ("decimal", MODES, {"scale": 1, "value": "DA=="}, Decimal("1.2")),
    ("decimal", Modes(decimal_handling="string"), "1.20", Decimal("1.20")),
    ("timestamp_ntz", MODES, 1679581805123456, dt.datetime(2023, 3, 23, 14, 30, 5, 123456)),
    ("timestamp_ntz(6)", MODES, 1679581805123456, dt.datetime(2023, 3, 23, 14, 30, 5, 123456)),
    ("timestamp_ntz(3)", MODES, 1679581805123, dt.datetime(2023, 3, 23, 14, 30, 5, 123000)),
    ("timestamp_ntz(0)", MODES, 1679581805000, dt.datetime(2023, 3, 23, 14, 30, 5)),
    ("timestamp_ntz(9)", MODES, 1679581805123456000, dt.datetime(2023, 3, 23, 14, 30, 5, 123456)),
    ("timestamp_ntz", Modes(time_precision="connect"), 1679581805123, dt.datetime(2023, 3, 23, 14, 30, 5, 123000)),
    ("timestamp_ntz", Modes(time_precision="isostring"), "2023-03-23T14:30:05.123456",
     dt.datetime(2023, 3, 23, 14, 30, 5, 123456)),
    ("timestamp", MODES, "2023-03-23T22:00:10.123456Z", dt.datetime(2023, 3, 23, 22, 0, 10, 123456, tzinfo=UTC)),
    ("timestamp", Modes(time_precision="connect"), 0, dt.datetime(1970, 1, 1, tzinfo=UTC)),
    ("date", MODES, 19439, dt.date(2023, 3, 23)),
    ("date", Modes(time_precision="isostring"), "2023-03-23", dt.date(2023, 3, 23)),
    ("date", Modes(time_precision="isostring"), "2005-05-12Z", dt.date(2005, 5, 12)),
    ("timestamp_ntz", Modes(time_precision="isostring"), "2024-11-20T15:44:43Z", dt.datetime(2024, 11, 20, 15, 44, 43)),
    ("time", Modes(time_precision="isostring"), "10:30:45.123456789Z", "10:30:45.123456789"),
    ("time", MODES, 36803000000, "10:13:23.000000"),
    ("time(3)", MODES, 36803000, "10:13:23.000000"),
    ("time(0)", Modes(time_precision="adaptive_time_microseconds"), 36803000000, "10:13:23.000000"),
    ("time", Modes(time_precision="connect"), 36803000, "10:13:23.000000"),
    ("time", Modes(time_precision="isostring"), "10:13:23", "10:13:23.000000"),
    ("time", MODES, "not a time", "not a time"),
    ("json", MODES, '{"a": [1.5]}', {"a": [Decimal("1.5")]}),
    ("variant", MODES, {"a": 1}, {"a": 1}),
    ("interval", MODES, 3600000000, "PT1H"),
    ("interval", MODES, "P1D", "P1D"),
    ("bigint", MODES, "9007199254740993", 9007199254740993),
    ("int", MODES, 7, 7),
    ("double", MODES, 1, 1.0),
    ("boolean", MODES, "false", False),
    ("string", MODES, "x", "x"),
    ("binary", MODES, "AQI=", b"\x01\x02"),
])
def test_untyped(declared, modes, value, expected):
    got = untyped_decoder(declared, modes)(value)
    assert got == expected and type(got) is type(expected)
    if isinstance(expected, Decimal):
        assert str(got) == str(expected)


def test_untyped_nanos_and_unknown():
    flags: list[str] = []
    assert untyped_decoder("timestamp_ntz(9)", MODES)(1, flags) == "1970-01-01T00:00:00.000000001"
    assert untyped_decoder("timestamp_ntz", Modes(time_precision="isostring"))(
        "2023-03-23T14:30:05.123456789", flags) == "2023-03-23T14:30:05.123456789"
    assert flags == ["timestamp_as_string"]
    with pytest.raises(UsageError):
        untyped_decoder("geometry", MODES)
    with pytest.raises(UsageError):
        untyped_decoder("decimal(10", MODES)
    assert UNTYPED_FLAG == "untyped_values"


# -- unavailable values ------------------------------------------------------------------------------------------------
def test_unavailable_placeholder_forms():
    assert TOAST == "__debezium_unavailable_value"
    assert is_unavailable("__debezium_unavailable_value")
    assert is_unavailable("X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ==")  # bytea, Base64 in JSON
    assert is_unavailable(b"__debezium_unavailable_value")              # bytea, raw in Avro
    assert is_unavailable(["__debezium_unavailable_value"])
    assert not is_unavailable("X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ==", logical("string", None))
    for other in (None, "", "x", 1, [], ["a", "__debezium_unavailable_value"], {"a": 1}):
        assert not is_unavailable(other)
    custom = unavailable_checker("hex:deadbeef")
    assert custom(b"\xde\xad\xbe\xef") and custom("3q2+7w==")
    assert custom("__debezium_unavailable_value", logical("string", None))  # SQL Server keeps the default text
    assert not custom("deadbeef") and not custom(b"__debezium_unavailable_value")
    utf8 = unavailable_checker("hex:c3a9")  # Oracle: the placeholder bytes as text
    assert utf8("\u00e9", logical("string", None)) and utf8(b"\xc3\xa9")
    assert unavailable_checker("N/A")("N/A")


# -- modes and caching -------------------------------------------------------------------------------------------------
def test_modes_are_strict_and_hashable():
    with pytest.raises(ValueError):
        Modes(decimal_handling="exact")
    with pytest.raises(ValueError):
        Modes(other=1)
    assert hash(Modes()) == hash(Modes())


def test_decoders_are_built_once_per_field():
    a, b = dec_field(2, 10), dec_field(2, 10)
    assert a == b and a is not b
    assert V.value_decoder(a, MODES) is V.value_decoder(b, MODES)
    assert V.value_decoder(a, MODES) is not V.value_decoder(dec_field(3, 10), MODES)
    again = pickle.loads(pickle.dumps(a))
    assert again == a and hash(again) == hash(a) and "_hash" not in pickle.loads(pickle.dumps(a)).__dict__


# -- Avro schemas from the corpus ---------------------------------------------------------------------------------------
def corpus_json(name: str):
    """A schema file of the corpus (license headers before the JSON are skipped)."""
    if not CORPUS.is_dir():
        pytest.skip(f"the shared corpus is absent ({CORPUS})")
    text = (CORPUS / name).read_text()  # a missing file fails: the corpus is there
    return json.JSONDecoder().raw_decode(text[text.index("{"):])[0]


def test_avro_hudi_mysql_envelope():
    env = avro_field(corpus_json("hudi-mysql-avro-envelope-schema.avsc"))
    assert env.type == "struct" and env.logical == "cdc.test.inventory.item.Envelope"
    by_name = {f.name: f for f in env.fields}
    before, after = by_name["before"], by_name["after"]
    assert before.optional and before.type == "struct"
    assert after.fields == before.fields  # `after` names the record `before` defined
    cols = {f.name: f for f in after.fields}
    assert cols["id"] == Field("id", "bytes", optional=False)
    assert cols["created"].logical == "io.debezium.time.ZonedTimestamp" and not cols["created"].optional
    assert cols["created"].default == "1970-01-01T00:00:00Z"
    assert cols["related_urls"].logical == "io.debezium.data.Json" and cols["related_urls"].optional
    assert cols["status"].logical == "io.debezium.data.Enum"
    assert cols["status"].params == {"allowed": "TO_DO,IN_PROGRESS,IN_REVIEW,APPROVED,PUBLISHED"}
    assert cols["query"] == Field("query", "string", optional=True)
    assert V.column_types(cols["created"], MODES) == ("io.debezium.time.ZonedTimestamp", "timestamp")
    assert V.column_types(cols["account_id"], MODES) == ("int32", "int")
    assert decode(cols["created"], "2023-03-23T07:10:00Z") == dt.datetime(2023, 3, 23, 7, 10, tzinfo=UTC)
    snapshot = {f.name: f for f in by_name["source"].fields}["snapshot"]
    assert snapshot.logical == "io.debezium.data.Enum" and snapshot.optional
    tx = by_name["transaction"]
    assert tx.logical == "event.block" and [f.name for f in tx.fields] == ["id", "total_order", "data_collection_order"]
    assert [f.type for f in tx.fields] == ["string", "int64", "int64"]


def test_avro_flink_mysql_envelope():
    env = avro_field(corpus_json("flink-mysql-avro-envelope-schema.json"))
    after = {f.name: f for f in env.fields}["after"]
    assert [(f.name, f.type, f.optional) for f in after.fields] == [
        ("id", "int64", False), ("name", "string", True), ("description", "string", True),
        ("weight", "float64", True)]
    assert V.column_types(after.fields[3], MODES) == ("float64", "double")


def test_avro_postgres_variable_scale_decimal_and_int16():
    text = (CORPUS / "rw-postgres-avro-schema-and-avrojson.txt").read_text() if CORPUS.is_dir() else None
    if text is None:
        pytest.skip(f"the shared corpus is absent ({CORPUS})")
    key_schema, value_schema = text.splitlines()[0].split("^")
    assert avro_field(json.loads(key_schema)).fields == (Field("order_id", "int32", optional=False),)
    env = avro_field(json.loads(value_schema))
    cols = {f.name: f for f in {f.name: f for f in env.fields}["after"].fields}
    price, status = cols["price"], cols["order_status"]
    assert price.logical == "io.debezium.data.VariableScaleDecimal" and price.optional
    assert [(f.name, f.type) for f in price.fields] == [("scale", "int32"), ("value", "bytes")]
    assert decode(price, {"scale": 2, "value": b"\x30\x39"}) == Decimal("123.45")  # 0x3039 = 12345, raw Avro bytes
    assert status.type == "int16" and status.optional
    assert V.column_types(status, MODES) == ("int16", "smallint")
    assert cols["order_id"].default == 0
    # the Avro JSON lines after the schemas: `after` wrapped in its record name, optional columns in their type
    after = {f.name: f for f in env.fields}["after"]
    first = json.loads(text.splitlines()[1].split("^", 1)[1])
    assert V.avro_json_decoder(after, MODES)(first["after"]) == {
        "order_id": 1, "order_date": 1558430840000, "customer_name": "Bob", "price": None, "product_id": 1,
        "order_status": 1}


def test_avro_named_types_referenced_by_name():
    """AvroConverter writes a named record once; a second column of that type references it by name."""
    vsd = {"type": "record", "name": "VariableScaleDecimal", "namespace": "io.debezium.data",
           "fields": [{"name": "scale", "type": "int"}, {"name": "value", "type": "bytes"}],
           "connect.name": "io.debezium.data.VariableScaleDecimal"}
    record = {"type": "record", "name": "Value", "namespace": "srv.public.t", "fields": [
        {"name": "a", "type": ["null", vsd], "default": None},
        {"name": "b", "type": ["null", "io.debezium.data.VariableScaleDecimal"], "default": None},
        {"name": "c", "type": "VariableScaleDecimal"}]}
    whole = avro_field(record)
    a, b, c = whole.fields
    assert a.logical == b.logical == c.logical == "io.debezium.data.VariableScaleDecimal"
    assert [f.name for f in b.fields] == ["scale", "value"] and b.optional and not c.optional
    names: dict = {}
    one_by_one = [avro_field(f["type"], f["name"], names) for f in record["fields"]]
    assert tuple(one_by_one) == whole.fields
    with pytest.raises(ValueError):
        avro_field(record["fields"][1]["type"], "b")  # alone, the name means nothing


def test_avro_json_encoding():
    """kafka-avro-console-consumer prints unions as {"<type>": value} and bytes as code points 0-255."""
    vsd = {"type": "record", "name": "VariableScaleDecimal", "namespace": "io.debezium.data",
           "fields": [{"name": "scale", "type": "int"}, {"name": "value", "type": "bytes"}],
           "connect.name": "io.debezium.data.VariableScaleDecimal"}
    dec = {"type": "bytes", "connect.name": DECIMAL, "connect.parameters": {"scale": "2"}, "logicalType": "decimal",
           "precision": 10, "scale": 2}
    row = avro_field({"type": "record", "name": "Value", "fields": [
        {"name": "order_id", "type": {"type": "int", "connect.default": 0}, "default": 0},
        {"name": "order_date", "type": ["null", "long"], "default": None},
        {"name": "customer_name", "type": ["null", "string"], "default": None},
        {"name": "price", "type": ["null", vsd], "default": None},
        {"name": "amount", "type": ["null", dec], "default": None},
        {"name": "tags", "type": {"type": "array", "items": ["null", "string"]}},
    ]})
    decoder = V.avro_json_decoder(row, MODES)
    got = decoder({"order_id": 1, "order_date": {"long": 1558430840000}, "customer_name": {"string": "Bob"},
                   "price": {"io.debezium.data.VariableScaleDecimal": {"scale": 2, "value": "\u0000\u00ff"}},
                   "amount": {"bytes": "\u00ff"}, "tags": [{"string": "a"}, None]})
    assert got == {"order_id": 1, "order_date": 1558430840000, "customer_name": "Bob", "price": Decimal("2.55"),
                   "amount": Decimal("-0.01"), "tags": ["a", None]}
    assert decoder({"order_id": 2, "order_date": None, "customer_name": None, "price": None, "amount": None,
                    "tags": []}) == {"order_id": 2, "order_date": None, "customer_name": None, "price": None,
                                     "amount": None, "tags": []}
    with pytest.raises(DecodeError):
        decoder({"amount": {"bytes": "\u0100"}})


def test_avro_logical_types():
    dec = avro_field({"type": "bytes", "scale": 2, "precision": 10, "connect.version": 1,
                        "connect.parameters": {"scale": "2", "connect.decimal.precision": "10"},
                        "connect.name": DECIMAL, "logicalType": "decimal"}, "amount")
    assert (dec.name, dec.type, dec.logical, dec.params) == (
        "amount", "bytes", DECIMAL, {"scale": "2", "connect.decimal.precision": "10"})
    bare = avro_field(["null", {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 1}])
    assert bare.optional and V.column_types(bare, MODES) == ("org.apache.kafka.connect.data.Decimal(5,1)",
                                                             "decimal(5,1)")
    assert avro_field({"type": "int", "logicalType": "date"}).logical == "org.apache.kafka.connect.data.Date"
    assert avro_field({"type": "long", "logicalType": "timestamp-millis"}).logical == \
        "org.apache.kafka.connect.data.Timestamp"
    assert avro_field({"type": "int", "connect.type": "int8"}).type == "int8"
    assert avro_field({"type": "array", "items": "long"}).items == Field(None, "int64", optional=False)
    assert avro_field({"type": "map", "values": "string"}).values == Field(None, "string", optional=False)
    assert avro_field({"type": "enum", "name": "E", "symbols": ["a"]}).type == "string"
    with pytest.raises(ValueError):
        avro_field(["null", "int", "string"])
    with pytest.raises(ValueError):
        avro_field("Unknown")


def test_corpus_flinkcdc_numbers_under_decimal_schema():
    """Flink CDC prints Decimal fields as JSON numbers although the schema says Base64 bytes."""
    if not CORPUS.is_dir():
        pytest.skip(f"the shared corpus is absent ({CORPUS})")
    text = (CORPUS / "paimon-mysql-schema-alltypes-flinkcdc-numeric-decimal.txt").read_text()
    event = json.loads(text[text.index('{"schema"'):], parse_float=Decimal)
    after_schema = next(f for f in event["schema"]["fields"] if f["field"] == "after")
    row = connect_field(after_schema)
    flags: list[str] = []
    got = decode(row, event["payload"]["after"], flags=flags)
    assert flags == []
    assert str(got["pt"]) == "1.1"
    assert str(got["_numeric"]) == "12345.110"
    assert got["_bigint_unsigned"] == Decimal(20000000000)
    assert got["_bit"] == b"\xc7\x07" + bytes(6)
    assert got["_date"] == dt.date(2023, 3, 23)
    assert got["_datetime"] == dt.datetime(2023, 3, 23, 14, 30, 5)
    assert got["_datetime6"] == dt.datetime(2023, 3, 23, 14, 30, 5, 123456)
    assert got["_timestamp"] == dt.datetime(2023, 3, 23, 22, 0, 10, 123456, tzinfo=UTC)
    assert got["_time"] == "10:13:23.000000"
    assert got["_json"] == {"a": "b"}
    assert got["_set"] == "a,b" and got["_year"] == 2023
    assert got["_bin"] == b"bytes\x00\x00\x00\x00\x00"
    assert got["_point"]["wkb"] == bytes.fromhex("0101000000000000000000f03f000000000000f03f")
    assert V.column_types(row.fields[1], MODES) == ("org.apache.kafka.connect.data.Decimal(2,1)", "decimal(2,1)")


def test_decoded_values_are_variant_values():
    """Every decoded value is one the canonical VARIANT encoder takes as it is (no TIME, no custom types)."""
    from cdcnorm.canonical import variant

    cases = [
        (dec_field(2, 10), "/w=="), (logical("int64", None), 9007199254740993),
        (logical("int32", "io.debezium.time.Date"), 19439),
        (logical("int64", "io.debezium.time.MicroTimestamp"), -1),
        (logical("string", "io.debezium.time.ZonedTimestamp"), "2023-03-23T22:00:10.123456Z"),
        (logical("int64", "io.debezium.time.MicroTime"), 36803000000),
        (logical("int64", "io.debezium.time.MicroDuration"), 1),
        (logical("string", "io.debezium.data.Json"), '{"a": [1.5, {"b": null}]}'),
        (logical("bytes", "io.debezium.data.Bits"), "xwcAAAAAAAA="),
        (logical("float32", None), 3.140000104904175),
    ]
    row = {f"c{i}": decode(f, v) for i, (f, v) in enumerate(cases)}
    value, metadata = variant.encode(row)
    assert value and metadata


def test_compare_reads_doubles_of_decimal_handling_double_as_doubles():
    """A connector with decimal.handling.mode=double: its doubles against another vendor's exact decimals."""
    from cdcnorm.adapters import spec

    (rule,) = [r for r in spec("debezium").compare_rules if r.name == "debezium_decimal_double"]
    assert rule.applies("debezium", "double", "decimal(10,2)", "postgresql")
    assert not rule.applies("debezium", "decimal(10,2)", "decimal(10,2)", "postgresql")
    assert not rule.applies("datastream", "double", "decimal(10,2)", "mysql")
