"""The adapter contract: every adapter's test module inherits :class:`AdapterContract`.

A subclass sets `vendor` and `inputs` (sample paths), optionally `options` and `message_file`; the suite
normalizes the inputs once per class and checks what every adapter promises: canonical schema and column
order, the op vocabulary, required columns filled, unique and stable event ids, reconciliation, key-change
pairs, image rules, the MySQL-family rule, flags from the vocabulary, quarantine error classes from the
vocabulary, `post_process` conserving record counts, samples recognised by this vendor alone, and (with a
`message_file`) the same event ids from file input and from message input.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pyspark.sql import functions as F

from cdcnorm.adapters import adapter_class, get_adapter, names, spec
from cdcnorm.canonical.emit import KIND_CHANGE
from cdcnorm.canonical.emit import Bookkeeping as B
from cdcnorm.canonical.schema import COLUMNS, ERROR_CLASSES, FLAGS, OPS, canonical_schema
from cdcnorm.runtime.fs import hidden_name

EMITTER_FLAGS = frozenset({"decimal_as_string"})
"""Flags the canonical emitter adds for any vendor (values VARIANT cannot hold exactly)."""
SNIFF_BYTES = 65536
"""How much of a file vendor detection reads (as `normalize` does without `--vendor`)."""


class AdapterContract:
    """Inherit this in a vendor's test module; set `vendor` and `inputs` (and `options` when needed)."""

    vendor: ClassVar[str]
    inputs: ClassVar[list[str]]
    options: ClassVar[dict] = {}
    message_file: ClassVar[str | None] = None
    """A JSON-lines file whose every line is also one raw message (enables the file-vs-message check)."""

    @pytest.fixture(scope="class")
    @classmethod
    def result(cls, spark):
        from cdcnorm.ingest.pipeline import normalize

        return normalize(cls.inputs, cls.vendor, spark=spark, options=cls.options)

    @pytest.fixture(scope="class")
    @classmethod
    def rows(cls, result):
        return result.changes.select(
            *[c.name for c in COLUMNS if c.name not in ("key", "before", "after")],
            *[F.to_json(c).alias(c) for c in ("key", "before", "after")],
        ).collect()

    def test_spec_is_consistent(self):
        s = spec(self.vendor)
        assert s.name == self.vendor == adapter_class(self.vendor).name
        assert tuple(adapter_class(self.vendor).formats) == tuple(s.formats)
        assert tuple(adapter_class(self.vendor).flags) == tuple(s.flags)
        assert set(s.flags) <= set(FLAGS), f"declared flags outside canonical.schema.FLAGS: {set(s.flags) - set(FLAGS)}"

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
        from cdcnorm.ingest.pipeline import normalize

        again = normalize(self.inputs, self.vendor, spark=spark, options=self.options)
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

    def test_flags_are_in_the_vocabulary(self, rows):
        allowed = set(spec(self.vendor).flags) | EMITTER_FLAGS
        emitted = {f for r in rows for f in (r["flags"] or [])}
        assert emitted <= set(FLAGS), f"flags outside canonical.schema.FLAGS: {emitted - set(FLAGS)}"
        assert emitted <= allowed, f"flags the vendor spec does not declare: {emitted - allowed}"

    def test_error_classes_are_in_the_vocabulary(self, result):
        classes = {q["error_class"] for q in result.quarantine.select("error_class").distinct().collect()}
        assert classes <= set(ERROR_CLASSES), f"error classes outside canonical.schema.ERROR_CLASSES: {classes - set(ERROR_CLASSES)}"

    def test_post_process_conserves_record_counts(self, result):
        changes = result.decoded.where(F.col(B.KIND) == KIND_CHANGE)
        adapter = get_adapter(self.vendor, self.options)
        total = F.sum(F.col(B.RECORDS) + F.col(B.MERGED)).alias("n")
        before = changes.agg(total).collect()[0]["n"]
        after = adapter.post_process(changes).agg(total).collect()[0]["n"]
        assert before == after, f"post_process turned {before} records into {after}"

    def test_samples_are_recognised_by_this_vendor_alone(self):
        from cdcnorm.runtime.fs import open_input

        adapter = get_adapter(self.vendor, self.options)
        others = [adapter_class(n) for n in names() if n != self.vendor]
        recognised = 0
        for path in _data_files(self.inputs, adapter):
            with open_input(path) as fh:
                head = fh.read(SNIFF_BYTES)
            claimed = [k.name for k in others if k.sniff(path, head)]
            assert not claimed, f"{path} is also recognised by {claimed}"
            recognised += adapter_class(self.vendor).sniff(path, head)
        assert recognised, f"no sample file is recognised by the {self.vendor} adapter's sniff()"

    def test_file_and_message_input_give_the_same_event_ids(self, spark):
        if self.message_file is None:
            pytest.skip("no message_file: the adapter's message input is not checked against its file input")
        from cdcnorm.ingest.pipeline import normalize

        options = {**self.options, "stream": "contract"}
        lines = [line.rstrip(b"\r\n") for line in Path(self.message_file).read_bytes().splitlines() if line.strip()]
        messages = spark.createDataFrame([(v,) for v in lines], "value binary")
        by_file = normalize([self.message_file], self.vendor, spark=spark, options=options)
        by_message = normalize(messages, self.vendor, spark=spark, options=options)
        ids = sorted(r["event_id"] for r in by_file.changes.select("event_id").collect())
        assert ids, f"{self.message_file} produced no change rows"
        assert sorted(r["event_id"] for r in by_message.changes.select("event_id").collect()) == ids


def _data_files(inputs: list[str], adapter: Any) -> list[str]:
    """The non-empty, visible data files under the inputs (what `normalize` would decode)."""
    found = []
    for item in inputs:
        root = Path(item)
        paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for p in paths:
            rel = p.relative_to(root) if p != root else Path(p.name)
            if any(hidden_name(part) for part in rel.parts) or p.stat().st_size == 0:
                continue
            if adapter.accepts_file(os.fspath(p)):
                found.append(os.fspath(p))
    return found
