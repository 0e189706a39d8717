"""`cdcnorm apply --as-of`: the state at a point, written as Delta tables under `LAKE/as_of/<point>/`.

Why a module of its own: the point-in-time state is computed (:func:`cdcnorm.state.build.apply` with `as_of`)
from the changes up to the point, not from the current-state targets, and written without bookmarks: it is a
snapshot, never maintained.
"""

from __future__ import annotations

import secrets

from pyspark.sql import SparkSession

from cdcnorm.lake.delta.files import write_files
from cdcnorm.lake.delta.table import DeltaTableRef, delta_uri
from cdcnorm.state.build import apply
from cdcnorm.state.paths import path_component, relative_path, table_path


def write_as_of(spark: SparkSession, lake: str, as_of: str, tables: list[str] | None,
                column_types: dict[str, str] | None = None) -> list[tuple[str, int]]:
    """Each selected table's state at `as_of` as a Delta table (overwritten); (path, rows) per table;
    `column_types`: type hints (cdcnorm.state.hints)."""
    frames = apply(spark, lake, tables=tables, as_of=as_of, column_types=column_types)
    root = f"as_of/{path_component(as_of)}"
    out = []
    rows = {e["path"]: e["rows"] for e in frames.summary["tables"]}
    for tid, df in frames.items():
        path = table_path(lake, tid, root)
        ref = DeltaTableRef(delta_uri(path), df.schema)
        adds = write_files(df, ref, f"as-of-{secrets.token_hex(4)}")
        ref.ensure()
        dt = ref.fresh()
        dt.create_write_transaction(adds, "overwrite", ref.delta_schema())
        out.append((path, rows.get(relative_path(tid), 0)))
    frames.unpersist()
    return out
