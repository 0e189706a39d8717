"""The two terminals every command writes to: results on stdout, errors and progress notes on stderr.

Why the width rule: rich lays out for 80 columns when a stream is not a terminal, so a CI log or a file would get
tables cut to "vend…" / "reco…" and error lines wrapped mid-path. Piped or redirected output is laid out
as wide as its content needs (every name and number whole, one line per table row); an explicit `COLUMNS`
still wins, and a terminal keeps its own width. Rules (`console.rule`) stay at most 80 columns wide.
"""

from __future__ import annotations

import os
from typing import Any

from rich.cells import cell_len
from rich.console import Console, ConsoleDimensions
from rich.errors import MarkupError
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

UNBOUNDED_WIDTH = 100_000
"""The layout width for output that is not a terminal: wider than any table row cdcnorm prints."""
RULE_WIDTH = 80


class CommandConsole(Console):
    """A rich console that prints in full when its stream is not a terminal (see the module docstring)."""

    @property
    def size(self) -> ConsoleDimensions:
        """Decided at each print, so a redirected stream is seen even when it changes after import."""
        size = Console.size.fget(self)
        if self._width is None and not self.writes_to_terminal() and not _columns_set():
            return ConsoleDimensions(UNBOUNDED_WIDTH, size.height)
        return size

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)

    def print(self, *objects: Any, **kwargs: Any) -> None:
        """Print; in an unbounded layout a table is at least as wide as its title, so the title is one line."""
        if self.size.width == UNBOUNDED_WIDTH:
            for obj in objects:
                if isinstance(obj, Table) and obj.title is not None:
                    obj.min_width = max(obj.min_width or 0, _cells(obj.title) + 2)
        super().print(*objects, **kwargs)

    def writes_to_terminal(self) -> bool:
        """Whether the stream itself is a terminal (not rich's `is_terminal`, which `FORCE_COLOR` turns on)."""
        try:
            return self.file.isatty()
        except (AttributeError, ValueError, OSError):
            return False

    def rule(self, title: Any = "", *, characters: str = "─", style: Any = "rule.line",
             align: Any = "center") -> None:
        """A horizontal rule no wider than a terminal line, also in an unbounded-width log."""
        self.print(Rule(title, characters=characters, style=style, align=align), width=min(self.width, RULE_WIDTH))


def _cells(title: Any) -> int:
    """The printed width of a table title (markup does not count)."""
    if isinstance(title, Text):
        return title.cell_len
    try:
        return Text.from_markup(str(title)).cell_len
    except MarkupError:
        return cell_len(str(title))


def _columns_set() -> bool:
    """True when the user fixed the width with `COLUMNS` (rich then uses it, terminal or not)."""
    return os.environ.get("COLUMNS", "").strip().isdigit()


console = CommandConsole(stderr=False)
err = CommandConsole(stderr=True)
