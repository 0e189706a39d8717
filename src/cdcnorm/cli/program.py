"""The `cdcnorm` command line: one Typer app, one module per command.

Exit codes and one-line errors are the same for every command (:mod:`cdcnorm.cli.guard`): 0 success; 1 ran but
found a problem the user asked to fail on; 2 usage error; 3 runtime failure. `CDCNORM_DEBUG=1` adds the traceback.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from cdcnorm.cli import apply, compare, cutover, lake, normalize, quarantine, simulate
from cdcnorm.cli.guard import EXIT_OK, EXIT_USAGE
from cdcnorm.cli.output import console

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Turn vendors' CDC output into one canonical change record, on Spark.")


def _version(value: bool) -> None:
    if value:
        from cdcnorm._version import __version__

        console.print(f"cdcnorm {__version__}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def main_options(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")] = False,
) -> None:
    """cdcnorm command line."""


app.command("normalize")(normalize.normalize)
app.add_typer(quarantine.app, name="quarantine")
app.add_typer(lake.app, name="lake")
app.command("apply")(apply.apply_cmd)
app.command("compare")(compare.compare)
app.command("cutover")(cutover.cutover)
app.command("simulate")(simulate.simulate)


def main() -> None:
    """Console-script entry point. A command that started Spark ends the process without the interpreter's
    teardown (:mod:`cdcnorm.cli.exit`); the others exit as usual."""
    try:
        app()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
        if _spark_started():
            from cdcnorm.cli.exit import finish

            finish(code)
        sys.exit(code)


def _spark_started() -> bool:
    pyspark = sys.modules.get("pyspark")
    return pyspark is not None and pyspark.SparkContext._active_spark_context is not None
