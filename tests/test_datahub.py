"""DataWorks → DataHub adapter: pure decoding tests (BatchBuilder -> Arrow), then Spark through normalize.

The Blob samples are hand-written from the DataWorks "DataHub message formats" page (the documented INSERT,
UPDATE, DELETE, heartbeat and ALTER messages) plus synthetic cases; no real DataWorks output is public.
"""

from __future__ import annotations

import datetime as dt
import io
import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql.types import VariantVal

from cdcnorm.adapters import get_adapter
from cdcnorm.adapters.base import MessageMeta
from cdcnorm.adapters.datahub import DataHubAdapter
from cdcnorm.adapters.datahub.blob_values import blob_value
from cdcnorm.adapters.datahub.files import looks_like_record
from cdcnorm.adapters.datahub.options import path_hints
from cdcnorm.adapters.datahub.pairing import pair_id
from cdcnorm.adapters.datahub.tuple_topic import convert, execute_time, parse_tuple_schema
from cdcnorm.adapters.datahub.vocabulary import source_db_of
from cdcnorm.adapters.ddl import apply_changes, parse_ddl
from cdcnorm.canonical.emit import BatchBuilder
from cdcnorm.containers import Record, Source, loads_wide_ints
from cdcnorm.containers.json_records import JsonRecords
from cdcnorm.errors import DecodeError, UsageError
from cdcnorm.testing import AdapterContract
from decoded import changes, outcomes
from decoded import rows_of as _rows

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "datahub"
BLOB = SAMPLES / "blob"
DOCUMENTED = BLOB / "documented.jsonl"
CONCAT = BLOB / "documented_concat.json"
FAR = [BLOB / "far_apart" / "part-0001.jsonl", BLOB / "far_apart" / "part-0002.jsonl"]
ORPHAN = BLOB / "orphan_half.jsonl"
ORACLE = BLOB / "types_oracle.jsonl"
TX = BLOB / "tx_truncate.jsonl"
BROKEN = BLOB / "bad" / "broken_middle.json"
TUPLE = SAMPLES / "tuple"
EXPORT = TUPLE / "project=retail" / "topic=orders_tuple" / "table=orders" / "export.csv"
WITH_HEADER = TUPLE / "with_header.csv"
LEGACY = TUPLE / "rows_legacy.jsonl"
ORDERS_SCHEMA = (SAMPLES / "schemas" / "orders_record_schema.json").read_text()
UTC = dt.UTC


def ms(v: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=v)


# -- decoding ------------------------------------------------------------------------------------------------


def read(*paths: Path | str, fh_of=None, **options) -> list[dict]:
    """Decode files with read_file, as the pipeline would, and return the decoded rows."""
    adapter = DataHubAdapter(options)
    out = BatchBuilder()
    for p in paths:
        with fh_of(p) if fh_of else Path(p).open("rb") as fh:
            for _ in adapter.read_file(str(p), fh, out):
                pass
    out.end_record()
    return _rows(out.flush())


def decode(*values: bytes, topic: str | None = None, uri: str | None = None, **options) -> list[dict]:
    """Decode raw messages with decode_message (Kafka-shaped input)."""
    adapter = DataHubAdapter(options)
    out = BatchBuilder()
    for i, v in enumerate(values):
        out.begin_record(uri or topic, i, partition="0", offset=str(i), raw=v)
        adapter.decode_message(v, MessageMeta(topic=topic, partition="0", offset=str(i), uri=uri), out)
    out.end_record()
    return _rows(out.flush())






def comparable(rows: list[dict]) -> list[dict]:
    """Rows without where they came from (origin, raw bytes), to compare two containers of the same data."""
    return [{k: v for k, v in r.items() if k not in ("origin", "_raw")} for r in rows]


# -- Blob: the documented messages -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def documented() -> list[dict]:
    return read(DOCUMENTED)


def test_documented_insert(documented):
    ins = changes(documented)[0]
    assert ins["op"] == "INSERT" and ins["vendor_op"] == "INSERT" and ins["format"] == "datahub.blob"
    assert ins["after"] == {"id": 1, "name": "joe", "comment": "comment"} and ins["before"] is None
    assert ins["key"] == {"id": 1, "name": "joe"} and ins["primary_keys"] == ["id", "name"]
    assert (ins["source_db"], ins["database"], ins["schema"], ins["table"]) == (
        "mysql",
        "yunshi_db",
        None,
        "t_shiyu_pk",
    )
    assert ins["stream"] == "yunshi_db"
    assert ins["source_ts"] == dt.datetime(2020, 11, 14, 7, 45, 32, tzinfo=UTC)
    assert ins["capture_ts"] == dt.datetime(2020, 11, 14, 7, 45, 32, 736000, tzinfo=UTC)
    assert ins["position"] == "1605339516000000004"
    assert ins["missing_columns"] == [] and ins["changed_columns"] is None and ins["flags"] == []


def test_documented_update_halves_carry_one_pair_id(documented):
    before, after = changes(documented)[1:3]
    assert (before["op"], before["_pair_role"], before["vendor_op"]) == ("UPDATE", "before", "UPDATE_BEFOR")
    assert (after["op"], after["_pair_role"], after["vendor_op"]) == ("UPDATE", "after", "UPDATE_AFTER")
    assert (
        before["_pair"]
        == after["_pair"]
        == pair_id("yunshi_db", "yunshi_db", None, "t_shiyu_pk", 1605339516000000005)
    )
    assert before["event_id"] != after["event_id"]
    assert before["before"] == {"id": 1, "name": "joe", "comment": "comment"} and before["after"] is None
    assert after["after"] == {"id": 1, "name": "joe", "comment": "com1"} and after["before"] is None
    assert before["sort_key"] < after["sort_key"]
    # the halves carry per-column value digests (16 hex chars + name) until Spark pairs them
    assert [c[16:] for c in before["changed_columns"]] == ["id", "name", "comment"]
    assert before["changed_columns"][:2] == after["changed_columns"][:2]
    assert before["changed_columns"][2] != after["changed_columns"][2]


def test_documented_delete_heartbeat_alter(documented):
    delete, heartbeat, alter = changes(documented)[3:]
    assert delete["op"] == "DELETE" and delete["after"] is None
    assert delete["before"] == {"id": 1, "name": "joe", "comment": "com1"}
    assert heartbeat["op"] == "HEARTBEAT" and heartbeat["vendor_op"] == "MHEARTBEAT"
    assert heartbeat["source_ts"] == dt.datetime(2020, 11, 14, 7, 45, 53, 629000, tzinfo=UTC)
    assert heartbeat["table"] is None and heartbeat["stream"] == "datahub"
    assert heartbeat["after"] == {"timestamp": {"eventTime": 1605339953629, "checkpointTime": 1605339953629}}
    assert alter["op"] == "DDL" and alter["vendor_op"] == "ALTER" and alter["table"] == "t_test_nopk"
    assert alter["ddl"] == "alter table t_test_nopk add column holo text"
    assert alter["ddl_changes"] == [{"action": "add", "column": "holo", "new_name": None, "type": "TEXT"}]
    # ddlMeta (Java-serialized FastSQL AST) is kept verbatim, undecoded, as an opaque Base64 string
    assert alter["after"] == {
        "ddlMeta": "rO0ABXNyACljb20uYWxpYmFiYS5kaS5wbHVnaW4uY2VudGVyLm1ldGEuRERMTWV0YQ=="
    }
    assert alter["schema_version"] is None  # no column list to apply the ALTER to


def test_documented_schema_version(documented):
    versions = [json.loads(r["_schema"]) for r in documented if r["_kind"] == "schema"]
    assert len(versions) == 1
    v = versions[0]
    assert (v["table"], v["database"], v["schema"], v["stream"]) == (
        "t_shiyu_pk",
        "yunshi_db",
        None,
        "yunshi_db",
    )
    assert [
        (c["name"], c["vendor_type"], c["canonical_type"], c["ordinal"], c["pk_position"])
        for c in v["columns"]
    ] == [
        ("id", "LONG", "bigint", 1, 1),
        ("name", "STRING", "string", 2, 2),
        ("comment", "STRING", "string", 3, None),
    ]
    assert {r["schema_version"] for r in changes(documented)[:4]} == {v["schema_version"]}


def test_every_record_has_one_outcome(documented):
    assert outcomes(documented) == [("change", None)] * 6


# -- containers: concatenated objects, JSON array, raw messages --------------------------------------------
def test_concatenated_file_yields_the_jsonl_rows(documented):
    assert comparable(read(CONCAT)) == comparable(documented)


def test_json_array_yields_the_jsonl_rows(documented, tmp_path):
    lines = DOCUMENTED.read_text().splitlines()
    path = tmp_path / "array.json"
    path.write_text("[\n" + ",\n".join(lines) + "\n]\n")
    assert comparable(read(path)) == comparable(documented)


def test_raw_messages_yield_the_jsonl_rows_with_the_topic_as_stream(documented):
    rows = decode(*[line.encode() for line in DOCUMENTED.read_text().splitlines()], topic="yunshi_topic")
    assert [r["stream"] for r in changes(rows)] == ["yunshi_topic"] * 6
    strip = {"origin", "_raw", "stream", "event_id", "sort_key", "_pair", "_schema"}
    assert [{k: v for k, v in r.items() if k not in strip} for r in rows] == [
        {k: v for k, v in r.items() if k not in strip} for r in documented
    ]


def test_stream_from_folder_layout_and_option(tmp_path):
    folder = tmp_path / "project=prj" / "topic=tp"
    folder.mkdir(parents=True)
    (folder / "data.json").write_bytes(DOCUMENTED.read_bytes())
    assert {r["stream"] for r in changes(read(folder / "data.json"))} == {"prj/tp"}
    assert {r["stream"] for r in changes(read(DOCUMENTED, stream="mine"))} == {"mine"}
    assert path_hints("s3://b/x/project=a/topic=b/table=c/db=d/f.csv") == {
        "project": "a",
        "topic": "b",
        "table": "c",
        "database": "d",
    }


def test_event_ids_do_not_depend_on_the_container(documented, tmp_path):
    other = tmp_path / "elsewhere.json"
    other.write_bytes(CONCAT.read_bytes())
    assert [r["event_id"] for r in changes(read(other))] == [r["event_id"] for r in changes(documented)]


def _pieces(data: bytes, chunk: int, max_bytes: int = 1 << 20) -> list:
    return list(JsonRecords(Source(io.BytesIO(data)), loads_wide_ints, looks_like_record, max_bytes, chunk))


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64])
def test_splitter_is_chunk_size_independent(chunk):
    expected = [json.loads(line) for line in DOCUMENTED.read_text().splitlines()]
    pieces = _pieces(CONCAT.read_bytes(), chunk)
    assert [p.value for p in pieces] == expected
    assert pieces[0].offset == 0 and pieces[1].offset == CONCAT.read_bytes().index(b'}{"schema"') + 1


@pytest.mark.parametrize("chunk", [1, 5, 64, 1 << 20])
def test_splitter_resynchronises_after_a_broken_object(chunk):
    pieces = _pieces(BROKEN.read_bytes(), chunk)
    assert [isinstance(p, Record) for p in pieces] == [True, False, True, True, True, True]
    assert [p.value["payload"]["sequenceId"] for p in pieces if isinstance(p, Record)] == [
        "1700000000000000400",
        "1700000000000000402",
        "1700000000000000403",
        "1700000000000000404",
        "1700000000000000405",
    ]
    assert b"".join(p.raw for p in pieces) == BROKEN.read_bytes()


def test_json_array_with_a_broken_element():
    lines = DOCUMENTED.read_bytes().splitlines()
    data = b"[" + b",\n".join([lines[0], lines[1][:150], lines[3]]) + b"]"
    pieces = _pieces(data, 16)
    assert [isinstance(p, Record) for p in pieces] == [True, False, True]
    assert pieces[1].raw == lines[1][:150] + b",\n" and pieces[1].error_class == "bad_json"
    assert pieces[2].value["payload"]["op"] == "DELETE"


def test_splitter_strings_escapes_and_limits():
    data = (
        b'\xef\xbb\xbf{"payload":{"op":"INSERT","s":"}{\\"\\\\"}}   '
        b'junk{"payload":{"op":"DELETE","pad":"' + b"x" * 3000 + b'"}}'
        b'{"payload":{"op":"X"}}{"payload":'
    )
    pieces = _pieces(data, 5, max_bytes=1024)
    assert pieces[0].value == {"payload": {"op": "INSERT", "s": '}{"\\'}}
    assert (pieces[1].raw, pieces[1].error_class) == (b"junk", "bad_json")
    assert "text outside any JSON object" in pieces[1].message
    # an object beyond the size limit is quarantined in bounded pieces, then scanning goes on
    assert pieces[2].offset == 50 and pieces[2].error_class == "json_too_large"
    assert "larger than max_object_bytes=1024" in pieces[2].message
    assert {p.error_class for p in pieces[3:5]} == {"bad_json"}
    assert pieces[5].value == {"payload": {"op": "X"}}
    assert pieces[6].raw == b'{"payload":' and "truncated" in pieces[6].message


def test_big_integers_stay_exact():
    raw = (
        b'{"schema":{"dataColumn":[{"name":"u","type":"LONG"}],"source":{"dbType":"MySQL","dbName":"d",'
        b'"tableName":"t"}},"payload":{"op":"INSERT","sequenceId":"1","after":{"dataColumn":'
        b'{"u":18446744073709551615}},"timestamp":{"eventTime":1}}}'
    )
    assert changes(decode(raw))[0]["after"] == {"u": 18446744073709551615}
    assert changes(decode(raw.replace(b"18446744073709551615", b"123456789012345678901234")))[0]["after"] == {
        "u": 123456789012345678901234
    }


# -- Blob: values, Oracle, transactions, TRUNCATE, control -------------------------------------------------
def test_bytes_date_rowid_and_missing_columns():
    ins, before, after = changes(read(ORACLE))
    assert ins["after"] == {
        "ID": 7,
        "TITLE": None,
        "BODY": b"\x00\x01\xfeDataHub",
        "CREATED": dt.datetime(2020, 5, 24, 10, 14, 29, tzinfo=UTC),
        "SCORE": 0.25,
        "ACTIVE": True,
        "rowid": "AAIUMPAAFAACxExAAE",
    }
    assert (ins["source_db"], ins["database"], ins["schema"], ins["table"]) == (
        "oracle",
        "ORCL",
        "SCOTT",
        "DOCS",
    )
    assert ins["missing_columns"] == []  # TITLE is SQL NULL, not missing
    assert after["missing_columns"] == ["SCORE"]  # not in the after image: not captured
    assert after["after"]["BODY"] == b"\x00\x02\xffDataHub v2" and after["after"]["ACTIVE"] is False


@pytest.mark.parametrize(
    ("value", "vtype", "expected"),
    [
        (5, "LONG", 5),
        ("5", "LONG", 5),
        (5.0, "LONG", 5),
        (1, "DOUBLE", 1.0),
        ("true", "BOOLEAN", True),
        (1590315269000, "DATE", dt.datetime(2020, 5, 24, 10, 14, 29, tzinfo=UTC)),
        (-1, "DATE", dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)),
        ("aGk", "BYTES", b"hi"),  # Java encodes with padding; a missing pad is still unambiguous
        ("", "BYTES", b""),
        ({"x": 1}, "GEOMETRY", {"x": 1}),  # unknown types stay raw
        (7, None, 7),
    ],
)
def test_blob_values(value, vtype, expected):
    assert blob_value(value, vtype, "c") == expected


@pytest.mark.parametrize(
    ("value", "vtype", "error_class"),
    [
        ("a-b", "BYTES", "bad_base64"),
        ("aGk=\n=", "BYTES", "bad_base64"),
        (5, "BYTES", "bad_base64"),
        (1.5, "LONG", "bad_value"),
        ("x", "LONG", "bad_value"),
        (True, "LONG", "bad_value"),
        ("yes", "BOOLEAN", "bad_value"),
        ("soon", "DATE", "bad_value"),
        ("n/a", "DOUBLE", "bad_value"),
    ],
)
def test_bad_blob_values(value, vtype, error_class):
    with pytest.raises(DecodeError) as info:
        blob_value(value, vtype, "c")
    assert info.value.error_class == error_class and "'c'" in info.value.message


def test_transaction_truncate_alter_gtid():
    rows = read(TX)
    got = [(r["op"], r["vendor_op"], r["table"], r["position"]) for r in changes(rows)]
    assert got == [
        ("TX_BEGIN", "TRANSACTION_BEGIN", "carts", "1700000000000000300"),
        ("INSERT", "INSERT", "carts", "1700000000000000301"),
        ("INSERT", "INSERT", "carts", "1700000000000000302"),
        ("TX_COMMIT", "TRANSACTION_END", "carts", "1700000000000000303"),
        ("TRUNCATE", "TRUNCATE", "carts", "1700000000000000304"),
        ("DDL", "ALTER", "carts", "1700000000000000305"),
        ("CONTROL", "GTID", None, "1700000000000000306"),
    ]
    truncate, alter = changes(rows)[4:6]
    assert truncate["ddl"] == "TRUNCATE TABLE carts" and truncate["ddl_changes"] == []
    assert alter["ddl_changes"] == [
        {"action": "add", "column": "coupon", "new_name": None, "type": "VARCHAR(16)"},
        {"action": "rename", "column": "items", "new_name": "item_count", "type": None},
        {"action": "modify", "column": "item_count", "new_name": None, "type": "BIGINT"},
    ]
    versions = [json.loads(r["_schema"]) for r in rows if r["_kind"] == "schema"]
    assert [[(c["name"], c["vendor_type"]) for c in v["columns"]] for v in versions] == [
        [("cart_id", "LONG"), ("items", "LONG")],
        [("cart_id", "LONG"), ("item_count", "BIGINT"), ("coupon", "VARCHAR(16)")],
    ]
    assert alter["schema_version"] == versions[1]["schema_version"]
    sort_keys = [r["sort_key"] for r in changes(rows)[:6]]
    assert sort_keys == sorted(sort_keys)


def test_broken_object_unknown_op_and_bad_base64_are_quarantined_and_the_rest_comes_through():
    rows = read(BROKEN)
    assert outcomes(rows) == [
        ("change", None),
        ("quarantine", "bad_json"),
        ("change", None),
        ("quarantine", "unknown_op"),
        ("quarantine", "bad_base64"),
        ("change", None),
    ]
    assert [(r["op"], r["key"]) for r in changes(rows)] == [
        ("INSERT", {"id": 1}),
        ("INSERT", {"id": 3}),
        ("DELETE", {"id": 1}),
    ]
    broken, unknown, bad64 = [r for r in rows if r["_kind"] == "quarantine"]
    assert broken["_raw"].endswith(b'"after":{"dataColumn":{"id":2,"bl')
    assert "scanning resumed at the next object" in broken["_message"]
    assert "'UPSERT'" in unknown["_message"] and b'"UPSERT"' in unknown["_raw"]
    assert "'blob'" in bad64["_message"] and "Base64" in bad64["_message"]


@pytest.mark.parametrize(
    ("value", "error_class"),
    [
        (b'{"payload":{"op":"insert"}}', "unknown_op"),  # ops are case-sensitive
        (b'{"payload":{"timestamp":{}}}', "unknown_op"),
        (b'{"payload":"x"}', "bad_message"),
        (
            b'{"payload":{"op":"INSERT","sequenceId":"1","timestamp":{"eventTime":1}},'
            b'"schema":{"source":{"tableName":"t"}}}',
            "bad_message",
        ),
        (b'{"payload":{"op":"DELETE","sequenceId":"1","before":{"dataColumn":{"a":1}}}}', "missing_field"),
        (
            b'{"payload":{"op":"INSERT","after":{"dataColumn":{}},"timestamp":{"eventTime":"noon"}},'
            b'"schema":{"source":{"tableName":"t"}}}',
            "bad_value",
        ),
        (b'{"payload":{"op":"ALTER"},"schema":{"dataColumn":"id"}}', "bad_message"),
        (b'{"data":[{"id":"1"}],"type":"INSERT","isDdl":false}', "bad_message"),
        (b"\x89PNG\r\n", "bad_json"),
        (b"", "empty_message"),
    ],
)
def test_unrecognised_messages_are_quarantined(value, error_class):
    assert outcomes(decode(value, topic="t")) == [("quarantine", error_class)]


def test_update_half_without_sequence_id_is_quarantined():
    raw = (
        b'{"schema":{"source":{"tableName":"t","dbName":"d","dbType":"MySQL"}},"payload":{"op":"UPDATE_AFTER",'
        b'"after":{"dataColumn":{"a":1}},"timestamp":{"eventTime":1}}}'
    )
    assert outcomes(decode(raw)) == [("quarantine", "missing_field")]


def test_sniff():
    assert DataHubAdapter.sniff(str(DOCUMENTED), DOCUMENTED.read_bytes())
    assert DataHubAdapter.sniff(str(CONCAT), CONCAT.read_bytes())
    assert DataHubAdapter.sniff(str(WITH_HEADER), WITH_HEADER.read_bytes())
    assert DataHubAdapter.sniff(str(LEGACY), LEGACY.read_bytes())
    assert not DataHubAdapter.sniff("x.json", b'{"data":[{"id":"1"}],"type":"INSERT","database":"d"}')
    assert not DataHubAdapter.sniff("x.csv", b"1,2,3\n")


def test_source_db_names():
    assert [source_db_of(v) for v in ("MySQL", "Oracle", "PostgreSQL", "SQLServer", "PolarDB", "", None)] == [
        "mysql",
        "oracle",
        "postgresql",
        "sqlserver",
        "polardb",
        None,
        None,
    ]


# -- DDL parsing -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("source_db", "text", "expected"),
    [
        (
            "mysql",
            "ALTER TABLE t DROP COLUMN a, MODIFY COLUMN b INT",
            [("drop", "a", None, None), ("modify", "b", None, "INT")],
        ),
        ("mysql", "ALTER TABLE t RENAME COLUMN a TO b", [("rename", "a", "b", None)]),
        (
            "oracle",
            'ALTER TABLE "S"."T" ADD ("Cx" NUMBER(10,2), e DATE)',
            [("add", "Cx", None, "NUMBER(10, 2)"), ("add", "E", None, "DATE")],
        ),
        ("oracle", "ALTER TABLE t MODIFY (c VARCHAR2(20))", [("modify", "C", None, "VARCHAR2(20)")]),
        ("postgresql", "ALTER TABLE s.t ALTER COLUMN A TYPE bigint", [("modify", "a", None, "BIGINT")]),
        ("sqlserver", "EXEC sp_rename 'dbo.t.a', 'b', 'COLUMN'", [("rename", "a", "b", None)]),
        ("mysql", "CREATE TABLE t (id BIGINT, PRIMARY KEY (id))", [("add", "id", None, "BIGINT")]),
        ("mysql", "DROP TABLE t", []),
        ("mysql", "CREATE INDEX i ON t (a)", []),
    ],
)
def test_ddl_is_parsed_into_column_changes(source_db, text, expected):
    info = parse_ddl(text, source_db)
    assert [(c["action"], c["column"], c["new_name"], c["type"]) for c in info.changes] == expected


@pytest.mark.parametrize("text", ["RENAME TABLE a TO b", "this is not SQL (((", "", None])
def test_unparseable_ddl_is_unknown(text):
    assert parse_ddl(text, "mysql").changes is None


def test_apply_changes_is_idempotent():
    changes_ = parse_ddl("ALTER TABLE t ADD c INT, DROP b, RENAME COLUMN a TO z", "mysql").changes
    once = apply_changes([("a", "LONG"), ("b", "STRING")], changes_)
    assert once == [("z", "LONG"), ("c", "INT")]
    assert apply_changes(once, changes_) == once


def test_create_table_records_a_schema_version():
    raw = (
        b'{"schema":{"source":{"dbType":"MySQL","dbName":"d","tableName":"t"}},"payload":{"op":"CREATE",'
        b'"sequenceId":"9","ddl":{"text":"CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR(3))"},'
        b'"timestamp":{"eventTime":1000}}}'
    )
    rows = decode(raw)
    (version,) = [json.loads(r["_schema"]) for r in rows if r["_kind"] == "schema"]
    assert [(c["name"], c["vendor_type"], c["pk_position"]) for c in version["columns"]] == [
        ("id", "BIGINT", 1),
        ("v", "VARCHAR(3)", None),
    ]
    (ddl,) = changes(rows)
    assert ddl["op"] == "DDL" and ddl["schema_version"] == version["schema_version"] and ddl["after"] is None


# -- TUPLE -------------------------------------------------------------------------------------------------
def test_tuple_csv_export_with_the_topic_schema():
    rows = read(EXPORT, tuple_schema=ORDERS_SCHEMA, source_db="MySQL", database="retail_db")
    got = changes(rows)
    assert [(r["op"], r["vendor_op"], r["_pair_role"]) for r in got] == [
        ("INSERT", "I", None),
        ("UPDATE", "U", "before"),
        ("UPDATE", "U", "after"),
        ("DELETE", "D", None),
        ("INSERT", "I", None),
    ]
    ins = got[0]
    assert ins["after"] == {
        "id": 1,
        "name": "apple",
        "price": Decimal("10.01"),
        "paid": False,
        "updated": dt.datetime(2022, 4, 15, 3, 2, 6, tzinfo=UTC),
    }
    assert (ins["format"], ins["stream"], ins["table"], ins["database"], ins["schema"], ins["source_db"]) == (
        "datahub.tuple",
        "retail/orders_tuple",
        "orders",
        "retail_db",
        None,
        "mysql",
    )
    assert ins["source_ts"] == ms(1649991726000) and ins["position"] == "1649991610688000000"
    assert got[2]["after"]["name"] == "apple, red" and got[2]["after"]["price"] == Decimal("12.50")
    assert got[1]["_pair"] == got[2]["_pair"]
    assert got[4]["after"] == {"id": 2, "name": "pear", "price": None, "paid": False, "updated": None}
    assert all(r["flags"] == [] and r["missing_columns"] == [] for r in got)
    (version,) = [json.loads(r["_schema"]) for r in rows if r["_kind"] == "schema"]
    assert [(c["name"], c["vendor_type"], c["canonical_type"]) for c in version["columns"]] == [
        ("id", "BIGINT", "bigint"),
        ("name", "STRING", "string"),
        ("price", "DECIMAL", "decimal"),
        ("paid", "BOOLEAN", "boolean"),
        ("updated", "TIMESTAMP", "timestamp"),
    ]


def test_tuple_csv_without_schema_or_table_says_what_is_missing(tmp_path):
    assert outcomes(read(EXPORT)) == [("quarantine", "missing_schema")] * 5
    assert outcomes(read(WITH_HEADER)) == [("quarantine", "missing_schema")] * 3
    nowhere = tmp_path / "export.csv"
    nowhere.write_bytes(EXPORT.read_bytes())
    rows = read(nowhere, tuple_schema=ORDERS_SCHEMA)
    assert outcomes(rows) == [("quarantine", "missing_table")] * 5
    assert "option table=" in rows[0]["_message"]
    assert {r["table"] for r in changes(read(nowhere, tuple_schema=ORDERS_SCHEMA, table="t"))} == {"t"}


def test_tuple_csv_with_header_and_per_table_schema():
    got = changes(read(WITH_HEADER, tuple_schemas={"orders": ORDERS_SCHEMA}, primary_keys=["id"]))
    assert [(r["op"], r["_pair_role"], r["table"], r["key"]) for r in got] == [
        ("INSERT", None, "orders", {"id": 3}),
        ("UPDATE", "before", "orders", {"id": 3}),
        ("UPDATE", "after", "orders", {"id": 3}),
    ]
    assert got[2]["after"]["price"] == Decimal("3.35") and got[2]["source_ts"] == ms(1649991810000)


def test_quarantined_csv_records_decode_again_as_messages():
    """What `quarantine retry` does: the raw bytes (header line + record) are decoded as raw messages."""
    raws = [r["_raw"] for r in read(WITH_HEADER) if r["_kind"] == "quarantine"]
    assert raws[0] == (
        b"_sequence_id_,_operation_type_,_execute_time_,_source_table_,_before_image_,"
        b"_after_image_,id,name,price,paid,updated\n"
        b"1649991610688000010,I,1649991800000,orders,N,Y,3,kiwi,3.30,false,1649991800000000\n"
    )
    again = decode(*raws, tuple_schemas={"orders": ORDERS_SCHEMA})
    assert comparable(again) == comparable(read(WITH_HEADER, tuple_schemas={"orders": ORDERS_SCHEMA}))
    # a headerless record: names from the schema option, table from the folder in the origin uri
    raws = [r["_raw"] for r in read(EXPORT) if r["_kind"] == "quarantine"]
    rows = decode(*raws, uri=str(EXPORT), tuple_schema=ORDERS_SCHEMA)
    assert [(r["op"], r["table"], r["stream"]) for r in changes(rows)][:2] == [
        ("INSERT", "orders", "retail/orders_tuple"),
        ("UPDATE", "orders", "retail/orders_tuple"),
    ]
    assert outcomes(decode(raws[0])) == [("quarantine", "missing_schema")]
    assert outcomes(decode(raws[0] + raws[1], tuple_schema=ORDERS_SCHEMA)) == [("quarantine", "bad_csv")]


def test_tuple_json_lines_legacy_offset_and_unknown_op():
    rows = read(LEGACY)
    assert outcomes(rows) == [("change", None), ("quarantine", "unknown_op")]
    ins = changes(rows)[0]
    assert ins["flags"] == ["no_schema"]  # JSON types only: `updated` stays the µs number
    assert ins["after"] == {
        "id": 4,
        "name": "fig",
        "price": Decimal("1.10"),
        "paid": True,
        "updated": 1649991900000000,
    }
    assert ins["position"] == "mysql-bin.000003:1200" and ins["format"] == "datahub.tuple"
    typed = changes(read(LEGACY, tuple_schema=ORDERS_SCHEMA))[0]
    assert typed["flags"] == [] and typed["after"]["updated"] == dt.datetime(2022, 4, 15, 3, 5, tzinfo=UTC)
    assert rows[1]["format"] == "datahub.tuple" and "'X'" in rows[1]["_message"]


def test_tuple_parquet_by_row_group(tmp_path):
    table = pa.table(
        {
            "id": pa.array([1, 1, 1, 2, 3], pa.int64()),
            "price": pa.array(
                [Decimal("1.10"), Decimal("1.10"), Decimal("2.00"), None, Decimal("0.01")],
                pa.decimal128(10, 2),
            ),
            "updated": pa.array(
                [1_000_000, 1_000_000, 2_000_000, None, 3_000_000], pa.timestamp("us", tz="UTC")
            ),
            "_sequence_id_": ["10", "11", "11", "12", "13"],
            "_operation_type_": ["I", "U", "U", "D", "Q"],
            "_execute_time_": pa.array([1000, 2000, 2000, 3000, 4000], pa.int64()),
            "_source_table_": ["items"] * 5,
            "_before_image_": ["N", "Y", "N", "Y", "N"],
            "_after_image_": ["Y", "N", "Y", "N", "Y"],
        }
    )
    path = tmp_path / "items.parquet"
    pq.write_table(table, path, row_group_size=2)
    rows = read(path)
    assert outcomes(rows) == [("change", None)] * 4 + [("quarantine", "unknown_op")]
    got = changes(rows)
    assert [(r["op"], r["_pair_role"]) for r in got] == [
        ("INSERT", None),
        ("UPDATE", "before"),
        ("UPDATE", "after"),
        ("DELETE", None),
    ]
    assert got[2]["after"] == {
        "id": 1,
        "price": Decimal("2.00"),
        "updated": dt.datetime(1970, 1, 1, 0, 0, 2, tzinfo=UTC),
    }
    assert got[3]["before"] == {"id": 2, "price": None, "updated": None}
    assert [r["origin"]["offset"] for r in rows if r["_records"]] == ["0:0", "0:1", "1:0", "1:1", "2:0"]
    (version,) = [json.loads(r["_schema"]) for r in rows if r["_kind"] == "schema"]
    assert [(c["name"], c["vendor_type"]) for c in version["columns"]] == [
        ("id", "BIGINT"),
        ("price", "DECIMAL"),
        ("updated", "TIMESTAMP"),
    ]


def test_damaged_parquet_is_quarantined(tmp_path):
    path = tmp_path / "x.parquet"
    path.write_bytes(b"PAR1 not really")
    assert outcomes(read(path)) == [("quarantine", "corrupt_parquet")]


@pytest.mark.parametrize(
    ("value", "vtype", "expected"),
    [
        ("1455869335000000", "TIMESTAMP", dt.datetime(2016, 2, 19, 8, 8, 55, tzinfo=UTC)),
        ("-128", "TINYINT", -128),
        ("10.01", "DECIMAL", Decimal("10.01")),
        ("10.01", "DOUBLE", 10.01),
        ("false", "BOOLEAN", False),
        ("", "BIGINT", None),
        ("", "STRING", ""),
        (7, "STRING", "7"),
        (1.0, "INTEGER", 1),
    ],
)
def test_tuple_values(value, vtype, expected):
    assert convert(value, vtype, "c") == expected


@pytest.mark.parametrize(
    ("value", "vtype"),
    [("128", "TINYINT"), ("1.5", "BIGINT"), ("x", "DECIMAL"), ("maybe", "BOOLEAN"), ("1e400", "TIMESTAMP")],
)
def test_bad_tuple_values(value, vtype):
    with pytest.raises(DecodeError) as info:
        convert(value, vtype, "c")
    assert info.value.error_class == "bad_value"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1649991726, ms(1649991726000)),
        (1649991726000, ms(1649991726000)),
        (1649991726000000, ms(1649991726000)),
        (1649991726000000000, ms(1649991726000)),
        ("", None),
    ],
)
def test_execute_time_units(value, expected):
    assert execute_time(value, "BIGINT") == expected


def test_tuple_image_flags_must_be_consistent():
    base = {"_sequence_id_": "1", "_execute_time_": "1000", "_source_table_": "t", "a": "1"}
    bad = [
        {**base, "_operation_type_": "U", "_before_image_": "Y", "_after_image_": "Y"},
        {**base, "_operation_type_": "I", "_before_image_": "Y", "_after_image_": "N"},
        {**base, "_operation_type_": "U"},
    ]
    adapter = DataHubAdapter({"tuple_schema": [{"name": "a", "type": "BIGINT"}]})
    for row in bad:
        with pytest.raises(DecodeError) as info:
            adapter._tuple(row, adapter._where(None, None, None), adapter.options.tuple_schema, [])
        assert info.value.error_class == "bad_image_flags"


def test_tuple_schema_forms():
    fields = parse_tuple_schema(ORDERS_SCHEMA)
    assert fields == parse_tuple_schema(json.loads(ORDERS_SCHEMA)["fields"])
    assert fields == parse_tuple_schema({"RecordSchema": ORDERS_SCHEMA, "RecordType": "TUPLE"})
    assert parse_tuple_schema("id:bigint, name:STRING")[0].type == "BIGINT"


def test_bad_options_are_usage_errors():
    with pytest.raises(UsageError, match="tuple_schema"):
        get_adapter("datahub", {"tuple_schema": "{nope"})
    with pytest.raises(UsageError, match="Allowed options"):
        get_adapter("datahub", {"tupel_schema": ORDERS_SCHEMA})


# -- Spark: through normalize ------------------------------------------------------------------------------
def _py(v):
    return v.toPython() if isinstance(v, VariantVal) else v


@pytest.fixture(scope="module")
def paired(spark):
    import cdcnorm

    res = cdcnorm.normalize(
        [str(p) for p in FAR] + [str(ORPHAN), str(EXPORT)],
        "datahub",
        spark=spark,
        options={"tuple_schema": ORDERS_SCHEMA, "source_db": "mysql", "database": "retail_db"},
    )
    rows = [{k: _py(v) for k, v in r.asDict().items()} for r in res.changes.collect()]
    return res, {(r["table"], r["position"], r["op"]): r for r in rows}


def test_far_apart_halves_pair_into_updates(paired):
    _, rows = paired
    upd = rows[("orders", "1700000000000000102", "UPDATE")]
    assert upd["before"] == {
        "order_id": 10,
        "status": "NEW",
        "amount": 25.5,
        "note": None,
        "updated_at": ms(1700000000000),
    }
    assert upd["after"] == {
        "order_id": 10,
        "status": "PAID",
        "amount": 25.5,
        "note": None,
        "updated_at": ms(1700000020000),
    }
    assert upd["changed_columns"] == ["status", "updated_at"]
    assert upd["flags"] == [] and upd["vendor_op"] == "UPDATE_BEFOR+UPDATE_AFTER"
    assert upd["event_id"] == pair_id("shop", "shop", None, "orders", 1700000000000000102)
    assert upd["key"] == {"order_id": 10} and upd["missing_columns"] == []
    # the after half came first, in the other file; NULL -> 'gift wrap' is a change
    upd = rows[("orders", "1700000000000000103", "UPDATE")]
    assert upd["before"]["amount"] == 80.0 and upd["after"]["amount"] == 99.0
    assert upd["changed_columns"] == ["amount", "note", "updated_at"]


def test_key_changing_pair_becomes_delete_and_insert(paired):
    _, rows = paired
    delete = rows[("orders", "1700000000000000105", "DELETE")]
    insert = rows[("orders", "1700000000000000105", "INSERT")]
    assert (
        delete["key"] == {"order_id": 11} and delete["after"] is None and delete["before"]["order_id"] == 11
    )
    assert (
        insert["key"] == {"order_id": 21} and insert["before"] is None and insert["after"]["order_id"] == 21
    )
    assert delete["flags"] == insert["flags"] == ["key_change"]
    assert insert["changed_columns"] == ["order_id"] and delete["changed_columns"] is None
    assert delete["sort_key"] < insert["sort_key"] and delete["event_id"] != insert["event_id"]


def test_orphans_are_kept_and_flagged(paired):
    res, rows = paired
    lone_after = rows[("orders", "1700000000000000200", "UPDATE")]
    assert lone_after["flags"] == ["orphan_after"] and lone_after["before"] is None
    assert lone_after["after"]["status"] == "SHIPPED" and lone_after["changed_columns"] is None
    lone_before = rows[("orders", "1700000000000000201", "UPDATE")]
    assert lone_before["flags"] == ["orphan_before"] and lone_before["after"] is None
    assert res.report["flags"] == {"orphan_after": 1, "orphan_before": 1, "key_change": 2}


def test_tuple_u_rows_pair(paired):
    _, rows = paired
    upd = rows[("orders", "1649991610688000001", "UPDATE")]
    assert upd["stream"] == "retail/orders_tuple" and upd["vendor_op"] == "U"
    assert upd["before"]["name"] == "apple" and upd["after"]["name"] == "apple, red"
    assert upd["changed_columns"] == ["name", "price", "paid", "updated"]


def test_pairing_conserves_records(paired):
    res, rows = paired
    report = res.report
    # 10 + 2 blob records + 5 CSV rows; 4 pairs fold 8 halves into 4 rows (3 updates, 1 key change split)
    assert report["records_read"] == 17
    assert report["outcomes"] == {
        "emitted": 14,
        "merged": 3,
        "metadata": 0,
        "filtered": 0,
        "duplicate": 0,
        "quarantined": 0,
        "held": 0,
    }
    assert report["reconciled"] and len(rows) == 14


def test_redelivery_is_deduplicated(spark):
    import cdcnorm

    res = cdcnorm.normalize([str(DOCUMENTED), str(CONCAT)], "datahub", spark=spark)
    got = res.changes.select("op", "event_id", "changed_columns").collect()
    assert sorted(r["op"] for r in got) == ["DDL", "DELETE", "HEARTBEAT", "INSERT", "UPDATE"]
    assert [r["changed_columns"] for r in got if r["op"] == "UPDATE"] == [["comment"]]
    assert res.report["outcomes"]["duplicate"] == 4 and res.report["reconciled"]
    (heartbeat,) = res.report["heartbeats"]
    assert heartbeat["stream"] == "datahub" and heartbeat["newest"] is not None


@pytest.mark.slow  # over 20 s under load: `make test-slow` keeps it; the fast suite stays under 10 min
def test_csv_export_without_types_is_quarantined_then_retried(spark, lake_path):
    import cdcnorm
    from cdcnorm.ingest.retry import retry_quarantine

    first = cdcnorm.normalize([str(EXPORT)], "datahub", spark=spark, lake=lake_path)
    assert first.report["outcomes"]["quarantined"] == 5
    assert {q["error_class"] for q in cdcnorm.read_quarantine(spark, lake_path).collect()} == {
        "missing_schema"
    }
    summary = retry_quarantine(spark, lake_path, "datahub", options={"tuple_schema": ORDERS_SCHEMA})
    assert summary["datahub"] == {"retried": 5, "resolved": 5, "still_quarantined": 0}
    got = cdcnorm.read_changes(spark, lake_path).select("op", "table", "stream", "changed_columns").collect()
    assert sorted((r["op"], r["table"], r["stream"], r["changed_columns"]) for r in got) == [
        ("DELETE", "orders", "retail/orders_tuple", None),
        ("INSERT", "orders", "retail/orders_tuple", None),
        ("INSERT", "orders", "retail/orders_tuple", None),
        ("UPDATE", "orders", "retail/orders_tuple", ["name", "price", "paid", "updated"]),
    ]


def test_raw_message_dataframe(spark):
    import cdcnorm

    lines = DOCUMENTED.read_bytes().splitlines() + [b'{"payload":{"op":"NOPE"}}']
    data = [(v, "yunshi_topic", str(i % 2), str(i)) for i, v in enumerate(reversed(lines))]
    df = spark.createDataFrame(
        data, "value binary, topic string, partition string, offset string"
    ).repartition(2)
    res = cdcnorm.normalize(df, "datahub", spark=spark)
    got = res.changes.select("op", "stream", "changed_columns").collect()
    assert sorted((r["op"], r["stream"]) for r in got) == sorted(
        (op, "yunshi_topic") for op in ("INSERT", "UPDATE", "DELETE", "HEARTBEAT", "DDL")
    )
    assert [r["error_class"] for r in res.quarantine.collect()] == ["unknown_op"]
    assert res.report["reconciled"]


class TestDataHubContract(AdapterContract):
    vendor = "datahub"
    message_file = str(BLOB / "documented.jsonl")
    inputs = [str(BLOB), str(EXPORT)]
    options = {"tuple_schema": ORDERS_SCHEMA, "source_db": "mysql", "database": "retail_db"}

    def test_quarantine_is_the_broken_file_only(self, result):
        got = sorted(
            (q["error_class"], q["origin"]["uri"].rsplit("/", 1)[-1]) for q in result.quarantine.collect()
        )
        assert got == [
            ("bad_base64", "broken_middle.json"),
            ("bad_json", "broken_middle.json"),
            ("unknown_op", "broken_middle.json"),
        ]

    def test_every_op_family_is_present(self, rows):
        assert {r["op"] for r in rows} == {
            "SNAPSHOT",
            "INSERT",
            "UPDATE",
            "DELETE",
            "HEARTBEAT",
            "DDL",
            "TRUNCATE",
            "TX_BEGIN",
            "TX_COMMIT",
            "CONTROL",
        }
