"""Stream identity: a change's stream and event id never depend on which file, folder or batch carried it.

A Replicate topic exported to several files is one stream, not one per file. Each test here puts
the same vendor output under other names and folders and asserts the same stream and the same event ids.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cdcnorm.adapters import get_adapter
from cdcnorm.adapters.base import MessageMeta
from cdcnorm.adapters.replicate.naming import connect_location, delivery_location
from cdcnorm.canonical.emit import BatchBuilder
from decoded import changes, decode_files
from decoded import rows_of as _rows

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
ORDERS_JSON = SAMPLES / "replicate" / "json" / "orders_wide.jsonl"
TASK = "sales-to-eventhubs"  # lineage.task of the sample's metadata message


def copy_to(src: Path, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    return dest


def identities(rows: list[dict]) -> list[tuple[str, str]]:
    return [(r["stream"], r["event_id"]) for r in changes(rows)]


@pytest.mark.parametrize(
    ("path", "topic", "partition"),
    [
        ("gs://b/topics/shop-cdc/partition=3/shop-cdc+3+0000001000.json", "shop-cdc", "3"),
        ("topics/shop.orders/partition=0/shop.orders+0+0000000000.json.gz", "shop.orders", "0"),
        ("/x/shop-cdc+12+42.avro", "shop-cdc", "12"),  # the file name alone (a flat copy of sink output)
        ("/x/topics/shop-cdc/partition=1/part-7.jsonl", "shop-cdc", "1"),  # the folder alone
        ("/x/ns/orders/2/2024/05/01/10/05/07.avro", "orders", "2"),  # an Event Hubs Capture path
        ("/x/dumps/orders-0001.jsonl", None, None),
        ("/x/a+b.json", None, None),
    ],
)
def test_delivery_location_from_paths(path, topic, partition):
    assert delivery_location(path) == (topic, partition)


def test_connect_file_name_wins_over_folder():
    assert connect_location("/t/topics/a/partition=0/b+1+5.json") == ("b", "1")


def test_replicate_kafka_connect_files_are_one_stream_named_after_the_topic(tmp_path):
    first = copy_to(ORDERS_JSON, tmp_path / "topics/shop-cdc/partition=0/shop-cdc+0+0000000000.json")
    again = copy_to(ORDERS_JSON, tmp_path / "topics/shop-cdc/partition=0/shop-cdc+0+0000000042.json")
    a, b = identities(decode_files("replicate", [first])), identities(decode_files("replicate", [again]))
    assert a == b and len(a) == 8
    assert {s for s, _ in a} == {"shop-cdc"}
    rows = decode_files("replicate", [first, again])
    assert {r["origin"]["partition"] for r in changes(rows)} == {"0"}


def test_replicate_files_without_a_topic_take_the_task_never_the_file_name(tmp_path):
    first = copy_to(ORDERS_JSON, tmp_path / "run1" / "orders-0001.jsonl")
    again = copy_to(ORDERS_JSON, tmp_path / "run2" / "redelivered.jsonl")
    a, b = identities(decode_files("replicate", [first])), identities(decode_files("replicate", [again]))
    assert a == b and {s for s, _ in a} == {TASK}


def test_replicate_topic_of_a_kafka_dataframe_and_of_the_same_messages_in_files(tmp_path):
    adapter = get_adapter("replicate")
    out = BatchBuilder()
    for i, line in enumerate(ORDERS_JSON.read_bytes().splitlines()):
        out.begin_record("shop-cdc", i, partition="0", offset=str(i), raw=line)
        adapter.decode_message(line, MessageMeta(topic="shop-cdc", partition="0", offset=str(i)), out)
    out.end_record()
    from_kafka = identities(_rows(out.flush()))
    sink = copy_to(ORDERS_JSON, tmp_path / "topics/shop-cdc/partition=0/shop-cdc+0+0000000000.json")
    assert from_kafka == identities(decode_files("replicate", [sink]))


def test_replicate_legacy_file_naming_keeps_the_old_stream_names(tmp_path):
    sink = copy_to(ORDERS_JSON, tmp_path / "topics/shop-cdc/partition=0/shop-cdc+0+0000000000.json")
    rows = decode_files("replicate", [ORDERS_JSON, sink], stream_naming="file")
    assert sorted({r["stream"] for r in changes(rows)}) == ["orders_wide", "shop-cdc+0+0000000000"]


def test_replicate_stream_option_wins(tmp_path):
    sink = copy_to(ORDERS_JSON, tmp_path / "topics/shop-cdc/partition=0/shop-cdc+0+0000000000.json")
    assert {s for s, _ in identities(decode_files("replicate", [sink], stream="sales"))} == {"sales"}


def test_datastream_event_ids_do_not_depend_on_the_file(tmp_path):
    src = next((SAMPLES / "datastream" / "shop_orders").rglob("*_mysql-cdc-binlog_1296257282_6_0.jsonl"))
    again = copy_to(src, tmp_path / "elsewhere" / "2025" / "01" / "22" / "renamed.jsonl")
    a, b = identities(decode_files("datastream", [src])), identities(decode_files("datastream", [again]))
    assert a == b and len(a) >= 2
    assert len({s for s, _ in a}) == 1 and "renamed" not in a[0][0]


def test_datahub_event_ids_do_not_depend_on_the_file(tmp_path):
    src = SAMPLES / "datahub" / "blob" / "documented.jsonl"
    again = copy_to(src, tmp_path / "other-run" / "part-9999.jsonl")
    a, b = identities(decode_files("datahub", [src])), identities(decode_files("datahub", [again]))
    assert a == b and len(a) >= 2
    assert all("part-9999" not in s for s, _ in b)

