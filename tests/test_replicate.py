"""Qlik Replicate adapter: pure decoding tests (BatchBuilder -> Arrow), then Spark tests through normalize."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import fastavro
import orjson
import pytest

from cdcnorm.adapters import get_adapter
from cdcnorm.adapters.base import MessageMeta
from cdcnorm.adapters.replicate.adapter import ReplicateAdapter
from cdcnorm.adapters.replicate.catalog import Catalog, entry_from_schema_row, load_registry
from cdcnorm.adapters.replicate.envelope import extract_metadata
from cdcnorm.adapters.replicate.files import enqueued_time
from cdcnorm.adapters.replicate.masks import absent_columns, mask_ordinals, mask_value, resolve
from cdcnorm.adapters.replicate.naming import capture_location
from cdcnorm.canonical import tuple_codec
from cdcnorm.canonical.emit import BatchBuilder, event_id_of
from cdcnorm.errors import DecodeError, UsageError
from cdcnorm.testing import AdapterContract
from decoded import changes, decode_files, outcomes
from decoded import rows_of as _rows

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "replicate"
EH = SAMPLES / "eventhubs" / "replicate-ns"
ORDERS_JSON = SAMPLES / "json" / "orders_wide.jsonl"
ORDERS_AVRO = EH / "orders-avro" / "0" / "2024/05/01/10/10/00.avro"
ORDERS_SINK = SAMPLES / "avro" / "orders_wide_sink.avro"
CUSTOMERS_DT = EH / "customers" / "0" / "2024/05/01/11/02/00.avro"
CUSTOMERS_MD = EH / "customers" / "1" / "2024/05/01/11/05/00.avro"
CONTROL = EH / "attrep_apply_exceptions" / "0" / "2024/05/01/12/00/00.avro"
REGISTRY = SAMPLES / "registry"
UTC = dt.UTC


# -- decoding --------------------------------------------------------------------------------------------------


def read(*paths: Path, **options) -> list[dict]:
    """Decode files with read_file, as the pipeline would, and return the decoded rows."""
    return decode_files("replicate", paths, **options)


def decode(
    *values: bytes | str, topic: str | None = None, adapter: ReplicateAdapter | None = None, **options
) -> list[dict]:
    """Decode raw messages with decode_message (Kafka-shaped input)."""
    adapter = adapter or ReplicateAdapter(options)
    out = BatchBuilder()
    for i, v in enumerate(values):
        raw = v.encode() if isinstance(v, str) else v
        out.begin_record(topic, i, partition="0", offset=str(i), raw=raw)
        adapter.decode_message(raw, MessageMeta(topic=topic, partition="0", offset=str(i)), out)
    out.end_record()
    return _rows(out.flush())






def md(
    table: str,
    cols: list[tuple[str, str]],
    version: int = 1,
    pks: tuple[str, ...] = (),
    schema_id: str | None = None,
) -> str:
    """A JSON-envelope MD message for `cols` [(name, type)]."""
    sid = schema_id or f"{table}-{version}".upper().ljust(32, "0")
    return json.dumps(
        {
            "magic": "atMSG",
            "type": "MD",
            "headers": None,
            "messageSchemaId": sid,
            "messageSchema": None,
            "message": {
                "schemaId": sid,
                "lineage": {
                    "server": "srv",
                    "task": "task1",
                    "schema": "S",
                    "table": table,
                    "tableVersion": version,
                    "timestamp": "2024-01-01T00:00:00.000",
                },
                "tableStructure": {
                    "tableColumns": {
                        n: {
                            "ordinal": i + 1,
                            "type": t,
                            "length": 0,
                            "precision": 38 if t == "NUMERIC" else 0,
                            "scale": 4 if t == "NUMERIC" else 0,
                            "primaryKeyPosition": pks.index(n) + 1 if n in pks else 0,
                            "nullable": True,
                        }
                        for i, (n, t) in enumerate(cols)
                    }
                },
                "dataSchema": None,
            },
        }
    )


def dt_msg(
    data: dict | None,
    op: str = "UPDATE",
    before: dict | None = None,
    change: str | None = None,
    column: str | None = None,
    cs: str = "20240101000000000000000000000000001",
    sid: str | None = None,
    **hdr,
) -> str:
    headers = {
        "operation": op,
        "changeSequence": cs,
        "timestamp": "2024-01-01T00:00:01.250",
        "streamPosition": "pos-1",
        "transactionId": "TX1",
        "changeMask": change,
        "columnMask": column,
        "transactionEventCounter": 3,
        "transactionLastEvent": False,
        **hdr,
    }
    return json.dumps(
        {
            "magic": "atMSG",
            "type": "DT",
            "headers": None,
            "messageSchemaId": sid,
            "messageSchema": None,
            "message": {"data": data, "beforeData": before, "headers": headers},
        }
    )


# -- masks ---------------------------------------------------------------------------------------------------
def test_mask_is_one_big_endian_number():
    assert mask_value("008080") == 0x8080
    assert mask_value(b"\x00\x80\x80") == 0x8080
    assert mask_value(" 0A ") == 10
    assert mask_value("") is None and mask_value(None) is None
    assert mask_ordinals(0x8080) == [8, 16]
    assert mask_ordinals(0) == []


@pytest.mark.parametrize("bad", ["ZZ01", "0x12", "12 34", "1_0", "-1"])
def test_bad_hex_mask_is_a_decode_error(bad):
    with pytest.raises(DecodeError) as info:
        mask_value(bad)
    assert info.value.error_class == "bad_hex"


@pytest.mark.parametrize(
    ("mask", "ordinals"),
    [
        ("05", [1, 3]),  # 1 byte
        ("8001", [1, 16]),  # 2 bytes
        ("020208", [4, 10, 18]),  # 3 bytes
        ("0000800000000000000102", [2, 9, 72]),  # 11 bytes, left-padded
        (b"\x01" + b"\x00" * 15, [121]),  # Avro bytes, 16 bytes
    ],
)
def test_mask_ordinals_any_width(mask, ordinals):
    assert mask_ordinals(mask_value(mask)) == ordinals


def test_resolve_ignores_bits_beyond_columns():
    names = {1: "a", 2: "b", 3: "c"}
    got = resolve("0F", names, 3)
    assert got.columns == ["a", "b", "c"] and got.beyond == [4]
    assert absent_columns("05", names) == ["b"]
    assert absent_columns(None, names) is None


# exact changed_columns / missing_columns through the adapter, masks of 1, 2, 3 and 9+ bytes
def _cols(n: int) -> list[tuple[str, str]]:
    return [(f"c{i:02d}", "INT4") for i in range(1, n + 1)]


@pytest.mark.parametrize(
    ("ncols", "change", "column", "nulls", "changed", "missing", "beyond"),
    [
        (5, "12", "1B", ["c03"], ["c02", "c05"], ["c03"], False),  # 1 byte
        (12, "0801", "0FF7", ["c04"], ["c01", "c12"], ["c04"], False),  # 2 bytes
        (12, "0000", "1FFF", [], [], [], True),  # 2 bytes, ordinal 13 beyond the table
        (18, "020208", "03E7FF", ["c12", "c13"], ["c04", "c10", "c18"], ["c12", "c13"], False),  # 3 bytes
        (
            72,
            "00" + f"{(1 << 1) | (1 << 8) | (1 << 63) | (1 << 64) | (1 << 71):018X}",
            "00" + "FF" * 9,
            [],
            ["c02", "c09", "c64", "c65", "c72"],
            [],
            False,
        ),  # 10 bytes (> 64 bits)
    ],
)
def test_masks_decode_to_exact_columns(ncols, change, column, nulls, changed, missing, beyond):
    cols = _cols(ncols)
    row = {n: (None if n in nulls else i) for i, (n, _) in enumerate(cols)}
    rows = changes(
        decode(
            md("T", cols, pks=("c01",)),
            dt_msg(row, before=row, change=change, column=column, sid="T-1".ljust(32, "0")),
        )
    )
    assert len(rows) == 1
    assert rows[0]["changed_columns"] == changed
    assert rows[0]["missing_columns"] == missing
    assert ("mask_bits_beyond_columns" in rows[0]["flags"]) is beyond


def test_masks_without_metadata_use_data_field_order():
    data = {"z": 1, "a": None, "m": 3}
    [row] = changes(decode(dt_msg(data, before=data, change="04", column="05")))
    assert row["changed_columns"] == ["m"]
    assert row["missing_columns"] == ["a"]
    assert row["flags"] == ["no_schema"]


def test_column_mask_zero_with_a_value_is_kept_and_flagged():
    data = {"a": 1, "b": "x"}
    [row] = changes(decode(dt_msg(data, op="INSERT", change="03", column="01")))
    assert row["missing_columns"] == []
    assert row["after"] == {"a": 1, "b": "x"}
    assert "column_mask_conflict" in row["flags"]


# -- the wide table: ops, images, typed values, ids and order ------------------------------------------------
WIDE_OPS = ["SNAPSHOT", "SNAPSHOT", "INSERT", "UPDATE", "UPDATE", "DELETE", "INSERT", "DELETE"]


def test_wide_table_json_ops_and_outcomes():
    rows = read(ORDERS_JSON)
    assert outcomes(rows)[0] == ("metadata", "replicate_metadata")
    ch = changes(rows)
    assert [r["op"] for r in ch] == WIDE_OPS
    assert [r["vendor_op"] for r in ch] == [
        "REFRESH",
        "REFRESH",
        "INSERT",
        "UPDATE",
        "UPDATE",
        "UPDATE",
        "UPDATE",
        "DELETE",
    ]
    assert {(r["schema"], r["table"], r["stream"], r["format"]) for r in ch} == {
        ("SALES", "ORDERS_WIDE", "sales-to-eventhubs", "replicate.json")  # the MD lineage's task
    }
    assert all(r["primary_keys"] == ["ORDER_ID", "LINE_NO"] for r in ch)
    assert [r["changed_columns"] for r in ch] == [
        None,
        None,
        [
            "ORDER_ID",
            "LINE_NO",
            "CUSTOMER",
            "AMOUNT",
            "QTY",
            "PRICE",
            "ORDER_DATE",
            "SHIP_TIME",
            "CREATED_AT",
            "UPDATED_AT",
            "ACTIVE",
            "PAYLOAD",
            "NOTES",
            "REGION",
            "PRIORITY",
            "CODE",
            "WEIGHT",
            "STATUS",
        ],
        ["AMOUNT", "UPDATED_AT", "STATUS"],
        ["STATUS"],
        None,
        ["LINE_NO"],
        None,
    ]
    assert [r["missing_columns"] for r in ch] == [[], [], [], [], ["PAYLOAD", "NOTES"], [], [], []]
    assert [r["flags"] for r in ch] == [[], [], [], [], [], ["key_change"], ["key_change"], []]


def test_wide_table_typed_values():
    ch = changes(read(ORDERS_JSON))
    refresh = ch[0]["after"]
    assert refresh["ORDER_ID"] == 9007199254740993
    assert refresh["AMOUNT"] == Decimal("12345678.90")
    assert refresh["QTY"] == 18446744073709551615
    assert refresh["PRICE"] == 19.99
    assert refresh["ORDER_DATE"] == dt.date(2024, 5, 1)
    assert refresh["SHIP_TIME"] == "13:45:10.123000"  # VARIANT has no TIME type: ISO text
    assert refresh["CREATED_AT"] == dt.datetime(2024, 5, 1, 10, 0, 0, 123456)  # DATETIME is naive
    assert refresh["ACTIVE"] is True
    assert refresh["PAYLOAD"] == bytes.fromhex("DEADBEEF00")
    assert refresh["REGION"] == "Zürich"
    assert (refresh["PRIORITY"], refresh["CODE"], refresh["WEIGHT"]) == (-3, 200, 1.5)
    assert ch[0]["key"] == {"ORDER_ID": 9007199254740993, "LINE_NO": 1}
    assert ch[0]["before"] is None
    assert ch[0]["source_ts"] is None and ch[0]["position"] is None and ch[0]["tx_id"] is None


def test_wide_table_images_follow_ops():
    ch = changes(read(ORDERS_JSON))
    update = ch[3]
    assert update["before"]["AMOUNT"] == Decimal("-42.00") and update["after"]["AMOUNT"] == Decimal("-40.50")
    assert update["after"]["UPDATED_AT"] == dt.datetime(2024, 5, 1, 10, 6, 0, 500000)
    delete_half, insert_half = ch[5], ch[6]
    assert delete_half["key"] == {"ORDER_ID": 9007199254740993, "LINE_NO": 2} and delete_half["after"] is None
    assert (
        insert_half["key"] == {"ORDER_ID": 9007199254740993, "LINE_NO": 3} and insert_half["before"] is None
    )
    assert delete_half["position"] == insert_half["position"]
    delete = ch[7]
    assert delete["after"] is None and delete["before"]["STATUS"] == "PAID"
    assert delete["key"] == {"ORDER_ID": 1002, "LINE_NO": 1}


def test_headers_become_time_transaction_and_position():
    ins = changes(read(ORDERS_JSON))[2]
    assert ins["source_ts"] == dt.datetime(2024, 5, 1, 10, 5, tzinfo=UTC)
    assert (ins["tx_id"], ins["tx_seq"], ins["tx_last"]) == ("00000000000000000000000000010001", 1, False)
    assert ins["position"] == "00000000.01ab5068.00000001.0000.02.0000:88.101.16"
    assert ins["schema_version"] == "9D0C9DE54F79A0C1BFB59B1FEC6AE845"


def test_event_id_and_sort_key_recipe():
    ch = changes(read(ORDERS_JSON))
    ins = ch[2]
    cs = 20240501100500000000000000000000101  # the INSERT's headers.changeSequence
    assert ins["event_id"] == event_id_of(
        "replicate", "sales-to-eventhubs", (None, "SALES", "ORDERS_WIDE"), (cs, "INSERT")
    )
    assert tuple_codec.decode(ins["sort_key"]) == (1, cs, 1, ins["event_id"])
    assert tuple_codec.decode(ch[0]["sort_key"])[:2] == (0, 0)
    # snapshot rows sort first; CDC rows by changeSequence as a number
    keys = [r["sort_key"] for r in ch]
    assert sorted(keys)[:2] == sorted(keys[:2]) and sorted(keys)[2:] == keys[2:]
    assert len({r["event_id"] for r in ch}) == len(ch)


def test_event_ids_are_stable_and_refresh_ids_use_the_row():
    first, again = changes(read(ORDERS_JSON)), changes(read(ORDERS_JSON))
    assert [r["event_id"] for r in first] == [r["event_id"] for r in again]
    row = {"id": 1, "v": "a"}
    a = changes(decode(dt_msg(row, op="REFRESH", cs="", change=None, column=None), topic="t"))[0]
    b = changes(decode(dt_msg(row, op="REFRESH", cs="", change=None, column=None, timestamp=""), topic="t"))[
        0
    ]
    c = changes(decode(dt_msg({"id": 1, "v": "b"}, op="REFRESH", cs=""), topic="t"))[0]
    assert a["event_id"] == b["event_id"] != c["event_id"]


def test_avro_envelope_matches_json():
    js, av = changes(read(ORDERS_JSON)), changes(read(ORDERS_AVRO))
    assert [r["op"] for r in av] == WIDE_OPS
    for j, a in zip(js, av, strict=True):
        for col in (
            "key",
            "before",
            "after",
            "changed_columns",
            "missing_columns",
            "flags",
            "tx_seq",
            "position",
            "source_ts",
            "primary_keys",
            "schema_version",
        ):
            assert j[col] == a[col], col
    assert {r["format"] for r in av} == {"replicate.avro"}
    assert {r["stream"] for r in av} == {"orders-avro"}


def test_avro_container_of_envelopes_matches_json():
    """A sink's Avro container of MessageEnvelope records decodes like the messages themselves."""
    rows = read(ORDERS_SINK)
    assert outcomes(rows)[0] == ("metadata", "replicate_metadata")
    js, av = changes(read(ORDERS_JSON)), changes(rows)
    assert [r["op"] for r in av] == WIDE_OPS
    for j, a in zip(js, av, strict=True):
        for col in ("key", "before", "after", "changed_columns", "missing_columns", "flags", "position",
                    "source_ts", "primary_keys", "schema_version"):
            assert j[col] == a[col], col
    assert {r["format"] for r in av} == {"replicate.avro"}
    assert {r["stream"] for r in av} == {"sales-to-eventhubs"}  # the task, as for the JSON file: same ids
    assert [r["event_id"] for r in av] == [r["event_id"] for r in js]
    assert av[2]["origin"] == {"uri": str(ORDERS_SINK), "partition": None, "offset": None, "index": 3}
    assert ReplicateAdapter.sniff("x.avro", ORDERS_SINK.read_bytes()[:4096])
    with ORDERS_SINK.open("rb") as fh:
        [entry] = ReplicateAdapter().metadata_from_file(str(ORDERS_SINK), fh)
    assert entry["table"] == "ORDERS_WIDE" and len(entry["columns"]) == 18


def test_avro_container_of_other_records_is_quarantined(tmp_path):
    path = tmp_path / "other.avro"
    schema = {"type": "record", "name": "Other", "fields": [{"name": "x", "type": "int"}]}
    with path.open("wb") as fh:
        fastavro.writer(fh, fastavro.parse_schema(schema), [{"x": 1}, {"x": 2}])
    assert outcomes(read(path)) == [("quarantine", "unsupported_format")]


def test_capture_origin_and_enqueued_time():
    rows = read(ORDERS_AVRO)
    ins = changes(rows)[2]
    assert ins["origin"] == {"uri": str(ORDERS_AVRO), "partition": "0", "offset": "3", "index": 3}
    assert ins["capture_ts"] == dt.datetime(2024, 5, 1, 10, 10, 3, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("11/16/2016 4:44:11 PM", dt.datetime(2016, 11, 16, 16, 44, 11, tzinfo=UTC)),
        ("2/6/2023 6:29:45 PM", dt.datetime(2023, 2, 6, 18, 29, 45, tzinfo=UTC)),
        ("1/1/2024 12:00:01 AM", dt.datetime(2024, 1, 1, 0, 0, 1, tzinfo=UTC)),
        ("1/1/2024 12:30:00 PM", dt.datetime(2024, 1, 1, 12, 30, tzinfo=UTC)),
        ("not a time", None),
    ],
)
def test_enqueued_time_utc(text, expected):
    assert enqueued_time(text) == expected


def test_capture_location():
    assert capture_location("abfss://c@a.dfs.core.windows.net/ns/hub-1/3/2017/12/08/03/03/17.avro") == (
        "hub-1",
        "3",
    )
    assert capture_location("/tmp/whatever.avro") == (None, None)


def test_schema_version_from_metadata():
    rows = read(ORDERS_JSON)
    [schema] = [json.loads(r["_schema"]) for r in rows if r["_kind"] == "schema"]
    assert schema["table"] == "ORDERS_WIDE" and schema["schema"] == "SALES"
    assert schema["schema_version"] == "9D0C9DE54F79A0C1BFB59B1FEC6AE845"
    assert schema["first_seen"] == "2024-05-01T09:59:00+00:00"
    cols = {c["name"]: c for c in schema["columns"]}
    assert len(cols) == 18
    assert (cols["AMOUNT"]["vendor_type"], cols["AMOUNT"]["canonical_type"]) == (
        "NUMERIC(12,2)",
        "decimal(12,2)",
    )
    assert (cols["QTY"]["vendor_type"], cols["QTY"]["canonical_type"]) == ("UINT8", "decimal(20,0)")
    assert (cols["CREATED_AT"]["canonical_type"], cols["PAYLOAD"]["canonical_type"]) == (
        "timestamp_ntz",
        "binary",
    )
    assert (cols["LINE_NO"]["pk_position"], cols["LINE_NO"]["ordinal"]) == (2, 2)


# -- metadata catalog, DT before MD, retry -------------------------------------------------------------------
def test_dt_before_md_in_another_file_is_quarantined_then_decoded_with_the_catalog():
    rows = read(CUSTOMERS_DT)
    assert outcomes(rows) == [("quarantine", "schema_not_found")] * 2
    assert "A7825303AAA2FF5CE998ED25079531EF" in rows[0]["_message"]
    with CUSTOMERS_MD.open("rb") as fh:
        entries = ReplicateAdapter().metadata_from_file(str(CUSTOMERS_MD), fh)
    assert [(e["table"], e["table_version"], e["schema_id"]) for e in entries] == [
        ("CUSTOMERS", 1, "A7825303AAA2FF5CE998ED25079531EF")
    ]
    entries = orjson.loads(orjson.dumps(entries))  # serialisable, as the pipeline ships them
    ch = changes(read(CUSTOMERS_DT, catalog_entries=entries))
    assert [r["op"] for r in ch] == ["INSERT", "UPDATE"]
    assert ch[0]["after"] == {"CUST_ID": 1, "NAME": "Ada", "BALANCE": Decimal("100.25")}
    assert ch[1]["changed_columns"] == ["NAME"] and ch[1]["primary_keys"] == ["CUST_ID"]
    assert ch[0]["stream"] == "customers" and ch[0]["origin"]["offset"] == "40"
    # quarantine retry: the raw bytes alone, with the catalog, decode to the same event ids
    again = changes(decode(rows[0]["_raw"], rows[1]["_raw"], topic="customers", catalog_entries=entries))
    assert [r["event_id"] for r in again] == [r["event_id"] for r in ch]


def test_retry_with_only_the_origin_uri_keeps_stream_and_ids():
    entries = ReplicateAdapter().metadata_from_file(str(CUSTOMERS_MD), CUSTOMERS_MD.open("rb"))
    rows = read(CUSTOMERS_DT)
    first = changes(read(CUSTOMERS_DT, catalog_entries=entries))
    adapter = ReplicateAdapter({"catalog_entries": entries})
    out = BatchBuilder()
    out.begin_record(str(CUSTOMERS_DT), 0, raw=rows[0]["_raw"])
    adapter.decode_message(rows[0]["_raw"], MessageMeta(uri=str(CUSTOMERS_DT)), out)
    [row] = _rows(out.flush())
    assert (row["stream"], row["event_id"]) == ("customers", first[0]["event_id"])


def test_json_dt_before_md_in_the_same_file_uses_the_prescan():
    path = SAMPLES / "json" / "customers_dt_before_md.jsonl"
    ch = changes(read(path))
    assert ch[0]["after"]["BALANCE"] == Decimal("100.25") and ch[0]["flags"] == []
    assert ch[0]["table"] == "CUSTOMERS"
    raw = changes(read(path, prescan=False))
    assert raw[0]["after"]["BALANCE"] == "100.25" and raw[0]["flags"] == ["no_schema"]
    assert raw[0]["table"] is None


def test_json_dt_without_schema_id_matches_metadata_by_table_and_columns():
    meta = md("ITEMS", [("id", "INT4"), ("price", "NUMERIC")], pks=("id",))
    data = dt_msg({"id": 1, "price": "1.5000"}, op="INSERT", change="03", column="03")
    [row] = changes(decode(meta, data, topic="ITEMS"))
    assert row["after"]["price"] == Decimal("1.5000") and row["primary_keys"] == ["id"]
    assert row["schema"] == "S" and row["flags"] == []
    [other] = changes(decode(meta, dt_msg({"id": 1, "other": 2}, op="INSERT"), topic="ITEMS"))
    assert other["flags"] == ["no_schema"] and other["table"] == "ITEMS"


def test_extract_metadata_json_and_avro():
    with ORDERS_JSON.open("rb") as fh:
        lines = fh.read().splitlines()
    [entry] = extract_metadata(lines[0])
    assert entry["table"] == "ORDERS_WIDE" and entry["table_version"] == 1 and len(entry["columns"]) == 18
    assert entry["data_schema"].startswith('{"type":"record","name":"DataRecord"')
    assert (
        extract_metadata(lines[1]) == [] and extract_metadata(b"junk") == [] and extract_metadata(None) == []
    )
    with ORDERS_AVRO.open("rb") as fh:
        avro_entries = ReplicateAdapter().metadata_from_file(str(ORDERS_AVRO), fh)
    assert [e["columns"] for e in avro_entries] == [entry["columns"]]


def test_catalog_lookups():
    cat = Catalog()
    v1 = extract_metadata(md("T", [("a", "INT4")], 1).encode())[0]
    v3 = extract_metadata(md("T", [("a", "INT4"), ("b", "INT4")], 3).encode())[0]
    cat.add(v3)
    cat.add(v1)
    assert cat.get(v1["schema_id"]) is v1
    assert cat.previous(v3) is v1 and cat.previous(v1) is None
    assert cat.match(None, "T", ["a", "b"]) is v3 and cat.match(None, "t", ["a"]) is v1
    assert cat.match(None, None, ["a"]) is v1 and cat.match(None, None, ["x"]) is None


def test_entry_rebuilt_from_a_stored_schema_version():
    row = {
        "schema_version": "ABC",
        "schema": "S",
        "table": "T",
        "columns": [
            {"name": "id", "vendor_type": "INT4", "ordinal": 1, "pk_position": 1, "nullable": False},
            {
                "name": "amt",
                "vendor_type": "NUMERIC(10,2)",
                "ordinal": 2,
                "pk_position": None,
                "nullable": True,
            },
            {"name": "s", "vendor_type": "STRING(5)", "ordinal": 3, "pk_position": None, "nullable": True},
        ],
    }
    entry = entry_from_schema_row(row)
    assert [
        (c["type"], c["length"], c["precision"], c["scale"], c["pk_position"]) for c in entry["columns"]
    ] == [("INT4", None, None, None, 1), ("NUMERIC", None, 10, 2, 0), ("STRING", 5, None, None, 0)]
    [r] = changes(
        decode(dt_msg({"id": 1, "amt": "2.50", "s": "x"}, op="INSERT", sid="ABC"), catalog_entries=[entry])
    )
    assert r["after"]["amt"] == Decimal("2.50") and r["primary_keys"] == ["id"] and r["table"] == "T"


# -- DDL -----------------------------------------------------------------------------------------------------
def test_ddl_version_change():
    rows = read(SAMPLES / "json" / "products_ddl.jsonl")
    assert [k for k, _ in outcomes(rows)] == ["metadata", "change", "change", "change"]
    ch = changes(rows)
    assert [r["op"] for r in ch] == ["INSERT", "DDL", "UPDATE"]
    ddl = ch[1]
    assert ddl["ddl_changes"] == [
        {"action": "ALTER_COLUMN", "column": "PRICE", "new_name": None, "type": "NUMERIC(12,2)"},
        {"action": "ADD_COLUMN", "column": "COLOR", "new_name": None, "type": "STRING(10)"},
        {"action": "DROP_COLUMN", "column": "OLD_CODE", "new_name": None, "type": "STRING(5)"},
    ]
    assert ddl["schema_version"] == "89F7D216F024D4DF658079B05CD9ADA5"
    assert ddl["after"] == {
        "tableVersion": 2,
        "previousTableVersion": 1,
        "previousSchemaId": "E8A3E324DFD468F1C9493F9A5AD50188",
    }
    assert ddl["source_ts"] == dt.datetime(2024, 5, 1, 8, 30, tzinfo=UTC)
    assert ch[0]["sort_key"] < ddl["sort_key"] < ch[2]["sort_key"]
    assert ch[2]["after"] == {"ID": 7, "NAME": "Widget", "PRICE": Decimal("1234567890.99"), "COLOR": "red"}
    assert ch[2]["changed_columns"] == ["PRICE", "COLOR"]
    versions = [json.loads(r["_schema"])["schema_version"] for r in rows if r["_kind"] == "schema"]
    assert versions == ["E8A3E324DFD468F1C9493F9A5AD50188", "89F7D216F024D4DF658079B05CD9ADA5"]


def test_ddl_is_found_with_the_old_version_from_the_catalog():
    v1, v2 = md("T", [("a", "INT4")], 1), md("T", [("a", "INT8"), ("b", "STRING")], 2)
    entries = extract_metadata(v1.encode())
    [ddl] = changes(decode(v2, catalog_entries=entries))
    assert ddl["op"] == "DDL" and [c["action"] for c in ddl["ddl_changes"]] == ["ALTER_COLUMN", "ADD_COLUMN"]
    # the older MD seen after the newer one is not a schema change
    assert outcomes(decode(v1, catalog_entries=extract_metadata(v2.encode()))) == [
        ("metadata", "replicate_metadata")
    ]


# -- control tables, registry, table names -------------------------------------------------------------------
def test_control_table_rows():
    [row] = changes(read(CONTROL))
    assert (row["op"], row["vendor_op"], row["table"]) == ("CONTROL", "INSERT", "attrep_apply_exceptions")
    assert row["after"]["data"]["ERROR"].startswith("RetCode: SQL_ERROR")
    assert row["after"]["beforeData"] is None
    assert row["before"] is None and row["primary_keys"] is None
    assert row["capture_ts"] == dt.datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def test_control_table_by_topic_and_its_metadata():
    rows = decode(
        md("attrep_status", [("SERVER_NAME", "STRING")]),
        dt_msg({"SERVER_NAME": "x"}, op="UPDATE", before={"SERVER_NAME": "y"}),
        topic="attrep_status",
    )
    assert outcomes(rows) == [("metadata", "replicate_metadata"), ("change", None)]
    assert changes(rows)[0]["op"] == "CONTROL"


def test_schema_registry_wire_format():
    paths = [SAMPLES / "confluent" / "items_insert.bin", SAMPLES / "confluent" / "items_update.bin"]
    rows = read(*paths, schema_registry=str(REGISTRY))
    ins, upd = changes(rows)
    assert (ins["op"], ins["schema"], ins["table"], ins["format"]) == (
        "INSERT",
        "SALES",
        "ITEMS",
        "replicate.avro_registry",
    )
    assert ins["after"] == {
        "ITEM_ID": 5,
        "NAME": "Bolt",
        "PRICE": Decimal("0.10"),
        "UPDATED": dt.datetime(2024, 5, 1, 13, 0, 0, 250000),
    }
    assert upd["changed_columns"] == ["PRICE", "UPDATED"] and upd["before"]["PRICE"] == Decimal("0.10")
    assert ins["flags"] == ["no_schema"] and ins["schema_version"] == "registry:1001"
    schemas = [json.loads(r["_schema"]) for r in rows if r["_kind"] == "schema"]
    # one raw message per file, no topic, no MD: one stream named after the vendor (never the file names)
    assert [s["stream"] for s in schemas] == ["replicate"]
    assert [c["canonical_type"] for c in schemas[0]["columns"]] == [
        "bigint",
        "string",
        "decimal(10,2)",
        "timestamp_ntz",
    ]
    assert outcomes(read(paths[0])) == [("quarantine", "schema_not_found")]


def test_registry_file_layouts(tmp_path):
    schema = (REGISTRY / "1001.avsc").read_text()
    (tmp_path / "answer.json").write_text(json.dumps({"1001": {"schema": schema}}))
    (tmp_path / "list.json").write_text(
        json.dumps([{"id": 1001, "subject": "items-value", "schema": schema}])
    )
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "1001.json").write_text(json.dumps({"schema": schema}))
    for source in ("answer.json", "list.json", "folder"):
        assert json.loads(load_registry(str(tmp_path / source))[1001]) == json.loads(schema)
    with pytest.raises(UsageError):
        load_registry("https://registry.example.com")


def test_table_from_topic_mapping_default_and_field():
    msg = dt_msg({"ID": 1, "tableName": "kit"}, op="INSERT")
    assert changes(decode(msg, topic="t1"))[0]["table"] == "t1"
    mapped = changes(decode(msg, topic="t1", topic_tables={"t1": "HR.EMP"}))[0]
    assert (mapped["schema"], mapped["table"]) == ("HR", "EMP")
    assert changes(decode(msg, default_table="X.Y"))[0]["table"] == "Y"
    assert changes(decode(msg, table_field="tableName", topic="t1"))[0]["table"] == "kit"
    assert changes(decode(msg, topic="t1", stream="task-7"))[0]["stream"] == "task-7"


def test_mysql_family_puts_the_schema_in_database():
    [row] = changes(
        decode(
            md("T", [("a", "INT4")]),
            dt_msg({"a": 1}, op="INSERT", sid="T-1".ljust(32, "0")),
            source_db="mysql",
        )
    )
    assert (row["database"], row["schema"], row["source_db"]) == ("S", None, "mysql")


# -- value types ---------------------------------------------------------------------------------------------
def test_temporal_values_and_precision():
    cols = [
        ("d", "DATE"),
        ("t", "TIME"),
        ("ts", "DATETIME"),
        ("n", "NUMERIC"),
        ("u", "UINT8"),
        ("b", "BLOB"),
        ("f", "REAL4"),
        ("ok", "BOOLEAN"),
    ]
    data = {
        "d": "2023-03-21",
        "t": "14:34:21",
        "ts": "2023-03-21 14:34:21.000000",
        "n": "-0.0001",
        "u": "18446744073709551615",
        "b": "00ff",
        "f": 0.5,
        "ok": False,
    }
    [row] = changes(decode(md("V", cols), dt_msg(data, op="INSERT", sid="V-1".ljust(32, "0"))))
    assert row["after"] == {
        "d": dt.date(2023, 3, 21),
        "t": "14:34:21",
        "ts": dt.datetime(2023, 3, 21, 14, 34, 21),
        "n": Decimal("-0.0001"),
        "u": 18446744073709551615,
        "b": b"\x00\xff",
        "f": 0.5,
        "ok": False,
    }
    fine = {**data, "ts": "2023-03-21 14:34:21.123456789", "t": "14:34:21.1234567"}
    [row] = changes(decode(md("V", cols), dt_msg(fine, op="INSERT", sid="V-1".ljust(32, "0"))))
    assert row["after"]["ts"] == "2023-03-21 14:34:21.123456789" and row["after"]["t"] == "14:34:21.1234567"
    assert row["flags"] == ["timestamp_as_string"]
    padded = {**data, "ts": "2023-03-21T14:34:21.123456000"}
    [row] = changes(decode(md("V", cols), dt_msg(padded, op="INSERT", sid="V-1".ljust(32, "0"))))
    assert row["after"]["ts"] == dt.datetime(2023, 3, 21, 14, 34, 21, 123456) and row["flags"] == []


# -- message shapes ------------------------------------------------------------------------------------------
def test_bare_and_flattened_data_messages():
    bare = {"data": {"a": 1}, "beforeData": None, "headers": {"operation": "INSERT", "changeSequence": "5"}}
    flat = {
        "data": {"a": 1},
        "beforeData": {"a": 0},
        "headers_operation": "UPDATE",
        "headers_changeSequence": "6",
        "headers_changeMask": "01",
    }
    rows = changes(decode(json.dumps(bare), json.dumps(flat), topic="t"))
    assert [(r["op"], r["changed_columns"]) for r in rows] == [("INSERT", None), ("UPDATE", ["a"])]


def test_delete_with_the_row_in_before_data():
    [row] = changes(decode(dt_msg(None, op="DELETE", before={"a": 1}), topic="t"))
    assert row["before"] == {"a": 1} and row["after"] is None


def test_sniff():
    assert ReplicateAdapter.sniff("x.json", ORDERS_JSON.read_bytes()[:4096])
    assert ReplicateAdapter.sniff("x.avro", ORDERS_AVRO.read_bytes()[:4096])
    assert ReplicateAdapter.sniff(None, b"atMSG\x04DT")
    assert not ReplicateAdapter.sniff("x.json", b'{"read_method": "mysql-cdc-binlog"}')


def test_misspelt_option_fails_with_the_allowed_names():
    with pytest.raises(UsageError) as info:
        get_adapter("replicate", {"topic_table": {}})
    assert "topic_tables" in str(info.value)


# -- malformed input: quarantine with a reason, never an exception -------------------------------------------
def test_malformed_messages_are_quarantined_with_reasons():
    path = SAMPLES / "malformed" / "bad_messages.jsonl"
    rows = read(path)
    assert outcomes(rows) == [
        ("quarantine", "bad_hex"),
        ("quarantine", "bad_json"),
        ("quarantine", "unknown_op"),
        ("change", None),
        ("quarantine", "bad_magic"),
        ("quarantine", "bad_change_sequence"),
    ]
    lines = path.read_bytes().splitlines()
    quarantined = [r for r in rows if r["_kind"] == "quarantine"]
    assert [r["_raw"] for r in quarantined] == [lines[i] for i in (0, 1, 2, 4, 5)]
    assert "ZZ01" in quarantined[0]["_message"] and "MERGE" in quarantined[2]["_message"]


def test_truncated_avro_is_quarantined():
    assert outcomes(read(SAMPLES / "malformed" / "truncated_envelope.bin")) == [
        ("quarantine", "truncated_avro")
    ]
    broken = (
        SAMPLES / "malformed" / "eventhubs" / "replicate-ns" / "broken" / "0" / "2024/05/01/15/00/00.avro"
    )
    assert outcomes(read(broken)) == [
        ("metadata", "replicate_metadata"),
        ("quarantine", "truncated_avro"),
        ("quarantine", "truncated_avro"),
        ("quarantine", "empty_message"),
    ]
    rows = read(SAMPLES / "malformed" / "truncated_capture.avro")
    assert outcomes(rows) == [("change", None), ("change", None), ("quarantine", "truncated_avro")]


@pytest.mark.parametrize(
    ("data", "error_class"),
    [({"b": "xyz"}, "bad_hex"), ({"n": "12,5"}, "bad_value"), ({"i": "seven"}, "bad_value")],
)
def test_bad_values_are_quarantined(data, error_class):
    cols = [("b", "BYTES"), ("n", "NUMERIC"), ("i", "INT4")]
    rows = decode(md("Q", cols), dt_msg(data, op="INSERT", sid="Q-1".ljust(32, "0")))
    assert outcomes(rows)[1] == ("quarantine", error_class)


@pytest.mark.parametrize(
    ("value", "error_class"),
    [
        (b"", "empty_message"),
        (b"hello", "unknown_format"),
        (b"\x00\x00", "truncated_avro"),
        (b'{"task_name": "x", "op": "F", "data": []}', "unsupported_format"),
        (b"[1, 2]", "unknown_format"),
        (b'{"magic": "atMSG", "type": "XX", "message": {}}', "unknown_type"),
        (b'{"magic": "atMSG", "type": "MD", "message": {"lineage": {}}}', "bad_metadata"),
        (b'{"data": {"a": 1}, "headers": {"operation": "UPDATE"}}', "missing_change_sequence"),
        (b'{"data": [1], "headers": {"operation": "INSERT"}}', "bad_message"),
    ],
)
def test_unrecognised_messages_are_quarantined(value, error_class):
    assert outcomes(decode(value, topic="t")) == [("quarantine", error_class)]


# -- Spark: through normalize --------------------------------------------------------------------------------
CONTRACT_INPUTS = [str(SAMPLES / "json"), str(SAMPLES / "eventhubs"), str(SAMPLES / "confluent")]


class TestReplicateContract(AdapterContract):
    vendor = "replicate"
    message_file = str(ORDERS_JSON)
    inputs = CONTRACT_INPUTS
    options = {"schema_registry": str(REGISTRY)}

    def test_first_pass_resolves_dt_before_md_across_files(self, rows):
        customers = [r for r in rows if r["table"] == "CUSTOMERS" and r["stream"] == "customers"]
        assert sorted(r["op"] for r in customers) == ["INSERT", "UPDATE"]
        assert all(r["flags"] == [] for r in customers)

    def test_nothing_quarantined(self, result):
        assert result.quarantine.count() == 0

    def test_report_counts(self, result):
        report = result.report
        assert report["outcomes"]["metadata"] == 6
        assert report["outcomes"]["quarantined"] == 0


def test_normalize_kafka_dataframe_with_md_in_another_partition(spark):
    lines = ORDERS_JSON.read_bytes().splitlines()
    data = [(line, "orders", str(i % 2), str(i)) for i, line in enumerate(reversed(lines))]  # MD last
    df = spark.createDataFrame(
        data, "value binary, topic string, partition string, offset string"
    ).repartition(2)
    import cdcnorm

    res = cdcnorm.normalize(df, "replicate", spark=spark)
    got = res.changes.select("op", "table", "flags", "stream").collect()
    assert sorted(r["op"] for r in got) == sorted(WIDE_OPS)
    assert {(r["table"], r["stream"]) for r in got} == {("ORDERS_WIDE", "orders")}
    assert all(r["flags"] in ([], ["key_change"]) for r in got)
    assert res.report["reconciled"] and res.report["outcomes"]["metadata"] == 1


def test_quarantine_retry_after_the_metadata_arrives(spark, lake_path):
    import cdcnorm
    from cdcnorm.ingest.retry import retry_quarantine

    first = cdcnorm.normalize([str(CUSTOMERS_DT)], "replicate", spark=spark, lake=lake_path)
    assert first.report["outcomes"]["quarantined"] == 2
    assert {r["error_class"] for r in cdcnorm.read_quarantine(spark, lake_path).collect()} == {
        "schema_not_found"
    }
    # The metadata arrives in a later run; the lake's schema versions carry it to the retry.
    later = cdcnorm.normalize([str(CUSTOMERS_MD)], "replicate", spark=spark, lake=lake_path)
    assert later.report["outcomes"]["metadata"] >= 1
    summary = retry_quarantine(spark, lake_path, "replicate")
    assert summary["replicate"] == {"retried": 2, "resolved": 2, "still_quarantined": 0}
    got = cdcnorm.read_changes(spark, lake_path).select("op", "table", "stream").collect()
    assert sorted((r["op"], r["table"], r["stream"]) for r in got) == [
        ("INSERT", "CUSTOMERS", "customers"),
        ("UPDATE", "CUSTOMERS", "customers"),
    ]
    assert cdcnorm.read_quarantine(spark, lake_path).count() == 0


def test_normalize_event_hubs_connector_dataframe(spark):
    """The Event Hubs connector's shape (body, sequenceNumber, enqueuedTime) through `EVENT_HUBS_COLUMNS`."""
    from fastavro import reader

    import cdcnorm
    from cdcnorm.ingest.sources import EVENT_HUBS_COLUMNS

    with ORDERS_AVRO.open("rb") as fh:
        events = [
            (r["Body"], str(r["SequenceNumber"]), "0", enqueued_time(r["EnqueuedTimeUtc"]))
            for r in reader(fh)
        ]
    df = spark.createDataFrame(
        events, "body binary, sequenceNumber string, partition string, enqueuedTime timestamp"
    )
    res = cdcnorm.normalize(
        df, "replicate", spark=spark, column_map=EVENT_HUBS_COLUMNS, options={"stream": "orders"}
    )
    got = (
        res.changes.select("op", "table", "stream", "format", "origin", "capture_ts")
        .orderBy("sort_key")
        .collect()
    )
    assert [r["op"] for r in got] == [
        "SNAPSHOT",
        "SNAPSHOT",
        "INSERT",
        "UPDATE",
        "UPDATE",
        "DELETE",
        "INSERT",
        "DELETE",
    ]
    assert {(r["table"], r["stream"], r["format"]) for r in got} == {
        ("ORDERS_WIDE", "orders", "replicate.avro")
    }
    insert = got[2]
    assert insert["origin"]["offset"] == "3" and insert["capture_ts"] == dt.datetime(2024, 5, 1, 10, 10, 3)
