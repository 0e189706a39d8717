"""Conformance over every file of the shared AWS DMS corpus (`../shared/corpus/dms`).

Each file is listed once: `decode` (its records become canonical rows), `reject` (refused, with the error
classes) or `doc` (documentation or a derived dump, not an input). S3 files are fed as DMS names them
(`<schema>/<table>/LOAD########` or time-named): the corpus renamed them, so each entry gives the name and the
settings its task had. Expected values are read from the files with the `csv` / `json` modules and the
readable Parquet dump, applying the reference's rules by hand (Op first, NULL as an empty field, no Op in a
full load, `BI_` columns as the before image) - never recorded from the adapter. When the corpus exists these
tests run and fail on any mismatch; they never skip then.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import shutil
from decimal import Decimal
from pathlib import Path

import pytest

from decoded import changes, decode_files, outcomes

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "dms"
pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the shared corpus is absent ({CORPUS})")
UTC = dt.UTC

DECODE, REJECT, DOC = "decode", "reject", "doc"
FILES: dict[str, tuple[str, str | None, dict]] = {
    # file: (kind, the DMS name it is fed as (None: as it is), options)
    "SOURCES.md": (DOC, None, {}),
    "dhawalkp-LOAD00000001-with-header.head120.csv": (DECODE, "HR/EMPLOYEES/LOAD00000001.csv", {"csv_header": True}),
    "dhawalkp-cdc-with-header-20190118-184518184.csv": (DECODE, "HR/EMPLOYEES/20190118-184518184.csv", {}),
    "dhawalkp-customer-cdc-noheader.csv": (DECODE, None, {"table": "Customer"}),
    "paimon-dms-kafka-synthetic-bi-prefix.jsonl": (DECODE, None, {"keys": {"test.product": ["id"]}}),
    "segmentio-dms_test_table_LOAD00000001.parquet": (
        DECODE, "public/dms_test_table/LOAD00000001.parquet", {"timestamp_column": "DMS_TIMESTAMP"}),
    "segmentio-dms_test_table_LOAD00000001.parquet.dump.txt": (DOC, None, {}),  # a pyarrow dump of the file above
}


def test_every_corpus_file_is_listed():
    assert sorted(p.name for p in CORPUS.iterdir() if p.is_file()) == sorted(FILES)


def fed(name: str, tmp_path: Path) -> list[dict]:
    kind, as_name, options = FILES[name]
    src = CORPUS / name
    if as_name is not None:
        target = tmp_path / as_name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
        src = target
    return decode_files("dms", [src], **options)


@pytest.mark.parametrize("name", [n for n, (k, _, _) in FILES.items() if k != DOC])
def test_file_outcomes(name, tmp_path):
    rows = fed(name, tmp_path)
    kind = FILES[name][0]
    got = outcomes(rows)
    assert got and all(o == ("change", None) for o in got) if kind == DECODE else not changes(rows)


def _csv(name: str) -> list[list[str]]:
    with open(CORPUS / name, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def test_full_load_csv_with_header_is_snapshot_rows_named_by_the_header(tmp_path):
    name = "dhawalkp-LOAD00000001-with-header.head120.csv"
    header, *data = _csv(name)
    rows = changes(fed(name, tmp_path))
    assert len(rows) == len(data) == 119
    for r, cells in zip(rows, data, strict=True):
        assert r["op"] == "SNAPSHOT" and r["vendor_op"] is None and r["before"] is None
        assert r["after"] == {h: (c or None) for h, c in zip(header, cells, strict=True)}
        assert (r["schema"], r["table"]) == ("HR", "EMPLOYEES") and r["flags"] == ["file_order"]
    assert rows[0]["after"]["SALARY"] == "24000.00" and rows[0]["after"]["COMMISSION_PCT"] is None


def test_cdc_csv_with_header_is_updates_in_file_order(tmp_path):
    name = "dhawalkp-cdc-with-header-20190118-184518184.csv"
    header, *data = _csv(name)
    assert header[0] == "Op"
    rows = changes(fed(name, tmp_path))
    assert [r["op"] for r in rows] == ["UPDATE"] * 17
    assert [r["after"] for r in rows] == [{h: (c or None) for h, c in zip(header[1:], cells[1:], strict=True)}
                                          for cells in data]
    assert [r["position"] for r in rows] == [f"20190118-184518184.csv:{i}" for i in range(1, 18)]
    assert sorted(rows, key=lambda r: r["sort_key"]) == rows
    assert rows[0]["after"]["EMPLOYEE_ID"] == "321" and rows[0]["after"]["HIRE_DATE"] == "1994-06-07 00:00:00"


def test_headerless_cdc_csv_names_columns_by_position(tmp_path):
    name = "dhawalkp-customer-cdc-noheader.csv"
    data = _csv(name)
    rows = changes(fed(name, tmp_path))
    assert len(rows) == len(data) == 41
    assert rows[0]["after"] == {"col_1": "BAN001000", "col_2": "BAN001000@octank.com", "col_3": "MAC000131"}
    assert all(r["op"] == "UPDATE" and r["table"] == "Customer" and r["schema"] is None for r in rows)
    assert all(r["flags"] == ["file_order", "no_schema"] for r in rows)


def test_parquet_full_load_typed_from_its_schema_and_dump(tmp_path):
    name = "segmentio-dms_test_table_LOAD00000001.parquet"
    dump = (CORPUS / (name + ".dump.txt")).read_text().split("## rows", 1)[1].splitlines()[1:]
    expected = [json.loads(line) for line in dump if line.startswith("{")]
    rows = changes(fed(name, tmp_path))
    assert len(rows) == len(expected) == 10
    for r, e in zip(rows, expected, strict=True):
        a = r["after"]
        assert r["op"] == "SNAPSHOT" and "DMS_TIMESTAMP" not in a
        assert r["capture_ts"] == dt.datetime.fromisoformat(e["DMS_TIMESTAMP"]).replace(tzinfo=UTC)
        assert a["id"] == e["id"] and a["my_int"] == e["my_int"] and a["my_smallint"] == e["my_smallint"]
        assert a["my_numeric"] == Decimal(e["my_numeric"]) and a["my_money"] == Decimal(e["my_money"])
        assert a["my_double"] == e["my_double"] and a["my_bool"] == e["my_bool"]
        assert a["my_bytea"] == bytes.fromhex(e["my_bytea"][2:])
        assert a["my_timestamp"] == dt.datetime.fromisoformat(e["my_timestamp"])
        assert a["my_varchar"] == e["my_varchar"] and a["my_jsonb"] == e["my_jsonb"] and a["my_uuid"] == e["my_uuid"]
    assert str(rows[0]["after"]["my_money"]) == "47632969758.5400"  # scale kept


def test_paimon_messages_with_bi_columns(tmp_path):
    name = "paimon-dms-kafka-synthetic-bi-prefix.jsonl"
    msgs = [json.loads(line, parse_float=Decimal) for line in (CORPUS / name).read_text().splitlines() if line.strip()]
    rows = changes(fed(name, tmp_path))
    ops = {"insert": "INSERT", "update": "UPDATE", "delete": "DELETE"}
    assert [r["op"] for r in rows] == [ops[m["metadata"]["operation"]] for m in msgs]
    for r, m in zip(rows, msgs, strict=True):
        data = m["data"]
        plain = {k: v for k, v in data.items() if not k.startswith("BI_")}
        assert (r["before"] if r["op"] == "DELETE" else r["after"]) == plain
        assert (r["schema"], r["table"], r["tx_id"]) == ("test", "product", "670014899490")
        assert r["capture_ts"] == dt.datetime(2024, 10, 27, 12, 39, 3, 210671, tzinfo=UTC)
    update = rows[6]
    assert update["before"] == {"id": 105, "name": "hammer", "description": "14oz carpenter's hammer",
                                "weight": Decimal("0.875"), "address": "Shanghai"}
    assert update["after"]["address"] == "Beijing" and update["key"] == {"id": 105}
    # the synthetic file repeats one insert (id 104) with the same metadata but another image: two events
    assert len({r["event_id"] for r in rows}) == len(rows)
