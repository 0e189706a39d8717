"""The simulator's Debezium encoder, read back with plain `json` / `fastavro` (no cdcnorm adapter).

The reader (`tests/debezium_kafka.py`) knows Kafka Connect's converters and Debezium's envelope, nothing of
the encoder's internals: replaying every format's data events must give the history's final state, and single events must
carry exactly the history's rows, positions, snapshot markers, tombstones, transaction counts and quirks.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from cdcnorm.simulate.encoders.debezium import FORMATS, UNAVAILABLE
from cdcnorm.simulate.history import Col, Event, History, TableDef, build_tables
from debezium_kafka import Msg, data_events, image, position, read, replay

UTC = dt.UTC
SIZE = {"tables": 3, "rows": 20, "changes": 240, "seed": 7}
QUIRKS = frozenset({"heartbeats"})
FMT = {f.folder: f for f in FORMATS}


def run(out: Path, folder: str, quirks: frozenset[str] = QUIRKS, rotate: int = 60, history: History | None = None,
        defs: tuple[TableDef, ...] | None = None, events: list[Event] | None = None) -> Any:
    """Feed a history to one encoder the way `simulate()` does: the initial rows as the backfill, then the
    changes in commit order."""
    history = history or History(SIZE["tables"], SIZE["rows"], SIZE["changes"], SIZE["seed"])
    defs = defs or history.defs
    enc = FMT[folder].encoder(out, defs, SIZE["seed"], quirks, rotate, folder)
    initial: list[list[dict]] = [[] for _ in defs]
    changes = []
    for ev in events if events is not None else history:
        if ev.kind == "SNAPSHOT":
            initial[ev.table].append(ev.after)
        else:
            changes.append(ev)
    for t in defs:
        enc.backfill(t, initial[t.index], 1_714_557_600_000_000, 0)
    for ev in changes:
        enc.change(ev)
    enc.close()
    return enc


def declared(history: History) -> dict[str, dict[str, str]]:
    """The column types a user of the schemaless format declares, per data collection (`db.table` for MySQL,
    `schema.table` for PostgreSQL), in Spark SQL names."""
    out = {}
    for t in history.defs:
        mysql = t.flavour == "mysql"
        out[f"{'shop' if mysql else 'public'}.{t.name}"] = {
            c.name: ("timestamp_ntz" if mysql else "timestamp") if c.base == "timestamp"
            else {"binary": "binary"}.get(c.base, c.type) for c in t.columns}
    return out


def row_of(history: History, m: Msg, side: str) -> dict[str, Any] | None:
    return image(m, side, declared(history))


def expected(col: Col, connector: str, v: Any) -> Any:
    """A history value as the format carries it (MySQL DATETIME has no zone: a naive UTC wall clock)."""
    if v is not None and col.base == "timestamp" and connector == "mysql":
        return v.astimezone(UTC).replace(tzinfo=None)
    return v


# -- fixtures --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def history() -> History:
    return History(SIZE["tables"], SIZE["rows"], SIZE["changes"], SIZE["seed"])


@pytest.fixture(scope="module")
def plain_out(tmp_path_factory, history) -> Path:
    """Every format, heartbeats on, no delivery shuffling: offsets follow the source order."""
    out = tmp_path_factory.mktemp("dbz_plain")
    for folder in FMT:
        run(out, folder, history=history)
    return out


@pytest.fixture(scope="module")
def quirky_out(tmp_path_factory, history) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("dbz_quirks")
    counts = {}
    for folder in FMT:
        quirks = frozenset({"heartbeats", "duplicates", "out_of_order", "connector_restart", "toast"})
        enc = run(out, folder, quirks, history=history)
        counts[folder] = enc.counts
    return out, counts


def _row_key(t: TableDef, row: dict) -> tuple:
    return t.key_of(row) if t.primary_key else (row["seq_no"],)


def final_state(history: History) -> dict[str, dict[tuple, dict]]:
    """The source's final rows per table (keyed tables by key; the keyless table by its sequence number)."""
    state: dict[str, dict[tuple, dict]] = defaultdict(dict)
    for ev in history:
        t = history.defs[ev.table]
        if ev.kind == "TRUNCATE":
            state[t.name].clear()
        elif ev.kind == "DDL":
            for r in state[t.name].values():
                r.setdefault("tier", None)
        else:
            if ev.before is not None:
                state[t.name].pop(_row_key(t, ev.before), None)
            if ev.after is not None:
                state[t.name][_row_key(t, ev.after)] = dict(ev.after)
    return state


def projected(history: History) -> dict[str, list[dict]]:
    state = final_state(history)
    out = {}
    for t in history.defs:
        conn = "mysql" if t.flavour == "mysql" else "postgresql"
        out[t.name] = [{c: expected(t.col(c), conn, v) for c, v in r.items()} for r in state[t.name].values()]
    return out


def _canon(rows) -> list[str]:
    return sorted(repr(sorted((k, type(v).__name__, v) for k, v in r.items())) for r in rows)


# -- tests -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("folder", list(FMT))
def test_replaying_the_data_events_gives_the_final_state(folder, plain_out, quirky_out, history):
    want = projected(history)
    for out in (plain_out, quirky_out[0]):
        got = replay(read(out, folder), declared(history))
        for t in history.defs:
            cols = [c.name for c in t.columns]
            mine = [{c: r.get(c) for c in cols} for r in got[t.name].values()]
            assert _canon(mine) == _canon([{c: r.get(c) for c in cols} for r in want[t.name]]), f"{folder}: {t.name}"
        assert sum(len(r) for r in want.values()) > 40


def test_topics_connectors_and_sources(plain_out):
    msgs = read(plain_out, "json")
    topics = {m.topic for m in msgs}
    assert {"sim-mysql.shop.order_lines", "sim-pg.public.customers", "sim-pg.public.events", "sim-mysql",
            "sim-mysql.transaction", "sim-pg.transaction", "__debezium-heartbeat.sim-mysql",
            "__debezium-heartbeat.sim-pg"} == topics
    for m in data_events(msgs):
        s = m.value["source"]
        assert m.value_schema["name"] == f"{m.topic}.Envelope"
        assert s["name"] == m.topic.split(".")[0] and s["table"] == m.topic.split(".")[-1] and s["db"] == "shop"
        if s["connector"] == "mysql":
            assert set(s) >= {"file", "pos", "row", "gtid", "server_id"} and s["ts_ms"] % 1000 == 0
            assert s["ts_us"] == s["ts_ms"] * 1000 and s["ts_ns"] == s["ts_ms"] * 1_000_000
        else:
            assert s["schema"] == "public" and isinstance(s["lsn"], int) and isinstance(s["txId"], int)
            last_commit, lsn = json.loads(s["sequence"])
            assert lsn == str(s["lsn"]) and (last_commit is None or int(last_commit) < s["lsn"])
            assert s["ts_ns"] == s["ts_us"] * 1000 and s["ts_ms"] == s["ts_us"] // 1000
        assert m.value["ts_ms"] >= s["ts_ms"] and m.value["ts_us"] // 1000 == m.value["ts_ms"]  # processing time
        assert m.ts == m.value["ts_ms"]


def _conforms(schema: dict, v, where: str) -> None:
    """A JsonConverter value against its schema: required fields present, every type as the schema says."""
    if v is None:
        assert schema["optional"], f"{where}: null in a required {schema['type']}"
        return
    t = schema["type"]
    if t == "struct":
        assert isinstance(v, dict) and list(v) == [f["field"] for f in schema["fields"]], where
        for f in schema["fields"]:
            _conforms(f, v[f["field"]], f"{where}.{f['field']}")
    elif t == "array":
        assert isinstance(v, list), where
        for i, x in enumerate(v):
            _conforms(schema["items"], x, f"{where}[{i}]")
    elif t in ("int32", "int64"):
        bits = 31 if t == "int32" else 63
        assert type(v) is int and -(2**bits) <= v < 2**bits, where
    elif t == "float64":
        assert isinstance(v, Decimal), where  # a JSON number with a fraction
    elif t == "bytes":
        assert isinstance(v, str) and base64.b64encode(base64.b64decode(v)).decode() == v, where
    else:
        assert type(v) is {"string": str, "boolean": bool}[t], where


def test_json_values_conform_to_their_schemas(plain_out, quirky_out):
    n = 0
    for out in (plain_out, quirky_out[0]):
        for m in read(out, "json"):
            if m.key is not None:
                _conforms(m.key_schema, m.key, f"{m.topic} key")
            if m.value is not None:
                _conforms(m.value_schema, m.value, f"{m.topic}@{m.offset}")
                n += 1
    assert n > 1000


def _first(history: History, kind: str, flavour: str, key_change: bool = False) -> tuple[TableDef, Event]:
    for ev in history:
        t = history.defs[ev.table]
        if ev.kind == kind and (t.flavour == "mysql") == (flavour == "mysql") and t.primary_key \
                and ev.key_change == key_change:
            return t, ev
    raise AssertionError(f"no {kind} on {flavour}")


def _find(msgs: list[Msg], t: TableDef, op: str, key: dict, ev: Event) -> list[Msg]:
    """The data events of one history change: its table, op and key, at its commit time (MySQL: the second)."""
    def when(m: Msg) -> bool:
        s = m.value["source"]
        return s["ts_us"] == ev.ts_us if s["connector"] == "postgresql" else s["ts_ms"] == ev.ts_us // 10**6 * 1000

    return [m for m in data_events(msgs) if m.value["source"]["table"] == t.name and m.value["op"] == op
            and m.value["source"]["snapshot"] == "false" and m.key == key and when(m)]


@pytest.mark.parametrize("folder", list(FMT))
def test_single_events_carry_the_history_rows(folder, plain_out, history):
    msgs = read(plain_out, folder)
    for flavour in ("mysql", "postgresql"):
        def exp(t: TableDef, row: dict, conn: str = "mysql" if flavour == "mysql" else "postgresql") -> dict:
            return {c.name: expected(c, conn, row.get(c.name)) for c in t.columns_at(1)}

        t, ev = _first(history, "INSERT", flavour)
        (m,) = _find(msgs, t, "c", {k: ev.after[k] for k in t.primary_key}, ev)
        assert m.value["before"] is None and row_of(history, m, "after") == exp(t, ev.after)
        t, ev = _first(history, "UPDATE", flavour)
        (m,) = _find(msgs, t, "u", {k: ev.after[k] for k in t.primary_key}, ev)
        assert row_of(history, m, "after") == exp(t, ev.after)
        if flavour == "mysql":  # binlog_row_image=FULL
            assert row_of(history, m, "before") == exp(t, ev.before)
        elif t.template == "customers":  # REPLICA IDENTITY DEFAULT: no old row on an update
            assert m.value["before"] is None
        t, ev = _first(history, "DELETE", flavour)
        key = {k: ev.before[k] for k in t.primary_key}
        (m,) = _find(msgs, t, "d", key, ev)
        before = row_of(history, m, "before")
        assert m.value["after"] is None
        if flavour == "mysql":
            assert before == exp(t, ev.before)
        else:  # REPLICA IDENTITY DEFAULT: the key, nullable columns null, required ones Debezium's fallbacks
            assert {k: before[k] for k in t.primary_key} == key
            assert all(before[c.name] is None for c in t.columns if c.nullable and c.name in before)
            assert before["name"] == "" and before["active"] is False and before["balance"] == Decimal("0.00")


@pytest.mark.parametrize("folder", list(FMT))
def test_every_change_of_the_history_is_its_data_event(folder, plain_out, history):
    """Each row change is one event (a key change two) of its op, key and commit time, whose images are the
    history's rows: MySQL full before images, PostgreSQL REPLICA IDENTITY FULL ones, DEFAULT ones absent on `u`
    and the key on `d`."""
    msgs = read(plain_out, folder)
    checked = Counter()
    for ev in history:
        t = history.defs[ev.table]
        if ev.kind not in ("INSERT", "UPDATE", "DELETE"):
            continue
        conn = "mysql" if t.flavour == "mysql" else "postgresql"
        full = conn == "mysql" or t.template != "customers"

        def rows(row: dict | None, t=t, conn=conn, version=ev.version) -> dict | None:
            return None if row is None else {c.name: expected(c, conn, row.get(c.name)) for c in t.columns_at(version)}

        def key(row: dict, t=t) -> dict | None:
            return {k: row[k] for k in t.primary_key} or None

        if ev.kind == "INSERT" or ev.key_change:
            got = [row_of(history, m, "after") for m in _find(msgs, t, "c", key(ev.after), ev)]
            assert rows(ev.after) in got
        if ev.kind == "DELETE" or ev.key_change:
            found = _find(msgs, t, "d", key(ev.before), ev)
            befores = [row_of(history, m, "before") for m in found]
            if full:
                assert rows(ev.before) in befores
            else:
                assert any({k: b[k] for k in t.primary_key} == key(ev.before) for b in befores)
        if ev.kind == "UPDATE" and not ev.key_change:
            found = [(row_of(history, m, "before"), row_of(history, m, "after"))
                     for m in _find(msgs, t, "u", key(ev.after), ev)]
            assert (rows(ev.before) if full else None, rows(ev.after)) in found
        checked[(conn, ev.kind, ev.key_change)] += 1
    assert len(checked) == 8  # insert, update, delete and key change on both connectors


def test_decimals_decode_exactly_from_base64_with_the_scale(plain_out, history):
    msgs = data_events(read(plain_out, "json"))
    values = {}
    for m in msgs:
        if m.value["source"]["table"] == "order_lines" and m.value["after"]:
            fields = {f["field"]: f for f in m.value_schema["fields"][1]["fields"]}
            big = m.value["after"]["big_amount"]
            assert fields["big_amount"]["parameters"] == {"scale": "20", "connect.decimal.precision": "60"}
            if big is not None:
                raw = base64.b64decode(big)
                value = Decimal(f"{int.from_bytes(raw, 'big', signed=True)}E-20")
                values[(m.key["order_id"], m.key["line_no"], m.value["source"].get("pos"))] = value
                redundant = len(raw) > 1 and ((raw[0] == 0 and raw[1] < 0x80) or (raw[0] == 0xFF and raw[1] >= 0x80))
                assert not redundant  # the shortest two's complement, as BigInteger.toByteArray writes it
    truth = {ev.after["big_amount"] for ev in history if history.defs[ev.table].name == "order_lines"
             and ev.after is not None and ev.after["big_amount"] is not None}
    assert values and set(values.values()) <= truth and any(len(str(v).replace("-", "")) > 40 for v in values.values())
    assert all(v.as_tuple().exponent == -20 for v in values.values())
    noschema = data_events(read(plain_out, "json-noschema"))
    texts = {m.value["after"]["big_amount"] for m in noschema if m.value["source"]["table"] == "order_lines"
             and m.value["after"] and m.value["after"]["big_amount"] is not None}
    assert {Decimal(x) for x in texts} == set(values.values()) and all(isinstance(x, str) for x in texts)


def test_snapshot_rows_are_marked_first_to_last_then_streaming(plain_out, history):
    msgs = data_events(read(plain_out, "json"))
    for connector, tables in (("mysql", ["order_lines"]), ("postgresql", ["customers", "events"])):
        snap = sorted((m for m in msgs if m.value["op"] == "r" and m.value["source"]["connector"] == connector),
                      key=lambda m: m.value["ts_us"])
        marks = [m.value["source"]["snapshot"] for m in snap]
        assert len(snap) == SIZE["rows"] * len(tables) and marks[0] == "first" and marks[-1] == "last"
        assert Counter(marks)["first"] == Counter(marks)["last"] == 1
        assert set(marks[1:-1]) <= {"true", "first_in_data_collection", "last_in_data_collection"}
        assert len({position(m) for m in snap}) == 1  # one snapshot position for every row
        assert all(m.value["before"] is None and m.value["transaction"] is None for m in snap)
        streaming = [m for m in msgs if m.value["op"] != "r" and m.value["source"]["connector"] == connector]
        assert streaming and {m.value["source"]["snapshot"] for m in streaming} == {"false"}
        assert min(m.value["ts_us"] for m in streaming) > max(m.value["ts_us"] for m in snap)


@pytest.mark.parametrize("folder", list(FMT))
def test_a_tombstone_follows_each_delete(folder, plain_out):
    msgs = read(plain_out, folder)
    by_lane = defaultdict(dict)
    for m in msgs:
        by_lane[(m.topic, m.partition)][m.offset] = m
    deletes = [m for m in data_events(msgs) if m.value["op"] == "d"]
    assert deletes
    for d in deletes:
        nxt = by_lane[(d.topic, d.partition)][d.offset + 1]
        assert nxt.value is None and nxt.key == d.key
    tombstones = [m for m in msgs if m.value is None]
    assert len(tombstones) == len(deletes) and all(m.key is not None for m in tombstones)


@pytest.mark.parametrize("folder", ["json", "avro"])
def test_transaction_end_counts_the_data_events_of_its_id(folder, plain_out, quirky_out):
    for out in (plain_out, quirky_out[0]):
        msgs = read(out, folder)
        distinct = {(m.topic, m.value["op"], position(m), m.value["transaction"]["total_order"]): m
                    for m in data_events(msgs) if m.value["transaction"]}
        per_tx: dict[str, Counter] = defaultdict(Counter)
        for m in distinct.values():
            tx_id = m.value["transaction"]["id"]
            group = tx_id.split(":")[0] if m.value["source"]["connector"] == "postgresql" else tx_id
            per_tx[group][f"{m.topic.split('.', 1)[1]}"] += 1
        ends = {}
        begins = set()
        for m in msgs:
            if m.topic.endswith(".transaction"):
                pg = m.topic.startswith("sim-pg")
                group = m.value["id"].split(":")[0] if pg else m.value["id"]
                assert m.key["id"] == m.value["id"]
                if m.value["status"] == "BEGIN":
                    assert m.value["event_count"] is None and m.value["data_collections"] is None
                    begins.add(group)
                else:
                    ends[group] = m.value
        assert ends and set(ends) == begins == set(per_tx)
        for group, end in ends.items():
            assert end["event_count"] == sum(per_tx[group].values())
            assert {c["data_collection"]: c["event_count"] for c in end["data_collections"]} == dict(per_tx[group])
        multi = [g for g, c in per_tx.items() if sum(c.values()) > 1]
        assert multi  # transactions of several statements


def test_postgres_transaction_ids_are_txid_and_lsn(plain_out):
    for m in data_events(read(plain_out, "json")):
        tx, s = m.value["transaction"], m.value["source"]
        if tx and s["connector"] == "postgresql":
            assert tx["id"] == f"{s['txId']}:{s['lsn']}"
        elif tx:
            assert tx["id"] == s["gtid"] and ":" in s["gtid"]


@pytest.mark.parametrize("folder", list(FMT))
def test_a_connector_restart_redelivers_with_identical_positions(folder, quirky_out):
    out, counts = quirky_out
    assert counts[folder]["restarts"] >= 2
    groups: dict[tuple, list[Msg]] = defaultdict(list)
    for m in data_events(read(out, folder)):
        if m.value["op"] != "r":
            groups[(m.topic, m.value["op"], position(m), json.dumps(m.key, default=str))].append(m)
    again = [g for g in groups.values() if len({m.value["ts_ms"] for m in g}) > 1]
    assert len(again) >= 5
    for g in again:
        assert all(m.value["source"] == g[0].value["source"] for m in g)
        assert all(m.value["transaction"] == g[0].value["transaction"] for m in g)
        assert len({(m.partition, m.offset) for m in g}) == len(g)


def test_toast_placeholders_stand_for_unchanged_columns_only(quirky_out, history):
    out, counts = quirky_out
    updates = {ev.seq: ev for ev in history if ev.kind == "UPDATE"}
    seqs = {}
    for m in data_events(read(out, "json")):
        if m.value["op"] == "u" and m.value["source"]["connector"] == "postgresql":
            seqs[m.value["source"]["lsn"]] = m
    hits = 0
    for m in seqs.values():
        after = m.value["after"]
        placeholders = [c for c, v in after.items() if v == UNAVAILABLE]
        if not placeholders:
            continue
        hits += 1
        assert placeholders == ["email"] and m.value["before"] is None
        (ev,) = [e for e in updates.values() if history.defs[e.table].name == m.value["source"]["table"]
                 and e.after["id"] == after["id"] and e.ts_us == m.value["source"]["ts_us"]]
        assert "email" not in ev.changed and ev.before["email"] is not None
    assert hits == counts["json"]["toast"] > 0


def test_a_key_change_is_delete_tombstone_create_linked_by_headers(plain_out, history):
    msgs = read(plain_out, "json")
    creates = {json.dumps(m.key, sort_keys=True): m for m in data_events(msgs)
               if "__debezium.oldkey" in m.headers}
    deletes = [m for m in data_events(msgs) if "__debezium.newkey" in m.headers]
    changes = [ev for ev in history if ev.kind == "UPDATE" and ev.key_change]
    assert len(deletes) == len(creates) == len(changes) > 0
    for d in deletes:
        new_key = json.loads(d.headers["__debezium.newkey"])
        c = creates[json.dumps(new_key, sort_keys=True)]
        assert d.value["op"] == "d" and c.value["op"] == "c"
        assert json.loads(c.headers["__debezium.oldkey"]) == d.key
        assert position(d) == position(c)
        assert c.value["transaction"]["total_order"] == d.value["transaction"]["total_order"] + 1


def test_mysql_truncate_event(plain_out, history):
    (tr,) = [ev for ev in history if ev.kind == "TRUNCATE"]
    t = history.defs[tr.table]
    assert t.flavour == "mysql"
    msgs = [m for m in data_events(read(plain_out, "json")) if m.value["op"] == "t"]
    (m,) = msgs
    assert m.key is None and m.value["before"] is None and m.value["after"] is None
    assert m.value["source"]["table"] == t.name and m.value["transaction"] is None


def test_heartbeats_and_the_schema_change_topic(plain_out):
    msgs = read(plain_out, "json")
    beats = [m for m in msgs if m.topic.startswith("__debezium-heartbeat.")]
    assert len(beats) >= 4 and all(set(m.value) == {"ts_ms"} and m.key == {"serverName": m.topic.split(".", 1)[1]}
                                   for m in beats)
    assert {m.value_schema["name"] for m in beats} == {"io.debezium.connector.common.Heartbeat"}
    ddl = [m for m in msgs if m.topic == "sim-mysql"]
    (create,) = ddl
    assert create.key == {"databaseName": "shop"} and create.value["ddl"].startswith("CREATE TABLE `order_lines`")
    (change,) = create.value["tableChanges"]
    assert change["type"] == "CREATE" and change["id"] == '"shop"."order_lines"'
    assert change["table"]["primaryKeyColumnNames"] == ["order_id", "line_no"]
    cols = {c["name"]: c for c in change["table"]["columns"]}
    assert cols["big_amount"]["typeName"] == "DECIMAL" and (cols["big_amount"]["length"], cols["big_amount"]["scale"]) == (60, 20)
    assert [c["position"] for c in change["table"]["columns"]] == list(range(1, len(cols) + 1))


def test_postgres_ddl_shows_as_a_new_value_schema(plain_out, history):
    (ddl,) = [ev for ev in history if ev.kind == "DDL"]
    msgs = [m for m in data_events(read(plain_out, "json")) if m.topic == "sim-pg.public.customers"]
    for m in msgs:
        names = [f["field"] for f in m.value_schema["fields"][1]["fields"]]
        later = m.value["source"]["snapshot"] == "false" and json.loads(m.value["source"]["sequence"])[1] and \
            m.value["source"]["ts_us"] > ddl.ts_us
        assert ("tier" in names) == bool(later)
    subjects = json.loads((plain_out / "schemas" / "debezium-avro" / "subjects.json").read_text())
    assert len(subjects["sim-pg.public.customers-value"]) == 2


def test_mysql_ddl_is_an_alter_on_the_schema_change_topic(tmp_path):
    """A MySQL table with the history's ADD COLUMN: the schema-change topic has its ALTER with the new columns."""
    base = History(1, 3, 30, 5)
    (t0,) = base.defs
    t = TableDef(0, t0.name, t0.template, t0.columns, t0.primary_key, "mysql", ddl=True, truncate=True)
    run(tmp_path, "json", history=base, defs=(t,), events=list(base))
    msgs = read(tmp_path, "json")
    kinds = [(m.value["tableChanges"][0]["type"], m.value["ddl"]) for m in msgs if m.topic == "sim-mysql"]
    assert [k for k, _ in kinds] == ["CREATE", "ALTER"] and "ADD COLUMN tier" in kinds[1][1]
    alter = next(m for m in msgs if m.topic == "sim-mysql" and m.value["tableChanges"][0]["type"] == "ALTER")
    assert alter.value["tableChanges"][0]["table"]["columns"][-1]["name"] == "tier"
    assert any(m.value["op"] == "t" for m in data_events(msgs))


def test_avro_round_trips_with_the_exported_schemas(plain_out, history):
    registry = plain_out / "schemas" / "debezium-avro"
    schemas = {int(p.stem): json.loads(p.read_text()) for p in registry.glob("*.avsc")}
    envelope = next(s for s in schemas.values() if s.get("name") == "Envelope"
                    and s.get("namespace") == "sim-mysql.shop.order_lines")
    assert envelope["connect.name"] == "sim-mysql.shop.order_lines.Envelope"
    value = envelope["fields"][0]["type"][1]
    assert value["name"] == "Value" and envelope["fields"][1]["type"] == ["null", "sim-mysql.shop.order_lines.Value"]
    fields = {f["name"]: f["type"] for f in value["fields"]}
    assert fields["unit_price"]["logicalType"] == "decimal" and fields["unit_price"]["scale"] == 4
    assert fields["unit_price"]["connect.name"] == "org.apache.kafka.connect.data.Decimal"
    assert fields["updated_at"]["connect.name"] == "io.debezium.time.MicroTimestamp"
    assert fields["ship_date"] == ["null", {"type": "int", "connect.version": 1, "connect.name": "io.debezium.time.Date"}]
    avro = {(m.topic, m.partition, m.offset): m for m in read(plain_out, "avro")}
    jsn = {(m.topic, m.partition, m.offset): m for m in read(plain_out, "json")}
    assert set(avro) == set(jsn)
    for k, a in avro.items():
        j = jsn[k]
        assert a.headers == j.headers and (a.value is None) == (j.value is None)
        if a.value is None or "op" not in a.value:
            assert a.value == j.value and a.key == j.key
            continue
        for side in ("before", "after"):
            assert row_of(history, a, side) == row_of(history, j, side)
        assert a.value["source"] == j.value["source"] and a.value["op"] == j.value["op"]


def test_the_schemaless_format_needs_the_declared_options(tmp_path, plain_out):
    f = FMT["json-noschema"]
    tables = {"order_lines": {"source_db": "mysql", "database": "shop", "schema": None, "columns": [
        {"name": "unit_price", "source_type": "decimal(10,4)"}, {"name": "updated_at", "source_type": "timestamp"}]},
        "customers": {"source_db": "postgresql", "database": "shop", "schema": "public", "columns": [
            {"name": "created_at", "source_type": "timestamp"}, {"name": "avatar", "source_type": "binary"}]}}
    opts = f.user_options(tmp_path, {"tables": tables})
    assert opts == {"decimal_handling": "string", "time_precision": "adaptive_time_microseconds",
                    "binary_handling": "bytes", "column_types": {
                        "shop.order_lines": {"unit_price": "decimal(10,4)", "updated_at": "timestamp_ntz"},
                        "public.customers": {"created_at": "timestamp", "avatar": "binary"}}}
    assert FMT["avro"].user_options(tmp_path, {})["schema_registry"].endswith("schemas/debezium-avro")
    msgs = read(plain_out, "json-noschema")
    assert all(m.value_schema is None and m.key_schema is None for m in msgs)


def test_truth_projection_declares_what_the_formats_carry():
    customers, order_lines = build_tables(2)
    for f in FORMATS:
        assert f.carries_truncate and f.carries_added_column
        assert f.truth_kind("mysql", order_lines.col("updated_at")) == "timestamp_ntz"
        assert f.truth_kind("postgresql", customers.col("created_at")) == "timestamp"
        assert f.truth_kind("oracle", customers.col("balance")) == "decimal"
    assert FMT["json"].vendor_type(order_lines, order_lines.col("unit_price")).endswith("(precision=10,scale=4)")
    assert FMT["json-noschema"].vendor_type(order_lines, order_lines.col("unit_price")) == "string"


def test_same_history_gives_byte_identical_files(tmp_path, history):
    def digest(root: Path) -> str:
        h = hashlib.sha256()
        for p in sorted(root.rglob("*")):
            if p.is_file():
                h.update(p.relative_to(root).as_posix().encode() + p.read_bytes())
        return h.hexdigest()

    quirks = frozenset({"heartbeats", "duplicates", "out_of_order", "connector_restart", "toast"})
    for n in (1, 2):
        for folder in FMT:
            run(tmp_path / str(n), folder, quirks, history=history)
    assert digest(tmp_path / "1") == digest(tmp_path / "2")
