"""The command line as a user runs it: a real subprocess, real exit codes, one-line errors."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT


def run(*args: str, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cdcnorm.cli", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


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
