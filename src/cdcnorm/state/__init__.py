"""`cdcnorm apply`: current-state Delta tables maintained from the canonical lake, history and point-in-time
state (package `state`, so the function `cdcnorm.apply` keeps its name).

One job per module: :mod:`.paths` (where each table is written), :mod:`.types` (canonical types -> Spark types),
:mod:`.plan` (schema version, key mode and columns per table; metadata only), :mod:`.merge` (entries per row key),
:mod:`.keyed` (the merge of state, tombstones and new changes), :mod:`.write` (typed rows), :mod:`.target` (the
Delta targets: layout, touched files, commits, bookmarks), :mod:`.batch` (the changes since a bookmark),
:mod:`.bookmark` (plans and counts across applies), :mod:`.history` (SCD type 2), :mod:`.as_of` (state at a
point), :mod:`.index` (summary and `LAKE/current/_tables.json`), :mod:`.run` (one apply with writes) and
:mod:`.build` (the :func:`apply` that runs them). Semantics: docs/apply.md.
"""

from __future__ import annotations

from cdcnorm.state.build import ApplyResult, apply
from cdcnorm.state.index import read_index
from cdcnorm.state.paths import CURRENT, HISTORY, INDEX, TableId, path_component, relative_path, table_path
from cdcnorm.state.target import read_current

__all__ = ["CURRENT", "HISTORY", "INDEX", "ApplyResult", "TableId", "apply", "path_component", "read_current", "read_index", "relative_path",
           "table_path"]
