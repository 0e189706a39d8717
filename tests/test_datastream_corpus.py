"""Conformance over every real and real-looking Datastream file in the shared corpus.

The expectations below were derived by reading each file directly (fastavro for Avro, `json` for JSON) and
applying the documented rules by hand - not by recording what the adapter printed: backfill read methods give
SNAPSHOT, DELETE and UPDATE-DELETE give DELETE, UPDATE-INSERT gives UPDATE (INSERT when its UPDATE-DELETE partner
exists, after post_process), UPDATE gives UPDATE, INSERT in a CDC read gives INSERT.
"""

from __future__ import annotations

import datetime as dt
import decimal
from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import VariantVal

from cdcnorm.adapters.datastream.adapter import DatastreamAdapter
from cdcnorm.canonical.emit import BatchBuilder

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "datastream"
FOLDERS = ("avro", "json_real", "synthetic_from_tests")
pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the shared corpus is absent ({CORPUS})")
UTC = dt.UTC

SN, INS, UPD, DEL = "SNAPSHOT", "INSERT", "UPDATE", "DELETE"
EXPECTED: dict[str, tuple[list[str], list[str]]] = {
    # file: (ops in file order, quarantine error classes)
    "avro/cdap__oracle_backfill__dump.avro": ([SN] * 108, []),  # oracle-backfill, change_type null
    "avro/cdap__oracle_cdc__delete.avro": ([DEL], []),
    "avro/cdap__oracle_cdc__insert.avro": ([INS], []),
    "avro/cdap__oracle_cdc__update.avro": ([UPD], []),
    "avro/cdap__oracle_cdc__update_pk_UPDATE-DELETE_UPDATE-INSERT.avro": ([DEL, UPD], []),
    "avro/dft__mysql_backfill_2025__DateData_sortkeys_long.avro": ([SN, SN], []),
    "avro/dft__mysql_backfill__AllDatatypeColumns.avro": ([SN, SN], []),
    "avro/dft__mysql_backfill__Authors_same_schema_key.avro": ([SN, SN, SN], []),
    "avro/dft__mysql_backfill__Users.avro": ([SN, SN], []),
    "avro/dft__mysql_backfill__people_timestamptz.avro": ([SN], []),
    "avro/dft__mysql_cdc__AllDatatypeColumns2_update_delete.avro": ([UPD, DEL], []),
    "avro/dft__mysql_cdc__Authors_same_schema_key.avro": ([INS], []),
    "avro/dft__mysql_cdc__Movie_decimal65_30.avro": ([INS, INS], []),
    "avro/dft__mysql_cdc__Users_delete_insert_update.avro": ([DEL, INS, INS, UPD], []),
    "avro/dft__mysql_cdc__alltypes_composite_pk_update.avro": ([DEL, UPD], []),
    "avro/dft__mysql_cdc__delete_and_update.avro": ([DEL, UPD], []),
    "avro/dft__mysql_cdc__numbers.avro": ([INS, INS], []),
    "avro/dft__mysql_cdc__pk_update_UPDATE-DELETE_UPDATE-INSERT.avro": ([DEL, UPD], []),
    "avro/dft__oracle_dump_2020__HR_LOCATIONS.avro": ([SN] * 23, []),  # oracle_dump, no change_type at all
    "avro/dft__postgresql_cdc__bytea_json_arrays.avro": ([INS], []),
    "avro/hkh__postgresql_backfill__7bb32d069d36f7728b1ca66f812bb4ff24413219_postgresql-backfill_-96622484_7_17761.avro":
        ([SN] * 275, []),
    "json_real/badal__mysql_cdc__accounts.jsonl": ([INS], []),
    "json_real/badal__mysql_cdc__customers_array.json": ([INS], []),
    "json_real/badal__mysql_cdc__voters_pretty_array.json": ([INS, INS, UPD, INS, INS, DEL], []),
    # GCS object notifications are not Datastream events: one quarantine record each, with the reason.
    "json_real/hkh__gcs_object_notification_avro_file.jsonl": ([], ["gcs_notification"]),
    "json_real/hkh__gcs_object_notification_zero_byte_folder_object.jsonl": ([], ["gcs_notification"]),
    "json_real/hkh__postgresql_backfill__data_single_line.jsonl": ([SN], []),
    "json_real/hkh__postgresql_backfill__public_dwh_entity_role_properties.jsonl": ([SN] * 275, []),  # no final \n
    "json_real/oracle_backfill_HR_JOBS__dataflowtemplates_FormatDatastreamJsonToJsonTest.jsonl": ([SN], []),
    "json_real/readme_example__postgresql_cdc_update_jsonb.jsonl": ([UPD], []),
    "synthetic_from_tests/oracle_no_primary_keys__dataflowtemplates_FormatDatastreamJsonToJsonTest.jsonl": ([SN], []),
    "synthetic_from_tests/sqlserver_cdc__dataflowtemplates_FormatDatastreamJsonToJsonTest.jsonl": ([INS], []),
    "synthetic_from_tests/sqlserver_replication_index__dataflowtemplates_FormatDatastreamJsonToJsonTest.jsonl":
        ([INS], []),
}


def corpus_files() -> list[str]:
    if not CORPUS.is_dir():
        return []
    return sorted(str(p.relative_to(CORPUS)) for folder in FOLDERS if (CORPUS / folder).is_dir()
                  for p in (CORPUS / folder).iterdir() if p.is_file())


_CACHE: dict[str, list[dict]] = {}


def decode(rel: str) -> list[dict]:
    if rel not in _CACHE:
        path = str(CORPUS / rel)
        out = BatchBuilder()
        out.set_context("datastream", "datastream.json")
        with open(path, "rb") as fh:
            for _ in DatastreamAdapter().read_file(path, fh, out):
                pass
        out.end_record()
        _CACHE[rel] = out.flush().to_pylist()
    return _CACHE[rel]


def changes(rel: str) -> list[dict]:
    return [r for r in decode(rel) if r["_kind"] == "change"]


def var(v):
    if v is None:
        return None
    with decimal.localcontext() as ctx:
        ctx.prec = 100
        return VariantVal(v["value"], v["metadata"]).toPython()


def test_every_corpus_file_has_an_expectation():
    assert set(corpus_files()) == set(EXPECTED)


@pytest.mark.parametrize("rel", corpus_files())
def test_file_conforms(rel):
    ops, errors = EXPECTED[rel]
    rows = decode(rel)
    assert [r["op"] for r in rows if r["_kind"] == "change"] == ops
    assert [r["_rule"] for r in rows if r["_kind"] == "quarantine"] == errors
    assert sum(r["_records"] for r in rows) == len(ops) + len(errors)  # every record has exactly one outcome
    assert [r["_rule"] for r in rows if r["_kind"] in ("filtered", "metadata")] == []
    ids = [r["event_id"] for r in rows if r["_kind"] == "change"]
    assert len(set(ids)) == len(ids)


# -- values checked by hand against the fastavro / json decoding of the same files ---------------------------
def test_mysql_decimal_65_30_and_numbers():
    movie = [var(r["after"]) for r in changes("avro/dft__mysql_cdc__Movie_decimal65_30.avro")]
    assert [str(m["actor"]) for m in movie] == ["12345.098760000000000000000000000000",
                                                 "931.512300000000000000000000000000"]
    assert movie[0]["startTime"] == dt.datetime(2023, 1, 1, 12, 12, 12, tzinfo=UTC)
    nums = [var(r["after"]) for r in changes("avro/dft__mysql_cdc__numbers.avro")]
    # BIGINT UNSIGNED is a `number` string ('1', '0'); FLOAT 1.2f reads as 1.2000000476837158 in float32.
    assert [(n["bigu"], n["floater"], n["decimaler"], n["intyu"]) for n in nums] == [
        (1, 1.0, Decimal("1.00"), 1), (0, 1.2, Decimal("11.22"), 4294967295)]
    assert [r["position"] for r in changes("avro/dft__mysql_cdc__numbers.avro")] == [
        "mysql-bin.000025:78443180", "mysql-bin.000025:78443804"]


def test_mysql_all_types():
    first = var(changes("avro/dft__mysql_backfill__AllDatatypeColumns.avro")[0]["after"])
    assert first["date_column"] == dt.datetime(2024, 2, 8, tzinfo=UTC)  # DATE: timestamp-micros at midnight
    assert first["time_column"] == "08:15:30.000000"  # 29730000000 µs
    assert first["blob_column"] == "626c6f625f646174615f31"  # hex string, kept without binary_columns
    assert first["float_column"] == 45.67 and first["decimal_column"] == Decimal("456.12")
    assert first["text_column"] == "text_data_1\n" and first["bit_column"] == 102


def test_mysql_key_change_pair_shares_position():
    rows = changes("avro/dft__mysql_cdc__pk_update_UPDATE-DELETE_UPDATE-INSERT.avro")
    assert [r["position"] for r in rows] == ["mysql-bin.000131:2550"] * 2
    assert [var(r["key"]) for r in rows] == [{"id": 1}, {"id": 10}]
    assert rows[0]["_pair"] == rows[1]["_pair"] and rows[0]["sort_key"] < rows[1]["sort_key"]
    assert var(rows[0]["before"]) == {"id": 1, "val": 10} and rows[0]["flags"] == ["key_change"]


def test_mysql_timestamptz_record():
    (row,) = changes("avro/dft__mysql_backfill__people_timestamptz.avro")
    assert var(row["after"])["timestamp_with_tz"] == "2020-10-13T15:30:00.056483+01:00"
    assert row["flags"] == ["timestamp_as_string"] and row["position"] is None


def test_oracle_rows():
    (ins,) = changes("avro/cdap__oracle_cdc__insert.avro")
    assert ins["position"] == "scn=7044811,rs_id=0x0000d4.000091be.0010,ssn=1"
    assert (ins["database"], ins["schema"], ins["table"], ins["tx_id"]) == ("xe", "HR", "EMPLOYEES", "CAACAAUKAAA=")
    (dele,) = changes("avro/cdap__oracle_cdc__delete.avro")
    assert var(dele["before"])["EMPLOYEE_ID"] == 210 and dele["after"] is None
    pair = changes("avro/cdap__oracle_cdc__update_pk_UPDATE-DELETE_UPDATE-INSERT.avro")
    assert [var(r["key"]) for r in pair] == [{"EMPLOYEE_ID": 210}, {"EMPLOYEE_ID": 211}]
    old = changes("avro/dft__oracle_dump_2020__HR_LOCATIONS.avro")
    first = var(old[0]["after"])
    assert (first["STREET_ADDRESS"], first["LOCATION_ID"], first["STATE_PROVINCE"]) == ("1297 Via Cola di Rie", 1000.0,
                                                                                         None)
    assert old[0]["source_ts"] == dt.datetime(2020, 8, 10, 23, 13, 50, 365000, tzinfo=UTC)  # plain long millis
    (jobs,) = changes("json_real/oracle_backfill_HR_JOBS__dataflowtemplates_FormatDatastreamJsonToJsonTest.jsonl")
    assert jobs["capture_ts"] == dt.datetime(2021, 12, 25, 5, 42, 4, 408000, tzinfo=UTC)  # "2021-12-25 05:42:04.408"
    assert var(jobs["key"]) == {"JOB_ID": "PR_REP"}


def test_postgresql_rows():
    (row,) = changes("avro/dft__postgresql_cdc__bytea_json_arrays.avro")
    after = var(row["after"])
    assert after["binary_content"] == b"\xde\xad\xbe\xef" and after["integer_array_field"] is None
    assert (row["database"], row["schema"], row["position"], row["tx_id"]) == (None, "public", "16/CB002DB0", "363552")
    hkh = changes("avro/hkh__postgresql_backfill__7bb32d069d36f7728b1ca66f812bb4ff24413219_"
                  "postgresql-backfill_-96622484_7_17761.avro")
    assert len({r["event_id"] for r in hkh}) == 275  # all 275 events share one uuid
    assert all(r["primary_keys"] == [] and r["key"] is None for r in hkh)
    (upd,) = changes("json_real/readme_example__postgresql_cdc_update_jsonb.jsonl")
    after = var(upd["after"])
    assert after["variables"]["partner"] == "abertta" and after["created_at"] == "2025-11-05T18:19:39.044331Z"
    assert upd["source_ts"] == dt.datetime(2025, 11, 5, 18, 23, 31, 393000, tzinfo=UTC)


def test_sqlserver_rows():
    (row,) = changes("synthetic_from_tests/sqlserver_cdc__dataflowtemplates_FormatDatastreamJsonToJsonTest.jsonl")
    assert (row["database"], row["schema"], row["table"], row["position"]) == (
        "mydb", "dbo", "EMPLOYEES", "00000025:00000728:0003")
    (ri,) = changes("synthetic_from_tests/sqlserver_replication_index__dataflowtemplates_FormatDatastreamJsonToJsonTest"
                    ".jsonl")
    assert ri["primary_keys"] == ["order_id"] and var(ri["key"]) == {"order_id": 1}


def test_normalize_over_the_corpus(spark):
    import cdcnorm

    res = cdcnorm.normalize([str(CORPUS / f) for f in FOLDERS if (CORPUS / f).is_dir()], "datastream", spark=spark)
    report = res.report
    assert report["reconciled"]
    assert report["quarantine_by_reason"] == {"gcs_notification": 2}
    assert report["outcomes"]["duplicate"] == 1  # data_single_line.jsonl repeats a line of the 275-line file
    got = {(r["table"], r["op"], r["vendor_op"]): r["count"] for r in res.changes.where(
        F.col("vendor_op").isin("UPDATE-DELETE", "UPDATE-INSERT")).groupBy("table", "op", "vendor_op").count().collect()}
    assert got == {
        ("EMPLOYEES", "DELETE", "UPDATE-DELETE"): 1, ("EMPLOYEES", "INSERT", "UPDATE-INSERT"): 1,
        ("alltypes", "DELETE", "UPDATE-DELETE"): 1, ("alltypes", "INSERT", "UPDATE-INSERT"): 1,
        ("my_table", "DELETE", "UPDATE-DELETE"): 1, ("my_table", "INSERT", "UPDATE-INSERT"): 1,
        ("my_table", "UPDATE", "UPDATE-INSERT"): 1, ("AllDatatypeColumns2", "UPDATE", "UPDATE-INSERT"): 1,
        ("Users", "UPDATE", "UPDATE-INSERT"): 1, ("inventory.voters", "UPDATE", "UPDATE-INSERT"): 1,
    }
    assert sum(len(ops) for ops, _ in EXPECTED.values()) == 728
    assert res.changes.count() == 728 - 1  # every change record, minus the one duplicate
