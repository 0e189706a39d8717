"""The HTML compare report, opened in a real headless browser (Debian's chromium): its charts must render.

The browser is installed by the test set-up when missing (`apt-get install -y chromium`, as root on Debian);
if that is impossible the tests fail with the reason, they are never skipped.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cdcnorm.migrate import compare, write_reports
from cdcnorm.migrate.html import render_html
from cdcnorm.migrate.scenario import migration
from test_compare import write_history

pytestmark = pytest.mark.slow  # building the report costs ~40 s: `make test-slow` (the fast suite stays < 10 min)

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
CHARTS = ("differences", "opmix", "latency", "lag")


def _install_chromium() -> str:
    found = shutil.which("chromium")
    if found:
        return found
    steps = (["apt-get", "install", "-y", "chromium"], ["apt-get", "update"], ["apt-get", "install", "-y", "chromium"])
    log = []
    for cmd in steps:
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                                  env={"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.append(f"{' '.join(cmd)}: {exc}")
            continue
        log.append(f"{' '.join(cmd)}: exit {done.returncode} {done.stderr.strip()[-300:]}")
        if shutil.which("chromium"):
            return shutil.which("chromium")  # type: ignore[return-value]
    pytest.fail("The HTML report test needs Debian's `chromium` and could not install it (run as root on Debian "
                "with package access, or `apt-get install -y chromium` first):\n" + "\n".join(log))


@pytest.fixture(scope="session")
def chromium() -> str:
    return _install_chromium()


def _run(browser: str, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp / "profile"
    cmd = [browser, *FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=10000", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def report_file(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("html")
    history = write_history(spark, root, changes=24)
    lake = str(root / "lake")
    migration(spark, history, lake, overlap=(0.0, 1.0), drop_change=True, change_value=True, delay_s=2.5)
    report = compare(spark, lake, lake, left_vendor="replicate", right_vendor="datastream")
    paths = write_reports(report, str(root / "report"))
    return Path(paths["html"]), report


def test_report_is_self_contained(report_file):
    path, report = report_file
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", text)
    assert "<link" not in text and "@import" not in text and "fetch(" not in text
    assert text.count('<figure class="chart"') == len(CHARTS)
    assert report["verdict"] == "differs" and "Findings (" in text


def test_charts_render_in_headless_chromium(chromium, report_file, tmp_path):
    path, _ = report_file
    done = _run(chromium, tmp_path, "--dump-dom", path.resolve().as_uri())
    dom = done.stdout
    assert done.returncode == 0 and 'data-charts="done"' in dom, done.stderr[-2000:]
    for chart in CHARTS:
        m = re.search(rf'<figure class="chart" data-chart="{chart}"[^>]*data-rendered="(\w+)"[^>]*>(.*?)</figure>', dom, re.S)
        assert m, f"chart {chart} missing"
        assert m.group(1) == "true", f"chart {chart}: {m.group(1)}"
        assert "<svg" in m.group(2) and "<rect" in m.group(2), f"chart {chart} drew no bars"
    assert 'data-rendered="error"' not in dom


def test_screenshot(chromium, report_file, tmp_path):
    path, _ = report_file
    png = tmp_path / "report.png"
    done = _run(chromium, tmp_path, f"--screenshot={png}", "--window-size=1280,1800", "--hide-scrollbars",
                path.resolve().as_uri())
    assert png.exists() and png.stat().st_size > 20_000, done.stderr[-2000:]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_embedded_data_cannot_close_the_script(report_file):
    _, report = report_file
    evil = {**report, "left": {**report["left"], "stream": "</script><script>alert(1)</script>"}}
    text = render_html(evil)
    assert text.count("</script>") == 2  # the data block and the chart script, nothing injected
