"""The documentation of the canonical record is generated from the code and must not drift."""

from __future__ import annotations

from cdcnorm.canonical.doc import render
from conftest import ROOT


def test_canonical_doc_matches_code():
    text = (ROOT / "docs" / "canonical.md").read_text(encoding="utf-8")
    assert render(text) == text, "run: python -m cdcnorm.canonical.doc docs/canonical.md"


def test_readme_test_command_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "make test" in readme and "make demo" in readme
    assert [line for line in ci.splitlines() if line and not line.startswith("#")][-1] == "make test"
