"""Docs, comments and docstrings state what the product does and its current figures; the history of the work
is git's. This test reads every tracked text file of README.md, Makefile, docs/, src/, tests/ and benchmarks/
for words that narrate that history: a numbered work session or round, an issue number, a branch name, the
people who did the work. No Spark here.

Product words that only look alike do not count: a Spark session, `--rounds 4` and a bench's warm-up rounds,
the type names int8 / int16 / int32 / int64 (INT1 / INT2 / INT4 / INT96 too), `F.lead`, `interval`."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ["README.md", "Makefile", "docs", "src", "tests", "benchmarks"]
THIS_FILE = Path(__file__).resolve().relative_to(ROOT).as_posix()

_TYPE_WIDTHS = "1|2|4|8|16|32|64|96|128"
"""Widths of integer type names (Spark, Arrow, Parquet, vendor types): `int` and one of them is a type."""

HISTORY = re.compile("|".join([
    r"\bsessions? [0-9]",                            # a numbered work session
    r"\bround [0-9]",                                # a numbered round of work
    r"\bthe lead\b",                                 # the person who led the work
    r"\bhelpers?\b",                                 # people who did work (and, for code: say what it does)
    r"\bissues? #?[0-9]",                            # an issue number
    r"\bissue #",
    r"\bbranch `",                                   # a branch in backquotes ("branch `cold13`")
    r"`[a-z]+[0-9]+` branch\b",                      # ... or after them ("`apply15` branch")
    r"\bbranch int[0-9]+\b",                         # "integration branch int8"
    r"\b(?:kernel|cold|floor|follow|fullapply|apply)[0-9]+\b",  # branch names of the work
    rf"\bint(?!(?:{_TYPE_WIDTHS})\b)[0-9]+\b",       # int13 and the like, never a type name
]), re.IGNORECASE)

ALLOWED = re.compile(r"warm-up rounds?\b|--rounds [0-9]+|\bround 0\b", re.IGNORECASE)
"""Product phrases removed from a line before it is checked (a bench's warm-up rounds, its `--rounds` option,
the warm-up round 0 of its loop)."""


def _tracked() -> list[str]:
    """The scanned paths git tracks (relative, POSIX); every file under them outside a git checkout."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--", *SCANNED], cwd=ROOT, capture_output=True,
                             check=True, timeout=60).stdout
        paths = [p for p in out.decode("utf-8").split("\0") if p]
    except (OSError, subprocess.SubprocessError):
        paths = []
    if not paths:
        found = [p for name in SCANNED for p in [ROOT / name, *sorted((ROOT / name).rglob("*"))]]
        paths = [p.relative_to(ROOT).as_posix() for p in found
                 if p.is_file() and "__pycache__" not in p.parts]
    return sorted(set(paths))


def _text(path: Path) -> str | None:
    """The file as UTF-8 text; None for binary files (a NUL byte, or not UTF-8)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def history_hits(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every line of `text` that narrates the work."""
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1)
            if HISTORY.search(ALLOWED.sub("", line))]


def test_the_patterns_tell_history_from_product_words():
    numbered = "session" + " 13"  # spelt apart, so that `git grep` for a numbered session finds no line here
    history = [f"Measured in {numbered} on the e2e lake", "the second pass (round 2 of the work)",
               "the lead's column map", "helpers in tests/follow_proof.py", "a scalar helper",
               "issue 12's proof", "(issue #4)", "What changed (branch `cold13`):",
               "Full apply (`apply15` branch)", "(integration branch int8)", "# -- fourth round (kernel4) --",
               "measured on int13", "Sessions 7 to 11"]
    product = ["spark.sql.session.timeZone", "one Spark session for the whole run", "a session-wide fixture",
               "3 warm-up rounds", "python benchmarks/small_file.py --rounds 4", "if rnd:  # round 0 warms JVMs",
               "a round trip through Parquet", "int8..int64 (the smallest that fits)", "INT1 / INT4 / INT8",
               "INT96 timestamps", "pa.int32()", "np.int64", "F.lead('sort_key')", "an interval of 5 s",
               "the leading zeros", "no issue with that", "the branches of a union", "follow_floor.py", "_helper_free"]
    assert [t for t in history if not history_hits(t)] == []
    assert [t for t in product if history_hits(t)] == []


def test_no_history_words_in_docs_code_or_tests():
    hits = []
    for rel in _tracked():
        if rel == THIS_FILE:
            continue
        text = _text(ROOT / rel)
        if text is None:
            continue
        hits += [f"{rel}:{n}: {line}" for n, line in history_hits(text)]
    if hits:
        pytest.fail("history of the work in docs, code or tests (state the product fact instead):\n"
                    + "\n".join(hits), pytrace=False)
