"""The `cdcnorm` command line (`cdcnorm = "cdcnorm.cli:main"`): the app in :mod:`.program`, one module per command,
exit codes and one-line errors in :mod:`.guard`. Library code never prints or exits; this package does both.
"""

from __future__ import annotations

from cdcnorm.cli.program import app, main

__all__ = ["app", "main"]
