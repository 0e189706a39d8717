"""A run's schema-version rows: derived from its decoded rows, reduced to what the lake lacks, and carried to the
driver as text by the run's report aggregation.

Why they travel to the driver: schema versions are metadata (a row per table version at most; the first pass
already reads the lake's to the driver), and writing them with a plan of their own would re-run the decode, the
version fold and the joins against the lake's versions: a Spark job of a dozen stages in every run that saw a
table's schema, usually to write nothing (the lake holds the versions already). The report aggregation
(cdcnorm.ingest.pipeline) carries the run's distinct decoded schema texts, so the run knows its new rows without
a job, writes nothing when there is none, and otherwise writes them from the driver's few texts: a plan of one
local relation. The fold and the comparison with the lake's versions run on the driver (:func:`new_schema_texts`,
cdcnorm.ingest.schema_fold): in Spark, the fold and its joins would be most of the aggregation's stages. The
timestamp `first_seen` travels as microseconds (JSON text would keep milliseconds only). The lake's folded
versions are read once per set of `schemas` data files (immutable: the same files are the same rows), so a
follow query whose batches bring no new version reads them once, and a fresh lake not at all.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections import OrderedDict
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import LongType, StructField, StructType

from cdcnorm.canonical.emit import KIND_SCHEMA
from cdcnorm.canonical.emit import Bookkeeping as B
from cdcnorm.canonical.inferred import PREFIX, fold_versions
from cdcnorm.canonical.schema import SCHEMA_VERSION_COLUMNS, schema_versions_schema
from cdcnorm.ingest.schema_fold import fold as fold_rows
from cdcnorm.ingest.schema_fold import from_doc, new_rows, to_text
from cdcnorm.ingest.schema_fold import from_text as row_from_text
from cdcnorm.lake.delta.read import read_files

if TYPE_CHECKING:
    from cdcnorm.lake.store import Lake

NAMES = [c.name for c in SCHEMA_VERSION_COLUMNS]
_MICROS = "first_seen_us"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def schema_rows(decoded: DataFrame) -> DataFrame:
    """One row per schema version the run's decoded rows describe (their `KIND_SCHEMA` rows, folded)."""
    doc_schema = schema_versions_schema()
    fields = [f for f in doc_schema.fields if f.name not in ("version_id", "first_seen")]
    parse_schema = "struct<" + ",".join(f"`{f.name}`:{f.dataType.simpleString()}" for f in fields) + ",first_seen:string>"
    s = decoded.where(F.col(B.KIND) == KIND_SCHEMA).select(F.from_json(B.SCHEMA, parse_schema).alias("s")).select("s.*")
    ident = F.concat_ws("\u0001", *[F.coalesce(F.col(c), F.lit("")) for c in
                                     ("vendor", "stream", "database", "schema", "table", "schema_version")])
    s = s.withColumn("first_seen", F.to_timestamp("first_seen")).withColumn("version_id", F.sha2(ident, 256))
    # One row per version: the earliest file's, its inferred columns merged over every file (widening only).
    return fold_versions(s.select(*NAMES))


def new_schema_rows(schemas: DataFrame, lake: Lake) -> DataFrame:
    """The run's versions the lake does not hold yet, and the inferred versions this run widens.

    A version with inferred (`json:`) columns is merged with the lake's (already folded) row of it; the merged
    row is written when its columns differ from the lake's, so a later run's wider values (an int beyond 32
    bits, a larger scale, text in a timestamp column) reach the lake as one more row of the version, which
    every reader folds (cdcnorm.canonical.inferred.fold_versions). Declared versions are written once.
    """
    stored = lake.schemas(latest=True)
    inferred = F.exists("columns", lambda c: F.coalesce(c["vendor_type"].startswith(PREFIX), F.lit(False)))
    declared = schemas.where(~inferred).join(stored.select("version_id"), "version_id", "left_anti")
    untyped = schemas.where(inferred)
    merged = fold_versions(untyped.unionByName(stored.join(untyped.select("version_id"), "version_id", "left_semi")))
    before = stored.select("version_id", F.to_json("columns").alias("_was"))
    widened = (merged.join(before, "version_id", "left")
               .where(F.col("_was").isNull() | (F.col("_was") != F.to_json("columns"))).select(*NAMES))
    return declared.select(*NAMES).unionByName(widened)


def as_text(schemas: DataFrame) -> Column:
    """A schema-version row of `schemas` as one JSON text (for the report aggregation to carry)."""
    return F.to_json(F.struct(*[F.col(n) for n in NAMES if n != "first_seen"],
                              F.unix_micros("first_seen").alias(_MICROS)))


def from_text(spark: SparkSession, texts: list[str]) -> DataFrame:
    """The schema-version rows back from their texts (:func:`as_text`), in the table's column order."""
    carried = StructType([*[f for f in schema_versions_schema().fields if f.name != "first_seen"],
                          StructField(_MICROS, LongType())])
    rows = spark.createDataFrame([(t,) for t in texts], "t string").select(F.from_json("t", carried).alias("s"))
    return rows.select(*[(F.timestamp_micros(f"s.{_MICROS}") if n == "first_seen" else F.col(f"s.`{n}`")).alias(n)
                         for n in NAMES])


def new_schema_texts(texts: list[str], lake: Lake) -> list[str]:
    """:func:`new_schema_rows` on the driver: the run's new schema-version rows as texts (:func:`as_text`), from
    the run's distinct decoded schema texts (`_schema` of its `KIND_SCHEMA` rows) and the lake's versions."""
    if not texts:
        return []
    return sorted(to_text(r) for r in new_rows([from_doc(t) for t in texts], _stored(lake)))


_STORED: OrderedDict[tuple[str, str], dict[str, dict]] = OrderedDict()
_STORED_LAKES = 8
"""How many lakes' folded versions the process keeps (one entry per lake: a new set of files replaces it)."""


def _stored(lake: Lake) -> dict[str, dict]:
    """The lake's folded schema versions at its latest commit, by version id (metadata: a row per version);
    read by a Spark job once per set of data files."""
    table = lake.tables["schemas"]
    files = sorted(table.files())
    if not files:
        return {}
    key = (table.uri, hashlib.sha256("\n".join(files).encode()).hexdigest())
    got = _STORED.get(key)
    if got is None:
        rows = read_files(lake.spark, table, files, NAMES)
        got = {r["version_id"]: r for r in fold_rows(row_from_text(t["t"])
                                                     for t in rows.select(as_text(rows).alias("t")).collect())}
        for old in [k for k in _STORED if k[0] == table.uri]:
            del _STORED[old]
        _STORED[key] = got
        while len(_STORED) > _STORED_LAKES:
            _STORED.popitem(last=False)
    return got


def to_arrow(texts: list[str]) -> pa.Table:
    """The schema-version rows of their texts (:func:`as_text`) as an Arrow table of the `schemas` table's schema,
    for the driver to write (a local lake: cdcnorm.lake.delta.files.write_arrow)."""
    schema = to_arrow_schema(schema_versions_schema(), timezone="UTC")
    rows = [row_from_text(t) for t in texts]
    cols = {n: [r[n] for r in rows] for n in NAMES if n != "first_seen"}
    cols["first_seen"] = [None if r["first_seen_us"] is None else _EPOCH + dt.timedelta(microseconds=r["first_seen_us"])
                          for r in rows]
    return pa.table({n: pa.array(cols[n], schema.field(n).type) for n in NAMES}, schema=schema)
