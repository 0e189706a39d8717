"""The two terminals every command writes to: results on stdout, errors and progress notes on stderr."""

from __future__ import annotations

from rich.console import Console

console = Console(stderr=False)
err = Console(stderr=True)
