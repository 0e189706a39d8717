"""The compare report's chart labels fit their charts: long table names are neither cut at the edge nor overlap.

The report is rendered from a small hand-made compare report (no Spark) with table names from 2 to 70
characters, opened in headless chromium (installed as tests/test_compare_html.py does; these run with `make test-slow`, as
that module does), and measured there: a
script the test appends records each chart text's box relative to its SVG's box after the charts are drawn.
"""

from __future__ import annotations

import re

import pytest

from cdcnorm.migrate.html import render_html
from test_compare_html import _run, chromium  # noqa: F401 - the session fixture that installs the browser

LONG = "SALES_REPORTING_DATAMART.CUSTOMER_ORDER_LINE_ITEMS_HISTORY_ARCHIVE_2024"
NAMES = ["T1", "ORDERS", "inventory.products", LONG, "dbo.customers_with_a_longer_name"]

MEASURE = """<script>
window.addEventListener('load', function () {
  document.querySelectorAll('figure.chart svg').forEach(function (svg) {
    var box = svg.getBoundingClientRect();
    svg.querySelectorAll('text').forEach(function (t) {
      var r = t.getBoundingClientRect();
      t.setAttribute('data-box', [r.left - box.left, r.top - box.top, box.right - r.right, box.bottom - r.bottom,
                                  r.width].map(function (v) { return v.toFixed(2); }).join(' '));
    });
  });
  document.body.setAttribute('data-measured', 'done');
});
</script>"""


def _table(i: int, name: str) -> dict:
    n = 10 * (i + 1)
    return {
        "name": name, "matched_by": "name", "verdict": "differs" if i % 2 else "equal", "reasons": [], "notes": [],
        "state": {"rows_left": n, "rows_right": n - i, "rows_in_both": n - i, "rows_equal": n - 2 * i,
                  "rows_only_left": i, "rows_only_right": 0, "rows_differing": i, "key_columns": ["id"],
                  "key_mode": "primary_key", "columns": [], "samples": {}},
        "stream": {"matched": 3 * n, "only_left": i, "only_right": 1, "image_differs": i, "op_mismatch": 0,
                   "matched_by": {"position": 3 * n}, "inversions": {}, "duplicates": {}, "samples": {},
                   "window": {"overlap": ["2024-05-01T10:00:00", "2024-05-01T11:00:00"]},
                   "ops": {side: {"all": {"INSERT": n, "UPDATE": 2 * n, "DELETE": i}} for side in ("left", "right")}},
        "latency": {"lag": {"count": n, "p50": 0.5 * (i + 1), "p95": 1.0 * (i + 1), "max": 2.0 * (i + 1)}},
    }


def _side(vendor: str) -> dict:
    buckets = ["<100ms", "100ms-1s", "1-10s", "10-60s", ">60s"]
    return {"vendor": vendor, "stream": None, "lake": "lake/",
            "latency": {"count": 100, "p50": 0.4, "p95": 2.0, "p99": 5.0, "max": 9.0},
            "freshness": {"newest_change": "2024-05-01T11:00:00", "newest_heartbeat": None},
            "latency_histogram": [{"bucket": b, "count": 10 * (k + 1)} for k, b in enumerate(buckets)]}


def report() -> dict:
    tables = [_table(i, name) for i, name in enumerate(NAMES)]
    return {"verdict": "differs", "generated_at": "2024-05-02T00:00:00", "cdcnorm_version": "test",
            "left": _side("replicate"), "right": _side("datastream"), "tables": tables,
            "unmatched_tables": {"left": [], "right": []}, "findings": [],
            "summary": {"equal": 3, "tables": len(tables)}, "lag": {"max_p50": 2.5},
            "freshness": {"right_behind_left_s": 1.5}}


browser = pytest.mark.slow  # a browser, as tests/test_compare_html.py: `make test-slow`


@pytest.fixture(scope="module")
def dom(chromium, tmp_path_factory):  # noqa: F811 - the fixture imported above
    root = tmp_path_factory.mktemp("labels")
    page = root / "compare.html"
    page.write_text(render_html(report()).replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    done = _run(chromium, root, "--dump-dom", "--window-size=1280,2400", page.resolve().as_uri())
    assert 'data-measured="done"' in done.stdout and 'data-charts="done"' in done.stdout, done.stderr[-2000:]
    return done.stdout


def _chart(dom: str, name: str) -> str:
    m = re.search(rf'<figure class="chart" data-chart="{name}"[^>]*data-rendered="(\w+)"[^>]*>(.*?)</figure>', dom, re.S)
    assert m and m.group(1) == "true", f"chart {name} not drawn"
    return m.group(2)


def _texts(svg: str) -> list[tuple[str, str | None, list[float]]]:
    """(shown text, full text from its <title> or None, [left, top, right, bottom margins, width])."""
    out = []
    for attrs, body in re.findall(r"<text([^>]*)>(.*?)</text>", svg, re.S):
        box = [float(v) for v in re.search(r'data-box="([^"]+)"', attrs).group(1).split()]
        title = re.search(r"<title>(.*?)</title>", body, re.S)
        out.append((re.sub(r"<title>.*?</title>", "", body, flags=re.S), title and title.group(1), box))
    return out


@browser
@pytest.mark.parametrize("chart", ["differences", "opmix", "lag", "latency"])
def test_every_label_is_inside_its_chart(dom, chart):
    texts = _texts(_chart(dom, chart))
    assert texts
    outside = [(shown, box) for shown, _, box in texts if min(box[:4]) < -0.5]
    assert not outside, f"{chart}: labels cross the chart's edge (margins left, top, right, bottom): {outside}"
    assert all(box[4] > 0 for *_, box in texts), "texts were not laid out"


@browser
@pytest.mark.parametrize("chart", ["differences", "opmix", "lag"])
def test_table_names_are_whole_or_cut_with_their_full_name_on_hover(dom, chart):
    labels = [(shown, full) for shown, full, _ in _texts(_chart(dom, chart)) if full]
    fulls = {full.split(" · ")[0] for _, full in labels}
    assert fulls == set(NAMES)
    for shown, full in labels:
        name, _, side = full.partition(" · ")
        whole = shown == full
        cut = "\u2026" in shown and name.startswith(shown.split("\u2026")[0]) and shown.endswith("\u2026" + _ + side)
        assert whole or cut, (shown, full)  # the op mix's side (" · left") stays
    assert all(shown == full for shown, full in labels if len(full.split(" · ")[0]) <= 18), "short names cut"
    assert any(shown != full for shown, full in labels if full.startswith(LONG)), "a 70-character name fits nowhere"


@browser
def test_op_mix_labels_use_the_room_they_need(dom):
    """The op-mix chart's left margin follows its longest label: the long name's row labels start near the edge."""
    texts = _texts(_chart(dom, "opmix"))
    long_rows = [box for shown, full, box in texts if full and full.startswith(LONG)]
    assert long_rows and all(box[0] < 20 for box in long_rows)


def test_html_has_no_measuring_script_of_its_own():
    text = render_html(report())
    assert "data-measured" not in text and "fitLabel" in text
