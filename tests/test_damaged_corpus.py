"""Damaged input, file by file: every good record is a row, every bad one is quarantined with its raw bytes and an
actionable reason, and the counts reconcile exactly with the records each file holds (tests/damaged_corpus.py).

Two views of one corpus: each adapter's `read_file` per file (fast, no Spark), and one `normalize` per vendor
into a lake whose rows, quarantine and run report are checked per origin uri (slow: ~30 Spark jobs per vendor).
"""

from __future__ import annotations

import io
import json
import os
from collections import Counter

import pytest

import damaged_corpus
from cdcnorm.adapters import get_adapter
from cdcnorm.adapters.base import FirstPass
from cdcnorm.canonical.emit import BatchBuilder
from cdcnorm.canonical.schema import ERROR_CLASSES
from cdcnorm.runtime.fs import skip_reason
from decoded import rows_of

VENDORS = sorted(damaged_corpus.CASES)
NOT_ACTIONABLE = {"adapter_error", "decode_failed", "no_outcome"}


def _key_id(key):
    """The `id`-like value of a canonical key (the corpus numbers its good records)."""
    if not isinstance(key, dict) or not key:
        return None
    return next(iter(key.values()))


def _prepared(vendor: str, files: dict):
    adapter = get_adapter(vendor, damaged_corpus.OPTIONS.get(vendor, {}))
    items = []
    if adapter.needs_first_pass():
        for path in files:
            try:
                with open(path, "rb") as fh:
                    items += list(adapter.first_pass_file(path, fh))
            except Exception:  # as the pipeline's first pass: the decode pass quarantines the file
                continue
    return adapter.prepare(FirstPass(kind="files", items=items, stored_schemas=[]))


def _decode(adapter, path: str) -> list[dict]:
    out = BatchBuilder()
    out.set_context(adapter.name, adapter.formats[0])
    with open(path, "rb") as fh:
        for _ in adapter.read_file(path, io.BytesIO(fh.read()), out):
            pass
    out.end_record()
    return rows_of(out.flush())


def test_corpus_has_sixty_cases_and_every_damage_kind():
    names = [c.name for v in VENDORS for c in damaged_corpus.CASES[v]()]
    assert len(names) >= 60
    classes = {k for v in VENDORS for c in damaged_corpus.CASES[v]() for k in c.quarantined}
    assert {"bad_json", "bad_encoding", "json_too_deep", "truncated_gzip", "corrupt_gzip", "corrupt_avro",
            "truncated_avro", "corrupt_parquet", "bad_csv", "unknown_op", "unknown_format"} <= classes


@pytest.mark.parametrize("vendor", VENDORS)
def test_every_damaged_file_decodes_to_its_exact_outcome(vendor, tmp_path):
    files = damaged_corpus.build(vendor, tmp_path)
    adapter = _prepared(vendor, files)
    problems = []
    for path, case in files.items():
        if skip_reason(path, os.path.getsize(path)):
            continue
        rows = _decode(adapter, path)
        counted = [r for r in rows if r["_records"] == 1]
        changes = [r for r in counted if r["_kind"] == "change"]
        quarantine = [r for r in counted if r["_kind"] == "quarantine"]
        got = {
            "records": len(counted), "rows": len(changes),
            "quarantined": dict(Counter(r["_rule"] for r in quarantine)),
            "metadata": sum(r["_kind"] == "metadata" for r in counted),
        }
        want = {"records": case.records, "rows": case.rows, "quarantined": case.quarantined, "metadata": case.metadata}
        if got != want:
            problems.append(f"{case.name}: got {got}, want {want}; "
                            f"{[(r['_rule'], (r['_message'] or '')[:120]) for r in quarantine]}")
            continue
        if case.keys is not None and [_key_id(r["key"]) for r in changes] != case.keys:
            problems.append(f"{case.name}: keys {[_key_id(r['key']) for r in changes]} != {case.keys}")
        for r in quarantine:
            if not r["_raw"] or r["_rule"] not in ERROR_CLASSES or r["_rule"] in NOT_ACTIONABLE:
                problems.append(f"{case.name}: quarantine {r['_rule']} raw={len(r['_raw'] or b'')} bytes")
        if case.raws is not None and [bytes(r["_raw"]) for r in quarantine] != case.raws:
            problems.append(f"{case.name}: raw bytes {[bytes(r['_raw'])[:40] for r in quarantine]} "
                            f"!= {[x[:40] for x in case.raws]}")
    assert not problems, "\n".join(problems)


@pytest.mark.slow
@pytest.mark.parametrize("vendor", VENDORS)
def test_one_normalize_over_the_corpus_reconciles_exactly_per_file(vendor, spark, tmp_path):
    """One run per vendor over its whole corpus: per origin uri, the lake's rows and quarantine are the case's;
    the run report's records_read is the records the files hold and every outcome adds up; apply keeps every
    table folder (odd names included) inside the lake."""
    from pyspark.sql import functions as F

    import cdcnorm

    files = damaged_corpus.build(vendor, tmp_path / "in")
    lake = str(tmp_path / "lake")
    result = cdcnorm.normalize([str(tmp_path / "in")], vendor, spark=spark, lake=lake,
                               options=damaged_corpus.OPTIONS.get(vendor, {}))
    report = result.report
    listed = {p: c for p, c in files.items() if not skip_reason(p, len(c.data))}
    oc = report["outcomes"]
    assert report["skipped_objects"] == {"zero_byte_object": len(files) - len(listed)}
    assert report["records_read"] == sum(c.records for c in listed.values())
    assert report["reconciled"] and sum(oc.values()) == report["records_read"]
    assert oc["quarantined"] == sum(sum(c.quarantined.values()) for c in listed.values())
    assert oc["metadata"] == sum(c.metadata for c in listed.values()) and oc["filtered"] == 0
    assert oc["emitted"] + oc["merged"] + oc["duplicate"] == sum(c.rows for c in listed.values())
    repeated = [c for c in listed.values() if c.repeats]
    assert oc["duplicate"] <= sum(c.rows for c in repeated)  # only files whose records repeat one another

    changes = cdcnorm.read_changes(spark, lake)
    assert changes.count() == changes.select("event_id").distinct().count() == report["rows_written"]
    per_uri = {r["uri"]: (r["n"], r["keys"]) for r in changes.groupBy(F.col("origin.uri").alias("uri")).agg(
        F.count(F.lit(1)).alias("n"),
        F.sort_array(F.collect_list(F.struct(F.col("origin.index"), F.to_json("key").alias("k")))).alias("keys"),
    ).collect()}
    quarantine = cdcnorm.read_quarantine(spark, lake).select(
        F.col("origin.uri").alias("uri"), F.col("origin.index").alias("index"), "error_class", "raw", "message",
    ).orderBy("uri", "index").collect()
    problems = []
    for path, case in listed.items():
        n, keys = per_uri.get(path, (0, []))
        if case.repeats:  # records that made rows (a key change is two rows of one record), some duplicates
            n = len({k["index"] for k in keys})
            ok = n <= case.rows
        else:
            ok = n == case.rows
            if ok and case.keys is not None:
                got = [_key_id(json.loads(k["k"])) if k["k"] else None for k in keys]
                ok = got == case.keys
                n = (n, got)
        if not ok:
            problems.append(f"{case.name}: {n} rows, want {case.rows} {case.keys or ''}")
        q = [r for r in quarantine if r["uri"] == path]
        if dict(Counter(r["error_class"] for r in q)) != case.quarantined:
            problems.append(f"{case.name}: quarantine {Counter(r['error_class'] for r in q)} != {case.quarantined}")
        if any(not r["raw"] or r["error_class"] in NOT_ACTIONABLE or not r["message"] for r in q):
            problems.append(f"{case.name}: a quarantine row without raw bytes or an actionable reason")
        if case.raws is not None and [bytes(r["raw"]) for r in q] != case.raws:
            problems.append(f"{case.name}: quarantined raw bytes differ")
    assert not problems, "\n".join(problems)

    applied = cdcnorm.apply(spark, lake)
    root = os.path.realpath(lake)
    for dirpath, dirnames, filenames in os.walk(root):
        assert os.path.realpath(dirpath).startswith(root)
        assert all(len(n.encode()) <= 255 for n in dirnames + filenames)
    written = {os.path.realpath(os.path.join(lake, t["path"])) for t in applied.summary["tables"]}
    assert all(p.startswith(root + "/current/") and os.path.isdir(p) for p in written)
    assert len(written) == len(applied.summary["tables"])
