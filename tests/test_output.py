"""Tables in CI logs: output that is not a terminal is printed in full; a terminal keeps its width.

Why: rich lays out for 80 columns when stdout is a pipe, which cut names and numbers in CI logs ("vend…").
"""

from __future__ import annotations

import io
import re

import pytest
from rich.table import Table

from cdcnorm.cli.output import RULE_WIDTH, CommandConsole
from conftest import SAMPLES
from lake_reports import run_reports

LONG_STREAM = "ci-log-stream-" + "abcdefghijklmnopqrstuvwxyz0123456789-" * 3 + "end"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _wide_table() -> Table:
    t = Table(title="wide")
    for name in ("vendor_format_with_a_long_header", "records_read_in_total", "quarantined"):
        t.add_column(name)
    t.add_row("x" * 150, "123456789012345", "987654321")
    return t


def _print(file, table: Table) -> str:
    CommandConsole(file=file).print(table)
    return file.getvalue()


def test_a_pipe_gets_every_cell_in_full(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")  # colour forced on in CI must not bring the 80-column cut back
    out = _print(io.StringIO(), _wide_table())
    assert "x" * 150 in out and "123456789012345" in out and "987654321" in out
    assert "vendor_format_with_a_long_header" in out and "…" not in out


def test_an_explicit_columns_is_respected(monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    out = _print(io.StringIO(), _wide_table())
    assert max(len(line) for line in out.splitlines()) == 60


def test_a_terminal_keeps_its_width(monkeypatch):
    monkeypatch.setenv("COLUMNS", "70")
    out = re.sub(r"\x1b\[[0-9;]*m", "", _print(_Tty(), _wide_table()))
    assert max(len(line) for line in out.splitlines()) <= 70 and "x" * 150 not in out


def test_a_rule_stays_one_terminal_line_in_a_log(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    buf = io.StringIO()
    CommandConsole(file=buf).rule("section")
    assert len(buf.getvalue().rstrip("\n")) == RULE_WIDTH


def test_the_normalize_summary_prints_every_name_and_number_to_a_pipe(capsys, monkeypatch):
    from cdcnorm.cli.normalize import print_report

    monkeypatch.delenv("COLUMNS", raising=False)
    table = "a_schema_with_a_long_name.a_table_whose_name_does_not_fit_in_eighty_columns_at_all"
    report = {"run_id": "20261123T000000000000Z-abcdef", "vendor": "replicate", "records_read": 123456789012,
              "outcomes": {"emitted": 123456789000, "duplicate": 11, "quarantined": 1, "filtered": 0,
                           "metadata": 0},
              "reconciled": True, "quarantine_by_reason": {"a_reason_name_that_is_long_enough_to_be_cut": 1},
              "filters_by_rule": {}, "flags": {"before_image_missing_for_some_update_rows": 42},
              "rows_by_table_op": [{"stream": LONG_STREAM, "database": "a_database", "schema": table.split(".")[0],
                                    "table": table.split(".")[1], "op": "UPDATE", "rows": 123456789000}]}
    print_report(report, "/a/lake/folder/whose/path/is/long/enough/to/be/cut/at/eighty/columns/in/a/ci/log")
    out = capsys.readouterr().out
    assert "…" not in out
    for text in (LONG_STREAM, f"a_database.{table}", "a_reason_name_that_is_long_enough_to_be_cut",
                 "before_image_missing_for_some_update_rows", "123456789012", "123456789000",
                 "/in/a/ci/log/runs)", "run 20261123T000000000000Z-abcdef · replicate"):
        assert text in out, text


@pytest.fixture()
def cli(spark, monkeypatch):
    """The CLI in this process on the shared session; CliRunner's stdout is a pipe-like buffer, not a terminal."""
    from typer.testing import CliRunner

    from cdcnorm.cli import app

    monkeypatch.delenv("COLUMNS", raising=False)
    runner = CliRunner()
    return lambda *args: runner.invoke(app, list(args), catch_exceptions=False)


@pytest.mark.slow
def test_normalize_and_quarantine_list_print_full_names_and_numbers_when_piped(cli, spark, tmp_path):

    from cdcnorm.lake.store import read_quarantine

    lake = tmp_path / "a-lake-folder-whose-path-is-long-enough-to-be-cut-at-eighty-columns" / "lake"
    res = cli("normalize", str(SAMPLES / "datastream" / "broken"), "--lake", str(lake), "--stream", LONG_STREAM)
    assert res.exit_code == 0, res.output
    [report] = run_reports(lake)
    out = res.stdout
    assert "…" not in out
    assert LONG_STREAM in out and f"run {report['run_id']} in {lake}/runs" in out
    assert f"run {report['run_id']} · {report['vendor']}" in out
    for name, value in [("read", report["records_read"]), *report["outcomes"].items(),
                        *report["quarantine_by_reason"].items()]:
        assert any(name in line and line.rstrip(" │").endswith(str(value)) for line in out.splitlines()), name
    for row in report["rows_by_table_op"]:
        assert ".".join(p for p in (row["database"], row["schema"], row["table"]) if p) in out

    listing = cli("quarantine", "list", "--lake", str(lake))
    assert listing.exit_code == 0, listing.output
    assert "…" not in listing.stdout
    rows = read_quarantine(spark, str(lake)).select("error_class", "origin.uri", "origin.index", "message").collect()
    assert len(rows) == report["outcomes"]["quarantined"] > 0
    for r in rows:
        assert f"{r['uri']}#{r['index']}" in listing.stdout and r["message"] in listing.stdout
        assert r["error_class"] in listing.stdout
