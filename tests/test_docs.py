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


def _resolve(dotted: str) -> object:
    """The object a dotted name in the docs stands for: the longest importable module, then attributes."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return obj
    raise ModuleNotFoundError(dotted)


def test_every_python_name_the_docs_cite_exists():
    """`cdcnorm.x.y` in backquotes in README.md and docs/ names a real module, function or constant."""
    import re

    cited = set()
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        cited |= set(re.findall(r"`(cdcnorm(?:\.[A-Za-z_]\w*)+)", path.read_text(encoding="utf-8")))
    assert "cdcnorm.state.path_component" in cited
    missing = []
    for name in sorted(cited):
        try:
            _resolve(name)
        except (AttributeError, ModuleNotFoundError):
            missing.append(name)
    assert not missing, f"the docs cite names that do not exist: {missing}"


def test_architecture_doc_shows_the_tested_tutorial():
    """docs/architecture.md repeats the tutorial that opens adapters/base.py (which the suite executes)."""
    import re

    root = ROOT
    block = re.compile(r"```python\n.*?```\n", re.S)
    base = block.search((root / "src" / "cdcnorm" / "adapters" / "base.py").read_text(encoding="utf-8")).group(0)
    doc = block.search((root / "docs" / "architecture.md").read_text(encoding="utf-8")).group(0)
    assert doc == base
