"""`cdcnorm apply`: current-state tables rebuilt from the canonical lake (package `state`, so the function
`cdcnorm.apply` keeps its name).

One job per module: :mod:`.paths` (where each table is written), :mod:`.types` (canonical types -> Spark types),
:mod:`.plan` (schema version, key mode and columns per table; metadata only), :mod:`.merge` (the live rows in one
shuffle), :mod:`.write` (typed Parquet tables), :mod:`.index` (summary and `LAKE/current/_tables.json`) and
:mod:`.build` (the :func:`apply` that runs them). Semantics: docs/apply.md.
"""

from __future__ import annotations

from cdcnorm.state.build import ApplyResult, apply
from cdcnorm.state.index import read_index
from cdcnorm.state.paths import CURRENT, HISTORY, INDEX, TableId, path_component, relative_path, table_path
from cdcnorm.state.target import read_current

__all__ = ["CURRENT", "HISTORY", "INDEX", "ApplyResult", "TableId", "apply", "path_component", "read_current", "read_index", "relative_path",
           "table_path"]
