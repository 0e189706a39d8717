"""The adapter contract: every adapter's test module inherits :class:`AdapterContract`.

A subclass sets `vendor` and `inputs` (sample paths); the suite normalizes them once per class and checks
what every adapter promises: canonical schema and column order, the op vocabulary, required columns filled,
unique and stable event ids, reconciliation, key-change pairs, image rules and the MySQL-family rule.
"""

from __future__ import annotations

from typing import ClassVar

import pytest
from pyspark.sql import functions as F

from cdcnorm.adapters import adapter_class
from cdcnorm.canonical.schema import COLUMNS, OPS, canonical_schema


class AdapterContract:
    vendor: ClassVar[str]
    inputs: ClassVar[list[str]]
    options: ClassVar[dict] = {}

    @pytest.fixture(scope="class")
    @classmethod
    def result(cls, spark):
        import cdcnorm

        return cdcnorm.normalize(cls.inputs, cls.vendor, spark=spark, options=cls.options)

    @pytest.fixture(scope="class")
    @classmethod
    def rows(cls, result):
        return result.changes.select(
            *[c.name for c in COLUMNS if c.name not in ("key", "before", "after")],
            *[F.to_json(c).alias(c) for c in ("key", "before", "after")],
        ).collect()

    def test_schema_is_canonical(self, result):
        expected = canonical_schema()
        got = result.changes.schema
        assert [f.name for f in got.fields] == [f.name for f in expected.fields]
        assert [f.dataType for f in got.fields] == [f.dataType for f in expected.fields]

    def test_produces_rows(self, rows):
        assert rows, "the samples must produce canonical rows"

    def test_ops_vendor_format(self, rows):
        formats = adapter_class(self.vendor).formats
        for r in rows:
            assert r["op"] in OPS
            assert r["vendor"] == self.vendor
            assert r["format"] in formats

    def test_required_columns_filled(self, rows):
        required = [c.name for c in COLUMNS if not c.nullable]
        for r in rows:
            for name in required:
                assert r[name] is not None, f"{name} is null in {r['event_id']}"

    def test_event_ids_unique(self, rows):
        ids = [r["event_id"] for r in rows]
        assert len(ids) == len(set(ids))

    def test_event_ids_stable(self, result, spark, rows):
        import cdcnorm

        again = cdcnorm.normalize(self.inputs, self.vendor, spark=spark, options=self.options)
        assert sorted(r["event_id"] for r in again.changes.select("event_id").collect()) == sorted(
            r["event_id"] for r in rows
        )

    def test_reconciled(self, result):
        report = result.report
        assert report["reconciled"], report
        assert sum(report["outcomes"].values()) == report["records_read"]

    def test_images_follow_ops(self, rows):
        for r in rows:
            if r["op"] == "DELETE":
                assert r["before"] is not None and r["after"] is None, r["event_id"]
            if r["op"] in ("INSERT", "SNAPSHOT"):
                assert r["after"] is not None and r["before"] is None, r["event_id"]
            if r["op"] == "UPDATE":
                assert r["after"] is not None or "orphan_before" in (r["flags"] or []), r["event_id"]

    def test_keys_encoded(self, rows):
        for r in rows:
            if r["key"] is not None and r["primary_keys"]:
                assert r["key_bytes"] is not None

    def test_key_changes_come_in_pairs(self, rows):
        halves = [r for r in rows if "key_change" in (r["flags"] or [])]
        deletes = sorted((r["table"], r["position"]) for r in halves if r["op"] == "DELETE")
        inserts = sorted((r["table"], r["position"]) for r in halves if r["op"] == "INSERT")
        assert deletes == inserts

    def test_mysql_family_has_no_schema(self, rows):
        for r in rows:
            if r["source_db"] == "mysql":
                assert r["schema"] is None and r["database"] is not None, r["event_id"]

    def test_quarantine_explains(self, result):
        for q in result.quarantine.collect():
            assert q["error_class"] and q["message"] and q["origin"] is not None
