"""The command line as a user runs it: a real subprocess, real exit codes, one-line errors."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT
from lake_reports import run_reports


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

    lake = tmp_path / "lake"
    res = run("normalize", str(ROOT / "samples" / "datastream" / "broken"), "--lake", str(lake), "--strict")
    assert res.returncode == 1, res.stderr
    assert "--strict" in res.stderr and "reconciled" in res.stdout
    [report] = run_reports(lake)
    assert report["reconciled"] and report["outcomes"]["quarantined"] > 0 and report["rows_written"] > 0


@pytest.mark.slow
def test_normalize_datastream_samples_like_a_user(tmp_path):
    """The user flow: normalize, run again (every file known: nothing read, nothing changes), append more,
    inspect the quarantine."""

    lake = tmp_path / "lake"
    samples = ROOT / "samples" / "datastream"
    first = run("normalize", str(samples / "shop_orders"), str(samples / "broken"), "--lake", str(lake), "--strict")
    assert first.returncode == 1, first.stderr  # --strict: the broken samples were quarantined
    assert "--strict" in first.stderr and "quarantined" in first.stderr
    assert "reconciled" in first.stdout and "yes" in first.stdout
    r1 = run_reports(lake)[0]
    assert r1["reconciled"] and r1["rows_written"] > 0 and r1["outcomes"]["quarantined"] > 0

    again = run("normalize", str(samples / "shop_orders"), str(samples / "broken"), "--lake", str(lake))
    assert again.returncode == 0, again.stderr
    r2 = run_reports(lake)[-1]
    assert r2["rows_written"] == 0 and r2["quarantine_new"] == 0 and r2["records_read"] == 0
    assert r2["files"] == 0 and r2["files_skipped_known"] == r1["files"] > 0
    assert "files skipped (read before)" in again.stdout

    more = run("normalize", str(samples), "--lake", str(lake), "--vendor", "datastream")
    assert more.returncode == 0, more.stderr
    r3 = run_reports(lake)[-1]
    assert 0 < r3["rows_written"] < r3["records_read"]

    listing = run("quarantine", "list", "--lake", str(lake))
    assert listing.returncode == 0 and "bad_json" in listing.stdout and "truncated_avro" in listing.stdout


# -- every command: one line on failure, the traceback with CDCNORM_DEBUG=1 (no Spark needed) --------------------
FAILURES = {
    "normalize": (["normalize", "{tmp}/nope", "--lake", "{tmp}/lake"], 2, "Input not found"),
    "apply": (["apply", "--lake", "{tmp}/none"], 3, "No cdcnorm lake"),
    "compare": (["compare", "--left", "{tmp}/none", "--right", "{tmp}/none"], 3, "No cdcnorm lake"),
    "cutover": (["cutover", "--old", "{tmp}/a", "--new", "{tmp}/b", "--lake", "{tmp}/c", "--at", "soon"], 2,
                "neither 'auto' nor an ISO-8601 time"),
    "cutover-lake": (["cutover", "--old", "{tmp}/a", "--new", "{tmp}/b", "--lake", "{tmp}/c"], 3, "No cdcnorm lake"),
    "simulate": (["simulate", "--out", "{tmp}/sim", "--vendor", "oracle-goldengate"], 2, "unknown vendor"),
    "quarantine-list": (["quarantine", "list", "--lake", "{tmp}/none"], 3, "No cdcnorm lake"),
    "quarantine-show": (["quarantine", "show", "abc", "--lake", "{tmp}/none"], 3, "No cdcnorm lake"),
    "quarantine-retry": (["quarantine", "retry", "--lake", "{tmp}/none"], 3, "No cdcnorm lake"),
}


def _args(name: str, tmp_path) -> list[str]:
    return [a.replace("{tmp}", str(tmp_path)) for a in FAILURES[name][0]]


@pytest.mark.parametrize("name", sorted(FAILURES))
def test_every_command_fails_in_one_line(name, tmp_path, monkeypatch):
    monkeypatch.delenv("CDCNORM_DEBUG", raising=False)
    _, code, message = FAILURES[name]
    res = run(*_args(name, tmp_path))
    assert res.returncode == code, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize("name", sorted(FAILURES))
def test_every_command_shows_the_traceback_with_cdcnorm_debug(name, tmp_path, monkeypatch):
    monkeypatch.setenv("CDCNORM_DEBUG", "1")
    _, code, message = FAILURES[name]
    res = run(*_args(name, tmp_path))
    assert res.returncode == code, res.stderr
    assert res.stderr.startswith("error: ") and message in res.stderr.splitlines()[0]
    assert "Traceback (most recent call last)" in res.stderr


@pytest.mark.parametrize("name", sorted(FAILURES))
def test_failures_that_need_no_spark_come_before_spark_starts(name, tmp_path, monkeypatch):
    """Usage errors and missing local lakes are found before a JVM would start (cf. commit 64a430a)."""
    from typer.testing import CliRunner

    import cdcnorm.runtime.session
    from cdcnorm.cli import app

    def no_spark(*_a, **_k):
        raise AssertionError("Spark was started")

    monkeypatch.setattr(cdcnorm.runtime.session, "get_spark", no_spark)
    _, code, message = FAILURES[name]
    res = CliRunner().invoke(app, _args(name, tmp_path))
    assert res.exit_code == code and message in res.output and "Spark was started" not in res.output


def test_exit_codes_are_defined_once():
    from cdcnorm.cli import guard
    from cdcnorm.errors import CdcError, LakeError, UsageError

    assert (guard.EXIT_OK, guard.EXIT_PROBLEM, guard.EXIT_USAGE, guard.EXIT_RUNTIME) == (0, 1, 2, 3)
    assert guard.exit_code_of(UsageError("x")) == 2 and guard.exit_code_of(LakeError("x")) == 3
    assert guard.exit_code_of(RuntimeError("x")) == 3
    assert not hasattr(CdcError, "exit_code")


def test_import_cdcnorm_and_the_cli_stay_lazy():
    """`cdcnorm --version` must not import pyspark."""
    code = "import sys, cdcnorm, cdcnorm.cli; print(cdcnorm.__version__, 'pyspark' in sys.modules)"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.split()[1] == "False", res.stdout + res.stderr
