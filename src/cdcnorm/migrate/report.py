"""`cdcnorm compare`: run the comparison, decide a verdict per table, and write the reports.

The JSON report is the contract (the terminal summary in `cdcnorm.cli.compare` and the HTML report are views
of it); every number in it is an aggregate computed by Spark, every sample a bounded `limit(n)`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from pyspark.sql import SparkSession

from cdcnorm._version import __version__
from cdcnorm.errors import UsageError
from cdcnorm.migrate.final_state import applied_states, diff_state
from cdcnorm.migrate.latency import freshness_gap, side_overview
from cdcnorm.migrate.sides import TablePair, TableRef, match_tables, open_side
from cdcnorm.migrate.streams import compare_stream

Progress = Callable[[str], None]


def compare(spark: SparkSession, left: str, right: str, left_vendor: str | None = None,
            right_vendor: str | None = None, tables: list[str] | None = None,
            table_map: dict[str, str] | list[str] | None = None, tolerance_s: float = 1.0, samples: int = 10,
            max_lag_s: float | None = None, progress: Progress | None = None) -> dict[str, Any]:
    """Compare two vendors' canonical streams of the same source tables; returns the JSON report.

    `left`/`right` are lakes (the same lake twice is fine); a vendor is `V` or `V:STREAM`. `tolerance_s` is how
    far apart two vendors' source times of one change may be; `max_lag_s` (optional) makes a right side whose
    p95 lag behind the left exceeds it a difference.
    """
    say = progress or (lambda _m: None)
    started = dt.datetime.now(dt.UTC)
    say("reading both sides")
    ls = open_side(spark, "left", left, left_vendor, right, right_vendor)
    rs = open_side(spark, "right", right, right_vendor, left, left_vendor)
    if ls.lake.rstrip("/") == rs.lake.rstrip("/") and ls.vendor == rs.vendor and ls.stream == rs.stream:
        raise UsageError(f"Both sides are {ls.spec} in {ls.lake}: name two vendors (or streams) to compare.")
    pairs, only_left, only_right = match_tables(ls.tables, rs.tables, tables, table_map)
    if not pairs and not only_left and not only_right:
        raise UsageError("No table to compare.")
    say("measuring windows, latency and freshness")
    overview = {"left": side_overview(ls), "right": side_overview(rs)}
    say("applying both sides")
    states = applied_states(spark, [ls, rs], pairs)
    results = []
    for pair in pairs:
        say(f"comparing {pair.name}")
        results.append(_compare_table(pair, ls, rs, overview, states, tolerance_s, samples, max_lag_s))
    report = _report(ls, rs, results, only_left, only_right, overview, tolerance_s, max_lag_s, started)
    return report


def _compare_table(pair: TablePair, ls, rs, overview, states, tol: float, samples: int,
                   max_lag_s: float | None) -> dict[str, Any]:
    state = diff_state(pair, states[("left", pair.left)], states[("right", pair.right)], samples)
    stream = compare_stream(pair, ls, rs, overview, states, tol, samples)
    latency = {
        "left": overview["left"]["per_table"].get((pair.left.stream, *pair.left.ident)),
        "right": overview["right"]["per_table"].get((pair.right.stream, *pair.right.ident)),
        "lag": stream.pop("lag", None),
    }
    verdict, reasons, notes = table_verdict(state, stream, latency, max_lag_s)
    return {"name": pair.name, "left": pair.left.as_dict(), "right": pair.right.as_dict(),
            "matched_by": pair.matched_by, "verdict": verdict, "equal": verdict != "differs", "reasons": reasons,
            "notes": notes, "state": state, "stream": stream, "latency": latency}


def _n(count: int, what: str) -> str:
    return f"{count} {what}" if count == 1 else f"{count} {what}s"


def table_verdict(state: dict[str, Any], stream: dict[str, Any], latency: dict[str, Any],
                  max_lag_s: float | None) -> tuple[str, list[str], list[str]]:
    """`equal`, `equal (lossy: ...)` or `differs`, the reasons for a difference, and informational notes."""
    reasons: list[str] = []
    if state.get("error"):
        reasons.append(f"final state: {state['error']}")
    for side in ("left", "right"):
        if state.get(f"rows_only_{side}"):
            reasons.append(f"{_n(state[f'rows_only_{side}'], 'row')} only on the {side}")
    if state.get("rows_differing"):
        cols = ", ".join(f"{c['name']} ({c['unequal']})" for c in state["columns"] if c["unequal"])
        reasons.append(f"{_n(state['rows_differing'], 'row')} with differing values: {cols}")
    for side in ("left", "right"):
        if state.get(f"columns_only_{side}"):
            reasons.append(f"columns only on the {side}: {', '.join(state[f'columns_only_{side}'])}")
    for side in ("left", "right"):
        if stream.get(f"only_{side}"):
            reasons.append(f"{_n(stream[f'only_{side}'], 'change')} only on the {side}")
    if stream.get("op_mismatch"):
        reasons.append(f"{_n(stream['op_mismatch'], 'matched change')} with a different op")
    if stream.get("image_differs"):
        cols = ", ".join(f"{k} ({v})" for k, v in stream["image_columns"].items())
        reasons.append(f"{_n(stream['image_differs'], 'matched change')} with differing values: {cols}")
    if stream.get("inversions", {}).get("between"):
        reasons.append(f"{_n(stream['inversions']['between'], 'ordering inversion')} between the vendors")
    lag = latency.get("lag") or {}
    if max_lag_s is not None and lag.get("p95") is not None and lag["p95"] > max_lag_s:
        reasons.append(f"the right side lags by {lag['p95']:.3f}s at p95 (limit {max_lag_s}s)")
    notes = _notes(stream, lag)
    if reasons:
        return "differs", reasons, notes
    lossy = state.get("lossy") or []
    return (f"equal (lossy: {', '.join(lossy)})" if lossy else "equal"), [], notes


def _notes(stream: dict[str, Any], lag: dict[str, Any]) -> list[str]:
    notes = []
    if stream.get("note"):
        notes.append(stream["note"])
    for side in ("left", "right"):
        if stream.get("duplicates", {}).get(side):
            notes.append(f"{side} vendor delivered {_n(stream['duplicates'][side], 'duplicate')} (kept once in the lake)")
        if stream.get("inversions", {}).get(side):
            notes.append(f"{side}: {_n(stream['inversions'][side], 'change')} out of source-time order")
        edge = stream.get("unmatched_at_edges", {}).get(side)
        if edge:
            notes.append(f"{side}: {_n(edge, 'change')} at the window edges without a partner (not counted)")
    if lag.get("p50") is not None and abs(lag["p50"]) >= 1.0:
        who = "right" if lag["p50"] > 0 else "left"
        notes.append(f"the {who} vendor captures {abs(lag['p50']):.3f}s later (p50 lag)")
    snap = stream.get("snapshot") or {}
    if snap.get("left_rows") or snap.get("right_rows"):
        notes.append(f"backfill: {snap.get('left_keys', 0)} keys left, {snap.get('right_keys', 0)} keys right, "
                     f"{snap.get('keys_both', 0)} in both")
    return notes


def findings(tables: list[dict[str, Any]], only_left: list[dict], only_right: list[dict]) -> list[dict[str, Any]]:
    """Every difference the samples pinpoint, flattened: table, kind, key, column, detail."""
    out: list[dict[str, Any]] = []

    def add(table: str, kind: str, key: Any = None, column: str | None = None, **detail: Any) -> None:
        out.append({"table": table, "kind": kind, "key": key, "column": column, "detail": detail})

    for t in only_left:
        add(t["name"], "table_only_left")
    for t in only_right:
        add(t["name"], "table_only_right")
    for t in tables:
        name, st, sm = t["name"], t["state"], t["stream"]
        smp = st.get("samples", {})
        for side in ("left", "right"):
            for s in smp.get(f"only_{side}", []):
                add(name, f"row_only_{side}", s["key"], row=s["row"])
            for col in st.get(f"columns_only_{side}", []):
                add(name, f"column_only_{side}", None, col)
        for col, rows in smp.get("values", {}).items():
            for s in rows:
                add(name, "value_differs", s["key"], col, left=s["left"], right=s["right"])
        ss = sm.get("samples", {})
        for side in ("left", "right"):
            for s in ss.get(f"only_{side}", []):
                add(name, f"change_only_{side}", s["key"], op=s["op"], source_ts=s["source_ts"], position=s["position"])
        for s in ss.get("op_mismatch", []):
            add(name, "op_mismatch", s["key"], source_ts=s["source_ts"], left=s["left"], right=s["right"])
        for col, rows in ss.get("image", {}).items():
            for s in rows:
                add(name, "change_value_differs", s["key"], col, source_ts=s["source_ts"], left=s["left"], right=s["right"])
        for s in ss.get("inversions", []):
            add(name, "order_inversion", s["key"], source_ts=s["source_ts"])
        lag = (t.get("latency") or {}).get("lag") or {}
        if lag.get("p50") is not None and abs(lag["p50"]) >= 1.0:
            add(name, "lag", None, None, side="right" if lag["p50"] > 0 else "left", p50_s=lag["p50"], max_s=lag["max"])
    return out


def _report(ls, rs, results, only_left: list[TableRef], only_right: list[TableRef], overview, tol: float,
            max_lag_s: float | None, started: dt.datetime) -> dict[str, Any]:
    ol, orr = [r.as_dict() for r in only_left], [r.as_dict() for r in only_right]
    equal = all(t["equal"] for t in results) and not ol and not orr
    lossy = sorted({r for t in results for r in (t["state"].get("lossy") or [])})
    sides = {}
    for label, side in (("left", ls), ("right", rs)):
        ov = overview[label]
        sides[label] = {"lake": side.lake, "vendor": side.vendor, "stream": side.stream,
                        "window": [ov["start"].isoformat() if ov["start"] else None,
                                   ov["end"].isoformat() if ov["end"] else None],
                        "rows": ov["rows"], "freshness": ov["freshness"], "latency": ov["latency"],
                        "latency_histogram": ov["histogram"]}
    lags = [t["latency"]["lag"] for t in results if t["latency"].get("lag") and t["latency"]["lag"].get("count")]
    report = {
        "report": "cdcnorm.compare", "report_version": 1, "cdcnorm_version": __version__,
        "generated_at": started.isoformat(),
        "verdict": ("equal (lossy: " + ", ".join(lossy) + ")" if lossy else "equal") if equal else "differs",
        "equal": equal,
        "options": {"tolerance_s": tol, "max_lag_s": max_lag_s},
        "left": sides["left"], "right": sides["right"],
        "freshness": {"right_behind_left_s": freshness_gap(overview["left"], overview["right"])},
        "lag": {"tables": len(lags), "max_p50": max((x["p50"] for x in lags), default=None),
                "max": max((x["max"] for x in lags), default=None)},
        "tables": results,
        "unmatched_tables": {"left": ol, "right": orr},
        "summary": {
            "tables": len(results), "equal": sum(1 for t in results if t["equal"]),
            "differs": sum(1 for t in results if not t["equal"]), "only_left": len(ol), "only_right": len(orr),
        },
    }
    report["findings"] = findings(results, ol, orr)
    return report


# -- output -------------------------------------------------------------------------------------------------
def to_json(report: dict[str, Any]) -> str:
    return orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=str).decode()


def write_reports(report: dict[str, Any], report_dir: str) -> dict[str, str]:
    """`compare.json` and the self-contained `compare.html` in `report_dir` (local folder)."""
    from cdcnorm.migrate.html import render_html

    out = Path(report_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": str(out / "compare.json"), "html": str(out / "compare.html")}
    Path(paths["json"]).write_text(to_json(report))
    Path(paths["html"]).write_text(render_html(report), encoding="utf-8")
    return paths
