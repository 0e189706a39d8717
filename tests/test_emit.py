"""The emit hot path: its fast paths must give exactly what the general code gives (pure Python, no Spark)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from pyspark.sql.types import VariantVal

from cdcnorm.canonical import tuple_codec, variant
from cdcnorm.canonical.emit import BatchBuilder, event_id_of
from cdcnorm.canonical.record import Change
from cdcnorm.ingest.sources import pack_files
from cdcnorm.runtime.fs import FileEntry

ROW = {
    "id": 7, "name": "Zoë 中文", "balance": Decimal("-1234.50"), "score": 1.5, "active": True, "avatar": b"\x00\x01",
    "born": dt.date(1990, 1, 2), "at": dt.datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=dt.UTC),
    "naive": dt.datetime(2024, 5, 1, 10, 0, 0, 7), "none": None, "big": 2**40,
}


def _general(value: dict) -> tuple[bytes, bytes]:
    """The container path of variant.encode, bypassing the flat fast path."""
    keys = variant._collect_keys(value)
    key_ids, keys_by_id, metadata = variant._dictionary(keys)
    return variant._encode_tree(value, key_ids, keys_by_id), metadata


def test_flat_fast_path_matches_general_encoder():
    assert variant.encode(ROW) == _general(ROW)
    reordered = dict(reversed(list(ROW.items())))
    assert variant.encode(reordered) == variant.encode(ROW)  # field order follows the keys, not insertion
    assert VariantVal(*variant.encode(ROW)).toPython()["balance"] == Decimal("-1234.50")


@pytest.mark.parametrize("value", [Decimal("1.5"), Decimal("-0.00"), Decimal("0E-7"), Decimal("123E-10"),
                                   Decimal("99999999.9"), Decimal("1234567890.12"), Decimal("9" * 38),
                                   Decimal("-" + "9" * 20 + "." + "1" * 18)])
def test_decimal_fast_path_matches_digit_tuple_path(value):
    assert variant._enc_decimal(value) == variant._enc_decimal_general(value)


@pytest.mark.parametrize(("value", "text"), [
    (Decimal("1" * 40), "1" * 40),
    (Decimal("1E+50"), "1" + "0" * 50),
    (Decimal("1" * 38 + "E-39"), "0.0" + "1" * 38),
    (10**40, str(10**40)),
    (Decimal("NaN"), "NaN"),
])
def test_lenient_keeps_numbers_beyond_decimal38_as_exact_strings(value, text):
    encoded, metadata, widened = variant.encode_lenient({"a": 1, "b": value})
    assert widened
    assert VariantVal(encoded, metadata).toPython() == {"a": 1, "b": text}
    with pytest.raises(variant.VariantEncodeError):
        variant.encode({"a": 1, "b": value})


def _change(**kw) -> Change:
    base = dict(vendor="v", format="v.json", stream="s", op="INSERT", sort_parts=(1, 42), id_parts=("INSERT", 42),
                database="db", table="t", primary_keys=["id"], after={"id": 1, "amount": Decimal("1.50")})
    return Change(**{**base, **kw})


def test_change_row_columns_and_flags():
    out = BatchBuilder()
    out.begin_record("f.jsonl", 3, offset="10", raw=b"{}")
    out.change(_change(after={"id": 1, "amount": Decimal("1" * 45)}))
    out.begin_record("f.jsonl", 4)
    out.quarantine("bad_json", "not JSON")
    row, bad = out.flush().to_pylist()
    assert row["flags"] == ["decimal_as_string"]
    assert VariantVal(row["after"]["value"], row["after"]["metadata"]).toPython() == {"id": 1, "amount": "1" * 45}
    assert VariantVal(row["key"]["value"], row["key"]["metadata"]).toPython() == {"id": 1}
    assert row["key_bytes"] == tuple_codec.encode((1,))
    eid = event_id_of("v", "s", ("db", None, "t"), ("INSERT", 42))
    assert row["event_id"] == eid and row["sort_key"] == tuple_codec.encode((1, 42, eid))
    assert row["origin"] == {"uri": "f.jsonl", "partition": None, "offset": "10", "index": 3}
    assert (row["_kind"], row["_records"], row["before"]) == ("change", 1, None)
    assert (bad["_kind"], bad["_rule"], bad["_records"], bad["origin"]["index"]) == ("quarantine", "bad_json", 1, 4)


def test_event_id_prefix_cache_gives_the_plain_encoding():
    import hashlib

    want = hashlib.blake2b(tuple_codec.encode(("v", "s", "db", None, "t", "U", (1, "x"))), digest_size=16).hexdigest()
    assert event_id_of("v", "s", ("db", None, "t"), ("U", (1, "x"))) == want
    assert event_id_of("v", "s", ("db", None, "t"), ["U", [1, "x"]]) == want


def test_rows_before_any_record_have_a_null_origin():
    out = BatchBuilder()
    out.set_context("v", "v.json")
    out.metadata("schema_message")
    assert out.flush().to_pylist()[0]["origin"] is None


def test_pack_files_balances_bytes_heaviest_bin_first():
    files = [FileEntry(f"f{i}", s) for i, s in enumerate([100, 60, 50, 45, 40, 33, 9, 8, 7, 5, 3, 2, 2, 1, 1, 0])]
    bins = pack_files(files, 8)
    loads = [sum(f.size for f in b) for b in bins]
    assert loads == sorted(loads, reverse=True) and max(loads) == 100 and loads[-1] >= 15
    assert sorted(f.path for b in bins for f in b) == sorted(f.path for f in files)
    assert len(pack_files(files[:3], 8)) == 3
