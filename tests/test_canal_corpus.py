"""Conformance over every file of the shared Canal corpus (`../shared/corpus/canal`) and the Canal-shaped files
of the DataHub corpus (`../shared/corpus/datahub/related_formats`).

Each file is listed once: `decode` (its messages become canonical rows), `reject` (the adapter refuses its
records, with the error classes listed) or `doc` (documentation, not an input). The expectations of decoded
files are derived by reading each file with plain `json` and applying the reference's rules by hand (one row
per element of `data`, INIT as SNAPSHOT, DDL one row, the before image as the row overlaid with `old`), plus
spot values worked out by hand from the file — never recorded from the adapter. When the corpus exists these
tests run and fail on any mismatch; they never skip then.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest

from cdcnorm.adapters.canal.adapter import CanalAdapter
from cdcnorm.adapters.datahub.adapter import DataHubAdapter
from decoded import changes, decode_files, outcomes

SHARED = Path(__file__).resolve().parents[2] / "shared" / "corpus"
CORPUS = SHARED / "canal"
RELATED = SHARED / "datahub" / "related_formats"
pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the shared corpus is absent ({CORPUS})")
UTC = dt.UTC

DECODE, REJECT, DOC = "decode", "reject", "doc"
FILES: dict[str, tuple[str, list[str]]] = {
    # file: (kind, quarantine error classes in order)
    "SOURCES.md": (DOC, []),
    # line 16: table `project` rows with ids "A101".. under a mysqlType `int(11)` (the fixture's CREATE says
    # VARCHAR(255)): a value its declared type cannot read is refused, never guessed
    "flink-canal-data-filter-table.jsonl": (DECODE, ["bad_value"]),
    "flink-canal-data-with-init.jsonl": (DECODE, []),
    "flink-canal-data.jsonl": (DECODE, []),
    "paimon-canal-ddl-same-id.jsonl": (DECODE, []),
    "paimon-canal-incomplete.jsonl": (REJECT, ["missing_table", "missing_table"]),  # only `data` and `type`
    "paimon-canal-nonpk.jsonl": (DECODE, []),
    "paimon-canal-schemaevolution.jsonl": (DECODE, []),
}
RELATED_FILES: dict[str, tuple[str, list[str]]] = {
    "canal_json_flink_canal-data-filter-table.jsonl": (DECODE, []),
    "canal_json_flink_canal-data-with-init.jsonl": (DECODE, []),
    "canal_json_flink_canal-data.jsonl": (DECODE, []),
    "canal_json_issue5056_varbinary_gtid.json": (DECODE, []),
    "dts_avro_Record.avsc": (DOC, []),  # an Avro schema of another vendor: not read (`.avsc`)
}
OPS = {"INSERT": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE", "INIT": "SNAPSHOT"}


def _all() -> list[tuple[Path, str, list[str]]]:
    return [(CORPUS / n, k, q) for n, (k, q) in FILES.items()] + \
        [(RELATED / n, k, q) for n, (k, q) in RELATED_FILES.items()]


def test_every_corpus_file_is_listed():
    assert sorted(p.name for p in CORPUS.iterdir()) == sorted(FILES)
    assert sorted(p.name for p in RELATED.iterdir()) == sorted(RELATED_FILES)


def _expected(path: Path) -> list[tuple]:
    """(op, database, table, before, after) per row, from the file with plain json and the reference's rules:
    values stay the strings the file holds (typed values are checked separately)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        m = json.loads(line)
        if any(isinstance(r, dict) and str(r.get("id", "")).startswith("A") for r in m.get("data") or ()):
            continue  # the refused message (see FILES)
        if m.get("isDdl"):
            out.append(("DDL", m.get("database"), m.get("table"), None, None))
            continue
        old = m.get("old") or []
        for i, row in enumerate(m["data"]):
            op = OPS[m["type"]]
            before = {**row, **old[i]} if op == "UPDATE" else (row if op == "DELETE" else None)
            out.append((op, m.get("database"), m.get("table"), before, None if op == "DELETE" else row))
    return out


def _as_text(image):
    if image is None:
        return None
    out = {}
    for k, v in image.items():
        if isinstance(v, bytes):
            v = v.decode("latin-1")
        elif isinstance(v, float):
            v = repr(v)
        elif v is not None:
            v = str(v)
        out[k] = v
    return out


@pytest.mark.parametrize(("path", "kind", "quarantined"), _all(), ids=lambda x: getattr(x, "name", None))
def test_corpus_file(path: Path, kind: str, quarantined: list[str]):
    adapter = CanalAdapter()
    if kind == DOC:
        assert not adapter.accepts_file(str(path)) or path.suffix == ".md"
        return
    rows = decode_files("canal", [path])
    assert [rule for k, rule in outcomes(rows) if k == "quarantine"] == quarantined
    if kind == REJECT:
        assert not changes(rows)
        return
    got = changes(rows)
    expected = _expected(path)
    # CREATE TABLE `xj_`.`user02` in database inventory: the statement's schema
    expected = [("DDL", "xj_", t, b, a) if (op, t) == ("DDL", "user02") else (op, d, t, b, a)
                for op, d, t, b, a in expected]
    assert [(r["op"], r["database"], r["table"]) for r in got] == [e[:3] for e in expected]
    for r, e in zip(got, expected, strict=True):
        if r["op"] in ("INSERT", "UPDATE", "DELETE", "SNAPSHOT"):
            before, after = _as_text(r["before"]), _as_text(r["after"])
            assert (before, after) == (_textual(e[3]), _textual(e[4])), r["event_id"]
    assert len({r["event_id"] for r in got}) == len(got)


def _textual(image):
    """A file's string values as the typed value's text: float columns re-read (`1.0` stays `1.0`)."""
    if image is None:
        return None
    return {k: (repr(float(v)) if k in ("weight", "v5") and v is not None else v) for k, v in image.items()}


@pytest.mark.parametrize("path", [p for p, k, _ in _all() if k != DOC], ids=lambda p: p.name)
def test_sniffed_as_canal_never_as_datahub(path: Path):
    head = path.read_bytes()[:65536]
    assert CanalAdapter.sniff(str(path), head)
    assert not DataHubAdapter.sniff(str(path), head)


# -- spot values, by hand ------------------------------------------------------------------------------------------
def test_multi_row_insert_and_update():
    rows = changes(decode_files("canal", [CORPUS / "flink-canal-data.jsonl"]))
    assert [r["op"] for r in rows[:9]] == ["INSERT"] * 9  # line 1: 9 rows
    assert rows[0]["after"] == {"id": 101, "name": "scooter", "description": "Small 2-wheel scooter",
                                "weight": 3.14}
    assert rows[0]["source_ts"] == dt.datetime(2020, 5, 13, 12, 38, 35, tzinfo=UTC)  # es 1589373515000
    multi = [r for r in rows if r["op"] == "UPDATE" and r["after"]["weight"] == 5.17 and r["before"]["id"] in (101, 102)]
    assert [(r["before"]["weight"], r["changed_columns"]) for r in multi] == [(3.14, ["weight"]), (8.1, ["weight"])]


def test_old_null_means_was_null():
    rows = changes(decode_files("canal", [CORPUS / "flink-canal-data-filter-table.jsonl"]))
    u = rows[9]  # line 2: old [{"description": null}]
    assert u["op"] == "UPDATE" and u["before"]["description"] is None
    assert u["after"]["description"] == "18oz carpenter hammer" and u["changed_columns"] == ["description"]
    assert "changed_columns_partial" in u["flags"]


def test_init_rows_and_an_extra_column():
    rows = changes(decode_files("canal", [CORPUS / "flink-canal-data-with-init.jsonl"]))
    assert [r["op"] for r in rows[:9]] == ["SNAPSHOT"] * 9
    assert rows[0]["after"]["other"] == "val1" and "untyped_values" in rows[0]["flags"]


def test_schema_evolution_types():
    rows = changes(decode_files("canal", [CORPUS / "paimon-canal-schemaevolution.jsonl"]))
    nine = next(r for r in rows if r["op"] == "INSERT" and r["after"]["_id"] == 9)
    assert nine["after"]["v2"] == 90000000000 and nine["after"]["v3"] == Decimal("99999.999")
    assert nine["after"]["v4"] == b"nine.bin" and nine["after"]["v5"] == 9.9
    widened = next(r for r in rows if r["op"] == "UPDATE" and r["after"]["_id"] == 9)
    assert widened["before"]["v5"] == 9.899999618530273 and widened["after"]["v5"] == 9.00000000009
    assert widened["changed_columns"] == ["v4", "v5"]
    # `int` and `INT` name the same type: the two INSERT messages of schema_evolution_1 before the DDL to BIGINT
    # share a schema version with or without the case flip
    alters = [r for r in rows if r["op"] == "DDL"]
    assert alters[0]["ddl_changes"] == [{"action": "add", "column": "v2", "new_name": None, "type": "INT"}]


def test_ddls_sharing_id_and_es_are_two_events():
    rows = changes(decode_files("canal", [CORPUS / "paimon-canal-ddl-same-id.jsonl"]))
    assert len(rows) == 2 and rows[0]["event_id"] != rows[1]["event_id"]


def test_no_primary_key_identical_rows_in_other_seconds():
    rows = changes(decode_files("canal", [CORPUS / "paimon-canal-nonpk.jsonl"]))
    assert [r["primary_keys"] for r in rows] == [None, None]
    assert rows[0]["after"] == rows[1]["after"] and rows[0]["event_id"] != rows[1]["event_id"]


def test_varbinary_as_latin1_and_an_empty_gtid():
    rows = changes(decode_files("canal", [RELATED / "canal_json_issue5056_varbinary_gtid.json"]))
    assert rows[0]["after"]["creator"] == "æµè¯".encode("latin-1")
    assert rows[0]["after"]["name"] == "测试室"
    assert rows[0]["position"] is None and "unknown_position" in rows[0]["flags"]  # "gtid": "" is GTID off
    assert rows[0]["database"] is None  # the sample's `database` key is damaged ("databas   e")
