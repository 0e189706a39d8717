"""Exit codes and one-line errors, the same for every command: the one place they are defined.

0 success; 1 ran but found a problem the user asked to fail on (`--strict` quarantines, compare differences, a
refused cut-over); 2 usage error; 3 runtime failure. Every failure prints one line on stderr; `CDCNORM_DEBUG=1`
adds the traceback.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable

import typer

from cdcnorm.cli.output import err

EXIT_OK, EXIT_PROBLEM, EXIT_USAGE, EXIT_RUNTIME = 0, 1, 2, 3


def exit_code_of(exc: BaseException) -> int:
    """Usage errors exit 2; every other failure (lake, decode, Spark/Java) is a runtime failure, 3."""
    from cdcnorm.errors import UsageError

    return EXIT_USAGE if isinstance(exc, UsageError) else EXIT_RUNTIME


def run_guarded(fn: Callable[[], int]) -> None:
    """Run a command, turning every failure into a one-line message and the documented exit code."""
    from cdcnorm.errors import CdcError

    try:
        code = fn()
    except typer.Exit:
        raise
    except CdcError as exc:
        err.print(f"[red]error:[/red] {exc.message}", highlight=False, soft_wrap=True)
        _debug()
        raise typer.Exit(exit_code_of(exc)) from None
    except Exception as exc:  # Spark/Java failures: one readable line, not a stack trace
        err.print(f"[red]error:[/red] {one_line(exc)}", highlight=False, soft_wrap=True)
        _debug()
        raise typer.Exit(EXIT_RUNTIME) from None
    raise typer.Exit(code)


def _debug() -> None:
    if os.environ.get("CDCNORM_DEBUG"):
        traceback.print_exc()


def one_line(exc: Exception) -> str:
    """`Type: first meaningful line` of an exception (Python errors raised on executors carry our tag)."""
    text = str(exc).strip().splitlines()
    first = next((line for line in text if line.strip()), type(exc).__name__)
    for line in text:  # Python errors raised on executors carry our tag inside the Java message
        if "[CDC_" in line or "Error: " in line and "Traceback" not in line:
            first = line.strip()
            break
    return f"{type(exc).__name__}: {first[:500]}"
