"""Rows of the lake's `runs` table written by the admin commands (an upgraded lake's old reports, a
maintenance run that moves the cut past a compaction), each with its app transaction so none is written twice.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import orjson
import pyarrow as pa
from deltalake import write_deltalake
from deltalake.transaction import CommitProperties, Transaction

from cdcnorm.delta.table import DeltaTableRef


def append_runs(runs: DeltaTableRef, reports: list[dict[str, Any]], versions: dict[str, int],
                app_ids: list[str]) -> None:
    """Append one row per report (each has `run_id`) recording `versions` as the run's table versions."""
    for rep in reports:
        rep["table_versions"] = versions
    table = pa.table({
        "run_id": pa.array([rep["run_id"] for rep in reports], pa.string()),
        "vendor": pa.array([rep.get("vendor") for rep in reports], pa.string()),
        "finished_at": pa.array([_when(rep.get("finished_at")) for rep in reports], pa.timestamp("us", tz="UTC")),
        "versions": pa.array([orjson.dumps(versions).decode()] * len(reports), pa.string()),
        "report": pa.array([orjson.dumps(rep).decode() for rep in reports], pa.string()),
    })
    write_deltalake(runs.uri, table, mode="append", storage_options=dict(runs.storage_options or {}),
                    commit_properties=CommitProperties(app_transactions=[Transaction(a, 1) for a in app_ids]))


def _when(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    t = dt.datetime.fromisoformat(text)
    return t if t.tzinfo else t.replace(tzinfo=dt.UTC)
