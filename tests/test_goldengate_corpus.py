"""Conformance over every file of the shared GoldenGate corpus (`../shared/corpus/goldengate`).

Each file is listed once: `decode` (its records become canonical rows) or `doc` (documentation). The
expectations are derived by reading each file with plain `json` and applying the reference's rules by hand
(op letters, `table` split, `pos` kept as written, `op_ts` read as UTC, `"before": {}` unknown, numbers exact)
- never recorded from the adapter. When the corpus exists these tests run and fail on any mismatch; they never
skip then.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest

from decoded import changes, decode_files, outcomes

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "goldengate"
pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the shared corpus is absent ({CORPUS})")

DECODE, DOC = "decode", "doc"
FILES: dict[str, tuple[str, int]] = {
    # file: (kind, records)
    "SOURCES.md": (DOC, 0),
    "flink-ogg-data.jsonl": (DECODE, 16),  # semi-synthetic: `priamry_keys` typo (no keys), a stray `source`
    "kinetica-ogg-event1-update.json": (DECODE, 1),  # pretty-printed, `"before": {}`, dashed pos
    "kinetica-ogg-event2-insert.json": (DECODE, 1),  # single line insert without `before`, dashed pos
}
OPS = {"I": "INSERT", "U": "UPDATE", "D": "DELETE", "T": "TRUNCATE"}


def test_every_corpus_file_is_listed():
    on_disk = sorted(p.name for p in CORPUS.iterdir() if p.is_file())
    assert on_disk == sorted(FILES), f"unlisted: {set(on_disk) - set(FILES)}; gone: {set(FILES) - set(on_disk)}"


def records_of(name: str) -> list[dict]:
    """The file's records read with plain json, numbers as Decimal."""
    text = (CORPUS / name).read_text()
    dec = json.JSONDecoder(parse_float=Decimal)
    found, i = [], 0
    while True:
        while i < len(text) and text[i] in " \r\n\t":
            i += 1
        if i >= len(text):
            return found
        obj, i = dec.raw_decode(text, i)
        found.append(obj)


def utc(text: str) -> dt.datetime:
    return dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=dt.UTC)


@pytest.mark.parametrize("name", [n for n, (kind, _) in FILES.items() if kind == DECODE])
def test_decoded_files_match_the_rules_by_hand(name):
    recs = records_of(name)
    assert len(recs) == FILES[name][1]
    rows = decode_files("goldengate", [CORPUS / name])
    assert outcomes(rows) == [("change", None)] * len(recs)
    got = changes(rows)
    assert len(got) == len(recs)
    for rec, row in zip(recs, got, strict=True):
        op = OPS[rec["op_type"]]
        schema, table = rec["table"].split(".")
        assert (row["op"], row["vendor_op"], row["schema"], row["table"]) == (op, rec["op_type"], schema, table)
        assert row["position"] == rec["pos"] and row["source_ts"] == utc(rec["op_ts"])
        assert row["primary_keys"] is None  # none of these files names its keys
        before = rec.get("before") or None
        if op == "DELETE":
            assert row["before"] == rec["before"] and row["after"] is None
        else:
            assert row["after"] == rec["after"]
            assert row["before"] == (before if op == "UPDATE" else None)
        assert ("before_unknown" in row["flags"]) == (op == "UPDATE" and before is None)
        assert "untyped_values" in row["flags"]


def test_kinetica_update_details():
    (row,) = changes(decode_files("goldengate", [CORPUS / "kinetica-ogg-event1-update.json"]))
    assert row["before"] is None and row["flags"] == ["untyped_values", "before_unknown"]
    assert row["position"] == "00000000-10000009626"
    assert row["capture_ts"] == dt.datetime(2018, 2, 15, 13, 53, 42, 353000, tzinfo=dt.UTC)  # the `T` form
    assert row["after"]["UNSELL_DATE"] == "2017-08-23 20:35:49.421000000"  # TIMESTAMP(9) text, untyped
    assert row["after"]["TRANSACTION_COGS_AMOUNT"] == Decimal("1.42")


def test_kinetica_insert_keeps_number_scale_and_strings():
    (row,) = changes(decode_files("goldengate", [CORPUS / "kinetica-ogg-event2-insert.json"]))
    assert row["after"]["BALANCE_DUE_FROM_TP"] == Decimal("12.00") and str(row["after"]["FINAL_COPAY"]) == "23.00"
    assert row["after"]["PLAN_TYPE"] == "10" and row["after"]["SCN_NB"] == "11370799039743"
    assert row["source_ts"] == dt.datetime(2018, 1, 31, 6, 51, 48, 37420, tzinfo=dt.UTC)


def test_flink_positions_order_as_written_not_by_op_ts():
    rows = changes(decode_files("goldengate", [CORPUS / "flink-ogg-data.jsonl"]))
    by_sort = [r["position"] for r in sorted(rows, key=lambda r: r["sort_key"])]
    assert by_sort == [f"{n:023d}" for n in range(143, 159)]
    p156, p157 = (next(r for r in rows if r["position"].endswith(s)) for s in ("156", "157"))
    assert p156["source_ts"] > p157["source_ts"] and p156["sort_key"] < p157["sort_key"]
    assert len({r["event_id"] for r in rows}) == 16
