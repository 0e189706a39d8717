"""The `cdcnorm` command line (`cdcnorm = "cdcnorm.cli:main"`): the app in :mod:`.program`, one module per command,
exit codes and one-line errors in :mod:`.guard`. Library code never prints or exits; this package does both.
"""

from __future__ import annotations

import os

from cdcnorm.cli.program import app, main

__all__ = ["app", "main", "submit_script"]


def submit_script() -> str:
    """The file to give `spark-submit` to run the command line on a cluster (`cdcnorm/__main__.py`)."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "__main__.py")
