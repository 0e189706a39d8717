"""Options shared by several commands, and checks that need no Spark (so usage errors come before a JVM starts)."""

from __future__ import annotations

import os
from typing import Annotated, Any

import orjson
import typer

LakeOpt = Annotated[str, typer.Option("--lake", help="Lake folder or URI.")]
MasterOpt = Annotated[str | None, typer.Option("--master", help="Spark master (default: SPARK_MASTER or local[*]).")]
OptionOpt = Annotated[list[str] | None, typer.Option("--option", "-o", help="Adapter option KEY=VALUE (VALUE may be JSON).")]


def parse_pairs(pairs: list[str] | None, what: str) -> dict[str, Any]:
    """KEY=VALUE pairs; VALUE is parsed as JSON when it is JSON, else kept as a string."""
    from cdcnorm.errors import UsageError

    out: dict[str, Any] = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise UsageError(f"{what} '{pair}' must look like KEY=VALUE.")
        key, value = pair.split("=", 1)
        try:
            out[key.strip()] = orjson.loads(value)
        except orjson.JSONDecodeError:
            out[key.strip()] = value
    return out


def check_lakes_exist(*lakes: str) -> None:
    """A local lake that is not there fails before Spark starts, with the message the lake itself gives."""
    from cdcnorm.lake.store import MARKER, missing_lake
    from cdcnorm.runtime.fs import is_local, local_path

    for lake in lakes:
        if is_local(lake) and not os.path.exists(os.path.join(local_path(lake), MARKER)):
            raise missing_lake(lake)
