"""The JVM decode path against the Python decoder: the same rows, quarantine, schema versions and report.

Each input is normalized twice (`decode_path` `python` and `jvm`) and every output compared: change rows column by
column (VARIANT values by value and variant type, tests/variant_values.py), quarantine rows, schema versions and the
report (run ids, times and the path shares aside). The share of records the Spark expressions took is asserted too,
so a path that silently fell back everywhere fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cdcnorm import normalize
from cdcnorm.simulate import simulate
from damaged_corpus import build
from variant_values import exact

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "datastream"
_REPORT_ASIDE = ("run_id", "started_at", "finished_at", "decode_paths")


def _rows(df, variants=("key", "before", "after")) -> list[dict]:
    rows = []
    for r in df.collect():
        d = r.asDict(recursive=True)
        for c in variants:
            if c in d:
                d[c] = exact(r[c])
        rows.append(d)
    return sorted(rows, key=lambda d: json.dumps(d, sort_keys=True, default=str))


def both(spark, inputs: list[str], **options) -> tuple:
    """(python result, jvm result) of one input."""
    py = normalize(inputs, "datastream", spark=spark, options={**options, "decode_path": "python"})
    jvm = normalize(inputs, "datastream", spark=spark, options={**options, "decode_path": "jvm"})
    return py, jvm


def assert_same(py, jvm) -> dict:
    """Every output equal; returns the JVM run's path shares."""
    jvm_rows, py_rows = _rows(jvm.changes), _rows(py.changes)
    assert len(jvm_rows) == len(py_rows)
    for j, p in zip(jvm_rows, py_rows, strict=True):
        assert {k: v for k, v in j.items() if v != p.get(k)} == {k: v for k, v in p.items() if v != j.get(k)}
    assert _rows(jvm.quarantine.drop("quarantined_at"), ()) == _rows(py.quarantine.drop("quarantined_at"), ())
    assert _rows(jvm.schemas, ()) == _rows(py.schemas, ())
    strip = lambda r: {k: v for k, v in r.items() if k not in _REPORT_ASIDE}  # noqa: E731
    assert strip(jvm.report) == strip(py.report)
    assert py.report["decode_paths"] == {"jvm": 0, "python": py.report["records_read"]}
    return jvm.report["decode_paths"]


@pytest.mark.slow  # fast: the damaged, real-corpus, sample and per-shape tests below, both paths compared
def test_a_simulated_history_with_every_quirk_decodes_alike_and_takes_the_jvm_path(spark, tmp_path):
    manifest = simulate(tmp_path / "sim", vendors=["datastream-json"], tables=3, rows=30, changes=300, seed=7,
                        rotate=60)
    paths = both(spark, [str(manifest.input_dir("datastream-json"))], stream="e2e")
    share = assert_same(*paths)
    assert share["jvm"] >= 0.99 * (share["jvm"] + share["python"]), share


def test_the_damaged_corpus_decodes_alike(spark, tmp_path):
    build("datastream", tmp_path)
    share = assert_same(*both(spark, [str(tmp_path)]))
    assert share["jvm"] > 0, share


def test_the_real_corpus_decodes_alike(spark):
    assert CORPUS.is_dir(), f"{CORPUS} is missing"
    files = sorted(str(p) for p in CORPUS.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".json", ".gz"))
    assert files
    assert_same(*both(spark, files))


def test_the_samples_decode_alike(spark):
    assert_same(*both(spark, [str(ROOT / "samples" / "datastream")]))


EVENT = {"uuid": "u", "read_timestamp": "2024-05-01T10:00:03.364Z", "source_timestamp": "2024-05-01T10:00:02.130Z",
         "object": "shop_t", "read_method": "mysql-cdc-binlog", "stream_name": "s", "schema_key": "k",
         "sort_keys": [1, "mysql-bin.000001", 5],
         "source_metadata": {"table": "t", "database": "shop", "primary_keys": ["id"], "log_file": "mysql-bin.000001",
                             "log_position": 5, "change_type": "INSERT", "is_deleted": False},
         "payload": {"id": 1, "amount": 1.50, "note": "x"}}


def _event(**changes) -> str:
    ev = json.loads(json.dumps(EVENT))
    for path, value in changes.items():
        target = ev
        *parents, last = path.split("__")
        for p in parents:
            target = target[p]
        if value is _DROP:
            target.pop(last, None)
        else:
            target[last] = value
    return json.dumps(ev)


_DROP = object()
HANDED_BACK = {
    "exponent": _event().replace('"amount": 1.5', '"amount": 1.5e3'),
    "duplicate key": _event().replace('"note": "x"', '"note": "x", "note": "y"'),
    "NaN": _event().replace('"amount": 1.5', '"amount": NaN'),
    "unknown op": _event(source_metadata__change_type="MERGE"),
    "sqlserver": _event(read_method="sqlserver-cdc"),
    "millisecond time": _event(source_timestamp=1714557602130),
    "zone-less time": _event(source_timestamp="2024-05-01 10:00:02.130"),
    "nested payload": _event(payload={"id": 1, "doc": {"a": [1, 2]}}),
    "key by case": _event(source_metadata__primary_keys=["ID"]),
    "escaped key": _event().replace('"note"', '"n\\u006fte"'),
    "bigquery row": json.dumps({"datastream_metadata": {"uuid": "u", "source_timestamp": 1}, "id": 1}),
    "storage notification": json.dumps({"kind": "storage#object", "bucket": "b", "name": "n", "size": "0"}),
    "number table": _event(source_metadata__table=5),
    "no payload": _event(payload=_DROP),
}
FAST = {
    "plain": _event(),
    "big decimal": _event(payload={"id": 2, "big": 1}).replace('"big": 1', '"big": 123456789012345678901234567890.123456789012'),
    "delete": _event(source_metadata__change_type="DELETE", source_metadata__is_deleted=True),
    "empty change type deleted": _event(source_metadata__change_type="", source_metadata__is_deleted=True),
    "backfill": _event(read_method="mysql-backfill-fulldump"),
    "keyless": _event(source_metadata__primary_keys=_DROP),
    "oracle": _event(read_method="oracle-cdc-logminer", source_metadata={
        "table": "T", "database": "XE", "schema": "APP", "primary_keys": ["id"], "scn": 123, "rs_id": "0x00a1.0002",
        "ssn": 4, "change_type": "UPDATE-DELETE", "row_id": "AAA"}),
    "postgresql": _event(read_method="postgresql-cdc", source_metadata={
        "table": "t", "schema": "public", "primary_keys": ["id"], "lsn": "2/3A", "change_type": "UPDATE-INSERT",
        "tx_id": 77}),
}


def test_lines_the_expressions_cannot_hold_go_to_the_python_decoder(spark, tmp_path):
    (tmp_path / "back.jsonl").write_text("\n".join(HANDED_BACK.values()) + "\n", encoding="utf-8")
    (tmp_path / "fast.jsonl").write_text("\n".join(FAST.values()) + "\n", encoding="utf-8")
    share = assert_same(*both(spark, [str(tmp_path)]))
    assert share == {"jvm": len(FAST), "python": len(HANDED_BACK)}
