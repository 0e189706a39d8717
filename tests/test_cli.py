"""The command line as a user runs it: a real subprocess, real exit codes, one-line errors."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT


def run(*args: str, cwd=ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200"}  # a wide terminal, so table cells are not folded
    return subprocess.run([sys.executable, "-m", "cdcnorm.cli", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=600, env=env)


def test_version():
    res = run("--version")
    assert res.returncode == 0 and res.stdout.startswith("cdcnorm ")


def test_unknown_vendor_is_usage_error(tmp_path):
    f = tmp_path / "x.jsonl"
    f.write_text("{}\n")
    res = run("normalize", str(f), "--lake", str(tmp_path / "lake"), "--vendor", "datastrem")
    assert res.returncode == 2
    assert "Did you mean datastream" in res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_missing_input_is_usage_error(tmp_path):
    res = run("normalize", str(tmp_path / "nope"), "--lake", str(tmp_path / "lake"))
    assert res.returncode == 2 and "Input not found" in res.stderr


def test_bad_option_syntax(tmp_path):
    res = run("normalize", str(tmp_path), "--lake", str(tmp_path / "lake"), "--option", "novalue")
    assert res.returncode == 2 and "KEY=VALUE" in res.stderr


def test_missing_arguments_exit_2():
    assert run("normalize").returncode == 2


def test_lake_required_for_quarantine_list(tmp_path):
    res = run("quarantine", "list", "--lake", str(tmp_path / "none"))
    assert res.returncode == 3 and "No cdcnorm lake" in res.stderr


def test_strict_normalize_exits_1_on_quarantine(tmp_path):
    import json

    lake = tmp_path / "lake"
    res = run("normalize", str(ROOT / "samples" / "datastream" / "broken"), "--lake", str(lake), "--strict")
    assert res.returncode == 1, res.stderr
    assert "--strict" in res.stderr and "reconciled" in res.stdout
    [report] = [json.loads(p.read_text()) for p in (lake / "runs").glob("*.json")]
    assert report["reconciled"] and report["outcomes"]["quarantined"] > 0 and report["rows_written"] > 0


@pytest.mark.slow
def test_normalize_datastream_samples_like_a_user(tmp_path):
    """The user flow: normalize, run again (nothing changes), append more, inspect the quarantine."""
    import json

    lake = tmp_path / "lake"
    samples = ROOT / "samples" / "datastream"
    first = run("normalize", str(samples / "shop_orders"), str(samples / "broken"), "--lake", str(lake), "--strict")
    assert first.returncode == 1, first.stderr  # --strict: the broken samples were quarantined
    assert "--strict" in first.stderr and "quarantined" in first.stderr
    assert "reconciled" in first.stdout and "yes" in first.stdout
    reports = sorted((lake / "runs").glob("*.json"))
    r1 = json.loads(reports[0].read_text())
    assert r1["reconciled"] and r1["rows_written"] > 0 and r1["outcomes"]["quarantined"] > 0

    again = run("normalize", str(samples / "shop_orders"), str(samples / "broken"), "--lake", str(lake))
    assert again.returncode == 0, again.stderr
    r2 = json.loads(sorted((lake / "runs").glob("*.json"))[-1].read_text())
    assert r2["rows_written"] == 0 and r2["quarantine_new"] == 0
    assert r2["outcomes"]["duplicate"] == r1["outcomes"]["emitted"] + r1["outcomes"]["duplicate"]

    more = run("normalize", str(samples), "--lake", str(lake), "--vendor", "datastream")
    assert more.returncode == 0, more.stderr
    r3 = json.loads(sorted((lake / "runs").glob("*.json"))[-1].read_text())
    assert 0 < r3["rows_written"] < r3["records_read"]

    listing = run("quarantine", "list", "--lake", str(lake))
    assert listing.returncode == 0 and "bad_json" in listing.stdout and "truncated_avro" in listing.stdout
