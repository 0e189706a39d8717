"""Typed columns from Datastream JSON: value summaries at normalize time, widening only, hints at apply.

The per-value classification is tested without Spark; the fold (one Spark aggregation) on hand-made schema rows;
then real normalize + apply runs: widening across runs (reported, one more schema row, never a rescan), text in
a timestamp column (string, noted), hints, the message path, and the shared corpus' real JSON files.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import functions as F

import cdcnorm
from cdcnorm.canonical.inferred import ColumnSummary, fold_versions, widen_over_tables
from cdcnorm.canonical.schema import schema_versions_schema
from cdcnorm.errors import UsageError
from cdcnorm.lake.store import Lake
from cdcnorm.state.hints import parse_hints
from cdcnorm.state.schema_cache import folded_schemas
from cdcnorm.state.types import widens
from conftest import CORPUS

UTC = dt.UTC


def micros(ts: dt.datetime) -> int:
    return (ts - dt.datetime(1970, 1, 1, tzinfo=UTC)) // dt.timedelta(microseconds=1)


def summary(*values, naive="timestamp") -> str:
    s = ColumnSummary()
    for v in values:
        s.add(v, naive)
    return s.vendor_type()


# -- the per-value summary (decode time, no Spark) ------------------------------------------------------------
def test_text_kinds_follow_the_iso_forms_datastream_writes():
    assert summary("2023-04-07T08:17:39.745Z") == "json:timestamp"
    assert summary("2025-11-05T17:14:27.412737+05:30") == "json:timestamp"
    assert summary("2021-12-25T05:42:04.408", "2021-12-25 05:42:04") == "json:timestamp"  # naive = UTC (Datastream)
    assert summary("2021-12-25T05:42:04", naive="timestamp_ntz") == "json:timestamp_ntz"
    assert summary("2024-02-29") == "json:date"
    # not a calendar date, finer than microseconds, no seconds, +HHMM, sentinels, digits: text
    for text in ("2023-02-30", "2025-11-05T17:14:27.412737123Z", "2021-12-25T05:42", "2021-12-25T05:42:00+0130",
                 "infinity", "18446744073709551615", "08:15:30", "P1Y2M"):
        assert summary(text) == "json:text", text
    assert summary("2024-01-01", "2024-01-01T10:00:00Z") == "json:date,timestamp"
    assert summary("2024-01-01T10:00:00Z", "CEO") == "json:text,timestamp"


def test_numbers_record_their_range_digits_and_scale():
    assert summary(1, -2_147_483_648, 2_147_483_647) == "json:int;digits=10;scale=0"
    assert summary(1, 2_147_483_648) == "json:bigint,int;digits=10;scale=0"
    assert summary(18_446_744_073_709_551_615) == "json:integer;digits=20;scale=0"
    assert summary(Decimal("1.50"), Decimal("-123.4")) == "json:decimal;digits=3;scale=2"
    assert summary(Decimal("0.001")) == "json:decimal;digits=0;scale=3"
    assert summary(12345, Decimal("1.5")) == "json:decimal,int;digits=5;scale=1"
    assert summary(Decimal("1E+5")) == "json:decimal;digits=6;scale=0"
    assert summary(True, None) == "json:boolean" and summary(None) == "json:"
    assert summary({"a": 1}, [1]) == "json:json"


# -- the fold: many rows of one version -> one row, widening only -------------------------------------------
def _version_rows(spark, versions):
    rows = []
    for vid, first_seen, cols in versions:
        rows.append({"vendor": "datastream", "stream": "s", "source_db": None, "database": "db", "schema": None,
                     "table": "t", "schema_version": vid, "first_seen": first_seen, "definition": None,
                     "version_id": vid,
                     "columns": [{"name": n, "vendor_type": vt, "canonical_type": ct, "ordinal": i + 1,
                                  "pk_position": 1 if i == 0 else None, "nullable": None}
                                 for i, (n, vt, ct) in enumerate(cols)]})
    return spark.createDataFrame(rows, schema_versions_schema())


def _folded(spark, versions):
    out = fold_versions(_version_rows(spark, versions)).collect()
    return {r["version_id"]: [(c["name"], c["vendor_type"], c["canonical_type"]) for c in r["columns"]] for r in out}


def test_fold_widens_every_column_over_all_rows_of_a_version(spark):
    t1, t2 = dt.datetime(2024, 1, 1, tzinfo=UTC), dt.datetime(2024, 1, 2, tzinfo=UTC)
    got = _folded(spark, [
        ("v1", t2, [("id", "json:int;digits=3;scale=0", None), ("amount", "json:decimal;digits=2;scale=1", None),
                    ("at", "json:date", None), ("note", "json:timestamp", None), ("big", "json:int;digits=1;scale=0", None),
                    ("empty", "json:", None)]),
        ("v1", t1, [("id", "json:bigint,int;digits=12;scale=0", None), ("amount", "json:decimal;digits=5;scale=3", None),
                    ("at", "json:timestamp", None), ("note", "json:text", None),
                    ("big", "json:integer;digits=25;scale=0", None)]),
        ("v2", t1, [("id", "int", "int"), ("x", "string", "string")]),  # declared: untouched
    ])
    assert got["v1"] == [
        ("id", "json:bigint,int;digits=12;scale=0", "bigint"),
        ("amount", "json:decimal;digits=5;scale=3", "decimal(8,3)"),
        ("at", "json:date,timestamp", "timestamp"),
        ("note", "json:text,timestamp", "string"),
        ("big", "json:int,integer;digits=25;scale=0", "decimal(25,0)"),
        ("empty", "json:", None),
    ]
    assert got["v2"] == [("id", "int", "int"), ("x", "string", "string")]


def test_a_declared_type_wins_over_inference(spark):
    """A vendor type wins; a row of a lake written before inference (no vendor type) declares nothing."""
    t0, t1, t2 = (dt.datetime(2024, 1, d, tzinfo=UTC) for d in (1, 2, 3))
    got = _folded(spark, [
        ("v", t0, [("id", None, "bigint"), ("paid", None, "string"), ("old", None, "string")]),
        ("v", t1, [("id", "json:int;digits=1;scale=0", None), ("paid", "json:timestamp", None)]),
        ("v", t2, [("id", "long", "bigint")]),
    ])
    assert got["v"] == [("id", "long", "bigint"), ("paid", "json:timestamp", "timestamp"), ("old", None, "string")]


def test_apply_types_a_version_for_the_values_of_every_version_of_its_table(spark):
    """After a DDL, the new schema key may so far hold only small numbers; rows last written under the old
    key stay in the current state, so the table's type must hold their values too."""
    t1, t2 = dt.datetime(2024, 1, 1, tzinfo=UTC), dt.datetime(2024, 1, 2, tzinfo=UTC)
    rows = _version_rows(spark, [
        ("old", t1, [("id", "json:int;digits=3;scale=0", None), ("amount", "json:decimal;digits=7;scale=2", None),
                     ("gone", "json:text", None)]),
        ("new", t2, [("id", "json:int;digits=3;scale=0", None), ("amount", "json:decimal;digits=2;scale=3", None),
                     ("added", "json:date", None)]),
    ])
    got = {r["version_id"]: [(c["name"], c["canonical_type"]) for c in r["columns"]]
           for r in widen_over_tables(fold_versions(rows)).collect()}
    assert got["new"] == [("id", "int"), ("amount", "decimal(10,3)"), ("added", "date")]
    assert got["old"] == [("id", "int"), ("amount", "decimal(10,3)"), ("gone", "string")]


def test_widening_rule_of_reported_type_changes():
    assert widens("int", "bigint") and widens("bigint", "decimal(20,0)") and widens("int", "decimal(12,2)")
    assert widens("decimal(5,2)", "decimal(8,3)") and not widens("decimal(5,2)", "decimal(5,3)")
    assert widens("date", "timestamp") and widens("timestamp", "string") and not widens("bigint", "int")


def test_hints_parse_and_refuse_unknown_types(tmp_path):
    f = tmp_path / "hints.json"
    f.write_text(json.dumps({"shop.orders.paid_at": "timestamp_ntz", "shop.orders.id": "bigint"}))
    assert parse_hints(["shop.orders.id=decimal(20,0)"], f) == {
        "shop.orders.paid_at": "timestamp_ntz", "shop.orders.id": "decimal(20,0)"}
    for bad in (["orders.id=numberish"], ["id=int"], ["orders.id"]):
        with pytest.raises(UsageError):
            parse_hints(bad)


# -- normalize + apply --------------------------------------------------------------------------------------
def _event(i: int, payload: dict, ct: str = "INSERT", key: str = "k1") -> dict:
    return {
        "uuid": f"u-{i}", "read_timestamp": "2025-01-21T11:09:21.898Z",
        "source_timestamp": f"2025-01-21T11:08:{i % 60:02d}.000Z", "object": "shop_orders",
        "read_method": "mysql-cdc-binlog", "stream_name": "projects/1/locations/l/streams/s", "schema_key": key,
        "source_metadata": {"table": "orders", "database": "shop", "primary_keys": ["id"],
                            "log_file": "mysql-bin.000001", "log_position": 1000 + i, "change_type": ct,
                            "is_deleted": ct == "DELETE"},
        "payload": payload,
    }


def _write(path: Path, events: list[dict]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    return str(path)


def _types(frames) -> dict[str, str]:
    (df,) = frames.values()
    return {f.name: f.dataType.simpleString() for f in df.schema.fields}


@pytest.mark.slow  # five Spark runs; the fast suite has the one-run merge below
def test_widening_across_runs_reaches_the_schema_version_and_is_reported(spark, tmp_path):
    lake = str(tmp_path / "lake")
    first = [_event(i, {"id": i, "amount": 1.5, "paid_at": "2024-03-01T10:00:00Z", "day": "2024-03-01",
                        "note": "2024-03-01T10:00:00Z"}) for i in range(1, 4)]
    cdcnorm.normalize([_write(tmp_path / "in1" / "a.jsonl", first)], "datastream", spark=spark, lake=lake)
    applied = cdcnorm.apply(spark, lake)
    assert _types(applied) == {"id": "int", "amount": "decimal(2,1)", "paid_at": "timestamp", "day": "date",
                               "note": "timestamp"}
    # a later file of the same schema_key: a 64-bit id, a finer decimal, a naive time, text in `note`
    second = [_event(9, {"id": 5_000_000_000, "amount": 12.345, "paid_at": "2024-03-02 11:30:00",
                         "day": "2024-03-02T00:00:00Z", "note": "see ticket 42"})]
    cdcnorm.normalize([_write(tmp_path / "in2" / "b.jsonl", second)], "datastream", spark=spark, lake=lake)
    applied = cdcnorm.apply(spark, lake)
    assert _types(applied) == {"id": "bigint", "amount": "decimal(5,3)", "paid_at": "timestamp",
                               "day": "timestamp", "note": "string"}
    (entry,) = applied.summary["tables"]
    assert (entry["apply"]["mode"], entry["apply"]["reason"]) == ("rebuilt", "the columns changed")
    assert entry["type_changes"] == [
        {"column": "id", "from": "int", "to": "bigint", "kind": "widening"},
        {"column": "amount", "from": "decimal(2,1)", "to": "decimal(5,3)", "kind": "widening"},
        {"column": "day", "from": "date", "to": "timestamp", "kind": "widening"},
        {"column": "note", "from": "timestamp", "to": "string", "kind": "widening"},
    ]
    notes = {c["name"]: c.get("note") for c in entry["columns"]}
    assert notes["note"] == "values of mixed kinds (text, timestamp): kept as string" and notes["id"] is None
    assert {c["from"] for c in entry["columns"]} == {"inferred"}
    rows = {r["id"]: r for r in applied[next(iter(applied))].select(
        "id", "amount", F.unix_micros("paid_at").alias("paid_us"), "note").collect()}
    assert rows[5_000_000_000]["amount"] == Decimal("12.345") and rows[1]["amount"] == Decimal("1.500")
    assert rows[5_000_000_000]["paid_us"] == micros(dt.datetime(2024, 3, 2, 11, 30, tzinfo=UTC))
    assert rows[1]["note"] == "2024-03-01T10:00:00Z" and rows[5_000_000_000]["note"] == "see ticket 42"
    # two rows of the version in the lake (the widening is one more row), one folded row for readers
    raw = Lake(spark, lake).read("schemas")
    assert raw.count() == 2 and Lake(spark, lake).schemas().count() == 1
    # the same input again widens nothing: no schema row is added
    cdcnorm.normalize([_write(tmp_path / "in3" / "b.jsonl", second)], "datastream", spark=spark, lake=lake)
    assert Lake(spark, lake).read("schemas").count() == 2
    # hints win over inference; the naive-is-UTC reading stays with the text
    hinted = cdcnorm.apply(spark, lake, write=False,
                           column_types={"shop.orders.id": "decimal(20,0)", "orders.paid_at": "timestamp_ntz"})
    assert _types(hinted)["id"] == "decimal(20,0)" and _types(hinted)["paid_at"] == "timestamp_ntz"
    assert {c["name"]: c["from"] for c in hinted.summary["tables"][0]["columns"]}["id"] == "hint"
    hinted.unpersist()
    with pytest.raises(UsageError, match="match no applied table"):
        cdcnorm.apply(spark, lake, write=False, column_types={"other.id": "int"})


def test_one_run_merges_its_files_and_apply_types_the_columns(spark, tmp_path):
    """Two files of one version in one run: their summaries merge (int + 64-bit -> bigint, text + timestamp ->
    string, noted); naive text is UTC whatever the session's time zone; hints win over inference."""
    lake = str(tmp_path / "lake")
    a = [_event(1, {"id": 1, "at": "2021-12-25T05:42:04.408", "on": "2021-12-25", "note": "2024-03-01T10:00:00Z"})]
    b = [_event(2, {"id": 5_000_000_000, "at": "2021-12-26T00:00:00Z", "on": "2021-12-26", "note": "n/a"})]
    cdcnorm.normalize([_write(tmp_path / "in" / "a.jsonl", a), _write(tmp_path / "in" / "b.jsonl", b)], "datastream",
                      spark=spark, lake=lake)
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        frames = cdcnorm.apply(spark, lake, write=False, column_types={"orders.on": "timestamp"})
        (df,) = frames.values()
        rows = {r["id"]: r for r in df.select("id", F.unix_micros("at").alias("at"), F.unix_micros("on").alias("on"),
                                               "note").collect()}
        frames.unpersist()
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
    assert _types(frames) == {"id": "bigint", "at": "timestamp", "on": "timestamp", "note": "string"}
    assert rows[1]["at"] == micros(dt.datetime(2021, 12, 25, 5, 42, 4, 408000, tzinfo=UTC))
    assert rows[1]["on"] == micros(dt.datetime(2021, 12, 25, tzinfo=UTC))  # the hint; a date is midnight UTC
    assert (rows[1]["note"], rows[5_000_000_000]["note"]) == ("2024-03-01T10:00:00Z", "n/a")
    cols = {c["name"]: c for c in frames.summary["tables"][0]["columns"]}
    assert (cols["on"]["from"], cols["at"]["from"]) == ("hint", "inferred")
    assert cols["note"]["note"] == "values of mixed kinds (text, timestamp): kept as string"


def test_a_widening_or_a_hint_rebuilds_an_incremental_table(spark, tmp_path):
    """The incremental apply: a type change (a widening in a later run, a hint added) rebuilds the table from all
    of its changes; the same hint again takes the (empty) batch incrementally; a hint naming no table is refused
    before anything is written."""
    lake = str(tmp_path / "lake")
    first = [_event(i, {"id": i, "at": "2024-03-01T10:00:00Z"}) for i in range(1, 3)]
    cdcnorm.normalize([_write(tmp_path / "in1" / "a.jsonl", first)], "datastream", spark=spark, lake=lake)
    with pytest.raises(UsageError, match="match no applied table: other.id"):
        cdcnorm.apply(spark, lake, column_types={"other.id": "int"})
    assert not (tmp_path / "lake" / "current" / "_tables.json").exists()
    assert _types(cdcnorm.apply(spark, lake)) == {"id": "int", "at": "timestamp"}
    # the folded schema versions are cached under the schema files they came from: reused without a Spark job
    cache = tmp_path / "lake" / "current" / "_schemas.json"
    key = json.loads(cache.read_text())["files"]
    lk = Lake(spark, lake)
    cut = lk.cut()
    sc = spark.sparkContext
    sc.setJobGroup("schema-cache", "schema-cache")
    try:
        (sv,) = folded_schemas(lk, cut["schemas"], set(lk.committed_runs()), None).values()
    finally:
        sc.setJobGroup("", "")
    assert not sc.statusTracker().getJobIdsForGroup("schema-cache")
    assert {c["name"]: c["canonical_type"] for c in sv["columns"]} == {"id": "int", "at": "timestamp"}
    second = [_event(9, {"id": 5_000_000_000, "at": "2024-03-02 11:30:00"})]
    cdcnorm.normalize([_write(tmp_path / "in2" / "b.jsonl", second)], "datastream", spark=spark, lake=lake)
    applied = cdcnorm.apply(spark, lake)
    (e,) = applied.summary["tables"]
    assert (e["apply"]["mode"], e["apply"]["reason"]) == ("rebuilt", "the columns changed")
    assert e["type_changes"] == [{"column": "id", "from": "int", "to": "bigint", "kind": "widening"}]
    assert json.loads(cache.read_text())["files"] != key  # the widening's schema row: folded again
    assert sorted(r["id"] for r in applied[next(iter(applied))].select("id").collect()) == [1, 2, 5_000_000_000]
    hinted = cdcnorm.apply(spark, lake, column_types={"orders.at": "string"})
    (e,) = hinted.summary["tables"]
    assert (e["apply"]["mode"], _types(hinted)["at"]) == ("rebuilt", "string")
    assert {c["name"]: c["from"] for c in e["columns"]} == {"id": "inferred", "at": "hint"}
    assert e["type_changes"] == [{"column": "at", "from": "timestamp", "to": "string", "kind": "widening"}]
    again = cdcnorm.apply(spark, lake, column_types={"orders.at": "string"})
    (e,) = again.summary["tables"]
    assert (e["apply"]["mode"], e["type_changes"], e["rows"]) == ("incremental", [], 3)


def test_messages_record_their_summaries_at_the_end_of_a_partition(spark):
    events = [_event(i, {"id": i * 1_000_000_000, "at": "2024-03-01T10:00:00Z"}) for i in range(1, 4)]
    raw = spark.createDataFrame([(json.dumps(e).encode(),) for e in events], "value binary").coalesce(1)
    result = cdcnorm.normalize(raw, "datastream", spark=spark)
    (version,) = result.schemas.collect()
    assert [(c["name"], c["canonical_type"]) for c in version["columns"]] == [("id", "bigint"), ("at", "timestamp")]


# -- the e2e lake: Datastream JSON typed like Datastream Avro ----------------------------------------------
@pytest.mark.slow  # needs the lake of every vendor format
def test_datastream_json_columns_get_the_avro_types(e2e_all):
    """Timestamp and date columns: the same type from JSON as from Avro; numbers: exact types (the values are
    asserted equal to the truth by test_e2e)."""
    from cdcnorm.simulate.verify import stream_of

    by_format = {vf: {tid.table: {f.name: f.dataType.simpleString() for f in df.schema.fields}
                      for tid, df in e2e_all["frames"].items() if tid.stream == stream_of(vf)}
                 for vf in ("datastream-json", "datastream-avro")}
    json_t, avro_t = by_format["datastream-json"], by_format["datastream-avro"]
    assert json_t.keys() == avro_t.keys() and json_t
    checked = 0
    for table, cols in json_t.items():
        for name, typ in cols.items():
            if avro_t[table][name] in ("timestamp", "timestamp_ntz", "date"):
                assert typ == avro_t[table][name], (table, name)
                checked += 1
            elif avro_t[table][name] in ("double", "bigint", "int") or avro_t[table][name].startswith("decimal"):
                assert typ in ("int", "bigint") or typ.startswith("decimal"), (table, name, typ)
    assert checked >= 4


# -- the shared corpus: real Datastream JSON --------------------------------------------------------------
JSON_REAL = CORPUS / "datastream" / "json_real"


@pytest.mark.skipif(not JSON_REAL.is_dir(), reason=f"the shared corpus is absent ({JSON_REAL})")
def test_corpus_json_tables_are_typed(spark, tmp_path):
    lake = str(tmp_path / "lake")
    files = [str(JSON_REAL / n) for n in (
        "hkh__postgresql_backfill__public_dwh_entity_role_properties.jsonl",
        "readme_example__postgresql_cdc_update_jsonb.jsonl",
        "oracle_backfill_HR_JOBS__dataflowtemplates_FormatDatastreamJsonToJsonTest.jsonl",
        "badal__mysql_cdc__accounts.jsonl")]
    cdcnorm.normalize(files, "datastream", spark=spark, lake=lake)
    frames = cdcnorm.apply(spark, lake)
    types = {tid.table: {f.name: f.dataType.simpleString() for f in df.schema.fields} for tid, df in frames.items()}
    assert types["dwh_entity_role_properties"] == {
        "id": "int", "public_identifier": "string", "creation_timestamp": "timestamp",
        "last_update_timestamp": "timestamp", "entity_role_public_identifier": "string", "property_type": "string",
        "property_value": "string"}
    assert types["pipeline_run"] == {
        "id": "int", "created_at": "timestamp", "updated_at": "timestamp", "pipeline_schedule_id": "int",
        "pipeline_uuid": "string", "execution_date": "timestamp", "status": "string", "completed_at": "timestamp",
        "variables": "variant", "passed_sla": "boolean", "event_variables": "variant", "metrics": "variant",
        "backfill_id": "variant", "executor_type": "string", "started_at": "timestamp"}
    assert types["JOBS"] == {"JOB_ID": "string", "JOB_TITLE": "string", "MIN_SALARY": "int", "MAX_SALARY": "int"}
    assert types["accounts"] == {"id": "string", "type": "string", "balance": "int"}
    run = {tid.table: df for tid, df in frames.items()}["pipeline_run"].select(
        F.unix_micros("created_at").alias("us")).collect()
    assert run[0]["us"] == micros(dt.datetime(2025, 11, 5, 18, 19, 39, 44331, tzinfo=UTC))


def test_hint_options_and_file_parse_and_unmatched_hints_are_refused(tmp_path):
    """No Spark: `--column-types FILE` then `--column-type` (the options win); an unknown type or a bare column
    name is refused; :func:`check_hints_used` asks for every table only when the known ones leave a hint."""
    from cdcnorm.state.hints import check_hints_used, parse_hints

    f = tmp_path / "hints.json"
    f.write_text(json.dumps({"shop.orders.id": "int", "orders.at": "timestamp"}))
    assert parse_hints(["shop.orders.id=bigint"], f) == {"shop.orders.id": "bigint", "orders.at": "timestamp"}
    with pytest.raises(UsageError, match="unknown type"):
        parse_hints(["orders.id=integr"])
    with pytest.raises(UsageError, match="name the table too"):
        parse_hints(["id=int"])
    orders = ("datastream", "s", "shop", None, "orders")
    asked = []
    check_hints_used({"orders.id": "int"}, [orders], lambda: asked.append(1) or [])
    assert asked == []
    check_hints_used({"late.id": "int"}, [orders], lambda: [("datastream", "s", "shop", None, "late")])
    with pytest.raises(UsageError, match="match no applied table: other.id"):
        check_hints_used({"orders.id": "int", "other.id": "int"}, [orders], lambda: [orders])
