"""DataWorks' aliyun-json traits on DataHub: one-message UPDATEs, full-load sentinels, DOUBLE as text, versions.

Samples: `samples/datahub/blob/aliyun_json/` (hand-written from reference item 13: no real DataWorks output is
public). Pure decoding first, then Spark through normalize, a second run into the same lake and apply.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from pyspark.sql.types import VariantVal

from cdcnorm.adapters.datahub.blob_values import blob_value
from cdcnorm.adapters.datahub.pairing import pair_id
from cdcnorm.adapters.datahub.scalars import is_unset
from cdcnorm.adapters.datahub.tuple_topic import execute_time
from decoded import changes, outcomes
from test_datahub import decode, read

ALIYUN = Path(__file__).resolve().parents[1] / "samples" / "datahub" / "blob" / "aliyun_json"
PART1, PART2 = ALIYUN / "part-0001.jsonl", ALIYUN / "part-0002.jsonl"
S = 1715000000000000
"""The samples' CDC sequenceIds are S + 1 .. S + 5."""
T = 1715000000000
UTC = dt.UTC


def ms(v: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=v)


def message(op: str, seq: str | int, before: dict | None = None, after: dict | None = None, *, event: int = T,
            version: object = "0.0.1", keys: tuple = ("id",)) -> bytes:
    payload: dict = {"op": op, "sequenceId": seq, "timestamp": {"eventTime": event, "systemTime": T + 5,
                                                                  "checkpointTime": event}}
    if before is not None:
        payload["before"] = {"dataColumn": before}
    if after is not None:
        payload["after"] = {"dataColumn": after}
    schema = {"dataColumn": [{"name": "id", "type": "LONG"}, {"name": "v", "type": "DOUBLE"},
                             {"name": "d", "type": "DATE"}],
              "primaryKey": list(keys), "source": {"dbType": "MySQL", "dbName": "db", "tableName": "t"}}
    return json.dumps({"schema": schema, "payload": payload, "version": version}).encode()


# -- decoding ----------------------------------------------------------------------------------------------
def test_one_message_update_is_both_halves_of_the_two_message_pair():
    one = changes(decode(message("UPDATE_AFTER", "7", {"id": 1, "v": "1.100000"}, {"id": 1, "v": 2.5})))
    two = changes(decode(message("UPDATE_BEFOR", "7", {"id": 1, "v": 1.1}),
                         message("UPDATE_AFTER", "7", after={"id": 1, "v": "2.500000"})))
    assert [(r["_pair_role"], r["_records"]) for r in one] == [("before/whole", 1), ("after/whole", 0)]
    assert [r["_pair_role"] for r in two] == ["before", "after"]
    assert {r["_pair"] for r in one} == {r["_pair"] for r in two} == {pair_id("db", "db", None, "t", 7)}
    assert [(r["before"], r["after"]) for r in one] == [({"id": 1, "v": 1.1}, None), (None, {"id": 1, "v": 2.5})]
    assert [r["sort_key"] for r in one] == [r["sort_key"] for r in two]
    assert all(r["flags"] == [] for r in one)


def test_update_befor_carrying_both_images_is_whole_too():
    rows = changes(decode(message("UPDATE_BEFOR", "8", {"id": 1, "v": 1.0}, {"id": 1, "v": 3.0})))
    assert [(r["_pair_role"], r["vendor_op"]) for r in rows] == [("before/whole", "UPDATE_BEFOR"),
                                                                ("after/whole", "UPDATE_BEFOR")]


def test_a_half_with_an_empty_other_image_stays_a_half():
    (row,) = changes(decode(message("UPDATE_AFTER", "9", {}, {"id": 1, "v": 3.0})))
    assert row["_pair_role"] == "after" and row["before"] is None


@pytest.mark.parametrize("text, expected", [("1.100000", 1.1), ("-0.500000", -0.5), ("3", 3.0), (" 2.25 ", 2.25)])
@pytest.mark.parametrize("vtype", ["DOUBLE", "FLOAT"])
def test_double_sent_as_text_decodes_to_the_double(text, expected, vtype):
    value = blob_value(text, vtype, "v")
    assert type(value) is float and value == expected


def test_double_text_that_is_not_a_number_is_quarantined():
    assert outcomes(decode(message("INSERT", "1", after={"id": 1, "v": "1,5"}))) == [("quarantine", "bad_value")]


@pytest.mark.parametrize("version", ["0.0.1", "0.0.2", "1.0", 2, None])
def test_any_version_is_accepted(version):
    assert outcomes(decode(message("INSERT", "1", after={"id": 1}, version=version))) == [("change", None)]


@pytest.mark.parametrize("value, unset", [(-1, True), ("-1", True), (" -1 ", True), (-5, True), (0, False),
                                          ("0", False), (1, False), ("abc", False), (True, False), (None, False)])
def test_only_negative_numbers_are_sentinels(value, unset):
    assert is_unset(value) is unset


def test_full_load_record_is_a_snapshot_with_unknown_times():
    raw = message("INSERT", "-1", after={"id": 1, "v": "1.100000", "d": -1}, event=-1)
    (row,) = changes(decode(raw))
    assert (row["op"], row["vendor_op"], row["position"]) == ("SNAPSHOT", "INSERT", None)
    assert row["source_ts"] is None and row["capture_ts"] == ms(T + 5)
    # a column value of -1 is data (1969-12-31T23:59:59.999), only the envelope's -1 is a sentinel
    assert row["after"] == {"id": 1, "v": 1.1, "d": ms(-1)}


def test_eventtime_zero_is_not_a_sentinel():
    (row,) = changes(decode(message("INSERT", "5", after={"id": 1}, event=0)))
    assert row["op"] == "INSERT" and row["source_ts"] == ms(0)


def test_full_load_rows_sort_before_every_change_and_have_their_own_stable_ids():
    rows = changes(read(PART1, PART2))
    snap = [r for r in rows if r["op"] == "SNAPSHOT"]
    cdc = [r for r in rows if r["op"] != "SNAPSHOT"]
    assert len(snap) == 4 and len(cdc) == 11
    assert max(r["sort_key"] for r in snap) < min(r["sort_key"] for r in cdc)
    assert all(r["source_ts"] is None for r in snap) and all(r["source_ts"] is not None for r in cdc)
    ids = [r["event_id"] for r in snap]
    assert len(set(ids)) == 3 and ids[1] == ids[3]  # the last one is a redelivery of id 2 in another file
    assert [r["event_id"] for r in changes(read(PART1, PART2)) if r["op"] == "SNAPSHOT"] == ids


def test_a_negative_sequence_id_never_sorts_among_changes():
    snap = changes(decode(message("INSERT", "-1", after={"id": 1}, event=-1)))[0]
    first = changes(decode(message("INSERT", "0", after={"id": 2})))[0]
    assert snap["sort_key"] < first["sort_key"] and first["op"] == "INSERT"


def test_delete_without_sequence_id_is_identified_by_key_and_row():
    a = changes(decode(message("DELETE", "-1", before={"id": 1, "v": 1.0})))[0]
    b = changes(decode(message("DELETE", "-1", before={"id": 2, "v": 1.0})))[0]
    assert a["op"] == b["op"] == "DELETE" and a["event_id"] != b["event_id"]


def test_tuple_full_load_sentinels():
    row = {"id": "1", "_sequence_id_": "-1", "_operation_type_": "I", "_execute_time_": "-1",
           "_source_table_": "t", "_before_image_": "N", "_after_image_": "Y"}
    (got,) = changes(decode(json.dumps(row).encode()))
    assert (got["op"], got["source_ts"], got["position"]) == ("SNAPSHOT", None, None)
    assert execute_time(-1, "BIGINT") is None and execute_time("-1", "TIMESTAMP") is None
    assert execute_time(0, "BIGINT") == ms(0)


# -- Spark: pairing, deduplication across files and runs, apply --------------------------------------------
def _py(v):
    return v.toPython() if isinstance(v, VariantVal) else v


@pytest.fixture(scope="module")
def normalized(spark, tmp_path_factory):
    import cdcnorm

    lake = str(tmp_path_factory.mktemp("aliyun") / "lake")
    res = cdcnorm.normalize([str(PART1), str(PART2)], "datahub", spark=spark, lake=lake)
    rows = [{k: _py(v) for k, v in r.asDict().items()} for r in res.changes.collect()]
    return res, rows, lake


def _by_position(rows: list[dict]) -> dict:
    return {(r["position"], r["op"]): r for r in rows if r["position"] is not None}


def test_one_and_two_message_updates_of_one_key_become_one_update_each(normalized):
    _, rows, _ = normalized
    got = _by_position(rows)
    one = got[(str(S + 2), "UPDATE")]  # one message, and its UPDATE_BEFOR half delivered on its own as well
    assert (one["before"]["price"], one["after"]["price"]) == (1.1, 1.25)
    assert one["changed_columns"] == ["price", "updated"] and one["flags"] == []
    assert one["vendor_op"] == "UPDATE_AFTER" and one["event_id"] == pair_id("shop", "shop", None, "items", S + 2)
    two = got[(str(S + 3), "UPDATE")]  # two messages in part 1, the same change as one message in part 2
    assert (two["before"]["price"], two["after"]["price"]) == (1.25, 1.5) and two["flags"] == []
    assert two["vendor_op"] == "UPDATE_AFTER" and two["origin"]["uri"].endswith("part-0002.jsonl")
    assert two["event_id"] == pair_id("shop", "shop", None, "items", S + 3)
    assert sum(1 for r in rows if r["op"] == "UPDATE") == 2


def test_one_message_key_change_is_delete_and_insert(normalized):
    _, rows, _ = normalized
    got = _by_position(rows)
    delete, insert = got[(str(S + 4), "DELETE")], got[(str(S + 4), "INSERT")]
    assert delete["key"] == {"id": 2} and insert["key"] == {"id": 22}
    assert delete["flags"] == insert["flags"] == ["key_change"] and insert["changed_columns"] == ["id", "updated"]


def test_run_report_counts_every_record(normalized):
    res, rows, _ = normalized
    assert len(rows) == 9 and len({r["event_id"] for r in rows}) == 9
    assert sorted(r["op"] for r in rows) == ["DELETE", "DELETE", "INSERT", "INSERT", "SNAPSHOT", "SNAPSHOT",
                                             "SNAPSHOT", "UPDATE", "UPDATE"]
    assert res.report["records_read"] == 12 and res.report["reconciled"]
    assert res.report["outcomes"] == {"emitted": 8, "merged": 3, "metadata": 0, "filtered": 0, "duplicate": 1,
                                      "quarantined": 0, "held": 0}


@pytest.mark.slow
def test_redelivery_in_the_other_shape_in_a_later_run_is_a_duplicate(spark, normalized, tmp_path):
    import cdcnorm

    _, _, lake = normalized
    whole = PART2.read_bytes().splitlines()[0]
    other = json.loads(whole)
    halves = []
    for op, role in (("UPDATE_BEFOR", "before"), ("UPDATE_AFTER", "after")):
        msg = json.loads(whole)
        msg["payload"] = {**other["payload"], "op": op}
        msg["payload"].pop("after" if role == "before" else "before")
        halves.append(json.dumps(msg))
    again = tmp_path / "again.jsonl"
    again.write_text("\n".join([*halves, *PART1.read_text().splitlines()[:3]]) + "\n")
    res = cdcnorm.normalize([str(again)], "datahub", spark=spark, lake=lake)
    assert res.report["rows_written"] == 0 and res.report["reconciled"]
    # the pair row stands for its two half records: 2 + 3 snapshot records are duplicates
    assert res.report["outcomes"]["duplicate"] == 5 and res.report["outcomes"]["merged"] == 0


@pytest.mark.slow
def test_apply_orders_the_full_load_before_the_changes(spark, normalized):
    import cdcnorm

    _, _, lake = normalized
    frames = cdcnorm.apply(spark, lake)
    (table,) = [df for tid, df in frames.items() if tid.table == "items"]
    state = {r["id"]: (r["name"], r["price"]) for r in table.collect()}
    assert state == {1: ("pen", 1.5), 4: ("cap", 3.0), 22: ("ink", 2.5)}


def test_full_load_heartbeats_with_unknown_times_keep_distinct_ids():
    def beat(system: int) -> bytes:
        return json.dumps({"schema": {}, "payload": {"op": "MHEARTBEAT", "sequenceId": "-1", "timestamp": {
            "eventTime": -1, "systemTime": system, "checkpointTime": -1}}, "version": "0.0.1"}).encode()

    a, b, again = changes(decode(beat(T), beat(T + 1), beat(T)))
    assert a["op"] == "HEARTBEAT" and a["source_ts"] is None and a["capture_ts"] == ms(T)
    assert a["event_id"] != b["event_id"] and a["event_id"] == again["event_id"]
