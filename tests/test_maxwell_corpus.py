"""Conformance over every file of the shared Maxwell corpus (`../shared/corpus/maxwell`).

Each file is listed once: `decode` (its messages become canonical rows) or `doc` (documentation: the
integration-test specs under `specs/` are SQL followed by JSON5-ish expectations, not Maxwell output). The
expectations are derived by reading each file with plain `json` and applying the reference's rules by hand
(§2 types, §3 images, §4 seconds vs milliseconds, §5 commit, §6 bootstrap), or are values Maxwell's own tests
assert for the encrypted messages (RowMapDeserializerTest, key `aaaaaaaaaaaaaaaa`) — never recorded from the
adapter. When the corpus exists these tests run and fail on any mismatch; they never skip then.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest

from decoded import changes, decode_files, outcomes

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "maxwell"
pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the shared corpus is absent ({CORPUS})")
UTC = dt.UTC
KEY = "aaaaaaaaaaaaaaaa"
"""The secret key of Maxwell's own encrypted test messages."""

DECODE, DOC = "decode", "doc"
SPECS = ("bootstrap-multiple-row", "bootstrap-null-values", "test_1j", "test_bignum", "test_bit", "test_blob",
         "test_enum", "test_gis", "test_invalid_time", "test_json", "test_set", "test_time", "test_zero_created_at")
FILES: dict[str, str] = {
    "SOURCES.md": DOC,
    "maxwell-docs-bootstrap-stream.jsonl": DECODE,
    "maxwell-docs-dataformat-examples.jsonl": DECODE,
    "maxwell-test-json-user-events.jsonl": DECODE,
    **{f"specs/maxwell-spec-{name}.txt": DOC for name in SPECS},
}
OPS = {"insert": "INSERT", "update": "UPDATE", "delete": "DELETE", "bootstrap-insert": "SNAPSHOT"}


def test_every_corpus_file_is_listed():
    on_disk = sorted(str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*") if p.is_file())
    assert on_disk == sorted(FILES), f"unlisted: {set(on_disk) - set(FILES)}; gone: {set(FILES) - set(on_disk)}"


def test_documentation_files_are_not_read_as_maxwell_output():
    from cdcnorm.adapters.maxwell.adapter import MaxwellAdapter

    for name, kind in FILES.items():
        if kind == DOC:
            assert not MaxwellAdapter.sniff(name, (CORPUS / name).read_bytes()[:65536]), name


def messages(name: str) -> list[dict]:
    return [json.loads(ln, parse_float=Decimal) for ln in (CORPUS / name).read_text().splitlines() if ln.strip()]


def expected_row(m: dict) -> dict:
    """The canonical fields of one plain row message, by the reference's rules."""
    op = OPS[m["type"]]
    data = m["data"]
    before = after = None
    if op == "DELETE":
        before = data
    elif op == "UPDATE":
        after = {**data, **{k: None for k in m.get("old", {}) if k not in data}}
        before = {**after, **m.get("old", {})}
    else:
        after = data
    ts = m.get("ts")
    seconds = dt.datetime.fromtimestamp(ts, UTC) if ts else None
    return {"op": op, "database": m.get("database"), "table": m["table"], "before": before, "after": after,
            "source_ts": None if op == "SNAPSHOT" else seconds, "capture_ts": seconds if op == "SNAPSHOT" else None,
            "tx_id": None if op == "SNAPSHOT" or "xid" not in m else
            (f"{m['server_id']}:{m['xid']}" if "server_id" in m else str(m["xid"])),
            "tx_last": None if op == "SNAPSHOT" or "xid" not in m else m.get("commit") is True,
            "changed_columns": list(m.get("old", {})) if op == "UPDATE" else None}


FIELDS = ("op", "database", "table", "before", "after", "source_ts", "capture_ts", "tx_id", "tx_last",
          "changed_columns")


def test_every_decode_file_is_decoded_whole():
    for name, kind in FILES.items():
        if kind != DECODE:
            continue
        rows = decode_files("maxwell", [CORPUS / name], encryption_key=KEY)
        assert all(k in ("change", "metadata") for k, _ in outcomes(rows)), (name, outcomes(rows))
        ids = [r["event_id"] for r in changes(rows)]
        assert len(ids) == len(set(ids)), name


def test_bootstrap_stream():
    name = "maxwell-docs-bootstrap-stream.jsonl"
    msgs = messages(name)
    rows = decode_files("maxwell", [CORPUS / name])
    assert outcomes(rows) == [("change", None)] * 2 + [("metadata", "maxwell_bootstrap_marker")] + \
        [("change", None)] * 2 + [("metadata", "maxwell_bootstrap_marker")]
    expected = [expected_row(m) for m in msgs if m["type"] in OPS]
    assert [{f: r[f] for f in FIELDS} for r in changes(rows)] == expected
    # the two inserts share xid 13 without `commit` (the page abbreviates): two rows, two ids, same transaction
    snaps = [r for r in changes(rows) if r["op"] == "SNAPSHOT"]
    assert [r["sort_key"] < changes(rows)[0]["sort_key"] for r in snaps] == [True, True]


def test_dataformat_examples():
    name = "maxwell-docs-dataformat-examples.jsonl"
    msgs = messages(name)
    rows = changes(decode_files("maxwell", [CORPUS / name]))
    data = [(r, m) for r, m in zip(rows, msgs, strict=True) if m["type"] in OPS]
    for r, m in data:
        assert {f: r[f] for f in FIELDS} == expected_row(m), m
    insert = rows[0]
    assert insert["position"] == "master.000006:800911"
    assert insert["primary_keys"] == ["id", "c"] and insert["key"] == {"id": 1, "c": "2016-10-21 05:33:37.523000"}
    assert insert["after"]["m"] == Decimal("4.2341")
    create, alter = rows[1], rows[2]
    assert (create["op"], create["vendor_op"], alter["vendor_op"]) == ("DDL", "table-create", "table-alter")
    assert create["source_ts"] == dt.datetime(2016, 10, 21, 12, 32, 6, tzinfo=UTC)  # 1477053126000 ms
    assert alter["source_ts"] == dt.datetime(2016, 10, 21, 12, 35, 8, tzinfo=UTC)  # 1477053308000 ms
    assert alter["ddl"] == msgs[2]["sql"] and alter["position"] == "master.000006:804398"
    assert alter["ddl_changes"] == [{"action": "add", "column": "torvalds", "new_name": None, "type": "BIGINT UNSIGNED"}]
    # the page's fragments carry no database, ts or xid: decoded, their position unknown
    assert rows[3]["after"] == {"dtcol": "0000-00-00 00:00:00"} and "unknown_position" in rows[3]["flags"]
    assert rows[4]["after"] == {"setcol": ["b_val", "c_val"]}


def test_user_events_plain_and_encrypted():
    name = "maxwell-test-json-user-events.jsonl"
    msgs = messages(name)
    rows = changes(decode_files("maxwell", [CORPUS / name], encryption_key=KEY))
    assert [{f: r[f] for f in FIELDS} for r in rows[:2]] == [expected_row(m) for m in msgs[:2]]
    assert rows[0]["after"]["DoubleField"] == Decimal("4500000001.512456777")  # more digits than a double
    assert rows[0]["after"]["MiddleName"] is None
    # `old` names backup_date and DoubleField, which `data` lacks: they became NULL
    assert rows[1]["after"]["backup_date"] is None and rows[1]["before"]["backup_date"] == "2017-02-08 02:00:05"
    # encrypt=data and encrypt=all: the values RowMapDeserializerTest asserts
    enc_data, enc_all = rows[2], rows[3]
    assert (enc_data["database"], enc_data["table"], enc_data["op"], enc_data["tx_id"]) == \
        ("shard_1", "minimal", "UPDATE", "162")
    assert enc_data["source_ts"] == dt.datetime.fromtimestamp(1504584795, UTC)
    assert enc_data["after"] == {"id": 1, "account_id": 1, "text_field": "hello2"}
    assert (enc_all["op"], enc_all["tx_id"], enc_all["after"]["text_field"]) == ("UPDATE", "294", "goodbye")
    assert enc_all["source_ts"] == dt.datetime.fromtimestamp(1500935710, UTC)


def test_user_events_without_the_key_refuse_the_encrypted_ones():
    rows = decode_files("maxwell", [CORPUS / "maxwell-test-json-user-events.jsonl"])
    assert outcomes(rows) == [("change", None)] * 2 + [("quarantine", "unsupported_format")] * 2
