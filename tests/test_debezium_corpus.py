"""Conformance over every file of the shared Debezium corpus (`../shared/corpus/debezium`).

Each file is listed once: `decode` (its messages become canonical rows), `reject` (the adapter refuses it, with
the error classes listed) or `doc` (documentation or code around events, not an input). The expectations of
decoded files are derived by reading each file with plain `json` and applying the reference's rules by hand
(op codes, `source` identity, values without schemas as written, TOAST placeholders as missing columns) or are
spot values worked out by hand from the file (Base64 decimals, day counts, Extended JSON) — never recorded
from the adapter. When the corpus exists these tests run and fail on any mismatch; they never skip then.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest

from cdcnorm.adapters.base import MessageMeta
from cdcnorm.adapters.debezium.adapter import DebeziumAdapter
from cdcnorm.canonical.emit import BatchBuilder
from decoded import changes, decode_files, outcomes, rows_of

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "debezium"
pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the shared corpus is absent ({CORPUS})")
UTC = dt.UTC
TOAST = "__debezium_unavailable_value"

DECODE, REJECT, DOC = "decode", "reject", "doc"
FILES: dict[str, tuple[str, str, list[str]]] = {
    # file: (kind, how it is fed: file | lines | pairs | caret, quarantine error classes in order)
    "SOURCES.md": (DOC, "", []),
    "blog-dbz-postgres-toast-placeholder-update.json": (DECODE, "file", []),
    "dbz-examples-mysql-3.0-engine-output.md": (DOC, "", []),  # a README quoting events in prose
    "dbz-test-mysql-0.10-serde-with-schema.json": (DECODE, "file", []),
    "decodable-oracle-2.0-schema-create.json": (DECODE, "file", []),
    # one JSON event, then the Python-repr text of the Kinesis record around it: refused, the event kept
    "decodable-sqlserver-schema-update-kinesis-record.txt": (DECODE, "file", ["bad_json", "unknown_format"]),
    "docs-dbz-mongodb-events.txt": (DOC, "", []),  # AsciiDoc extracts with {placeholders} and `...`
    "docs-dbz-mysql-mariadb-events.txt": (DOC, "", []),
    "docs-dbz-oracle-events.txt": (DOC, "", []),
    "docs-dbz-postgresql-events.txt": (DOC, "", []),
    "docs-dbz-smt-unwrapped-shapes.txt": (DOC, "", []),
    "docs-dbz-sqlserver-events.txt": (DOC, "", []),
    "docs-dbz-tutorial-mysql-kafka-output.txt": (DOC, "", []),
    "flink-mysql-avro-envelope-schema.json": (REJECT, "file", ["unknown_format"]),  # an Avro schema, not a message
    "flink-postgres-noschema-replica-default-edited.jsonl": (DECODE, "file", ["bad_event"]),  # d with no image, no key
    "flink-postgres-noschema-replica-full.jsonl": (DECODE, "file", []),
    "hudi-mysql-avro-envelope-schema.avsc": (DOC, "", []),
    "issue-materialize-6553-pg-pk-update-avrojson-excerpt.txt": (REJECT, "file", ["unsupported_format"] * 2),
    "kdp-mongodb-1.0-legacy-avro-console-output.md": (DOC, "", []),
    "kdp-mysql-protobuf-console-output.sh": (DOC, "", []),
    "kdp-postgres-avro-console-output-repro.sh": (DOC, "", []),
    "kdp-sqlserver-avro-console-output-schema-change.sh": (DOC, "", []),
    "kdp-sqlserver-avro-console-output.md": (DOC, "", []),
    "memiiso-mysql-1.7-schema-change-event.json": (DECODE, "file", []),
    "memiiso-postgres-unwrapped-newrecordstate.json": (REJECT, "file", ["unsupported_format"]),
    "paimon-mongodb-2.7-keyed-delete.txt": (DECODE, "pairs", []),
    "paimon-mongodb-2.7-keyed-insert.txt": (DECODE, "pairs", []),
    "paimon-mongodb-2.7-keyed-update.txt": (DECODE, "pairs", []),
    "paimon-mysql-1.1-schema-snapshot-op-c.txt": (DECODE, "lines", []),
    "paimon-mysql-schema-alltypes-flinkcdc-numeric-decimal.txt": (DECODE, "lines", []),
    "rw-avro-registry-schema-evolution.slt": (DOC, "", []),
    "rw-mongodb-noschema.jsonl": (DECODE, "file", []),
    "rw-mongodb-schema.jsonl": (DECODE, "file", []),
    "rw-mysql-payload-only-wrapper.jsonl": (DECODE, "file", []),
    # Avro rendered as JSON by a console consumer: the schema lines and every event refused
    "rw-postgres-avro-schema-and-avrojson-compact.txt": (REJECT, "file", None),  # type: ignore[dict-item]
    "rw-postgres-avro-schema-and-avrojson.txt": (REJECT, "file", None),  # type: ignore[dict-item]
    "rw-postgres-noschema-keyed.txt": (DECODE, "caret", []),
    "rw-postgres-schema-snapshot-tpcc.jsonl": (DECODE, "file", []),
    "rw-rs-literals-mongodb.txt": (DOC, "", []),  # Rust raw-string literals cut from unit tests
    "rw-rs-literals-mysql-postgres-types.txt": (DOC, "", []),
    "rw-rs-literals-txn-begin-end-and-ddl.txt": (DOC, "", []),
}


def test_every_corpus_file_is_listed():
    on_disk = sorted(p.name for p in CORPUS.iterdir() if p.is_file())
    assert on_disk == sorted(FILES), f"unlisted: {set(on_disk) - set(FILES)}; gone: {set(FILES) - set(on_disk)}"


# -- feeding ---------------------------------------------------------------------------------------------------------
def _json_lines(path: Path) -> list[bytes]:
    return [ln for ln in path.read_bytes().splitlines() if ln.startswith(b"{")]


def messages_of(name: str) -> list[tuple[bytes | None, bytes]]:
    """(key, value) of the messages in a file that holds them as lines (after a licence header)."""
    how = FILES[name][1]
    path = CORPUS / name
    if how == "lines":
        return [(None, ln) for ln in _json_lines(path)]
    if how == "pairs":
        lines = _json_lines(path)
        return list(zip(lines[0::2], lines[1::2], strict=True))
    if how == "caret":
        return [(None, ln.split(b"^", 1)[1]) for ln in path.read_bytes().splitlines() if b"^" in ln]
    raise AssertionError(how)


_CACHE: dict[str, list[dict]] = {}


def decoded(name: str) -> list[dict]:
    if name not in _CACHE:
        if FILES[name][1] == "file":
            _CACHE[name] = decode_files("debezium", [CORPUS / name])
        else:
            adapter, out = DebeziumAdapter(), BatchBuilder()
            for i, (key, value) in enumerate(messages_of(name)):
                out.begin_record(name, i, raw=value)
                adapter.decode_message(value, MessageMeta(key=key), out)
            out.end_record()
            _CACHE[name] = rows_of(out.flush())
    return _CACHE[name]


def payloads(name: str, floats=float) -> list[dict]:
    """The envelopes of a file read with plain json (values without a schema: numbers as written)."""
    how = FILES[name][1]
    if how == "file":
        text = (CORPUS / name).read_text()
        docs = [json.loads(ln, parse_float=floats) for ln in text.splitlines() if ln.startswith("{")] \
            if name.endswith(".jsonl") else [json.JSONDecoder(parse_float=floats).raw_decode(text.lstrip())[0]]
    else:
        docs = [json.loads(v, parse_float=floats) for _, v in messages_of(name)]
    return [d["payload"] if isinstance(d, dict) and "payload" in d and set(d) <= {"schema", "payload"} else d
            for d in docs]


# -- the rules, by hand ------------------------------------------------------------------------------------------------
def expected_op(p: dict) -> str:
    snap = str(p["source"].get("snapshot")).lower() not in ("false", "none")
    return {"r": "SNAPSHOT", "c": "SNAPSHOT" if snap else "INSERT", "u": "UPDATE", "d": "DELETE"}[p["op"]]


def epoch_ms(ms: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=ms)


def extended(v):
    """MongoDB Extended JSON by hand: $oid -> text, $numberLong -> int, $date -> UTC instant."""
    if isinstance(v, dict):
        if set(v) == {"$oid"}:
            return v["$oid"]
        if set(v) == {"$numberLong"}:
            return int(v["$numberLong"])
        if set(v) == {"$date"}:
            return epoch_ms(v["$date"])
        return {k: extended(x) for k, x in v.items()}
    return [extended(x) for x in v] if isinstance(v, list) else v


@pytest.mark.parametrize("name", [n for n, (kind, _, _) in FILES.items() if kind == DECODE])
def test_decoded_files_follow_the_rules(name):
    rows = decoded(name)
    errors = [r["_rule"] for r in rows if r["_kind"] == "quarantine"]
    assert errors == FILES[name][2]
    events = [p for p in payloads(name) if isinstance(p, dict) and "op" in p]
    data = [r for r in changes(rows) if r["op"] != "DDL"]
    kept = [p for p in events if not (p["op"] == "d" and p.get("before") is None and FILES[name][1] == "file")]
    assert [r["op"] for r in data] == [expected_op(p) for p in kept]
    for r, p in zip(data, kept, strict=True):
        src = p["source"]
        assert r["stream"] == src["name"] and r["vendor"] == "debezium"
        assert r["table"] == (src.get("collection") or src.get("table"))
        assert r["database"] == src.get("db")
        if src["connector"] == "mysql":
            assert r["schema"] is None and r["source_db"] == "mysql"
            if src.get("file") and r["op"] != "SNAPSHOT":
                assert r["position"] == f"{src['file']}:{src['pos']}:{src.get('row') or 0}"
        else:
            assert r["schema"] == src.get("schema")
        if src.get("ts_us"):
            assert r["source_ts"] == dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=src["ts_us"])
        elif src.get("ts_ms"):
            assert r["source_ts"] == epoch_ms(src["ts_ms"])
        else:
            assert r["source_ts"] is None  # ts_ms 0: unknown


SCHEMALESS_RELATIONAL = ["blog-dbz-postgres-toast-placeholder-update.json", "flink-postgres-noschema-replica-full.jsonl",
                         "rw-mysql-payload-only-wrapper.jsonl", "rw-postgres-noschema-keyed.txt"]


@pytest.mark.parametrize("name", SCHEMALESS_RELATIONAL)
def test_values_without_schema_are_as_written(name):
    """Without a schema the values are the JSON's (numbers exact), flagged; TOAST placeholders are missing."""
    data = changes(decoded(name))
    for r, p in zip(data, payloads(name, floats=Decimal), strict=True):
        assert "untyped_values" in r["flags"]
        after = p.get("after")
        if after is not None:
            assert r["after"] == {k: v for k, v in after.items() if v != TOAST}
            assert r["missing_columns"] == [k for k, v in after.items() if v == TOAST]
        if p["op"] == "d":
            assert r["before"] == p["before"]


def test_toast_placeholder_blog_post():
    (r,) = changes(decoded("blog-dbz-postgres-toast-placeholder-update.json"))
    assert r["missing_columns"] == ["biography"] and "biography" not in r["after"]
    assert r["position"] == "34650016"


def test_oracle_decimal_bytes_and_positions():
    (r,) = changes(decoded("decodable-oracle-2.0-schema-create.json"))
    (p,) = payloads("decodable-oracle-2.0-schema-create.json")
    unscaled = int.from_bytes(base64.b64decode(p["after"]["USERID"]), "big", signed=True)
    assert r["after"]["USERID"] == Decimal(unscaled) == Decimal(3)
    assert {k: v for k, v in r["after"].items() if k != "USERID"} == {k: v for k, v in p["after"].items()
                                                                      if k != "USERID"}
    src = p["source"]
    assert r["position"] == f"scn={src['scn']} commit_scn={src['commit_scn']} ssn={src['ssn']}"
    assert r["source_db"] == "oracle" and r["schema"] == src["schema"]


def test_mysql_with_schema_values():
    (r,) = changes(decoded("dbz-test-mysql-0.10-serde-with-schema.json"))
    (p,) = payloads("dbz-test-mysql-0.10-serde-with-schema.json")
    assert r["after"] == p["after"] and r["flags"] == [] and r["schema_version"]
    (old,) = changes(decoded("paimon-mysql-1.1-schema-snapshot-op-c.txt"))
    (p,) = payloads("paimon-mysql-1.1-schema-snapshot-op-c.txt")
    assert p["op"] == "c" and old["op"] == "SNAPSHOT" and old["vendor_op"] == "c"
    assert old["after"] == p["after"] and old["after"]["weight"] == 3.140000104904175  # float32 artefact kept
    assert old["source_ts"] is None  # ts_ms 0


def test_flink_cdc_numeric_decimals_under_a_bytes_schema():
    (r,) = changes(decoded("paimon-mysql-schema-alltypes-flinkcdc-numeric-decimal.txt"))
    (p,) = payloads("paimon-mysql-schema-alltypes-flinkcdc-numeric-decimal.txt", floats=Decimal)
    a = r["after"]
    assert a["_decimal"] == Decimal(str(p["after"]["_decimal"])) == Decimal("11111")
    assert a["_numeric"] == Decimal("12345.110")  # NUMERIC(8,3): the schema's scale
    assert a["_date"] == dt.date(1970, 1, 1) + dt.timedelta(days=p["after"]["_date"])
    assert a["_timestamp"] == dt.datetime.fromisoformat(p["after"]["_timestamp"].replace("Z", "+00:00"))
    assert a["_bit1"] is True and a["_json"] == json.loads(p["after"]["_json"])
    assert r["position"] is None  # file "" / pos 0: unknown


def test_mongodb_documents():
    for name in ("rw-mongodb-noschema.jsonl", "rw-mongodb-schema.jsonl"):
        data = changes(decoded(name))
        for r, p in zip(data, payloads(name), strict=True):
            assert r["after"] == extended(json.loads(p["after"]))
            assert r["primary_keys"] == ["_id"] and r["key"] == {"_id": r["after"]["_id"]}
            assert r["position"] == f"{p['source']['ts_ms'] // 1000}:{p['source']['ord']}"


def test_mongodb_keyed_events():
    ins = changes(decoded("paimon-mongodb-2.7-keyed-insert.txt"))
    (p,) = payloads("paimon-mongodb-2.7-keyed-insert.txt")
    assert ins[0]["after"] == extended(json.loads(p["after"]))
    assert ins[0]["key"] == {"_id": "67ab25755c0d5ac87eb8c632"}
    dels = changes(decoded("paimon-mongodb-2.7-keyed-delete.txt"))
    for r, p in zip(dels, payloads("paimon-mongodb-2.7-keyed-delete.txt"), strict=True):
        want = extended(json.loads(p["before"])) if p["before"] else {"_id": "67ab25755c0d5ac87eb8c632"}
        assert r["op"] == "DELETE" and r["before"] == want
    upds = changes(decoded("paimon-mongodb-2.7-keyed-update.txt"))
    for r, p in zip(upds, payloads("paimon-mongodb-2.7-keyed-update.txt"), strict=True):
        assert r["after"] == extended(json.loads(p["after"]))
        assert r["before"] == (extended(json.loads(p["before"])) if p["before"] else None)


def test_schema_change_event():
    rows = decoded("memiiso-mysql-1.7-schema-change-event.json")
    (ddl,) = changes(rows)
    (p,) = payloads("memiiso-mysql-1.7-schema-change-event.json")
    assert ddl["op"] == "DDL" and ddl["ddl"] == p["ddl"] and ddl["table"] == "geom"
    assert [c["column"] for c in ddl["ddl_changes"]] == ["id", "g", "h"]
    (version,) = [json.loads(r["_schema"]) for r in rows if r["_kind"] == "schema"]
    assert [(c["name"], c["pk_position"]) for c in version["columns"]] == [("id", 1), ("g", None), ("h", None)]


def test_sqlserver_kinesis_event():
    (r,) = changes(decoded("decodable-sqlserver-schema-update-kinesis-record.txt"))
    assert r["op"] == "UPDATE" and r["source_db"] == "sqlserver" and r["schema"] == "dbo"


def test_replica_identity_default_edited_file():
    rows = decoded("flink-postgres-noschema-replica-default-edited.jsonl")
    bad = [r for r in rows if r["_kind"] == "quarantine"]
    assert "before image or a message key" in bad[0]["_message"]
    assert all(r["before"] is None for r in changes(rows) if r["op"] == "UPDATE")


def test_snapshot_rows_share_a_position_and_keep_their_own_ids():
    rows = changes(decoded("rw-postgres-schema-snapshot-tpcc.jsonl"))
    assert len(rows) == 25 and {r["op"] for r in rows} == {"SNAPSHOT"}
    assert len({r["event_id"] for r in rows}) == 25 and len({r["position"] for r in rows}) == 1


@pytest.mark.parametrize("name", [n for n, (kind, _, _) in FILES.items() if kind == REJECT])
def test_rejected_files_say_why(name):
    rows = decoded(name)
    assert not changes(rows), f"{name} must not become change rows"
    errors = [r["_rule"] for r in rows if r["_kind"] == "quarantine"]
    expected = FILES[name][2]
    if expected is not None:
        assert errors == expected
    else:
        assert "unsupported_format" in errors
    for r in rows:
        if r["_rule"] == "unsupported_format":
            assert "ExtractNewRecordState" in r["_message"] or "Avro rendered as JSON" in r["_message"]
    assert {r["_kind"] for r in rows if r["_records"] == 1} <= {"quarantine", "filtered"}


def test_flattened_row_is_not_a_guess():
    rows = decoded("memiiso-postgres-unwrapped-newrecordstate.json")
    assert outcomes(rows) == [("quarantine", "unsupported_format")]


def test_a_registered_avro_envelope_schema_decodes_framed_messages(tmp_path):
    """The Avro schema Flink's tests register (`ConnectDefault` transaction record, snapshot enum) as a registry
    export: a message framed with it (written here with fastavro) decodes to the record's values."""
    import io

    import fastavro

    schema = json.loads((CORPUS / "flink-mysql-avro-envelope-schema.json").read_text())
    (tmp_path / "7.avsc").write_text(json.dumps(schema))
    record = {"before": None, "after": {"id": 111, "name": "scooter", "description": "Big 2-wheel", "weight": 5.18},
              "source": {"version": "1.1.1.Final", "connector": "mysql", "name": "fullfillment",
                         "ts_ms": 1589361987000, "snapshot": "false", "db": "inventory", "table": "products",
                         "server_id": 223344, "gtid": None, "file": "mysql-bin.000003", "pos": 2090, "row": 0,
                         "thread": 2, "query": None},
              "op": "c", "ts_ms": 1589361987936,
              "transaction": {"id": "tx-1", "total_order": 3, "data_collection_order": 2}}
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), record)
    adapter, out = DebeziumAdapter({"schema_registry": str(tmp_path)}), BatchBuilder()
    value = b"\x00" + (7).to_bytes(4, "big") + buf.getvalue()
    out.begin_record("m", 0, raw=value)
    adapter.decode_message(value, MessageMeta(), out)
    out.end_record()
    (r,) = changes(rows_of(out.flush()))
    assert r["op"] == "INSERT" and r["format"] == "debezium.avro_registry"
    assert r["after"] == record["after"] and r["tx_id"] == "tx-1" and r["tx_seq"] == 3
    assert r["position"] == "mysql-bin.000003:2090:0" and r["source_ts"] == epoch_ms(1589361987000)


def doc_blocks(name: str) -> list:
    """The JSON values of a documentation extract's blocks (blocks with `...` or placeholders do not parse)."""
    import re

    found, decoder = [], json.JSONDecoder()
    for block in re.split(r"^##### .*$", (CORPUS / name).read_text(), flags=re.M):
        values, at, text = [], 0, block.strip()
        try:
            while at < len(text):  # a block may show several values one after the other
                value, at = decoder.raw_decode(text, at)
                values.append(value)
                at = len(text) - len(text[at:].lstrip())
        except json.JSONDecodeError:
            continue
        found += values
    return found


def expected_outcome(doc) -> tuple[str, str] | None:
    """What a documented value becomes, by the reference's rules; None for keys and schemas (not values)."""
    p = doc["payload"] if isinstance(doc, dict) and set(doc) == {"schema", "payload"} else doc
    if p is None:
        return ("filtered", "debezium_tombstone")
    if not isinstance(p, dict):
        return None
    if "op" in p and isinstance(p.get("source"), dict):
        if p["op"] == "m":
            return ("filtered", "debezium_logical_message")
        return ("change", "TRUNCATE" if p["op"] == "t" else expected_op(p))
    if p.get("status") in ("BEGIN", "END"):
        return ("change", "TX_BEGIN" if p["status"] == "BEGIN" else "TX_COMMIT")
    if "ddl" in p and "tableChanges" in p:
        return ("change", "DDL")
    return None


@pytest.mark.parametrize("name", [n for n in FILES if n.startswith("docs-dbz-") and "unwrapped" not in n])
def test_documented_values_that_parse_decode_as_documented(name):
    """The documentation extracts are not inputs (placeholders, `...`), but every block that is valid JSON and a
    message value decodes to what the reference says it is."""
    checked = 0
    for doc in doc_blocks(name):
        want = expected_outcome(doc)
        if want is None:
            continue
        adapter, out, raw = DebeziumAdapter(), BatchBuilder(), json.dumps(doc).encode()
        out.begin_record(name, 0, raw=raw)
        adapter.decode_message(raw, MessageMeta(), out)
        out.end_record()
        rows = [r for r in rows_of(out.flush()) if r["_records"] == 1]
        assert [(r["_kind"], r["op"] or r["_rule"]) for r in rows] == [want], (name, rows[0]["_message"])
        checked += 1
    assert checked, f"no documented value of {name} parses"
