"""`cdcnorm apply`: current-state tables from a small lake written through `normalize` by a tiny test adapter.

One lake and one apply run serve the whole module (the machine is small): every scenario is its own table.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import io
import json
from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

import cdcnorm
from cdcnorm.adapters.base import Adapter
from cdcnorm.canonical.record import Change, SchemaColumn, SchemaVersion, split_key_change
from cdcnorm.cli.apply import apply_command
from cdcnorm.errors import UsageError
from cdcnorm.state import TableId, path_component, read_current, read_index, relative_path
from cdcnorm.state.ranges import QUANTILES
from cdcnorm.state.types import extract, parse_inferred, spark_type_name

VENDOR = "tv"
GCP_STREAM = "projects/1/locations/x/streams/y"


def _typed(value):
    """Decode test tags: {"$ts": iso} aware instant, {"$ntz": iso} naive, {"$date"}, {"$b64"}, {"$dec"}."""
    if isinstance(value, dict):
        if len(value) == 1:
            (tag, raw), = value.items()
            if tag == "$ts":
                return dt.datetime.fromisoformat(raw)
            if tag == "$ntz":
                return dt.datetime.fromisoformat(raw)
            if tag == "$date":
                return dt.date.fromisoformat(raw)
            if tag == "$b64":
                return base64.b64decode(raw)
            if tag == "$dec":
                return Decimal(raw)
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return value


class SpecAdapter(Adapter):
    """Test adapter: one JSON object per line, either a change or a table schema version."""

    name = "applytest"
    formats = ("applytest.json",)

    def read_file(self, path, fh, out):
        for i, line in enumerate(fh):
            out.begin_record(path, i, raw=line)
            ev = json.loads(line, parse_float=Decimal)
            ident = {"database": ev.get("db", "db"), "schema": ev.get("sc", "s"), "table": ev.get("t")}
            stream = ev.get("st", "s1")
            if ev.get("kind") == "schema":
                cols = [SchemaColumn(n, None, typ, i, pk) for i, (n, typ, pk) in enumerate(ev["columns"])]
                out.schema(SchemaVersion(VENDOR, stream, ev["version"], cols, source_db="postgresql",
                                         first_seen=dt.datetime.fromisoformat(ev["first_seen"]), **ident))
                out.metadata("schema")
            else:
                change = Change(
                    vendor=VENDOR, format="applytest.json", stream=stream, op=ev["op"], **ident,
                    sort_parts=(0 if ev.get("snap") else 1, ev["seq"]), id_parts=(ev.get("snap", False), ev["seq"]),
                    primary_keys=ev.get("pks", ["id"]), key=ev.get("key"), before=_typed(ev.get("before")),
                    after=_typed(ev.get("after")), missing_columns=ev.get("missing"), flags=ev.get("flags", []),
                    position=str(ev["seq"]), ddl=ev.get("ddl"),
                )
                for c in split_key_change(change):
                    out.change(c)
            yield


def ev(table, op, seq, after=None, before=None, **kw):
    return {"t": table, "op": op, "seq": seq, "after": after, "before": before, **kw}


def schema(table, version, first_seen, columns, **kw):
    return {"kind": "schema", "t": table, "version": version, "first_seen": first_seen, "columns": columns, **kw}


BIG = "12345678901234567890123456789012345.123456789012345678901234567890"  # 65 digits, scale 30

EVENTS = [
    # basic: insert / update / delete, no schema version (columns inferred, key first)
    ev("basic", "INSERT", 1, {"id": 1, "v": "a"}), ev("basic", "INSERT", 2, {"id": 2, "v": "b"}),
    ev("basic", "UPDATE", 3, {"id": 1, "v": "c"}, {"id": 1, "v": "a"}), ev("basic", "DELETE", 4, None, {"id": 2, "v": "b"}),
    ev("basic", "INSERT", 5, {"id": 3, "v": "d"}),
    # ooo: file order is not change order; 10 > 9 numerically
    ev("ooo", "UPDATE", 10, {"id": 1, "v": 10}), ev("ooo", "INSERT", 1, {"id": 1, "v": 1}),
    ev("ooo", "UPDATE", 9, {"id": 1, "v": 9}), ev("ooo", "UPDATE", 2, {"id": 1, "v": 2}),
    ev("ooo", "DELETE", 5, None, {"id": 2}), ev("ooo", "INSERT", 4, {"id": 2, "v": 4}),
    ev("ooo", "INSERT", 7, {"id": 3, "v": 7}), ev("ooo", "DELETE", 6, None, {"id": 3}),
    # snap: snapshot rows sort before every log row; log changes win where they overlap
    ev("snap", "SNAPSHOT", 1, {"id": 1, "v": "s1"}, snap=True), ev("snap", "INSERT", 1, {"id": 4, "v": "l4"}),
    ev("snap", "UPDATE", 2, {"id": 1, "v": "l1"}), ev("snap", "DELETE", 3, None, {"id": 3}),
    ev("snap", "SNAPSHOT", 2, {"id": 2, "v": "s2"}, snap=True), ev("snap", "SNAPSHOT", 3, {"id": 3, "v": "s3"}, snap=True),
    ev("snap", "SNAPSHOT", 5, {"id": 4, "v": "s4"}, snap=True),
    # keychg: an update of the key moves the row
    ev("keychg", "INSERT", 1, {"id": 1, "v": "a"}), ev("keychg", "INSERT", 2, {"id": 5, "v": "e"}),
    ev("keychg", "UPDATE", 3, {"id": 2, "v": "b"}, {"id": 1, "v": "a"}),
    # missing: a column not captured keeps its value; an explicit null is a value
    ev("missing", "INSERT", 1, {"id": 1, "a": 1, "b": 2, "c": 3}),
    ev("missing", "UPDATE", 2, {"id": 1, "a": 10, "b": None, "c": None}, missing=["c"]),
    # partial: partial after images merge; the key comes from the event's key when the image lacks it
    ev("partial", "INSERT", 1, {"id": 1, "a": 1, "b": 2}), ev("partial", "UPDATE", 2, {"id": 1, "b": 5}),
    ev("partial", "UPDATE", 3, {"b": 6}, key={"id": 1}),
    # orphan: updates without an after image change nothing
    ev("orphan", "INSERT", 1, {"id": 1, "a": 1}),
    ev("orphan", "UPDATE", 2, None, {"id": 1, "a": 1}, flags=["orphan_before"]),
    ev("orphan", "UPDATE", 3, None, {"id": 9, "a": 9}, flags=["orphan_before"]),
    # trunc: TRUNCATE empties the table as of its position (its line comes last in the file)
    ev("trunc", "INSERT", 1, {"id": 1, "v": 1, "w": "x"}), ev("trunc", "INSERT", 2, {"id": 2, "v": 2, "w": "y"}),
    ev("trunc", "INSERT", 4, {"id": 3, "v": 3, "w": "z"}), ev("trunc", "UPDATE", 5, {"id": 1, "v": 10}),
    ev("trunc", "TRUNCATE", 3, pks=None),
    # ddl: latest schema version by first_seen (its line first); rows from before the added column get null
    schema("ddl", "2", "2024-02-01T00:00:00+00:00", [["id", "bigint", 1], ["a", "int", None], ["b", "string", None]]),
    ev("ddl", "INSERT", 1, {"id": 1, "a": 1}), ev("ddl", "DDL", 2, pks=None, ddl="ALTER TABLE ddl ADD b text"),
    ev("ddl", "INSERT", 3, {"id": 2, "a": 2, "b": "x"}),
    schema("ddl", "1", "2024-01-01T00:00:00+00:00", [["id", "bigint", 1], ["a", "int", None]]),
    # types: schema version with canonical and vendor-ish spellings
    schema("types", "1", "2024-01-01T00:00:00+00:00", [
        ["id", "int", 1], ["d", "decimal(65,30)", None], ["p", "decimal(10,2)", None], ["t", "timestamp", None],
        ["n", "timestamp_ntz", None], ["bn", "binary", None], ["dt", "date", None], ["j", "variant", None],
        ["f", "double", None], ["ok", "boolean", None], ["s", "text", None], ["l", "long", None],
    ]),
    ev("types", "INSERT", 1, {
        "id": 1, "d": {"$dec": BIG}, "p": {"$dec": "12.50"}, "t": {"$ts": "2024-01-02T03:04:05.123456+00:00"},
        "n": {"$ntz": "2024-01-02T03:04:05.654321"}, "bn": {"$b64": base64.b64encode(b"\x00\xffab").decode()},
        "dt": {"$date": "2024-02-29"}, "j": {"x": [1, 2], "y": "z"}, "f": 1.5, "ok": True, "s": "h\u00e9",
        "l": 2**40,
    }),
    # keyless: no key anywhere: the image is the row; duplicates count, a DELETE removes one copy
    ev("keyless", "DELETE", 1, None, {"a": 7, "b": "q"}, pks=None), ev("keyless", "INSERT", 2, {"a": 1, "b": "x"}, pks=None),
    ev("keyless", "INSERT", 3, {"a": 1, "b": "x"}, pks=None), ev("keyless", "INSERT", 4, {"a": 2, "b": "y"}, pks=None),
    ev("keyless", "DELETE", 5, None, {"a": 1, "b": "x"}, pks=None),
    ev("keyless", "UPDATE", 6, {"a": 3, "b": "z"}, {"a": 2, "b": "y"}, pks=None),
    ev("keyless", "INSERT", 7, {"a": 7, "b": "q"}, pks=None),
    # derived: events carry no key; the schema version's primary key decides
    schema("derived", "1", "2024-01-01T00:00:00+00:00", [["id", "bigint", 1], ["v", "string", None]]),
    ev("derived", "INSERT", 1, {"id": 1, "v": "a"}, pks=None), ev("derived", "INSERT", 2, {"id": 2, "v": "b"}, pks=None),
    ev("derived", "UPDATE", 3, {"id": 1, "v": "c"}, pks=None), ev("derived", "DELETE", 4, None, {"id": 2}, pks=None),
    # dup: the same table name in other schemas and streams, a MySQL-style null schema, a literal "_" schema
    ev("dup", "INSERT", 1, {"id": 1, "v": "s"}), ev("dup", "INSERT", 1, {"id": 1, "v": "s2"}, sc="s2"),
    ev("dup", "INSERT", 1, {"id": 1, "v": "gcp"}, st=GCP_STREAM), ev("dup", "INSERT", 1, {"id": 1, "v": "mysql"}, sc=None),
    ev("dup", "INSERT", 1, {"id": 1, "v": "underscore"}, sc="_"),
    # empty: a schema version and no change; heartbeats are ignored
    schema("empty", "7", "2024-01-01T00:00:00+00:00", [["id", "int", 1], ["name", "string", None]]),
    ev(None, "HEARTBEAT", 1, pks=None, db=None, sc=None),
]


def tid(table, schema="s", stream="s1", database="db"):
    return TableId(VENDOR, stream, database, schema, table)


@pytest.fixture(scope="module")
def applied(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("apply")
    src = root / "in" / "events.jsonl"
    src.parent.mkdir()
    src.write_text("\n".join(json.dumps(e) for e in EVENTS) + "\n")
    lake = str(root / "lake")
    res = cdcnorm.normalize(str(src), SpecAdapter(), spark=spark, lake=lake)
    assert res.report["reconciled"] and res.report["outcomes"]["quarantined"] == 0
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = apply_command(lake, None, None)
    assert code == 0
    index = {(e["vendor"], e["stream"], e["database"], e["schema"], e["table"]): e for e in read_index(spark, lake)}
    return {"lake": lake, "out": buf.getvalue(), "index": index}


def _rows(spark, applied, t, *cols):
    df = read_current(spark, applied["lake"], t)
    sel = df.select(*cols) if cols else df
    return sorted(tuple(r) for r in sel.collect())


def test_insert_update_delete(spark, applied):
    assert _rows(spark, applied, tid("basic")) == [(1, "c"), (3, "d")]
    e = applied["index"][tid("basic")]
    assert e["columns"] == [{"name": "id", "type": "bigint", "from": "data"}, {"name": "v", "type": "string", "from": "data"}]
    assert (e["schema_source"], e["key_mode"], e["key_columns"], e["rows"]) == ("inferred", "event", ["id"], 2)
    assert e["last_position"] == "5"


def test_split_table_stats_equal_the_one_aggregate_definition(spark, applied):
    """table_stats reads the images of UPDATE rows only (and in full only where needed): the same figures as the
    one aggregate over every image, whether the tables have schema versions or not."""
    from cdcnorm.lake.store import Lake
    from cdcnorm.state.plan import _finish, _full_stats, table_stats
    from cdcnorm.state.run import prepared

    changes = prepared(Lake(spark, applied["lake"]).changes())
    hids = {r["_tid"] for r in changes.select("_tid").distinct().collect()}
    for with_schema in (set(), hids):
        got, want = table_stats(changes, with_schema), _full_stats(changes, with_schema)
        assert got.keys() == want.keys()
        for t, d in want.items():
            _finish(d)
            sample = got[t].pop("key_sample")  # the rebuild's range sample (cdcnorm.state.ranges), not a figure
            assert got[t] == d, d["table"]
            assert sample["n"] <= d["row_changes"] and len(sample["q"] or [0] * (QUANTILES - 1)) == QUANTILES - 1
            assert (sample["q"] is None) == (sample["n"] == 0)
    assert any(d["unkeyed"] for d in want.values()) and any(d["orphan_updates_ignored"] for d in want.values())


def test_sort_key_decides_not_file_order(spark, applied):
    assert _rows(spark, applied, tid("ooo")) == [(1, 10), (3, 7)]


def test_snapshot_then_log(spark, applied):
    assert _rows(spark, applied, tid("snap")) == [(1, "l1"), (2, "s2"), (4, "l4")]


def test_key_change_moves_row(spark, applied):
    assert _rows(spark, applied, tid("keychg")) == [(2, "b"), (5, "e")]


def test_missing_columns_keep_previous_value(spark, applied):
    assert _rows(spark, applied, tid("missing"), "id", "a", "b", "c") == [(1, 10, None, 3)]


def test_partial_images_merge(spark, applied):
    assert _rows(spark, applied, tid("partial"), "id", "a", "b") == [(1, 1, 6)]


def test_orphan_updates_ignored_and_reported(spark, applied):
    assert _rows(spark, applied, tid("orphan")) == [(1, 1)]
    assert applied["index"][tid("orphan")]["orphan_updates_ignored"] == 2


def test_truncate_empties_as_of_its_position(spark, applied):
    assert _rows(spark, applied, tid("trunc"), "id", "v", "w") == [(1, 10, None), (3, 3, "z")]
    e = applied["index"][tid("trunc")]
    assert e["truncates"] == 1 and e["truncated_at"] is not None


def test_added_column_null_for_old_rows(spark, applied):
    t = tid("ddl")
    df = read_current(spark, applied["lake"], t)
    assert [(f.name, f.dataType) for f in df.schema] == [("id", T.LongType()), ("a", T.IntegerType()), ("b", T.StringType())]
    assert _rows(spark, applied, t) == [(1, 1, None), (2, 2, "x")]
    e = applied["index"][t]
    assert e["schema_version"] == "2" and e["ignored_ops"] == {"DDL": 1}


def test_types(spark, applied):
    df = read_current(spark, applied["lake"], tid("types"))
    assert {f.name: f.dataType for f in df.schema} == {
        "id": T.IntegerType(), "d": T.StringType(), "p": T.DecimalType(10, 2), "t": T.TimestampType(),
        "n": T.TimestampNTZType(), "bn": T.BinaryType(), "dt": T.DateType(), "j": T.VariantType(),
        "f": T.DoubleType(), "ok": T.BooleanType(), "s": T.StringType(), "l": T.LongType(),
    }
    r = df.select("*", F.col("t").cast("string").alias("ts"), F.col("n").cast("string").alias("ns")).collect()[0]
    assert r.d == BIG and r.p == Decimal("12.50")
    assert r.ts == "2024-01-02 03:04:05.123456" and r.ns == "2024-01-02 03:04:05.654321"
    assert bytes(r.bn) == b"\x00\xffab" and r.dt == dt.date(2024, 2, 29)
    assert r.j.toPython() == {"x": [1, 2], "y": "z"}
    assert (r.f, r.ok, r.s, r.l) == (1.5, True, "h\u00e9", 2**40)


def test_keyless_table_is_a_multiset(spark, applied):
    assert _rows(spark, applied, tid("keyless")) == [(1, "x"), (3, "z"), (7, "q")]
    e = applied["index"][tid("keyless")]
    assert (e["key_mode"], e["keyless_updates_without_before"]) == ("keyless", 0)


def test_key_from_schema_version(spark, applied):
    assert _rows(spark, applied, tid("derived")) == [(1, "c")]
    e = applied["index"][tid("derived")]
    assert (e["key_mode"], e["key_columns"]) == ("derived", ["id"])


def test_same_name_in_other_schemas_and_streams(spark, applied):
    cases = {tid("dup"): "s", tid("dup", "s2"): "s2", tid("dup", stream=GCP_STREAM): "gcp",
             tid("dup", None): "mysql", tid("dup", "_"): "underscore"}
    paths = {relative_path(t) for t in cases}
    assert len(paths) == 5
    assert relative_path(tid("dup", None)) == "current/tv/s1/db/_/dup"
    assert relative_path(tid("dup", "_")) == "current/tv/s1/db/~5F/dup"
    assert relative_path(tid("dup", stream=GCP_STREAM)) == "current/tv/projects~2F1~2Flocations~2Fx~2Fstreams~2Fy/db/s/dup"
    for t, v in cases.items():
        assert _rows(spark, applied, t, "v") == [(v,)]
        assert applied["index"][t]["path"] == relative_path(t)


def test_schema_only_table_is_empty(spark, applied):
    df = read_current(spark, applied["lake"], tid("empty"))
    assert [(f.name, f.dataType) for f in df.schema] == [("id", T.IntegerType()), ("name", T.StringType())]
    assert df.count() == 0


def test_command_output_lists_tables(applied):
    out = applied["out"]
    assert "current-state tables" in out and "orphan updates ignored: 2" in out
    assert "HEARTBEAT 1" in out and "DDL 1" in out
    assert len(applied["index"]) == 18


@pytest.mark.slow  # over 20 s under load: `make test-slow` keeps it; the fast suite stays under 10 min
def test_python_api_filter_without_write(spark, applied):
    frames = cdcnorm.apply(spark, applied["lake"], tables=["S2.DUP"], write=False)
    assert list(frames) == [tid("dup", "s2")]
    assert [tuple(r) for r in frames[tid("dup", "s2")].collect()] == [(1, "s2")]
    assert frames.summary["totals"]["rows"] == 1
    frames.unpersist()
    with pytest.raises(UsageError, match="No table"):
        cdcnorm.apply(spark, applied["lake"], tables=["nope"], write=False)


def test_filtered_write_keeps_index(spark, applied):
    res = cdcnorm.apply(spark, applied["lake"], tables=["db.s.keyless"])
    assert list(res) == [tid("keyless")]
    assert len(read_index(spark, applied["lake"])) == 18
    names = sorted(p.name for p in (Path(applied["lake"]) / "current").iterdir() if not p.name.startswith("."))
    assert names == ["_schemas.json", "_tables.json", "_tombstones", "tv"]  # no staging left behind


def test_path_component():
    assert [path_component(v) for v in (None, "", "_", "_x", "..", ".h", "a/b", "x_y", "a=b", "é")] == [
        "_", "_empty", "~5F", "~5Fx", "~2E.", "~2Eh", "a~2Fb", "x_y", "a~3Db", "~C3~A9"]
    assert path_component("a~b%c") == "a~7Eb~25c"  # neither escape character is left as itself: injective


def test_type_spellings():
    assert [spark_type_name(t) for t in ("decimal(65,30)", "NUMERIC(10, 2)", "long", "integer", "str", "text",
                                        "datetime", "decimal", "geometry", None, "decimal(38,0)")] == [
        "string", "decimal(10,2)", "bigint", "int", "string", "string", "timestamp_ntz", "variant", "variant",
        "variant", "decimal(38,0)"]
    cols = parse_inferred("OBJECT<a: BIGINT, `b c,``d`: DECIMAL(5,2), id: STRING, o: OBJECT<x: BIGINT>, z: VOID>", ["id"])
    assert [(c.name, c.type) for c in cols] == [
        ("id", "string"), ("a", "bigint"), ("b c,`d", "decimal(5,2)"), ("o", "variant"), ("z", "string")]


def test_wide_decimal_text_keeps_the_declared_scale(spark):
    """A decimal(60,20) value that fit a VARIANT decimal is written with its 20 digits of scale, not `1.5`."""
    values = ["0.00000000000729415390", "1.5", '"123456789012345678901234567890123456789.50000000000000000000"',
              "1.123456789012345678901", "null"]
    df = spark.createDataFrame([(v,) for v in values], "x string").select(
        F.map_from_arrays(F.array(F.lit("d")), F.array(F.parse_json("x"))).alias("m"))
    got = [r[0] for r in df.select(extract(F.col("m"), "d", "string", "decimal(60,20)")).collect()]
    assert got == ["0.00000000000729415390", "1.50000000000000000000",
                   "123456789012345678901234567890123456789.50000000000000000000",
                   "1.123456789012345678901", None]  # a finer scale is never rounded: kept as its own text
