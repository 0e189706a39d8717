"""The self-contained HTML compare report: tables rendered here, charts drawn as inline SVG by inline script.

Why self-contained: the report is attached to migration tickets and CI runs and must open offline, so styles,
script and data are all in the one file and nothing is fetched. The JSON report is embedded verbatim (the
page's charts read it); every chart marks itself `data-rendered="true"` once drawn, which the browser test
checks.
"""

from __future__ import annotations

import html
from typing import Any

import orjson

_CSS = """
:root { --left: #3b6fb6; --right: #e08a2c; --ok: #2e7d32; --bad: #c62828; --muted: #666; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; color: #222; background: #f6f7f9; }
header { background: #1f2a3a; color: #fff; padding: 18px 28px; }
header h1 { margin: 0 0 4px; font-size: 20px; font-weight: 600; }
header .sides { opacity: .85; }
main { padding: 20px 28px 40px; max-width: 1280px; }
.verdict { display: inline-block; padding: 3px 10px; border-radius: 12px; font-weight: 600; color: #fff; }
.verdict.equal { background: var(--ok); } .verdict.differs { background: var(--bad); }
.cards { display: flex; gap: 14px; flex-wrap: wrap; margin: 16px 0; }
.card { background: #fff; border-radius: 8px; padding: 12px 16px; box-shadow: 0 1px 2px rgba(0,0,0,.08); min-width: 150px; }
.card .n { font-size: 22px; font-weight: 600; } .card .l { color: var(--muted); font-size: 12px; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(560px, 1fr)); gap: 16px; }
figure.chart { background: #fff; border-radius: 8px; margin: 0; padding: 12px 14px; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
figure.chart figcaption { font-weight: 600; margin-bottom: 6px; }
section { background: #fff; border-radius: 8px; padding: 12px 16px; margin: 16px 0; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
h2 { font-size: 16px; margin: 4px 0 10px; } h3 { font-size: 14px; margin: 14px 0 6px; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid #e6e8eb; vertical-align: top; }
th { background: #fafbfc; font-weight: 600; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; background: #f1f3f5; padding: 1px 4px; border-radius: 3px; word-break: break-all; }
.muted { color: var(--muted); } .bad { color: var(--bad); } .ok { color: var(--ok); }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
.legend span { display: inline-block; margin-right: 12px; font-size: 12px; }
.legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; border-radius: 2px; }
"""

_JS = r"""
(function () {
  var report = JSON.parse(document.getElementById('report-data').textContent);
  var NS = 'http://www.w3.org/2000/svg';
  var COLORS = {left: '#3b6fb6', right: '#e08a2c', INSERT: '#43a047', UPDATE: '#1e88e5', DELETE: '#e53935',
    SNAPSHOT: '#8e24aa', TRUNCATE: '#6d4c41', DDL: '#546e7a', HEARTBEAT: '#9e9e9e'};
  var PALETTE = ['#3b6fb6', '#e08a2c', '#43a047', '#e53935', '#8e24aa', '#00897b', '#6d4c41', '#fdd835'];
  function el(name, attrs, parent, text) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function color(name, i) { return COLORS[name] || PALETTE[i % PALETTE.length]; }
  function legend(fig, names) {
    var div = document.createElement('div'); div.className = 'legend';
    names.forEach(function (n, i) {
      var s = document.createElement('span'); var b = document.createElement('i');
      b.style.background = color(n, i); s.appendChild(b); s.appendChild(document.createTextNode(n)); div.appendChild(s);
    });
    fig.appendChild(div);
  }
  // Labels are measured where they are drawn (an estimate where the page has no layout), and cut with an
  // ellipsis beyond `max` user units; the full text is the label's <title> (shown on hover).
  function textWidth(svg, s) {
    var t = el('text', {x: 0, y: -100}, svg, s), w = 0;
    try { w = t.getComputedTextLength(); } catch (e) { w = 0; }
    svg.removeChild(t);
    return w > 0 ? w : s.length * 6.6;
  }
  function fitLabel(svg, s, max, suffix) {  // a suffix (e.g. the side) is kept whole; the name is cut
    s = String(s); suffix = suffix || '';
    var w = textWidth(svg, s + suffix);
    if (w <= max) return {text: s + suffix, full: s + suffix, width: w};
    var lo = 0, hi = s.length - 1;
    while (lo < hi) {
      var mid = (lo + hi + 1) >> 1;
      if (textWidth(svg, s.slice(0, mid) + '\u2026' + suffix) <= max) lo = mid; else hi = mid - 1;
    }
    var cut = s.slice(0, lo) + '\u2026' + suffix;
    return {text: cut, full: s + suffix, width: textWidth(svg, cut)};
  }
  function label(svg, attrs, fit) {
    var t = el('text', attrs, svg, fit.text);
    el('title', {}, t, fit.full);
    return t;
  }
  function widest(fits) { var m = 0; fits.forEach(function (f) { if (f.width > m) m = f.width; }); return m; }
  function empty(fig, msg) {
    var p = document.createElement('p'); p.className = 'muted'; p.textContent = msg; fig.appendChild(p);
    el('svg', {width: 1, height: 1}, fig);
  }
  // Grouped vertical bars: categories on x, one bar per series. Category labels are turned 30 degrees; the
  // bottom margin holds the longest, the left margin the first ones (a label reaches left of its bar group).
  function grouped(fig, cats, series, unit) {
    var W = 560, ph = 176, T = 10, MAXL = 150, SIN = 0.5, COS = 0.866;
    var max = 0; series.forEach(function (s) { s.values.forEach(function (v) { if (v > max) max = v; }); });
    if (!cats.length || max === 0) { empty(fig, 'nothing to show'); legend(fig, series.map(function (s) { return s.name; })); return; }
    if (unit !== 's') max = Math.max(4, Math.ceil(max / 4) * 4);  // counts: whole-number ticks
    var svg = el('svg', {width: '100%', role: 'img'}, fig);
    var fits = cats.map(function (c) { return fitLabel(svg, c, MAXL); });
    var L = 48, gw;
    for (var pass = 0; pass < 12; pass++) {  // the left end of label i: L + (i + .5) * gw - width * cos - 4.5 >= 2
      gw = (W - L - 8) / cats.length;
      var need = 48;
      fits.forEach(function (f, i) { need = Math.max(need, Math.ceil(f.width * COS + 6.5 - (i + 0.5) * gw)); });
      if (need <= L) break;
      L = need;
    }
    var B = Math.max(54, Math.ceil(14 + widest(fits) * SIN + 8)), H = T + ph + B;
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    var bw = Math.max(2, (gw - 8) / series.length);
    for (var t = 0; t <= 4; t++) {
      var y = T + ph - ph * t / 4; el('line', {x1: L, x2: W - 8, y1: y, y2: y, stroke: '#e6e8eb'}, svg);
      el('text', {x: L - 4, y: y + 4, 'text-anchor': 'end'}, svg, fmt(max * t / 4, unit));
    }
    cats.forEach(function (c, i) {
      series.forEach(function (s, j) {
        var v = s.values[i] || 0, h = ph * v / max;
        var r = el('rect', {x: L + i * gw + 4 + j * bw, y: T + ph - h, width: bw - 1, height: h, fill: color(s.name, j)}, svg);
        el('title', {}, r, s.name + ' · ' + c + ': ' + fmt(v, unit));
      });
      var lx = L + i * gw + gw / 2, ly = T + ph + 14;
      label(svg, {x: lx, y: ly, 'text-anchor': 'end', transform: 'rotate(-30 ' + lx + ' ' + ly + ')'}, fits[i]);
    });
    legend(fig, series.map(function (s) { return s.name; }));
  }
  // Horizontal stacked bars: one row per name (and suffix), segments by key. The left margin is the longest label's width
  // (labels beyond half the chart are cut), the right margin the widest total's.
  function stacked(fig, rows, keys) {
    var W = 560, rowH = 20, T = 6;
    var H = T + rows.length * (rowH + 6) + 20;
    if (!rows.length) { empty(fig, 'nothing to show'); return; }
    var svg = el('svg', {viewBox: '0 0 ' + W + ' ' + H, width: '100%', role: 'img'}, fig);
    var fits = rows.map(function (r) { return fitLabel(svg, r.name, W / 2 - 12, r.suffix); });
    var L = Math.max(60, Math.ceil(widest(fits)) + 12);
    var totals = rows.map(function (r) { var s = 0; keys.forEach(function (k) { s += r.values[k] || 0; }); return s; });
    var max = Math.max.apply(null, totals.concat([0]));
    var R = Math.ceil(textWidth(svg, String(max))) + 10;
    rows.forEach(function (r, i) {
      var y = T + i * (rowH + 6), x = L;
      label(svg, {x: L - 6, y: y + 14, 'text-anchor': 'end'}, fits[i]);
      keys.forEach(function (k, j) {
        var v = r.values[k] || 0; if (!v) return;
        var w = (W - L - R) * v / (max || 1);
        var rect = el('rect', {x: x, y: y, width: w, height: rowH, fill: color(k, j)}, svg);
        el('title', {}, rect, fits[i].full + ' · ' + k + ': ' + v); x += w;
      });
      el('text', {x: x + 4, y: y + 14}, svg, String(totals[i]));
    });
    legend(fig, keys);
  }
  function fmt(v, unit) {
    if (unit === 's') return v < 1 ? (v * 1000).toFixed(0) + 'ms' : v.toFixed(1) + 's';
    return Math.abs(v) >= 10 || v === Math.round(v) ? String(Math.round(v)) : v.toFixed(1);
  }
  var draw = {
    differences: function (fig) {
      var t = report.tables, cats = t.map(function (x) { return x.name; });
      var pick = function (f) { return t.map(function (x) { return f(x) || 0; }); };
      grouped(fig, cats, [
        {name: 'rows only left', values: pick(function (x) { return x.state.rows_only_left; })},
        {name: 'rows only right', values: pick(function (x) { return x.state.rows_only_right; })},
        {name: 'rows differing', values: pick(function (x) { return x.state.rows_differing; })},
        {name: 'changes only left', values: pick(function (x) { return x.stream.only_left; })},
        {name: 'changes only right', values: pick(function (x) { return x.stream.only_right; })},
        {name: 'changes with other values', values: pick(function (x) { return x.stream.image_differs; })}
      ]);
    },
    opmix: function (fig) {
      var rows = [], keys = {};
      report.tables.forEach(function (x) {
        ['left', 'right'].forEach(function (side) {
          var ops = (x.stream.ops && x.stream.ops[side] && x.stream.ops[side].all) || {};
          Object.keys(ops).forEach(function (k) { keys[k] = 1; });
          rows.push({name: x.name, suffix: ' · ' + side, values: ops});
        });
      });
      var order = ['SNAPSHOT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'DDL'];
      var ks = order.filter(function (k) { return keys[k]; }).concat(Object.keys(keys).filter(function (k) { return order.indexOf(k) < 0; }));
      stacked(fig, rows, ks);
    },
    latency: function (fig) {
      var l = report.left.latency_histogram, r = report.right.latency_histogram;
      var first = l.length, last = -1;
      l.forEach(function (b, i) { if (b.count || r[i].count) { if (i < first) first = i; last = i; } });
      var sl = function (h) { return h.slice(first, last + 1); };
      grouped(fig, sl(l).map(function (b) { return b.bucket; }), [
        {name: 'left: ' + report.left.vendor, values: sl(l).map(function (b) { return b.count; })},
        {name: 'right: ' + report.right.vendor, values: sl(r).map(function (b) { return b.count; })}
      ]);
    },
    lag: function (fig) {
      var t = report.tables.filter(function (x) { return x.latency && x.latency.lag && x.latency.lag.count; });
      grouped(fig, t.map(function (x) { return x.name; }), [
        {name: 'lag p50', values: t.map(function (x) { return Math.max(0, x.latency.lag.p50); })},
        {name: 'lag p95', values: t.map(function (x) { return Math.max(0, x.latency.lag.p95); })},
        {name: 'lag max', values: t.map(function (x) { return Math.max(0, x.latency.lag.max); })}
      ], 's');
    }
  };
  function render() {
    var figs = document.querySelectorAll('figure.chart');
    for (var i = 0; i < figs.length; i++) {
      var fig = figs[i];
      try { draw[fig.getAttribute('data-chart')](fig); fig.setAttribute('data-rendered', 'true'); }
      catch (e) { fig.setAttribute('data-rendered', 'error'); fig.appendChild(document.createTextNode('chart failed: ' + e)); }
    }
    document.body.setAttribute('data-charts', 'done');
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', render); else render();
})();
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _side(s: dict[str, Any]) -> str:
    return s["vendor"] + (f":{s['stream']}" if s.get("stream") else "")


def _secs(v: float | None) -> str:
    if v is None:
        return "–"
    return f"{v * 1000:.1f} ms" if abs(v) < 1 else f"{v:.2f} s"


def _table(headers: list[str], rows: list[list[str]], numeric: set[int] | None = None) -> str:
    numeric = numeric or set()
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>"
                                    for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _verdict(v: str) -> str:
    cls = "differs" if v == "differs" else "equal"
    return f'<span class="verdict {cls}">{_e(v)}</span>'


def _overview(report: dict[str, Any]) -> str:
    rows = []
    for t in report["tables"]:
        st, sm = t["state"], t["stream"]
        lag = (t["latency"].get("lag") or {}).get("p50")
        why = "; ".join(t["reasons"]) or '<span class="muted">' + _e("; ".join(t["notes"])) + "</span>"
        rows.append([_e(t["name"]) + ("" if t["matched_by"] == "name" else f' <span class="muted">(by {_e(t["matched_by"])})</span>'),
                     _verdict(t["verdict"]), f"{st.get('rows_left', 0)} / {st.get('rows_right', 0)}",
                     str(sm.get("matched", 0)), _secs(lag), why if t["reasons"] else why])
    for side in ("left", "right"):
        for u in report["unmatched_tables"][side]:
            rows.append([_e(u["name"]), _verdict("differs"), "", "", "", f"table only on the {side}"])
    return _table(["table", "verdict", "rows left / right", "changes matched", "lag p50", "why"], rows, {2, 3, 4})


def _details(t: dict[str, Any]) -> str:
    st, sm = t["state"], t["stream"]
    parts = [f'<section id="t-{_e(t["name"])}"><h2>{_e(t["name"])} {_verdict(t["verdict"])}</h2>']
    if t["notes"]:
        parts.append("<p class='muted'>" + "<br>".join(_e(n) for n in t["notes"]) + "</p>")
    if st.get("error"):
        parts.append(f"<p class='bad'>{_e(st['error'])}</p>")
    summary = [["rows (left / right)", f"{st.get('rows_left', 0)} / {st.get('rows_right', 0)}"],
               ["rows in both / equal", f"{st.get('rows_in_both', 0)} / {st.get('rows_equal', 0)}"],
               ["rows only left / only right", f"{st.get('rows_only_left', 0)} / {st.get('rows_only_right', 0)}"],
               ["rows with differing values", str(st.get("rows_differing", 0))],
               ["key", _e(", ".join(st.get("key_columns", [])) + f" ({st.get('key_mode', '')})")],
               ["changes matched (position / time / nearest)",
                f"{sm.get('matched', 0)} ({' / '.join(str(sm.get('matched_by', {}).get(k, 0)) for k in ('position', 'time', 'nearest'))})"],
               ["changes only left / only right", f"{sm.get('only_left', 0)} / {sm.get('only_right', 0)}"],
               ["op mismatches / differing images", f"{sm.get('op_mismatch', 0)} / {sm.get('image_differs', 0)}"],
               ["ordering inversions (between / left / right)",
                " / ".join(str(sm.get("inversions", {}).get(k, 0)) for k in ("between", "left", "right"))],
               ["duplicates delivered (left / right)",
                f"{sm.get('duplicates', {}).get('left', 0)} / {sm.get('duplicates', {}).get('right', 0)}"],
               ["common window", _e(" → ".join(sm.get("window", {}).get("overlap") or ["none"]))]]
    parts.append(_table(["", ""], summary))
    cols = st.get("columns", [])
    if cols:
        parts.append("<h3>Columns</h3>")
        rows = [[_e(c["name"]), _e(c["left_type"] if c["left_type"] == c["right_type"] else f"{c['left_type']} / {c['right_type']}"),
                 f"<span class='{'bad' if c['unequal'] else ''}'>{c['unequal']}</span>", str(c["null_diff"]),
                 "" if c["max_diff"] is None else f"{c['max_diff']:g}",
                 _e(f"{c['rule']}: {c['explanation']} ({c['lossy_equal']} rows)") if c["rule"] else ""]
                for c in cols]
        parts.append(_table(["column", "type (left / right)", "# unequal", "# null diff", "max diff", "lossy rule"],
                            rows, {2, 3, 4}))
    for side in ("left", "right"):
        if st.get(f"columns_only_{side}"):
            parts.append(f"<p>columns only on the {side}: <code>{_e(', '.join(st[f'columns_only_{side}']))}</code></p>")
    samples = st.get("samples", {})
    for col, rows_ in samples.get("values", {}).items():
        parts.append(f"<h3>Sample of unequal values: {_e(col)}</h3>")
        parts.append(_table(["key", "left", "right"], [[f"<code>{_e(r['key'])}</code>", _e(r["left"]), _e(r["right"])]
                                                       for r in rows_]))
    for side in ("left", "right"):
        if samples.get(f"only_{side}"):
            parts.append(f"<h3>Sample of rows only on the {side}</h3>")
            parts.append(_table(["key", "row"], [[f"<code>{_e(r['key'])}</code>", f"<code>{_e(r['row'])}</code>"]
                                                 for r in samples[f"only_{side}"]]))
    ss = sm.get("samples", {})
    for side in ("left", "right"):
        if ss.get(f"only_{side}"):
            parts.append(f"<h3>Sample of changes only on the {side}</h3>")
            parts.append(_table(["key", "op", "source time", "position"],
                                [[f"<code>{_e(r['key'])}</code>", _e(r["op"]), _e(r["source_ts"]), _e(r["position"])]
                                 for r in ss[f"only_{side}"]]))
    for col, rows_ in ss.get("image", {}).items():
        parts.append(f"<h3>Sample of matched changes with differing {_e(col)}</h3>")
        parts.append(_table(["key", "op", "source time", "left", "right"],
                            [[f"<code>{_e(r['key'])}</code>", _e(r["op"]), _e(r["source_ts"]), _e(r["left"]), _e(r["right"])]
                             for r in rows_]))
    if ss.get("op_mismatch"):
        parts.append("<h3>Sample of op mismatches</h3>")
        parts.append(_table(["key", "source time", "left", "right"],
                            [[f"<code>{_e(r['key'])}</code>", _e(r["source_ts"]), _e(r["left"]), _e(r["right"])]
                             for r in ss["op_mismatch"]]))
    parts.append("</section>")
    return "".join(parts)


def _latency(report: dict[str, Any]) -> str:
    rows = []
    for label in ("left", "right"):
        s = report[label]
        la, fr = s["latency"], s["freshness"]
        rows.append([label, _e(_side(s)), str(la["count"]), _secs(la["p50"]), _secs(la["p95"]), _secs(la["p99"]),
                     _secs(la["max"]), _e(fr["newest_change"] or "–"), _e(fr["newest_heartbeat"] or "–")])
    return _table(["side", "vendor", "changes", "p50", "p95", "p99", "max", "newest change", "newest heartbeat"],
                  rows, {2, 3, 4, 5, 6})


def render_html(report: dict[str, Any]) -> str:
    """The whole report as one HTML document (no external resources)."""
    data = orjson.dumps(report, option=orjson.OPT_NON_STR_KEYS, default=str).decode()
    data = data.replace("</", "<\\/").replace("<!--", "<\\!--")
    s = report["summary"]
    matched = sum(t["stream"].get("matched", 0) for t in report["tables"])
    only = sum(t["stream"].get("only_left", 0) + t["stream"].get("only_right", 0) for t in report["tables"])
    cards = [(f"{s['equal']} / {s['tables']}", "tables equal"), (str(matched), "changes matched"),
             (str(only), "changes on one side only"), (_secs(report["lag"]["max_p50"]), "largest p50 lag"),
             (_secs(report["freshness"]["right_behind_left_s"]), "right behind left (newest change)")]
    card_html = "".join(f'<div class="card"><div class="n">{_e(n)}</div><div class="l">{_e(label)}</div></div>'
                        for n, label in cards)
    charts = "".join(f'<figure class="chart" data-chart="{key}"><figcaption>{_e(title)}</figcaption></figure>'
                     for key, title in (("differences", "Differences per table"), ("opmix", "Op mix per table and side"),
                                        ("latency", "Latency distribution (capture − source time)"),
                                        ("lag", "Lag of the right vendor behind the left, per table")))
    findings = report.get("findings", [])
    finding_rows = [[_e(f["table"]), _e(f["kind"]), f"<code>{_e(f['key'])}</code>" if f["key"] else "", _e(f["column"]),
                     f"<code>{_e(orjson.dumps(f['detail'], default=str).decode())}</code>"] for f in findings[:500]]
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>cdcnorm compare: {_e(_side(report['left']))} vs {_e(_side(report['right']))}</title>
<style>{_CSS}</style></head>
<body>
<header><h1>cdcnorm compare {_verdict(report['verdict'])}</h1>
<div class="sides">left: <b>{_e(_side(report['left']))}</b> in {_e(report['left']['lake'])} · right: <b>{_e(_side(report['right']))}</b>
in {_e(report['right']['lake'])} · generated {_e(report['generated_at'])} · cdcnorm {_e(report['cdcnorm_version'])}</div></header>
<main>
<div class="cards">{card_html}</div>
<section><h2>Verdict per table</h2>{_overview(report)}</section>
<div class="grid">{charts}</div>
<section><h2>Latency and freshness</h2>{_latency(report)}</section>
<section><h2>Findings ({len(findings)})</h2>{_table(["table", "kind", "key", "column", "detail"], finding_rows) if findings else "<p class='ok'>No differences.</p>"}</section>
{"".join(_details(t) for t in report["tables"])}
</main>
<script type="application/json" id="report-data">{data}</script>
<script>{_JS}</script>
</body></html>
"""
