"""`cdcnorm simulate`: determinism, file shapes, quirks, truth consistency, bounded memory.

The replayers at the bottom are deliberately tiny readers of the simulator's own files (not the adapters):
replaying every vendor format and getting back exactly `OUT/truth/<format>/` proves the files and the truth
tell the same story; the adapters are then checked against that truth end to end elsewhere.
"""

from __future__ import annotations

import base64
import csv
import datetime as dt
import gzip
import hashlib
import io
import json
import re
import sys
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path

import fastavro
import pytest

import canal_flat
import debezium_kafka
import dms_files
import goldengate_records
from cdcnorm.simulate import (
    KNOWN_QUIRKS,
    QUIRKS,
    VENDOR_FORMATS,
    Manifest,
    load_changes,
    load_truth,
    simulate,
    simulate_command,
)
from cdcnorm.simulate.delivery import parse_quirks
from cdcnorm.simulate.encoders.replicate import mask
from cdcnorm.simulate.history import EPOCH, History, build_tables

UTC = dt.UTC
SMALL = {"tables": 3, "rows": 20, "changes": 240, "seed": 7, "rotate": 60}


@pytest.fixture(scope="module")
def sim_all(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sim_all")
    simulate(out, **SMALL)
    return out


@pytest.fixture(scope="module")
def sim_wide(tmp_path_factory) -> Path:
    """Six tables: every template under a second Datastream flavour (Oracle updates, MySQL binary as hex)."""
    out = tmp_path_factory.mktemp("sim_wide")
    simulate(out, tables=6, rows=8, changes=200, seed=11, rotate=40)
    return out


@pytest.fixture(scope="module")
def sim_plain(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sim_plain")
    simulate(out, quirks=[], **SMALL)
    return out


def _files(root: Path, *suffixes: str) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith(suffixes))


def _connect_first(out: Path, table: str) -> Path:
    """The first file a Kafka Connect sink wrote for a table's topic (partition 0, offset 0)."""
    topic = f"shop.{table}"
    return out / "replicate" / "json" / "topics" / topic / "partition=0" / f"{topic}+0+0000000000.json"


def _tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


# -- determinism ------------------------------------------------------------------------------------------


def test_same_seed_gives_byte_identical_output(sim_all, tmp_path):
    simulate(tmp_path, **SMALL)
    assert _tree_digest(tmp_path) == {k: v for k, v in _tree_digest(sim_all).items()}


def test_history_does_not_depend_on_vendor_or_quirks(sim_all, tmp_path):
    simulate(tmp_path, vendors=["datahub"], quirks=["none"], **SMALL)
    assert (tmp_path / "truth" / "changes.jsonl").read_bytes() == (sim_all / "truth" / "changes.jsonl").read_bytes()
    assert (tmp_path / "truth" / "datahub-blob").is_dir() and not (tmp_path / "truth" / "replicate-json").exists()
    for table in ("customers", "order_lines", "events"):
        assert (tmp_path / "truth" / "datahub-tuple" / f"{table}.jsonl").read_bytes() == \
            (sim_all / "truth" / "datahub-tuple" / f"{table}.jsonl").read_bytes()


def test_another_seed_gives_another_history(sim_all, tmp_path):
    simulate(tmp_path, vendors="datahub-blob", **{**SMALL, "seed": 8})
    assert (tmp_path / "truth" / "changes.jsonl").read_bytes() != (sim_all / "truth" / "changes.jsonl").read_bytes()


# -- the history ------------------------------------------------------------------------------------------


def test_history_covers_the_required_cases(sim_all):
    changes = list(load_changes(sim_all))
    ops = {c["op"] for c in changes}
    assert ops == {"SNAPSHOT", "INSERT", "UPDATE", "DELETE", "DDL", "TRUNCATE"}
    updates = [c for c in changes if c["op"] == "UPDATE"]
    assert any(c["key_change"] for c in updates)
    assert any(len(c["changed_columns"]) < 3 for c in updates if not c["key_change"])
    assert any((c["tx_seq"] or 0) > 1 for c in changes)
    ddl = next(c for c in changes if c["op"] == "DDL")
    assert ddl["table"] == "customers" and ddl["ddl"].endswith("ADD COLUMN tier VARCHAR(32)")
    assert next(c for c in changes if c["op"] == "TRUNCATE")["table"] == "order_lines"
    assert {c["op"] for c in changes if c["table"] == "events"} == {"SNAPSHOT", "INSERT"}
    seqs = [c["seq"] for c in changes if c["op"] != "SNAPSHOT"]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    values = [v for c in changes for row in (c["before"], c["after"]) if row for v in row.values()]
    kinds = {type(v) for v in values}
    assert {int, Decimal, float, bool, str, dt.date, dt.datetime, bytes, type(None)} <= kinds
    big = [v for c in changes if c["table"] == "order_lines" and c["after"] for v in [c["after"]["big_amount"]] if v]
    assert any(len(v.as_tuple().digits) > 38 for v in big)
    assert any(v.microsecond % 1000 for v in values if isinstance(v, dt.datetime))
    assert any(any(ord(ch) > 0xFFFF for ch in v) for v in values if isinstance(v, str))


def test_tables_single_composite_and_no_key():
    defs = build_tables(6)
    assert [(t.name, t.primary_key, t.flavour) for t in defs[:4]] == [
        ("customers", ("id",), "postgresql"), ("order_lines", ("order_id", "line_no"), "mysql"),
        ("events", (), "oracle"), ("customers_2", ("id",), "mysql")]
    assert [t.name for t in defs if t.ddl] == ["customers"] and [t.name for t in defs if t.truncate] == ["order_lines"]


def test_manifest_describes_source_and_lake_identity(sim_all):
    m = Manifest.load(sim_all)
    assert (m.seed, m.tables, m.rows, m.changes) == (7, 3, 20, 240)
    assert m.quirks == list(QUIRKS) and m.formats == list(VENDOR_FORMATS)
    cust = next(t for t in m.source_tables if t["name"] == "customers")
    assert cust["primary_key"] == ["id"] and cust["ddl"]["statement"].startswith("ALTER TABLE customers")
    assert {c["name"]: c["type"] for c in cust["columns"]}["balance"] == "decimal(12,2)"
    ds = m.vendor_formats["datastream-avro"]["tables"]
    assert ds["order_lines"]["database"] == "shop" and ds["order_lines"]["schema"] is None
    assert ds["customers"]["database"] is None and ds["customers"]["schema"] == "public"
    assert m.input_dir("replicate-capture") == sim_all / "replicate" / "capture"
    tuple_cols = [c["name"] for c in m.vendor_formats["datahub-tuple"]["tables"]["customers"]["columns"]]
    assert "tier" not in tuple_cols
    blob_kinds = {c["name"]: c["truth_kind"] for c in m.vendor_formats["datahub-blob"]["tables"]["customers"]["columns"]}
    assert blob_kinds["balance"] == "str_decimal" and blob_kinds["birth_date"] == "ts_midnight"


# -- file shapes ------------------------------------------------------------------------------------------


def test_datastream_files_follow_the_cloud_storage_layout(sim_all):
    files = _files(sim_all / "datastream", ".avro", ".jsonl", ".jsonl.gz")
    names = {p.relative_to(sim_all / "datastream").parts[1] for p in files}
    assert names == {"public_customers", "shop_order_lines", "APP_events"}
    for p in files:
        rel = p.relative_to(sim_all / "datastream")
        assert len(rel.parts) == 8 and all(x.isdigit() for x in rel.parts[2:7])
        schema_key, read_method = p.name.split("_")[:2]
        assert len(schema_key) == 40
        assert read_method in {"postgresql-backfill", "postgresql-cdc", "mysql-backfill-fulldump", "mysql-cdc-binlog",
                               "oracle-backfill", "oracle-cdc-logminer"}
    assert any(p.name.endswith(".jsonl.gz") for p in files) and any(p.name.endswith(".jsonl") for p in files)
    keys = {p.name.split("_")[0] for p in files if "public_customers" in str(p)}
    assert len(keys) == 2  # the added column rotates to a new schema_key


def test_datastream_avro_events_have_the_flavoured_metadata(sim_all):
    by_method: dict[str, dict] = {}
    for p in _files(sim_all / "datastream" / "avro", ".avro"):
        reader = fastavro.reader(p.open("rb"))
        assert reader.metadata["avro.codec"] == "null"
        assert [f["name"] for f in reader.writer_schema["fields"]][:3] == ["uuid", "read_timestamp", "source_timestamp"]
        for rec in reader:
            assert p.name.startswith(rec["schema_key"])
            by_method.setdefault(f"{rec['read_method']}:{rec['source_metadata']['change_type']}", rec)
    mysql = by_method["mysql-cdc-binlog:UPDATE-INSERT"]
    assert mysql["sort_keys"] == [int(mysql["source_timestamp"].timestamp() * 1000),
                                  mysql["source_metadata"]["log_file"], mysql["source_metadata"]["log_position"]]
    assert set(mysql["source_metadata"]) == {"table", "database", "primary_keys", "log_file", "log_position",
                                             "change_type", "is_deleted"}
    assert isinstance(mysql["payload"]["gift"], int) and mysql["payload"]["ship_date"] is None or \
        mysql["payload"]["ship_date"].tzinfo is not None
    assert by_method["mysql-backfill-fulldump:INSERT"]["sort_keys"][1:] == ["", 0]
    pg = by_method["postgresql-cdc:UPDATE"]
    assert "database" not in pg["source_metadata"] and pg["sort_keys"][1] == pg["source_metadata"]["lsn"]
    assert by_method["postgresql-cdc:UPDATE-DELETE"]["source_metadata"]["is_deleted"] is True
    ora = by_method["oracle-cdc-logminer:INSERT"]
    assert len(ora["sort_keys"]) == 4 and ora["source_metadata"]["primary_keys"] == []
    assert by_method["oracle-backfill:INSERT"]["sort_keys"][2:] == ["", 0]


def test_datastream_pk_change_is_a_pair_at_one_position(sim_plain):
    events = [json.loads(line) for p in _files(sim_plain / "datastream" / "json", ".jsonl")
              for line in p.read_text(encoding="utf-8").splitlines()]
    dels = [e for e in events if e["source_metadata"]["change_type"] == "UPDATE-DELETE"]
    ins = {(e["source_metadata"]["log_file"], e["source_metadata"]["log_position"]): e for e in events
           if e["source_metadata"]["change_type"] == "UPDATE-INSERT"}
    assert dels
    for d in dels:
        pair = ins[(d["source_metadata"]["log_file"], d["source_metadata"]["log_position"])]
        assert (d["payload"]["order_id"], d["payload"]["line_no"]) != (pair["payload"]["order_id"], pair["payload"]["line_no"])
        assert d["source_metadata"]["is_deleted"] is True


def test_datastream_json_writes_decimals_as_exact_numbers(sim_all):
    p = next(p for p in _files(sim_all / "datastream" / "json", ".jsonl") if "shop_order_lines" in str(p))
    text = p.read_text(encoding="utf-8")
    assert not text.endswith("\n")  # like the real files: no newline after the last line
    row = json.loads(text.splitlines()[0], parse_float=Decimal)
    assert isinstance(row["payload"]["unit_price"], Decimal) and row["payload"]["unit_price"].as_tuple().exponent == -4
    assert row["read_timestamp"].endswith("Z") and len(row["read_timestamp"]) == 24


def test_replicate_json_has_md_then_dt_with_masks(sim_plain):
    msgs = [json.loads(line) for line in _connect_first(sim_plain, "customers")
            .read_text(encoding="utf-8").splitlines()]
    md = msgs[0]
    assert md["magic"] == "atMSG" and md["type"] == "MD" and md["messageSchemaId"] == md["message"]["schemaId"]
    cols = md["message"]["tableStructure"]["tableColumns"]
    assert cols["id"] == {"ordinal": 1, "type": "INT8", "length": 19, "precision": 0, "scale": 0,
                          "primaryKeyPosition": 1, "nullable": False}
    assert cols["balance"]["type"] == "NUMERIC" and (cols["balance"]["precision"], cols["balance"]["scale"]) == (12, 2)
    assert json.loads(md["messageSchema"])["name"] == "MetadataMessage"
    refresh = msgs[1]["message"]
    assert refresh["headers"]["operation"] == "REFRESH" and refresh["headers"]["changeSequence"] == ""
    assert refresh["headers"]["changeMask"] is None and refresh["beforeData"] is None
    assert isinstance(refresh["data"]["balance"], str)
    update = next(m["message"] for m in msgs if m["type"] == "DT" and m["message"]["headers"]["operation"] == "UPDATE")
    changed = [c for c in update["data"] if update["data"][c] != update["beforeData"][c]]
    assert update["headers"]["changeMask"] == mask([cols[c]["ordinal"] for c in changed], 9).hex().upper()
    assert update["headers"]["columnMask"] == "01FF" and len(update["headers"]["changeSequence"]) == 35
    delete = next(m["message"] for m in msgs if m["type"] == "DT" and m["message"]["headers"]["operation"] == "DELETE")
    assert delete["beforeData"] is None and delete["headers"]["changeMask"] == "0001"


def test_replicate_ddl_publishes_a_new_metadata_version(sim_plain):
    mds = [json.loads(line)["message"] for p in _files(sim_plain / "replicate" / "json" / "topics" / "shop.customers", ".json")
           for line in p.read_text(encoding="utf-8").splitlines() if '"type":"MD"' in line]
    assert [m["lineage"]["tableVersion"] for m in mds] == [1, 2]
    assert "tier" in mds[1]["tableStructure"]["tableColumns"] and mds[0]["schemaId"] != mds[1]["schemaId"]


def test_replicate_avro_envelopes_decode_with_the_md_data_schema(sim_plain):
    recs = [r for p in _files(sim_plain / "replicate" / "avro" / "order_lines", ".avro") for r in fastavro.reader(p.open("rb"))]
    assert recs[0]["magic"] == b"atMSG" and recs[0]["type"] == "MD"
    md = fastavro.schemaless_reader(io.BytesIO(recs[0]["message"]), fastavro.parse_schema(json.loads(recs[0]["messageSchema"])))
    data_schema = fastavro.parse_schema(json.loads(md["dataSchema"]))
    dt_rec = fastavro.schemaless_reader(io.BytesIO(recs[-1]["message"]), data_schema)
    assert recs[-1]["messageSchemaId"] == md["schemaId"] and recs[-1]["messageSchema"] is None
    assert isinstance(dt_rec["headers"]["columnMask"], bytes) and dt_rec["headers"]["columnMask"] == b"\x07\xff"
    assert isinstance(dt_rec["data"]["updated_at"], dt.datetime) and dt_rec["data"]["updated_at"].tzinfo is not None


def test_replicate_capture_files_are_event_data(sim_plain):
    files = _files(sim_plain / "replicate" / "capture", ".avro")
    rel = files[0].relative_to(sim_plain / "replicate" / "capture")
    assert rel.parts[0] == "sim-ns" and len(rel.parts) == 9 and rel.parts[-1].endswith(".avro")
    rec = next(fastavro.reader(files[0].open("rb")))
    assert set(rec) == {"SequenceNumber", "Offset", "EnqueuedTimeUtc", "SystemProperties", "Properties", "Body"}
    assert rec["EnqueuedTimeUtc"].endswith(("AM", "PM")) and json.loads(rec["Body"])["magic"] == "atMSG"


def test_datahub_blob_pairs_and_control_records(sim_plain):
    recs = [json.loads(line) for p in _files(sim_plain / "datahub" / "blob", ".jsonl")
            for line in p.read_text(encoding="utf-8").splitlines()]
    ops = {r["payload"]["op"] for r in recs}
    assert ops == {"INSERT", "UPDATE_BEFOR", "UPDATE_AFTER", "DELETE", "TRANSACTION_BEGIN", "TRANSACTION_END",
                   "ALTER", "TRUNCATE"}
    befor = {r["payload"]["sequenceId"] for r in recs if r["payload"]["op"] == "UPDATE_BEFOR"}
    after = {r["payload"]["sequenceId"] for r in recs if r["payload"]["op"] == "UPDATE_AFTER"}
    assert befor == after
    ins = next(r for r in recs if r["payload"]["op"] == "INSERT" and r["schema"]["source"]["tableName"] == "customers")
    assert ins["schema"]["dataColumn"][3] == {"name": "balance", "type": "STRING"} and ins["version"] == "0.0.1"
    assert isinstance(ins["payload"]["after"]["dataColumn"]["created_at"], int)
    assert set(ins["payload"]["timestamp"]) == {"eventTime", "systemTime"}
    alter = next(r for r in recs if r["payload"]["op"] == "ALTER")
    assert alter["payload"]["ddl"]["text"].startswith("ALTER TABLE customers") and "dataColumn" not in alter["schema"]


def test_datahub_concat_splits_back_into_the_same_blobs(sim_plain):
    decoder = json.JSONDecoder()
    for p in _files(sim_plain / "datahub" / "concat", ".json"):
        text, pos, n = p.read_text(encoding="utf-8"), 0, 0
        while pos < len(text):
            obj, pos = decoder.raw_decode(text, pos)
            n += 1
        twin = sim_plain / "datahub" / "blob" / p.parent.name / p.name.replace(".json", ".jsonl")
        assert n == len(twin.read_text(encoding="utf-8").splitlines()) and "\n" not in text


def test_datahub_tuple_csv_has_header_meta_columns_and_pairs(sim_plain):
    rows = [r for p in _files(sim_plain / "datahub" / "tuple" / "customers", ".csv")
            for r in csv.DictReader(p.open(encoding="utf-8", newline=""))]
    assert list(rows[0])[-6:] == ["_sequence_id_", "_operation_type_", "_excute_time_", "_source_table_",
                                  "_before_image_", "_after_image_"]
    assert "tier" not in rows[0]
    ups = [r for r in rows if r["_operation_type_"] == "U"]
    assert sorted((r["_before_image_"], r["_after_image_"]) for r in ups[:2]) in ([("N", "Y"), ("Y", "N")], [("N", "Y"), ("N", "Y")], [("Y", "N"), ("Y", "N")])
    assert {r["_sequence_id_"] for r in ups if r["_before_image_"] == "Y"} == {r["_sequence_id_"] for r in ups if r["_after_image_"] == "Y"}
    schema = json.loads((sim_plain / "schemas" / "datahub-tuple" / "customers.json").read_text())
    assert [f["name"] for f in schema["fields"]] == list(rows[0])


# -- quirks -----------------------------------------------------------------------------------------------


def _blob_records(out: Path) -> list[bytes]:
    return [line for p in _files(out / "datahub" / "blob", ".jsonl") for line in p.read_bytes().splitlines()]


def test_quirks_off_gives_no_duplicates_heartbeats_or_early_dt(sim_plain):
    blobs = _blob_records(sim_plain)
    assert len(blobs) == len(set(blobs)) and not any(b'"MHEARTBEAT"' in b for b in blobs)
    for table in ("customers", "order_lines", "events"):
        first = _connect_first(sim_plain, table).read_text(encoding="utf-8").split("\n")[0]
        assert '"type":"MD"' in first
    lines = [line for p in _files(sim_plain / "replicate" / "json", ".json") for line in p.read_bytes().splitlines()]
    assert len(lines) == len(set(lines))


def test_quirks_on_show_up_in_the_files(sim_all):
    blobs = _blob_records(sim_all)
    assert len(blobs) > len(set(blobs))  # byte-identical redeliveries
    assert any(b'"MHEARTBEAT"' in b for b in blobs)
    first = _connect_first(sim_all, "customers").read_text(encoding="utf-8").split("\n")[0]
    assert '"type":"DT"' in first  # dt_before_md
    seq_file: dict[tuple[str, str], set[str]] = {}
    for p in _files(sim_all / "datahub" / "blob", ".jsonl"):
        for line in p.read_text(encoding="utf-8").splitlines():
            pl = json.loads(line)["payload"]
            if pl["op"].startswith("UPDATE_"):
                seq_file.setdefault((pl["sequenceId"], pl["op"]), set()).add(str(p))
    assert any(seq_file[(s, "UPDATE_BEFOR")].isdisjoint(seq_file[(s, "UPDATE_AFTER")])
               for s, op in seq_file if op == "UPDATE_BEFOR")  # far halves: different files


def test_each_quirk_switches_alone(tmp_path):
    simulate(tmp_path / "h", vendors="datahub-blob", quirks=["heartbeats"], **SMALL)
    blobs = _blob_records(tmp_path / "h")
    data = [b for b in blobs if b'"MHEARTBEAT"' not in b]
    assert len(data) < len(blobs) and len(data) == len(set(data))
    simulate(tmp_path / "d", vendors="datahub-blob", quirks=["duplicates"], **SMALL)
    blobs = _blob_records(tmp_path / "d")
    assert len(blobs) > len(set(blobs)) and not any(b'"MHEARTBEAT"' in b for b in blobs)
    with pytest.raises(ValueError, match="unknown quirk"):
        simulate(tmp_path / "x", vendors="datahub-blob", quirks=["duplicate"], **SMALL)


def test_aliyun_json_quirk_writes_dataworks_traits_into_the_blob_lines_only(tmp_path):
    simulate(tmp_path, vendors="datahub-blob,datahub-concat", quirks=["aliyun_json"], **SMALL)
    recs = [json.loads(b) for b in _blob_records(tmp_path)]
    full = [r["payload"] for r in recs if r["payload"]["sequenceId"] == "-1"]
    assert len(full) == 3 * SMALL["rows"] and all(p["op"] == "INSERT" for p in full)
    assert all(p["timestamp"]["eventTime"] == p["timestamp"]["checkpointTime"] == -1 for p in full)
    doubles = [v for r in recs for side in ("before", "after") if side in r["payload"]
               for c in r["schema"]["dataColumn"] if c["type"] == "DOUBLE"
               for v in [r["payload"][side]["dataColumn"].get(c["name"])] if v is not None]
    assert doubles and all(isinstance(v, str) and len(v.split(".")[1]) == 6 for v in doubles)
    one = {r["payload"]["sequenceId"] for r in recs if r["payload"]["op"] == "UPDATE_AFTER" and "before" in r["payload"]}
    befor = {r["payload"]["sequenceId"] for r in recs if r["payload"]["op"] == "UPDATE_BEFOR"}
    assert one and befor - one and one & befor  # one-message, two-message, and both shapes of one change
    shapes: dict[tuple, set[bool]] = {}
    for r in recs:
        pl = r["payload"]
        if pl["op"] == "UPDATE_AFTER":
            image = pl["after"]["dataColumn"]
            key = (r["schema"]["source"]["tableName"], json.dumps([image[k] for k in r["schema"]["primaryKey"]]))
            shapes.setdefault(key, set()).add("before" in pl)
    assert any(s == {True, False} for s in shapes.values())  # one key updated in both shapes
    concat = (tmp_path / "datahub" / "concat").rglob("*.json")
    text = b"".join(p.read_bytes() for p in concat)
    assert b'"sequenceId":"-1"' not in text and b'"checkpointTime"' not in text


def test_datastream_redelivery_changes_uuid_not_position(sim_all):
    seen: dict[tuple, list[str]] = {}
    for p in _files(sim_all / "datastream" / "avro", ".avro"):
        for r in fastavro.reader(p.open("rb")):
            key = (r["object"], r["read_method"], json.dumps(r["sort_keys"]), r["source_metadata"]["change_type"],
                   repr(sorted(r["payload"].items())))
            seen.setdefault(key, []).append(r["uuid"] + "@" + str(r["read_timestamp"]))
    dups = [v for v in seen.values() if len(v) > 1]
    assert dups and all(len(set(v)) == len(v) for v in dups)


# -- time span (days) and late redelivery -----------------------------------------------------------------

MONTH = {"tables": 1, "rows": 20, "changes": 250, "seed": 3, "days": 30}
"""A month of one table: about eight changes a day."""
DAY = dt.timedelta(days=1)
START_DAY = dt.date(2024, 5, 1)


@pytest.fixture(scope="module")
def sim_month(tmp_path_factory) -> Path:
    """Every default quirk and the late redeliveries, over thirty days, in every format."""
    out = tmp_path_factory.mktemp("sim_month")
    simulate(out, quirks=["all", "late_redelivery"], **MONTH)
    return out


@pytest.fixture(scope="module")
def sim_month_late(tmp_path_factory) -> Path:
    """Three tables over thirty days, the late redeliveries the only quirk (so every copy is one of them)."""
    out = tmp_path_factory.mktemp("sim_month_late")
    simulate(out, quirks=["late_redelivery"], **{**MONTH, "tables": 3, "changes": 400})
    return out


def _lane(vf: str, rel: str) -> str:
    """The delivery lane a file belongs to: within a lane, the vendor's own file names sort in delivery order."""
    parts = rel.split("/")
    if vf.startswith("datastream"):
        return parts[0]  # the object
    if vf == "replicate-capture":
        return "/".join(parts[:3])  # namespace/hub/partition
    if vf in ("dms-csv", "dms-parquet") and parts[-1].startswith("LOAD"):
        return "/".join(parts[:-1]) + "/full-load"  # DMS: the full load, then the time-named CDC files
    return "/".join(parts[:-1])  # topic partition, table, shard


def test_the_default_output_is_unchanged(tmp_path):
    """A digest of the default run's whole tree (days=0, default quirks): time spans and the opt-in quirk
    change nothing here. Regenerate only for an intended change of the simulated files."""
    simulate(tmp_path, tables=3, rows=6, changes=60, seed=4, rotate=25)
    h = hashlib.sha256()
    for p in sorted(tmp_path.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(tmp_path).as_posix().encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    assert h.hexdigest() == "d3daebacf419e30a3217e45b6c8fa59bf81af88b23b3ee34e8850ea927c4a28c"
    data = json.loads((tmp_path / "manifest.json").read_text())
    assert "days" not in data and "late_redelivery" not in data
    assert not any("deliveries" in info for info in data["vendor_formats"].values())


def test_days_spread_the_same_changes_over_the_span(tmp_path):
    simulate(tmp_path / "a", ["datahub-blob"], **{**MONTH, "days": 0})
    simulate(tmp_path / "b", ["datahub-blob"], **MONTH)
    a, b = list(load_changes(tmp_path / "a")), list(load_changes(tmp_path / "b"))
    strip = [{k: v for k, v in x.items() if k != "ts"} for x in a]
    assert strip == [{k: v for k, v in x.items() if k != "ts"} for x in b]  # same rows, same order
    ts = [x["ts"] for x in b if x["op"] != "SNAPSHOT"]
    assert ts == sorted(ts)
    span = ts[-1] - ts[0]
    assert 29 * DAY < span <= 30 * DAY and ts[0].date() == START_DAY
    per_day = Counter(t.date() for t in ts)
    assert len(per_day) == 31 and max(per_day.values()) < 30  # every day has changes, none has a burst
    assert (a[-1]["ts"] - a[0]["ts"]) < dt.timedelta(hours=1)  # the history's own pace without `days`
    m = Manifest.load(tmp_path / "b")
    assert m.days == 30 and json.loads((tmp_path / "b" / "manifest.json").read_text())["days"] == 30


@pytest.mark.parametrize("vf", list(VENDOR_FORMATS))
def test_files_rotate_daily_and_sort_in_delivery_order(sim_month, vf):
    m = Manifest.load(sim_month)
    deliveries = m.vendor_formats[vf]["deliveries"]
    files = sorted(p.relative_to(m.input_dir(vf)).as_posix() for p in m.input_dir(vf).rglob("*") if p.is_file())
    assert sorted(d["file"] for d in deliveries) == files  # every file, once
    days = [d["day"] for d in deliveries]
    assert days == sorted(days) and len(set(days)) >= 30
    lanes: dict[str, list[str]] = {}
    for d in deliveries:
        lanes.setdefault(_lane(vf, d["file"]), []).append(d["file"])
    day_of = {d["file"]: d["day"] for d in deliveries}
    for lane, order in lanes.items():
        if vf.startswith("datastream"):  # by name in opening order: two schema versions' files of one day may
            # complete in either order, so an object's names sort its files by day
            assert [day_of[f] for f in sorted(order)] == sorted(day_of[f] for f in order), f"{vf}: {lane}"
            assert len({tuple(f.split("/")[1:6]) for f in order}) == len(order)  # a minute folder per file
        else:
            assert order == sorted(order), f"{vf}: {lane} does not sort in delivery order"
    if vf.startswith("datastream") or vf == "replicate-capture":  # time-named: the folder is the file's day
        skip = 1 if vf.startswith("datastream") else 3
        for rel, day in day_of.items():
            y, mo, dd = rel.split("/")[skip:skip + 3]
            assert dt.date(int(y), int(mo), int(dd)) == START_DAY + day * DAY
    first = m.delivered_files(vf, until_day=18)
    assert first == [m.input_dir(vf) / d["file"] for d in deliveries[:len(first)]]
    assert 0.4 < len(first) / len(deliveries) < 0.8


def test_quirk_free_files_hold_the_changes_of_their_day(tmp_path):
    m = simulate(tmp_path, ["datahub-blob", "replicate-json", "datastream-json"], quirks=[],
                 **{**MONTH, "tables": 3, "changes": 400})
    for vf, when in (("datahub-blob", lambda r: r["payload"]["timestamp"]["eventTime"] * 1000),
                     ("replicate-json", _replicate_us), ("datastream-json", _datastream_us)):
        for d in m.vendor_formats[vf]["deliveries"]:
            text = (m.input_dir(vf) / d["file"]).read_bytes()
            if d["file"].endswith(".gz"):
                text = gzip.decompress(text)
            for line in text.splitlines():
                us = when(json.loads(line))
                if us is not None:  # Replicate MD and REFRESH messages carry no source time
                    day = (EPOCH + dt.timedelta(microseconds=us)).date()
                    assert day == START_DAY + d["day"] * DAY, f"{vf}: {d['file']}"


def _replicate_us(msg: dict) -> int | None:
    ts = msg["message"]["headers"]["timestamp"] if msg["type"] == "DT" else ""
    if not ts:
        return None
    return (dt.datetime.fromisoformat(ts).replace(tzinfo=UTC) - EPOCH) // dt.timedelta(microseconds=1)


def _datastream_us(e: dict) -> int:
    return (dt.datetime.fromisoformat(e["source_timestamp"].replace("Z", "+00:00")) - EPOCH) // \
        dt.timedelta(microseconds=1)


def _records(path: Path, vf: str) -> list:
    """A file's records in the form a redelivery keeps: the bytes where the vendor redelivers byte-identical
    records; Datastream without `uuid` and `read_timestamp` (per file / per read); Capture the `Body`; Debezium's
    Kafka records without their offset and broker time."""
    if vf.startswith("datastream"):
        if vf.endswith("avro"):
            recs = list(fastavro.reader(path.open("rb")))
        else:
            raw = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
            recs = [json.loads(line) for line in raw.splitlines()]
        return [json.dumps({k: v for k, v in r.items() if k not in ("uuid", "read_timestamp")}, default=str,
                           sort_keys=True) for r in recs]
    if vf.startswith("debezium"):  # a Kafka record redelivered: another offset and broker time, the same message
        recs = (list(fastavro.reader(path.open("rb"))) if vf.endswith("avro")
                else [json.loads(line) for line in path.read_bytes().splitlines()])
        return [repr(sorted((k, v) for k, v in r.items() if k not in ("offset", "ts", "timestamp", "broker")))
                for r in recs]
    if vf.startswith("goldengate"):  # a replayed trail record: the same record, a new `current_ts`
        recs = (list(fastavro.reader(path.open("rb"))) if vf.endswith("avro_op")
                else [json.loads(line) for line in path.read_bytes().splitlines()])
        return [repr(sorted((k, v) for k, v in r.items() if k != "current_ts")) for r in recs]
    if vf == "replicate-capture":
        return [r["Body"] for r in fastavro.reader(path.open("rb"))]
    if vf == "replicate-avro":
        return [repr(sorted(r.items())) for r in fastavro.reader(path.open("rb"))]
    if vf == "datahub-concat":
        text, pos, out, decoder = path.read_text(encoding="utf-8"), 0, [], json.JSONDecoder()
        while pos < len(text):
            _, end = decoder.raw_decode(text, pos)
            out.append(text[pos:end])
            pos = end
        return out
    if vf in ("dms-csv", "dms-parquet"):
        return [repr(sorted(r.items())) for r in dms_files.s3_rows(path)]
    if vf == "dms-kinesis":  # multi-line JSON messages
        return [json.dumps(m, sort_keys=True, default=str) for m in dms_files.kinesis_file(path)]
    if vf == "datahub-tuple":  # CSV records (a value may hold a newline) after the header line
        return [tuple(r) for r in list(csv.reader(path.open(encoding="utf-8", newline="")))[1:]]
    return path.read_bytes().splitlines()


@pytest.mark.parametrize("vf", list(VENDOR_FORMATS))
def test_late_redeliveries_are_copies_landing_late_days_later(sim_month_late, vf):
    m = Manifest.load(sim_month_late)
    late = m.late_redelivery
    assert late["late_days"] == 20 and m.quirks == ["late_redelivery"]
    events = late["events"]
    assert {e["table"] for e in events} == {"customers", "order_lines", "events"}  # at least one per table
    assert 3 <= len(events) <= 0.06 * m.changes
    info = m.vendor_formats[vf]
    order = [d["file"] for d in info["deliveries"]]
    copies = info["late_redeliveries"]
    if vf in ("dms-csv", "dms-parquet"):  # an S3 object is written once: redelivered, it is the same object
        assert not copies
        return
    assert {c["seq"] for c in copies} <= {e["seq"] for e in events} and copies
    for c in copies:
        assert c["day"] - c["original_day"] >= 20
        assert order.index(c["file"]) > order.index(c["original"])
        assert _lane(vf, c["file"]) == _lane(vf, c["original"])
        assert c["file"] > c["original"] or vf.startswith("datastream")  # the lane's names sort it later
    # within a lane the only repeated records are the late copies: each in its original's file and the late one
    where: dict = {}
    for rel in order:
        for rec in _records(m.input_dir(vf) / rel, vf):
            where.setdefault((_lane(vf, rel), rec), []).append(rel)
    repeated = [files for files in where.values() if len(files) > 1]
    assert sorted(repeated) == sorted([c["original"], c["file"]] for c in copies)
    if vf.startswith("datastream"):  # read again late: a new uuid and the late read time
        recs = [r for p in (m.input_dir(vf) / copies[0]["file"],) for r in _raw_datastream(p, vf)]
        assert any(_read_day(r) >= START_DAY + copies[0]["day"] * DAY for r in recs)


def _raw_datastream(path: Path, vf: str) -> list[dict]:
    if vf.endswith("avro"):
        return list(fastavro.reader(path.open("rb")))
    raw = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    return [json.loads(line) for line in raw.splitlines()]


def _read_day(r: dict) -> dt.date:
    v = r["read_timestamp"]
    return (v if isinstance(v, dt.datetime) else dt.datetime.fromisoformat(v.replace("Z", "+00:00"))).date()


def test_late_redelivery_is_opt_in(tmp_path):
    assert "late_redelivery" not in QUIRKS and "late_redelivery" in KNOWN_QUIRKS
    assert parse_quirks(None) == parse_quirks(["all"]) == frozenset(QUIRKS)
    assert parse_quirks(["all", "late_redelivery"]) == frozenset(QUIRKS) | {"late_redelivery"}
    m = simulate(tmp_path, ["replicate-json"], quirks=["late_redelivery"], late_days=3,
                 **{**MONTH, "days": 10, "changes": 100})
    assert m.late_redelivery["late_days"] == 3
    assert all(c["day"] - c["original_day"] >= 3 for c in m.vendor_formats["replicate-json"]["late_redeliveries"])
    with pytest.raises(ValueError, match="unknown quirk"):
        parse_quirks(["late_redeliveries"])


def test_late_copies_after_the_history_land_past_its_end(tmp_path):
    """Without `days` the history lasts minutes: every copy lands `late_days` later, in a file of its own."""
    m = simulate(tmp_path, ["datahub-tuple", "replicate-capture"], quirks=["late_redelivery"],
                 **{**SMALL, "rotate": 500})
    for vf in ("datahub-tuple", "replicate-capture"):
        info = m.vendor_formats[vf]
        assert {d["day"] for d in info["deliveries"]} == {0, 20}
        assert {c["day"] for c in info["late_redeliveries"]} == {20}
        assert [d["day"] for d in info["deliveries"]][-len({c["file"] for c in info["late_redeliveries"]}):] == \
            [20] * len({c["file"] for c in info["late_redeliveries"]})


def test_a_month_of_one_table_simulates_fast(tmp_path):
    start = time.process_time()
    simulate(tmp_path, ["datastream-json"], quirks=["all", "late_redelivery"], **MONTH)
    assert time.process_time() - start < 1.0


# -- truth ------------------------------------------------------------------------------------------------


def test_load_truth_rebuilds_typed_values(sim_all):
    truth = load_truth(sim_all, "datastream-avro")
    cust = truth["customers"][0]
    assert isinstance(cust["balance"], Decimal) and isinstance(cust["created_at"], dt.datetime)
    assert cust["created_at"].tzinfo is not None and "tier" in cust
    assert isinstance(truth["order_lines"][0]["gift"], int) and not isinstance(truth["order_lines"][0]["gift"], bool)
    blob = load_truth(sim_all, "datahub-blob")["customers"]
    assert all(r["created_at"].microsecond % 1000 == 0 for r in blob)
    assert isinstance(blob[0]["balance"], str)
    ntz = load_truth(sim_all, "replicate-json")["customers"][0]["created_at"]
    assert ntz.tzinfo is None
    with pytest.raises(FileNotFoundError):
        load_truth(sim_all, "nope")


def test_truncate_and_ddl_projection(sim_all):
    blob = load_truth(sim_all, "datahub-blob")["order_lines"]
    ds = load_truth(sim_all, "datastream-avro")["order_lines"]
    assert len(ds) > len(blob)  # Datastream cannot express the truncate: the removed rows stay
    assert {(r["order_id"], r["line_no"]) for r in blob} < {(r["order_id"], r["line_no"]) for r in ds}
    assert all("tier" not in r for r in load_truth(sim_all, "datahub-tuple")["customers"])


@pytest.mark.parametrize("vf", list(VENDOR_FORMATS))
@pytest.mark.parametrize("fixture", ["sim_all", "sim_plain", "sim_wide", "sim_month", "sim_month_late"])
def test_replaying_the_files_gives_the_truth(vf, fixture, request):
    out = request.getfixturevalue(fixture)
    got = REPLAY[vf](out)
    truth = load_truth(out, vf)
    assert set(got) <= set(truth) and sum(map(len, truth.values())) > 0
    for table, rows in truth.items():
        cols = list(rows[0]) if rows else []
        mine = [{c: r.get(c) for c in cols} for r in got.get(table, [])]
        assert _canon(mine) == _canon(rows), f"{vf}: {table} differs"


def _canon(rows: list[dict]) -> list[str]:
    return sorted(repr(sorted((k, type(v).__name__, v) for k, v in r.items())) for r in rows)


# -- CLI entry and scale ----------------------------------------------------------------------------------


def test_simulate_command(tmp_path, capsys):
    code = simulate_command(["replicate"], 2, 5, 30, 3, str(tmp_path), ["none"])
    assert code == 0 and "replicate-json" in capsys.readouterr().out
    assert Manifest.load(tmp_path).formats == ["replicate-json", "replicate-avro", "replicate-capture"]
    assert simulate_command(["oracle-goldengate"], 2, 5, 30, 3, str(tmp_path), None) == 2


def test_history_of_100k_changes_streams_in_bounded_memory():
    start, n = time.process_time(), 0
    for n, _ in enumerate(History(tables=3, rows=50, changes=100_000, seed=3), 1):
        if n == 10_000:
            early = sys.getallocatedblocks()
    elapsed = time.process_time() - start
    assert n == 100_000 + 3 * 50 + 2  # changes + initial rows + the DDL and the truncate
    assert sys.getallocatedblocks() - early < 20_000, "memory grows with the number of changes"
    assert elapsed < 10


# -- tiny replayers of the simulator's own files ----------------------------------------------------------


def _apply(state: dict, table: str, pk: list[str], op: str, row: dict) -> None:
    rows = state.setdefault(table, {})
    key = tuple(row[k] for k in pk) if pk else None
    if op == "upsert":
        rows[key if pk else len(rows)] = row
    elif op == "delete":
        rows.pop(key, None)
    else:
        rows.clear()


def _result(state: dict) -> dict[str, list[dict]]:
    return {t: list(rows.values()) for t, rows in state.items()}


def _typed_numbers(records) -> list[dict]:
    """Datastream's `number` logical type is a numeric value carried as a string: read it as Decimal."""
    payload = next(f["type"] for f in records.writer_schema["fields"] if f["name"] == "payload")
    numbers = [f["name"] for f in payload["fields"]
               if any(isinstance(t, dict) and t.get("logicalType") == "number" for t in f["type"])]
    events = list(records)
    for e in events:
        for n in numbers:
            if e["payload"].get(n) is not None:
                e["payload"][n] = Decimal(e["payload"][n])
    return events


def _replay_datastream(fmt: str):
    def run(out: Path) -> dict:
        events = []
        for p in _files(out / "datastream" / fmt, ".avro", ".jsonl", ".jsonl.gz"):
            if fmt == "avro":
                events += _typed_numbers(fastavro.reader(p.open("rb")))
            else:
                raw = gzip.decompress(p.read_bytes()) if p.name.endswith(".gz") else p.read_bytes()
                events += [_typed_text(json.loads(line, parse_float=Decimal)) for line in raw.decode("utf-8").splitlines()]
        uniq = {}
        for e in events:
            m = e["source_metadata"]
            pos = _ds_position(e)
            key = (m["table"], pos, m["change_type"], repr(sorted(e["payload"].items())))
            uniq[key] = (0 if "backfill" in e["read_method"] else 1, pos, m["change_type"] != "UPDATE-DELETE", e)
        state: dict = {}
        for *_, e in sorted(uniq.values(), key=lambda x: x[:3]):
            m = e["source_metadata"]
            op = "delete" if m["change_type"] in ("DELETE", "UPDATE-DELETE") else "upsert"
            _apply(state, m["table"], m["primary_keys"] or [], op, e["payload"])
        return _result(state)
    return run


_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_ISO_INSTANT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z")


def _typed_text(e: dict) -> dict:
    """Datastream JSON as apply types it (docs/apply.md, "Typed columns from JSON"): ISO dates and instants."""
    for n, v in (e.get("payload") or {}).items():
        if isinstance(v, str) and _ISO_DATE.fullmatch(v):
            e["payload"][n] = dt.date.fromisoformat(v)
        elif isinstance(v, str) and _ISO_INSTANT.fullmatch(v):
            e["payload"][n] = dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
    return e


def _ds_position(e: dict) -> tuple:
    m = e["source_metadata"]
    if "log_position" in m:
        return (int(m["log_file"].rsplit(".", 1)[-1] or 0), m["log_position"])
    if "lsn" in m:
        hi, _, lo = (m["lsn"] or "0/0").partition("/")
        return ((int(hi, 16) << 32) | int(lo, 16),)
    return (m["scn"], m["rs_id"].strip(), m["ssn"])


def _replicate_typed(rtype: str, v):
    if isinstance(v, dt.datetime) and v.tzinfo is not None:  # Avro timestamp-micros carries DATETIME's wall clock
        return v.astimezone(UTC).replace(tzinfo=None)
    if v is None or not isinstance(v, str):
        return v
    if rtype == "NUMERIC":
        return Decimal(v)
    if rtype == "DATE":
        return dt.date.fromisoformat(v)
    if rtype == "DATETIME":
        return dt.datetime.strptime(v, "%Y-%m-%d %H:%M:%S.%f")
    if rtype == "BYTES":
        return bytes.fromhex(v)
    return v


def _replay_replicate(fmt: str):
    def run(out: Path) -> dict:
        messages: list[tuple[bytes, object]] = []
        for p in _files(out / "replicate" / fmt, ".json", ".jsonl", ".avro"):
            if fmt == "json":
                messages += [(line, json.loads(line)) for line in p.read_bytes().splitlines()]
            elif fmt == "capture":
                messages += [(r["Body"], json.loads(r["Body"])) for r in fastavro.reader(p.open("rb"))]
            else:
                messages += [(repr(sorted(r.items())).encode(), r) for r in fastavro.reader(p.open("rb"))]
        mds, dts = {}, {}
        for raw, msg in messages:
            if msg["type"] == "MD":
                md = msg["message"]
                if fmt == "avro":
                    md = fastavro.schemaless_reader(io.BytesIO(md), fastavro.parse_schema(json.loads(msg["messageSchema"])))
                mds[md["schemaId"]] = md
            else:
                dts[raw] = msg  # byte-identical redeliveries collapse here
        state: dict = {}
        decoded = []
        for msg in dts.values():
            md = mds[msg["messageSchemaId"]]
            body = msg["message"]
            if fmt == "avro":
                body = fastavro.schemaless_reader(io.BytesIO(body), fastavro.parse_schema(json.loads(md["dataSchema"])))
            decoded.append((body["headers"]["changeSequence"], md, body))
        for _, md, body in sorted(decoded, key=lambda x: x[0]):
            cols = md["tableStructure"]["tableColumns"]
            pk = [c for c, d in sorted(cols.items(), key=lambda kv: kv[1]["primaryKeyPosition"]) if d["primaryKeyPosition"]]

            def typed(row, cols=cols):
                return {c: _replicate_typed(cols[c]["type"], v) for c, v in row.items()}

            table, op = md["lineage"]["table"], body["headers"]["operation"]
            if op == "DELETE":
                _apply(state, table, pk, "delete", typed(body["data"]))
            else:
                if body["beforeData"] is not None:
                    _apply(state, table, pk, "delete", typed(body["beforeData"]))
                _apply(state, table, pk, "upsert", typed(body["data"]))
        return _result(state)
    return run


def _blob_typed(types: dict[str, str], image: dict) -> dict:
    out = {}
    for c, v in image["dataColumn"].items():
        if v is not None and types[c] == "DATE":
            v = dt.datetime.fromtimestamp(v / 1000, UTC).replace(microsecond=v % 1000 * 1000)
        elif v is not None and types[c] == "BYTES":
            v = base64.b64decode(v)
        elif isinstance(v, str) and types[c] == "DOUBLE":  # aliyun_json: "1.100000"
            v = float(v)
        out[c] = v
    return out


def _replay_datahub_blob(fmt: str):
    def run(out: Path) -> dict:
        blobs = set()
        decoder = json.JSONDecoder()
        for p in _files(out / "datahub" / fmt, ".jsonl", ".json"):
            text = p.read_text(encoding="utf-8")
            pos = 0
            while pos < len(text):
                obj, end = decoder.raw_decode(text, pos)
                blobs.add(text[pos:end])
                pos = end + (1 if text[end:end + 1] == "\n" else 0)
        recs = [json.loads(b) for b in blobs]
        recs = [r for r in recs if r["payload"]["op"] not in ("MHEARTBEAT", "TRANSACTION_BEGIN", "TRANSACTION_END", "ALTER")]
        order = {"UPDATE_BEFOR": 0, "UPDATE_AFTER": 1}
        state: dict = {}
        for r in sorted(recs, key=lambda r: (int(r["payload"]["sequenceId"]), order.get(r["payload"]["op"], 0))):
            pl, table = r["payload"], r["schema"]["source"]["tableName"]
            if pl["op"] == "TRUNCATE":
                _apply(state, table, [], "truncate", {})
                continue
            types = {c["name"]: c["type"] for c in r["schema"]["dataColumn"]}
            pk = r["schema"]["primaryKey"]
            if pl["op"] in ("DELETE", "UPDATE_BEFOR"):
                _apply(state, table, pk, "delete", _blob_typed(types, pl["before"]))
            else:
                if pl["op"] == "UPDATE_AFTER" and "before" in pl:  # aliyun_json: one message, both images
                    _apply(state, table, pk, "delete", _blob_typed(types, pl["before"]))
                _apply(state, table, pk, "upsert", _blob_typed(types, pl["after"]))
        return _result(state)
    return run


def _tuple_typed(ftype: str, v: str):
    if v == "":
        return "" if ftype == "STRING" else None  # the DataHub SDK's rule: '' is NULL except for STRING
    if ftype in ("BIGINT", "INTEGER"):
        return int(v)
    if ftype == "DECIMAL":
        return Decimal(v)
    if ftype == "DOUBLE":
        return float(v)
    if ftype == "BOOLEAN":
        return v == "true"
    if ftype == "TIMESTAMP":
        return dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=int(v))
    return v


def _replay_tuple(out: Path) -> dict:
    state: dict = {}
    pks = {t: d["primary_key"] for t, d in Manifest.load(out).vendor_formats["datahub-tuple"]["tables"].items()}
    for table in pks:
        types = {f["name"]: f["type"] for f in json.loads((out / "schemas" / "datahub-tuple" / f"{table}.json").read_text())["fields"]}
        rows = {tuple(r.items()) for p in _files(out / "datahub" / "tuple" / table, ".csv")
                for r in csv.DictReader(p.open(encoding="utf-8", newline=""))}
        for items in sorted(rows, key=lambda it: (int(dict(it)["_sequence_id_"]), dict(it)["_after_image_"])):
            r = dict(items)
            row = {c: _tuple_typed(types[c], v) for c, v in r.items() if not c.startswith("_")}
            _apply(state, table, pks[table], "delete" if r["_before_image_"] == "Y" else "upsert", row)
        state.setdefault(table, {})
    return _result(state)


def _replay_debezium(fmt: str):
    """Kafka records of both connectors (`tests/debezium_kafka.py`); the schemaless format is typed by the
    column types its user declares (the format's `user_options`)."""
    def run(out: Path) -> dict:
        from cdcnorm.simulate.encoders.debezium import FORMATS as DEBEZIUM

        declared = None
        if fmt == "json-noschema":
            info = Manifest.load(out).vendor_formats["debezium-json-noschema"]
            declared = next(f for f in DEBEZIUM if f.folder == fmt).user_options(out, info)["column_types"]
        state = debezium_kafka.replay(debezium_kafka.read(out, fmt), declared)
        return {t: list(rows.values()) for t, rows in state.items()}
    return run


def _replay_goldengate(fmt: str):
    """JSON formatter records in `pos` order, partial images merged (`tests/goldengate_records.py`)."""
    def run(out: Path) -> dict:
        info = Manifest.load(out).vendor_formats[f"goldengate-{fmt}"]["tables"]
        return goldengate_records.replay(info, fmt, goldengate_records.lines(out, fmt))
    return run
def _maxwell_typed(mysql: str, v):
    """A Maxwell JSON value as its MySQL column type (the manifest's vendor type)."""
    if v is None or mysql.startswith(("decimal", "tinyint", "int", "bigint", "varchar")):
        return v
    return {"double": float, "date": dt.date.fromisoformat, "blob": base64.b64decode,
            "datetime": lambda x: dt.datetime.strptime(x, "%Y-%m-%d %H:%M:%S.%f")}[mysql](v)


def _replay_maxwell(out: Path) -> dict:
    """Maxwell's messages in offset order (`output_nulls=false`: an absent column is NULL); a redelivered
    message, or a bootstrap row read again by a re-run bootstrap, is applied once."""
    tables = Manifest.load(out).vendor_formats["maxwell-json"]["tables"]
    state: dict = {t: {} for t in tables}
    seen: set = set()
    for p in _files(out / "maxwell" / "json", ".jsonl"):
        for line in p.read_bytes().splitlines():
            m = json.loads(line, parse_float=Decimal)
            once = repr((m["table"], m["data"])) if m["type"] == "bootstrap-insert" else line
            if m["type"] not in ("bootstrap-insert", "insert", "update", "delete") or once in seen:
                continue
            seen.add(once)
            t = tables[m["table"]]
            types = {c["name"]: c["vendor_type"] for c in t["columns"]}
            row = {c: _maxwell_typed(types[c], m["data"].get(c)) for c in types}
            if m["type"] != "insert" and m["type"] != "bootstrap-insert":
                old = {**row, **{c: _maxwell_typed(types[c], v) for c, v in m.get("old", {}).items()}}
                _apply(state, m["table"], t["primary_key"], "delete", old)
            if m["type"] != "delete":
                _apply(state, m["table"], t["primary_key"], "upsert", row)
    return _result(state)


REPLAY = {
    "datastream-json": _replay_datastream("json"), "datastream-avro": _replay_datastream("avro"),
    "replicate-json": _replay_replicate("json"), "replicate-avro": _replay_replicate("avro"),
    "replicate-capture": _replay_replicate("capture"),
    "datahub-blob": _replay_datahub_blob("blob"), "datahub-concat": _replay_datahub_blob("concat"),
    "datahub-tuple": _replay_tuple,
    "debezium-json": _replay_debezium("json"), "debezium-json-noschema": _replay_debezium("json-noschema"),
    "debezium-avro": _replay_debezium("avro"),
    "dms-csv": lambda out: dms_files.replay_s3(out, "csv"), "dms-parquet": lambda out: dms_files.replay_s3(out, "parquet"),
    "dms-kinesis": dms_files.replay_kinesis,
    "goldengate-json": _replay_goldengate("json"), "goldengate-json_row": _replay_goldengate("json_row"),
    "goldengate-avro_op": _replay_goldengate("avro_op"), "canal-json": canal_flat.final_rows,
    "maxwell-json": _replay_maxwell,
}
