"""Run reports of a lake read straight from its `runs` Delta table (no Spark), oldest first."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def run_reports(lake: str | Path) -> list[dict[str, Any]]:
    from deltalake import DeltaTable

    rows = DeltaTable(str(Path(lake) / "runs")).to_pyarrow_table(columns=["run_id", "finished_at", "report"]).to_pylist()
    # by time: a batch command's run id is its query's random id and batch (`<uuid>-0`), which sorts in no order
    return [json.loads(r["report"]) for r in sorted(rows, key=lambda r: (str(r["finished_at"] or ""), r["run_id"]))]
