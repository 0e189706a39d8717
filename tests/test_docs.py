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


def _python_blocks(text: str) -> list[str]:
    """The ```python blocks of a Markdown text, those indented in list items included (dedented)."""
    import re
    import textwrap

    return [textwrap.dedent(body) for _, body in re.findall(r"^([ \t]*)```python\n(.*?)^\1```", text, re.S | re.M)]


def test_every_cdcnorm_import_in_the_docs_python_blocks_resolves():
    """`from cdcnorm.x import y` and `import cdcnorm.x` lines of ```python blocks in README.md and docs/ import."""
    import re

    imports = re.compile(r"^\s*(?:from\s+(cdcnorm(?:\.\w+)*)\s+import\s+\(?([\w\s,]+)\)?|import\s+(cdcnorm[\w.]*(?:\s+as\s+\w+)?"
                         r"(?:\s*,\s*[\w.]+(?:\s+as\s+\w+)?)*))\s*(?:#.*)?$", re.M)
    checked, missing = [], []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for block in _python_blocks(path.read_text(encoding="utf-8")):
            for m in imports.finditer(block):
                if m.group(1):
                    names = [f"{m.group(1)}.{n.split(' as ')[0].strip()}" for n in m.group(2).split(",") if n.strip()]
                else:
                    names = [n.split(" as ")[0].strip() for n in m.group(3).split(",")]
                    names = [n for n in names if n.startswith("cdcnorm")]
                for name in names:
                    checked.append(name)
                    try:
                        _resolve(name)
                    except (AttributeError, ModuleNotFoundError):
                        missing.append(f"{path.relative_to(ROOT)}: {name}")
    assert {"cdcnorm.runtime.session.get_spark", "cdcnorm.ingest.sources.EVENT_HUBS_COLUMNS",
            "cdcnorm.testing.AdapterContract"} <= set(checked)
    assert not missing, f"the docs' Python blocks import names that do not exist: {missing}"


def test_architecture_picture_names_real_modules():
    """Every package or module the picture in docs/architecture.md names (`runtime.fs`, `lake.commit`, `state`,
    ...) exists under `cdcnorm`, and the picture follows a record through the whole flow in order."""
    import re

    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    picture = re.search(r"^```\n(.*?)^```", text, re.S | re.M).group(1)
    packages = {p.name for p in (ROOT / "src" / "cdcnorm").iterdir() if (p / "__init__.py").is_file()}
    alternatives = "|".join(sorted(packages))
    dotted = set(re.findall(rf"\b((?:{alternatives})(?:\.[a-z_]+)+)\b", picture))
    leading = set(re.findall(r"^  ([a-z_.]+) \.\.", picture, re.M))
    missing = []
    for name in sorted(dotted | leading):
        try:
            _resolve(f"cdcnorm.{name}")
        except (AttributeError, ModuleNotFoundError):
            missing.append(name)
    assert not missing, f"the architecture picture names modules that do not exist: {missing}"
    flow = ["runtime.fs", "ingest.sources", "adapters", "ingest.pairing", "lake.dedup", "lake.commit", "lake.store",
            "state", "LAKE/current/"]
    where = [picture.index(step) for step in flow]
    assert where == sorted(where), "the picture's steps are out of order"
    assert "migrate" in picture and {"containers", "canonical", "streaming", "ingest.pipeline"} <= set(
        re.findall(r"[a-z_.]+", picture))


def test_package_tour_paths_exist():
    """The files and folders the README's Development section names (`ingest/sources.py`, `lake/delta/`, ...)
    exist under src/cdcnorm/ (or the repository)."""
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Development"):]
    paths = set(re.findall(r"`([a-z_]+(?:/[a-z_]+)*(?:/|\.py))`", section))
    assert {"ingest/sources.py", "lake/commit.py", "runtime/session.py", "lake/delta/"} <= paths
    missing = [p for p in sorted(paths) if not ((ROOT / "src" / "cdcnorm" / p).exists() or (ROOT / p).exists())]
    assert not missing, f"the README's package tour names paths that do not exist: {missing}"
