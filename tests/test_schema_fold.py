"""The driver's schema-version fold (cdcnorm.ingest.schema_fold, used by every run with a lake) gives the rows the Spark
fold gives (cdcnorm.canonical.inferred.fold_versions, cdcnorm.ingest.schema_rows.new_schema_rows), against an empty lake
and against a lake holding some of the versions."""

from __future__ import annotations

import orjson
from pyspark.sql import functions as F

from cdcnorm.canonical.emit import KIND_SCHEMA
from cdcnorm.canonical.emit import Bookkeeping as B
from cdcnorm.ingest.schema_fold import from_text as row_of
from cdcnorm.ingest.schema_rows import (
    NAMES,
    _stored,
    as_text,
    from_text,
    new_schema_rows,
    new_schema_texts,
    schema_rows,
    to_arrow,
)
from cdcnorm.lake.delta.files import write_arrow, write_files
from cdcnorm.lake.store import Lake

_TYPES = ("name", "vendor_type", "canonical_type", "ordinal", "pk_position", "nullable")


def _doc(table: str, version: str, first_seen: str | None, cols: list[tuple], definition: str | None = None) -> str:
    return orjson.dumps({
        "vendor": "datastream", "stream": "s", "source_db": "postgresql", "database": None, "schema": "public",
        "table": table, "schema_version": version, "first_seen": first_seen, "definition": definition,
        "columns": [dict(zip(_TYPES, c, strict=True)) for c in cols]}).decode()


# three files of an inferred version (kinds, digits and scale widen; a column declared in one file), two rows of
# a declared version, a version without columns, and an inferred version whose files tie on first_seen
DOCS = [
    _doc("orders", "v1", "2024-05-01T10:00:02.081000+00:00",
         [("id", "json:int;digits=3;scale=0", None, 1, 1, None), ("note", "json:text", None, 2, None, None),
          ("at", "json:date", None, 4, None, None), ("amount", "json:int;digits=2;scale=0", None, 3, None, True)]),
    _doc("orders", "v1", "2024-05-01T10:00:00+00:00",
         [("id", "json:bigint,int;digits=12;scale=0", None, 1, 1, None), ("at", "json:timestamp", None, 4, None, None),
          ("amount", "json:decimal;digits=1;scale=2", None, 3, None, False), ("extra", "json:", None, 5, None, None)]),
    _doc("orders", "v1", None,
         [("note", "varchar", "string", 2, None, True), ("amount", "json:integer;digits=25;scale=0", None, 6, None, None),
          ("blob", "json:json,text", None, 7, None, None)]),
    _doc("items", "d1", "2024-05-01T11:00:00+00:00",
         [("id", "int", "int", 1, 1, False), ("name", "varchar", "string", 2, None, True)], definition='{"a":1}'),
    _doc("items", "d1", "2024-05-01T09:00:00.5+00:00", [("id", "int", "int", 1, 1, False)]),
    _doc("empty", "e1", "2024-05-02T00:00:00+00:00", []),
    _doc("flags", "f1", "2024-05-03T00:00:00+00:00",
         [("ok", "json:boolean", None, 1, None, None), ("d", "json:date", None, 2, None, None)]),
    _doc("flags", "f1", "2024-05-03T00:00:00+00:00",
         [("ok", "json:boolean", None, 1, None, None), ("d", "json:date,timestamp_ntz", None, 2, None, None)]),
]


def _spark_texts(spark, lake: Lake, docs: list[str]) -> list[str]:
    decoded = spark.createDataFrame([(KIND_SCHEMA, d) for d in docs], f"`{B.KIND}` string, `{B.SCHEMA}` string")
    new = new_schema_rows(schema_rows(decoded), lake)
    return [r["t"] for r in new.select(as_text(new).alias("t")).collect()]


def _rows(texts: list[str]) -> dict[str, dict]:
    rows = [row_of(t) for t in texts]
    by_id = {r["version_id"]: r for r in rows}
    assert len(by_id) == len(rows)
    return by_id


def _store(spark, lake: Lake, docs: list[str], run: str) -> None:
    decoded = spark.createDataFrame([(KIND_SCHEMA, d) for d in docs], f"`{B.KIND}` string, `{B.SCHEMA}` string")
    table = lake.tables["schemas"]
    table.commit(write_files(schema_rows(decoded).select(*NAMES), table, f"run={run}"))


def test_driver_fold_gives_the_spark_folds_rows(spark, tmp_path):
    lake = Lake(spark, str(tmp_path / "lake"), create=True)
    driver = new_schema_texts(sorted(set(DOCS)), lake)
    assert _rows(driver) == _rows(_spark_texts(spark, lake, DOCS))
    orders = next(r for r in _rows(driver).values() if r["table"] == "orders")
    cols = {c["name"]: c for c in orders["columns"]}
    assert [c["name"] for c in orders["columns"]] == ["id", "note", "amount", "at", "extra", "blob"]
    assert cols["note"]["vendor_type"] == "varchar"  # declared wins over inferred
    assert cols["amount"]["vendor_type"] == "json:decimal,int,integer;digits=25;scale=2"
    assert cols["amount"]["canonical_type"] == "decimal(27,2)" and cols["amount"]["nullable"] is False
    assert cols["at"]["canonical_type"] == "timestamp" and cols["blob"]["canonical_type"] == "json"
    assert cols["extra"]["canonical_type"] is None and cols["id"]["canonical_type"] == "bigint"
    assert orders["first_seen_us"] == 1714557600000000


def test_driver_fold_against_stored_versions_writes_only_what_widens(spark, tmp_path):
    lake = Lake(spark, str(tmp_path / "lake"), create=True)
    _store(spark, lake, DOCS[:2] + DOCS[3:6], "1")  # orders v1 (two files), items d1, empty e1
    # the same texts again: nothing new; then a narrower file of v1, a new version and a widening file of v1
    assert new_schema_texts(sorted(set(DOCS[:2] + DOCS[3:6])), lake) == []
    assert _spark_texts(spark, lake, DOCS[:2] + DOCS[3:6]) == []
    narrow = _doc("orders", "v1", "2024-06-01T00:00:00+00:00", [("id", "json:int;digits=2;scale=0", None, 1, 1, None)])
    later = [narrow, *DOCS[2:3], *DOCS[6:]]
    driver = new_schema_texts(sorted(later), lake)
    assert _rows(driver) == _rows(_spark_texts(spark, lake, later))
    assert sorted(r["table"] for r in _rows(driver).values()) == ["flags", "orders"]
    assert new_schema_texts([narrow], lake) == [] == _spark_texts(spark, lake, [narrow])


def test_the_lakes_versions_are_read_once_per_set_of_files(spark, tmp_path):
    lake = Lake(spark, str(tmp_path / "lake"), create=True)
    assert _stored(lake) == {}  # no file: no Spark job
    _store(spark, lake, DOCS[3:5], "1")
    first = _stored(lake)
    assert _stored(lake) is first  # the same files: the cached rows
    _store(spark, lake, DOCS[5:6], "2")
    assert set(_stored(lake)) == set(first) | {next(iter(_rows(new_schema_texts(DOCS[5:6], Lake(
        spark, str(tmp_path / "other"), create=True)))))}
    stored = lake.schemas(latest=True)
    assert {r["version_id"] for r in stored.select(F.col("version_id")).collect()} == set(_stored(lake))


def test_a_local_lakes_new_versions_are_written_by_the_driver_as_spark_would_read_them(spark, tmp_path):
    lake = Lake(spark, str(tmp_path / "lake"), create=True)
    texts = new_schema_texts(sorted(set(DOCS)), lake)
    table = lake.tables["schemas"]
    table.commit(write_arrow(spark, to_arrow(texts), table, "run=1", lake.specs["schemas"].stats))
    written = lake.read("schemas", latest=True).select(*NAMES)
    assert sorted(written.collect()) == sorted(from_text(spark, texts).collect())
    assert len(written.collect()) == 4
    assert written.schema.simpleString() == from_text(spark, texts).schema.simpleString()
    assert new_schema_texts(sorted(set(DOCS)), lake) == []  # the lake holds them now
