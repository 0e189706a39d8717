"""Vendor sentinel times and positions: "unknown" never becomes an epoch date, and full loads order first.

DataHub's own cases (DataWorks full-load `-1`) are in test_dataworks.py; here the other two vendors' envelope
times and full-load rows (docs/canonical.md, "Sentinel values").
"""

from __future__ import annotations

import datetime as dt
import json

import pytest

from cdcnorm.adapters.datastream.types import parse_ts
from test_datastream import avro_file, avro_rec, changes, decode, envelope, lines, mysql
from test_replicate import changes as replicate_changes
from test_replicate import decode as replicate_decode
from test_replicate import dt_msg

UTC = dt.UTC


@pytest.mark.parametrize("value", [-1, "-1", -1000, "1969-12-31T23:59:59.999Z"])
def test_datastream_envelope_times_before_the_epoch_are_unknown(value):
    assert parse_ts(value) is None


@pytest.mark.parametrize("value, expected", [
    (0, dt.datetime(1970, 1, 1, tzinfo=UTC)),  # not documented as "unset": kept
    (1737457695000, dt.datetime(2025, 1, 21, 11, 8, 15, tzinfo=UTC)),
    ("2024-03-31T16:23:07.938Z", dt.datetime(2024, 3, 31, 16, 23, 7, 938000, tzinfo=UTC)),
    ("", None),
])
def test_datastream_real_envelope_times_are_kept(value, expected):
    assert parse_ts(value) == expected


def test_datastream_json_backfill_with_sentinel_times_orders_first():
    backfill = mysql("INSERT", {"id": 1, "val": 1}, log_file="", pos=0, src=-1, method="mysql-backfill-fulldump")
    backfill["read_timestamp"] = -1
    other = mysql("INSERT", {"id": 2, "val": 2}, log_file="", pos=0, src=-1, method="mysql-backfill-fulldump")
    cdc = mysql("UPDATE-INSERT", {"id": 1, "val": 3}, pos=100)
    snap, snap2, upd = changes(decode(lines(backfill, other, cdc)))
    assert (snap["op"], snap["source_ts"], snap["capture_ts"], snap["position"]) == ("SNAPSHOT", None, None, None)
    assert upd["op"] == "UPDATE" and upd["source_ts"] == dt.datetime(2025, 1, 21, 11, 8, 15, tzinfo=UTC)
    assert max(snap["sort_key"], snap2["sort_key"]) < upd["sort_key"]
    assert len({snap["event_id"], snap2["event_id"], upd["event_id"]}) == 3


def test_datastream_avro_sentinel_times_are_unknown():
    rec = avro_rec({"id": 1}, method="mysql-backfill-fulldump", pos=0, log_file="")
    rec["source_timestamp"] = rec["read_timestamp"] = -1
    data = avro_file(envelope([{"name": "id", "type": "int"}]), [rec])
    (row,) = changes(decode(data, "x.avro"))
    assert (row["op"], row["source_ts"], row["capture_ts"]) == ("SNAPSHOT", None, None)


def test_replicate_refresh_with_empty_headers_is_an_unknown_time_snapshot_before_cdc():
    refresh = dt_msg({"id": 1, "v": "a"}, op="REFRESH", cs="", timestamp="", change=None, column=None,
                     transactionEventCounter=None)
    refresh2 = dt_msg({"id": 2, "v": "b"}, op="REFRESH", cs="", timestamp="", change=None, column=None)
    cdc = dt_msg({"id": 1, "v": "c"}, op="INSERT", cs="20240101000000000000000000000000001")
    rows = replicate_changes(replicate_decode(refresh, refresh2, cdc, topic="t"))
    snap, snap2, ins = rows
    assert (snap["op"], snap["source_ts"], snap["position"]) == ("SNAPSHOT", None, "pos-1")
    assert ins["source_ts"] == dt.datetime(2024, 1, 1, 0, 0, 1, 250000, tzinfo=UTC)
    assert max(snap["sort_key"], snap2["sort_key"]) < ins["sort_key"]
    assert len({r["event_id"] for r in rows}) == 3
    assert json.loads(refresh)["message"]["headers"]["changeSequence"] == ""
