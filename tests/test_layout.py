"""The layout rules of docs/architecture.md, checked: no import circles (imports for type checking and lazy ones
count), nothing imports the package root from below, few loose modules at the package's top, and no module over
~500 lines without a written reason at its top."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "cdcnorm"
LONG = 520
REASON = "Why this module is long:"


def _modules() -> dict[str, Path]:
    mods = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


def _imports(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    """Modules `path` imports: at module level, lazily inside functions, or under `if TYPE_CHECKING:`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def resolve(mod: str | None, level: int) -> str | None:
        if not level:
            return mod
        base = name.split(".") if is_package else name.split(".")[:-1]
        base = base[: len(base) - (level - 1)]
        return ".".join(base + ([mod] if mod else []))

    def visit(nodes: list[ast.AST]) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.startswith("cdcnorm"))
            elif isinstance(node, ast.ImportFrom):
                mod = resolve(node.module, node.level)
                if mod and mod.startswith("cdcnorm"):
                    for a in node.names:
                        found.add(f"{mod}.{a.name}" if f"{mod}.{a.name}" in modules else mod)
            else:
                visit(list(ast.iter_child_nodes(node)))

    visit(tree.body)
    return {m for m in found if m in modules and m != name}


def test_no_import_circles():
    modules = _modules()
    graph = {name: _imports(path, name, modules) for name, path in modules.items()}
    cycles = []
    state: dict[str, int] = {}

    def walk(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [node, nxt]) if nxt in stack
                              else f"{node} -> {nxt}")
            elif nxt not in state:
                walk(nxt, [*stack, node])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            walk(name, [])
    assert cycles == []


LOOSE_MODULES = {"__init__", "__main__", "_version", "errors", "demo"}
"""The modules that may sit at the package's top: entry points, the version, the errors, the demo; every other
module lives in a package that says its job (at most three more may join, docs/architecture.md)."""


def test_few_loose_modules_at_the_top():
    loose = {path.stem for path in PACKAGE.glob("*.py")}
    assert loose - LOOSE_MODULES == set()
    assert len(loose) <= len(LOOSE_MODULES) + 3


def _imports_root(node: ast.AST) -> bool:
    """`import cdcnorm`, or `from cdcnorm import name` where the name is not a submodule."""
    if isinstance(node, ast.Import):
        return any(a.name == "cdcnorm" for a in node.names)
    if isinstance(node, ast.ImportFrom) and node.module == "cdcnorm" and node.level == 0:
        return any(not (PACKAGE / a.name).exists() and not (PACKAGE / f"{a.name}.py").exists() for a in node.names)
    return False


def test_nothing_imports_the_package_root_from_below():
    offenders = sorted({str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
                        if path != PACKAGE / "__init__.py"
                        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if _imports_root(node)})
    assert offenders == []


def test_long_modules_say_why():
    unexplained = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        if len(lines) > LONG and REASON not in "\n".join(lines[:40]):
            unexplained.append(f"{path.relative_to(PACKAGE)}: {len(lines)} lines")
    assert unexplained == []
