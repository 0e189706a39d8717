"""`cdcnorm compare` on migration scenarios built from one typed history (a tiny test adapter writes it).

The history has two MySQL-style tables with exact decimals, dates, instants and bytes; `scenario.migration`
replays it as two vendors, optionally injecting a dropped change, a changed value or a delay.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from decimal import Decimal

import pytest
from typer.testing import CliRunner

import cdcnorm
from cdcnorm.adapters.base import Adapter
from cdcnorm.canonical.record import Change, SchemaColumn, SchemaVersion
from cdcnorm.cli import app
from cdcnorm.cli.compare import compare_command, print_summary
from cdcnorm.migrate import compare
from cdcnorm.migrate.report import table_verdict
from cdcnorm.migrate.rules import RULES, find_rule
from cdcnorm.migrate.scenario import migration
from cdcnorm.migrate.sides import TableRef, match_tables, spec_matches

T0 = dt.datetime(2025, 3, 1, 12, 0, tzinfo=dt.UTC)
TYPES = {
    "orders": {"id": "int", "amount": "decimal(10,2)", "status": "string", "day": "date", "at": "timestamp",
               "blob": "binary"},
    "customers": {"id": "int", "name": "string", "score": "bigint"},
}
_DECODE = {"decimal(10,2)": Decimal, "date": dt.date.fromisoformat, "timestamp": dt.datetime.fromisoformat,
           "binary": bytes.fromhex}


class HistoryAdapter(Adapter):
    """Test adapter: one JSON event per line {t, op, id, seq, us, lag_us, row}; typed by TYPES."""

    name = "history"
    formats = ("history.json",)

    def read_file(self, path, fh, out):
        seen: set[str] = set()
        for i, line in enumerate(fh):
            out.begin_record(path, i, raw=line)
            ev = json.loads(line)
            if ev["op"] == "HEARTBEAT":
                out.change(Change(vendor="replicate", format="history.json", stream="hist", op="HEARTBEAT",
                                  sort_parts=(2, ev["seq"]), id_parts=("hb", ev["seq"]), source_db="mysql",
                                  database="shop", source_ts=_ts(ev["us"]), capture_ts=_ts(ev["us"] + ev["lag_us"])))
                yield
                continue
            table = ev["t"]
            if table not in seen:
                seen.add(table)
                out.schema(SchemaVersion("replicate", "hist", "1", [
                    SchemaColumn(c, t, t, n, 1 if c == "id" else None) for n, (c, t) in enumerate(TYPES[table].items())
                ], source_db="mysql", database="shop", table=table, first_seen=_ts(ev["us"])))
            row = {c: (_DECODE[TYPES[table][c]](v) if v is not None and TYPES[table][c] in _DECODE else v)
                   for c, v in ev["row"].items()}
            op = ev["op"]
            out.change(Change(
                vendor="replicate", format="history.json", stream="hist", op=op, source_db="mysql",
                database="shop", table=table, sort_parts=(0 if op == "SNAPSHOT" else 1, ev["seq"]),
                id_parts=(ev["seq"], op), primary_keys=["id"], position=f"binlog.000001:{ev['seq'] * 100}",
                before=row if op == "DELETE" else None, after=None if op == "DELETE" else row,
                source_ts=_ts(ev["us"]), capture_ts=_ts(ev["us"] + ev["lag_us"]), vendor_op=op,
            ))
            yield


def _ts(us: int) -> dt.datetime:
    return T0 + dt.timedelta(microseconds=us)


def history_lines(seed: int = 7, changes: int = 60) -> list[str]:
    """A deterministic history: a backfill of a few rows, then inserts, updates and deletes, then a heartbeat."""
    rng = random.Random(seed)
    live: dict[str, dict[int, dict]] = {"orders": {}, "customers": {}}
    next_id = {"orders": 1, "customers": 1}
    lines, seq, us = [], 0, 0

    def row(table: str, i: int) -> dict:
        if table == "customers":
            return {"id": i, "name": rng.choice(["ann", "bob", "cyd", "dee"]) + str(i), "score": rng.randint(0, 10**12)}
        return {"id": i, "amount": f"{rng.randint(0, 99999)}.{rng.randint(0, 99):02d}",
                "status": rng.choice(["new", "paid", "sent"]), "day": f"2025-02-{rng.randint(1, 28):02d}",
                "at": (T0 - dt.timedelta(microseconds=rng.randint(0, 10**11))).isoformat(),
                "blob": rng.randbytes(3).hex()}

    def emit(table: str, op: str, r: dict) -> None:
        nonlocal seq
        seq += 1
        lines.append(json.dumps({"t": table, "op": op, "id": r["id"], "seq": seq, "us": us,
                                 "lag_us": rng.randint(1000, 400_000), "row": r}))

    for table in ("orders", "customers"):
        for _ in range(4):
            i = next_id[table]
            next_id[table] += 1
            live[table][i] = row(table, i)
            emit(table, "SNAPSHOT", live[table][i])
    for _ in range(changes):
        us += rng.randint(2_000_000, 9_000_000)
        table = rng.choice(["orders", "orders", "customers"])
        kind = rng.random()
        if kind < 0.3 or len(live[table]) < 3:
            i = next_id[table]
            next_id[table] += 1
            live[table][i] = row(table, i)
            emit(table, "INSERT", live[table][i])
        elif kind < 0.85:
            i = rng.choice(sorted(live[table]))
            live[table][i] = {**row(table, i)}
            emit(table, "UPDATE", live[table][i])
        else:
            i = rng.choice(sorted(live[table]))
            emit(table, "DELETE", live[table].pop(i))
    seq += 1
    lines.append(json.dumps({"op": "HEARTBEAT", "seq": seq, "us": us + 1_000_000, "lag_us": 1000}))
    return lines


def write_history(spark, folder, changes: int = 60) -> str:
    """Normalize the history into `folder/history` (a lake) and return the lake path."""
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / "history.jsonl"
    src.write_text("\n".join(history_lines(changes=changes)) + "\n")
    lake = str(folder / "history")
    cdcnorm.normalize(str(src), HistoryAdapter(), spark=spark, lake=lake)
    return lake


@pytest.fixture(scope="module")
def history(typed_history):
    return typed_history


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return tmp_path_factory.mktemp("cmp")


def _by(findings, kind):
    return [f for f in findings if f["kind"] == kind]


# -- the scenarios --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def same(spark, history, base):
    """One history through two vendors, fully overlapping (shared by the fast and the slow tests)."""
    lake = str(base / "same")
    migration(spark, history, lake, overlap=(0.0, 1.0))
    return lake


def test_same_history_through_two_vendors_is_equal(spark, same):
    lake = same
    rep = compare(spark, lake, lake)
    assert rep["equal"] is True and rep["verdict"] == "equal"
    assert [t["name"] for t in rep["tables"]] == ["shop.customers", "shop.orders"]
    orders = rep["tables"][1]
    assert orders["verdict"] == "equal" and orders["reasons"] == []
    assert orders["state"]["rows_only_left"] == 0 and orders["state"]["rows_differing"] == 0
    assert orders["state"]["rows_left"] == orders["state"]["rows_right"] > 0
    assert orders["stream"]["only_left"] == orders["stream"]["only_right"] == 0
    assert orders["stream"]["matched"] == sum(orders["stream"]["ops"]["left"]["in_window"].values())
    assert orders["stream"]["matched_by"]["position"] == orders["stream"]["matched"]
    assert rep["left"]["vendor"] == "datastream" and rep["right"]["vendor"] == "replicate"
    assert rep["left"]["latency"]["count"] > 0 and 0.001 <= rep["left"]["latency"]["p50"] <= 0.4
    assert rep["left"]["freshness"]["newest_heartbeat"] is not None
    assert rep["findings"] == []


@pytest.fixture(scope="module")
def injected(spark, history, base):
    lake = str(base / "injected")
    sc = migration(spark, history, lake, overlap=(0.0, 1.0), drop_change=True, change_value=True, delay_s=30.0)
    rep = compare(spark, lake, lake, left_vendor="replicate", right_vendor="datastream")
    return sc, rep


def test_compare_pinpoints_a_dropped_change(injected):
    sc, rep = injected
    drop = next(i for i in sc.injected if i["kind"] == "dropped_change")
    assert rep["equal"] is False and rep["verdict"] == "differs"
    found = _by(rep["findings"], "change_only_left")
    assert [(f["table"], f["key"], f["detail"]["op"], f["detail"]["source_ts"]) for f in found] == [
        (drop["table"], drop["key"], "UPDATE", drop["source_ts"])]
    table = next(t for t in rep["tables"] if t["name"] == drop["table"])
    assert table["stream"]["only_left"] == 1 and table["stream"]["only_right"] == 0
    assert "1 change only on the left" in table["reasons"]


def test_compare_pinpoints_a_changed_value(injected):
    sc, rep = injected
    change = next(i for i in sc.injected if i["kind"] == "changed_value")
    state = _by(rep["findings"], "value_differs")
    assert [(f["table"], f["key"], f["column"]) for f in state] == [(change["table"], change["key"], change["column"])]
    assert state[0]["detail"]["left"] != state[0]["detail"]["right"]
    stream = _by(rep["findings"], "change_value_differs")
    assert [(f["table"], f["key"], f["column"]) for f in stream] == [(change["table"], change["key"], change["column"])]
    table = next(t for t in rep["tables"] if t["name"] == change["table"])
    col = next(c for c in table["state"]["columns"] if c["name"] == change["column"])
    assert col["unequal"] == 1 and table["state"]["rows_differing"] == 1


def test_compare_reports_a_delayed_vendor(injected):
    _, rep = injected
    lags = _by(rep["findings"], "lag")
    assert lags and all(f["detail"]["side"] == "right" and 29.0 <= f["detail"]["p50_s"] <= 30.5 for f in lags)
    assert 29.0 <= rep["lag"]["max_p50"] <= 30.5
    assert rep["right"]["latency"]["p50"] > 29.0 > rep["left"]["latency"]["p50"]


@pytest.mark.slow
def test_max_lag_makes_delay_a_difference(spark, base, injected):  # injected writes the lake
    lake = str(base / "injected")
    rep = compare(spark, lake, lake, left_vendor="replicate", right_vendor="datastream", tables=["customers"],
                  max_lag_s=5.0)
    t = rep["tables"][0]
    assert t["name"] == "shop.customers" and any("lags by" in r for r in t["reasons"])


@pytest.mark.slow
def test_lossy_projection_is_equal_lossy(spark, history, base):
    lake = str(base / "lossy")
    migration(spark, history, lake, overlap=(0.0, 1.0), new_vendor="datahub", project="datahub")
    rep = compare(spark, lake, lake, left_vendor="replicate", right_vendor="datahub")
    orders = next(t for t in rep["tables"] if t["name"] == "shop.orders")
    assert orders["verdict"] == "equal (lossy: datahub_date_as_timestamp, datahub_date_millis, datahub_no_decimal)"
    assert orders["equal"] and rep["equal"]
    types = {c["name"]: (c["left_type"], c["right_type"], c["rule"]) for c in orders["state"]["columns"]}
    assert types["amount"] == ("decimal(10,2)", "double", "datahub_no_decimal")
    assert types["day"] == ("date", "timestamp", "datahub_date_as_timestamp")
    assert rep["verdict"].startswith("equal (lossy: ")


@pytest.mark.slow  # over 20 s under load: `make test-slow` keeps it; the fast suite stays under 10 min
def test_compare_command_exit_codes_and_reports(spark, base, same, injected, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")  # one line per table row in the captured terminal output
    injected_lake = str(base / "injected")  # written by the `injected` fixture
    assert compare_command(same, same, None, None, ["customers"], None, str(base / "rep"), None) == 0
    out = capsys.readouterr().out
    assert "verdict: equal" in out and "shop.customers" in out
    saved = json.loads((base / "rep" / "compare.json").read_text())
    assert saved["equal"] is True and (base / "rep" / "compare.html").stat().st_size > 1000
    assert compare_command(injected_lake, injected_lake, "replicate", "datastream", None, None, None, None) == 1
    assert "1 change only on the left" in capsys.readouterr().out
    cli = CliRunner()  # usage and runtime errors go through the command line's one guard
    res = cli.invoke(app, ["compare", "--left", same, "--right", same, "--left-vendor", "nope"])
    assert res.exit_code == 2 and "no table changes" in res.output
    res = cli.invoke(app, ["compare", "--left", str(base / "missing"), "--right", same])
    assert res.exit_code == 3 and "No cdcnorm lake" in res.output  # LakeError


# -- units ------------------------------------------------------------------------------------------------------
def test_table_matching_map_and_fallback():
    left = [TableRef("a", "s", "shop", None, "Orders"), TableRef("a", "s", "shop", None, "old_name"),
            TableRef("a", "s", "hr", "HR", "JOBS")]
    right = [TableRef("b", "t", "SHOP", None, "orders"), TableRef("b", "t", "shop", None, "new_name"),
             TableRef("b", "t", None, "hr", "jobs"), TableRef("b", "t", "x", None, "extra")]
    pairs, ol, orr = match_tables(left, right, table_map=["shop.old_name=new_name"])
    assert [(p.left.table, p.right.table, p.matched_by) for p in pairs] == [
        ("JOBS", "jobs", "table name"), ("old_name", "new_name", "map"), ("Orders", "orders", "name")]
    assert ol == [] and [r.table for r in orr] == ["extra"]
    assert spec_matches("SHOP.orders", right[0]) and not spec_matches("hr.orders", right[0])


def test_rules_are_declared_for_both_orientations():
    assert find_rule("datahub", "timestamp", "replicate", "date", None)[0].name == "datahub_date_as_timestamp"
    rule, lossy_left = find_rule("replicate", "decimal(10,2)", "datahub", "double", None)
    assert rule.name == "datahub_no_decimal" and lossy_left is False
    assert find_rule("datastream", "string", "replicate", "binary", "mysql")[0].name == "datastream_mysql_binary_hex"
    assert find_rule("datastream", "string", "replicate", "binary", "postgresql")[0].name == "json_text_binary"
    assert find_rule("replicate", "string", "datastream", "date", None)[0].name == "json_text_date"
    assert find_rule("replicate", "string", "datastream", "string", None)[0].same_type is False
    assert len({r.name for r in RULES}) == len(RULES)


def test_rule_sql_on_values(spark):
    """Each projection compares equal values as equal and a real difference as different (one small job)."""
    from cdcnorm.migrate.rules import compare_column

    cases = [  # (left sql, left type, right sql, right type, left vendor, right vendor, equal?)
        ("cast('12.50' as decimal(10,2))", "decimal(10,2)", "12.5D", "double", "replicate", "datahub", True),
        ("cast('12.50' as decimal(10,2))", "decimal(10,2)", "12.51D", "double", "replicate", "datahub", False),
        ("date'2024-01-02'", "date", "timestamp'2024-01-02 00:00:00'", "timestamp", "replicate", "datahub", True),
        ("date'2024-01-02'", "date", "timestamp'2024-01-02 00:00:01'", "timestamp", "replicate", "datahub", False),
        ("timestamp'2024-01-02 03:04:05.123456'", "timestamp", "timestamp'2024-01-02 03:04:05.123'", "timestamp",
         "replicate", "datahub", True),
        ("parse_json('-311.68')", "variant", "cast('-311.6800' as decimal(10,4))", "decimal(10,4)", "datastream",
         "replicate", True),
        ("'2026-04-11T14:08:34.796147Z'", "string", "timestamp_ntz'2026-04-11 14:08:34.796147'", "timestamp_ntz",
         "datastream", "replicate", True),
        ("'1961-06-04T00:00:00.000000Z'", "string", "date'1961-06-04'", "date", "datastream", "replicate", True),
        ("'Cv8='", "string", "X'0AFF'", "binary", "datastream", "replicate", True),
        ("'0aff'", "string", "X'0AFF'", "binary", "datastream", "replicate", True),
        ("'0afe'", "string", "X'0AFF'", "binary", "datastream", "replicate", False),
        ("1", "bigint", "true", "boolean", "datastream", "replicate", True),
        ("5", "bigint", "cast(5 as decimal(10,2))", "decimal(10,2)", "datastream", "replicate", True),
        ("'abc'", "string", "'abc '", "string", "datastream", "replicate", False),
    ]
    exprs = [compare_column(f"c{i}", f"c{i}", lt, rt, lv, rv, "postgresql").equal.alias(f"e{i}")
             for i, (_, lt, _, rt, lv, rv, _) in enumerate(cases)]
    left = ", ".join(f"'c{i}', {c[0]}" for i, c in enumerate(cases))
    right = ", ".join(f"'c{i}', {c[2]}" for i, c in enumerate(cases))
    got = spark.sql(f"SELECT named_struct({left}) AS l, named_struct({right}) AS r").select(*exprs).collect()[0]
    assert [got[f"e{i}"] for i in range(len(cases))] == [c[-1] for c in cases]


def test_verdict_wording():
    verdict, reasons, _ = table_verdict({"rows_only_left": 2, "lossy": ["x"]}, {"only_right": 1}, {}, None)
    assert verdict == "differs" and reasons == ["2 rows only on the left", "1 change only on the right"]
    assert table_verdict({"lossy": ["datahub_no_decimal"]}, {}, {}, None)[0] == "equal (lossy: datahub_no_decimal)"


def test_print_summary_names_each_table(injected, capsys):
    _, rep = injected
    print_summary(rep)
    out = capsys.readouterr().out
    assert "differs" in out and "columns with unequal values" in out and "changes only on the left" in out


# -- the simulator: the same source history written by real vendor formats ----------------------------------------
def _simulated_lake(spark, root, formats: list[str], rows: int, changes: int) -> str:
    from cdcnorm.simulate import simulate

    simulate(root / "sim", vendors=formats, tables=2, rows=rows, changes=changes, quirks=[])
    lake = str(root / "lake")
    for vf in formats:
        vendor, fmt = vf.split("-", 1)
        cdcnorm.normalize([str(root / "sim" / vendor / fmt)], vendor, spark=spark, lake=lake)
    return lake


@pytest.mark.slow  # over 20 s under load: `make test-slow` keeps it; the fast suite stays under 10 min
def test_simulated_vendors_compare_equal(spark, tmp_path):
    """Datastream JSON (types inferred) and Replicate JSON (typed) of one simulated history: equal, lossily
    only where the vendors differ (a naive DATETIME against an instant), not by timestamp text."""
    lake = _simulated_lake(spark, tmp_path, ["datastream-json", "replicate-json"], rows=8, changes=30)
    rep = compare(spark, lake, lake, left_vendor="datastream", right_vendor="replicate")
    assert rep["equal"] is True, [t["reasons"] for t in rep["tables"]]
    assert {t["name"] for t in rep["tables"]} == {"public.customers -> shop.customers", "shop.order_lines"}
    for t in rep["tables"]:
        assert t["verdict"].startswith("equal (lossy: ") and "json_text_timestamp" not in t["verdict"], t["verdict"]
        assert "naive_vs_instant" in t["verdict"], t["verdict"]
        assert t["stream"]["matched"] > 0 and t["stream"]["only_left"] == t["stream"]["only_right"] == 0


@pytest.mark.slow
def test_simulated_vendors_all_pairs(spark, tmp_path):
    """Every pair of three vendors on the table all of them carry the same way; DataHub also carries the
    simulated TRUNCATE of order_lines, which the JSON formats of the others do not, and compare says so."""
    lake = _simulated_lake(spark, tmp_path, ["datastream-json", "replicate-json", "datahub-blob"], rows=10, changes=40)
    for a, b in (("datastream", "replicate"), ("replicate", "datahub"), ("datastream", "datahub")):
        rep = compare(spark, lake, lake, left_vendor=a, right_vendor=b, tables=["customers"])
        assert rep["equal"] is True, (a, b, [t["reasons"] for t in rep["tables"]])
    rep = compare(spark, lake, lake, left_vendor="replicate", right_vendor="datahub", tables=["order_lines"])
    ops = rep["tables"][0]["stream"]["ops"]["right"]["all"]
    assert ops.get("TRUNCATE") == 1 and rep["tables"][0]["state"]["rows_only_left"] > 0


def test_a_whole_second_time_is_compared_at_the_second(spark):
    """Debezium's MySQL source times are whole seconds: against them a finer time counts by its second, so a burst
    of changes within one second pairs in order instead of crosswise."""
    from pyspark.sql import functions as F

    from cdcnorm.migrate.matching import time_difference

    rows = [(27_000_000, 27_895_000), (28_000_000, 27_895_000), (27_895_000, 28_671_000), (27_000_001, 27_895_000)]
    df = spark.createDataFrame(rows, "l long, r long")
    got = [r[0] for r in df.select(time_difference(F.col("l"), F.col("r"))).collect()]
    assert got == [0, 1_000_000, 776_000, 894_999]


def test_a_burst_within_a_whole_second_pairs_in_order_when_one_side_holds_an_earlier_change(spark):
    """Canal / Maxwell times are whole seconds, GoldenGate's milliseconds: a key's two changes within one second
    pair in order even when the finer side also holds an earlier change of the key the other does not (its rank
    within the key is one higher; its rank within the second is not)."""
    from cdcnorm.migrate.matching import _ranked, _round

    cols = "event_id string, key_bytes string, _us long, sort_key long, position string, op string"
    left = spark.createDataFrame([("a0", "k", 1_500_000, 1, None, "UPDATE"), ("a1", "k", 7_187_000, 2, None, "UPDATE"),
                                  ("a2", "k", 7_189_000, 3, None, "UPDATE")], cols)
    right = spark.createDataFrame([("b1", "k", 7_000_000, 10, None, "UPDATE"),
                                   ("b2", "k", 7_000_000, 11, None, "UPDATE")], cols)

    def prefixed(df, p):
        return _ranked(df.select(*[df[c].alias(p + c) for c in df.columns]), p)

    pairs = _round(prefixed(left, "l_"), prefixed(right, "r_"), 5_000_000)
    assert sorted((r.l_event_id, r.r_event_id) for r in pairs.collect()) == [("a1", "b1"), ("a2", "b2")]
