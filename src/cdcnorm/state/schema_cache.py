"""The schema versions `cdcnorm apply` plans from (each table's latest version, inferred types widened over all
of its versions), folded once per set of schema files and kept in `LAKE/current/_schemas.json`.

Why: folding the `schemas` table is a dozen small Spark jobs and their planning (about 3 CPU s, whatever the
lake's size), and that table changes only when a run brings a new schema version or widens an inferred one. Its
data files are immutable, so the same live files (at the cut, runs still committing left out) are the same rows:
an apply whose schema files are those of the last fold reuses its result without a Spark job. Any other set (a
new version, a compaction, a vacuum) folds again and replaces the cache. The file is a cache only: deleting it
costs one fold.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import orjson

from cdcnorm.canonical.inferred import fold_versions, widen_over_tables
from cdcnorm.canonical.schema import SCHEMA_VERSION_COLUMNS
from cdcnorm.lake.delta.read import read_files
from cdcnorm.lake.store import reported_files
from cdcnorm.state.paths import CURRENT, TableId
from cdcnorm.state.plan import IDENT, latest_schemas, matches

if TYPE_CHECKING:
    from cdcnorm.lake.store import Lake

CACHE = "_schemas.json"
FORMAT = 1


def folded_schemas(lk: Lake, version: int, committed: set[str], tables: list[str] | None) -> dict[str, dict[str, Any]]:
    """:func:`cdcnorm.state.plan.latest_schemas` of the widened schema versions at `version` of the `schemas`
    table (files of runs not in `committed` left out, as :meth:`cdcnorm.lake.store.Lake.read` at the cut), for the
    selected `tables`; from the cache when its files are the same."""
    table = lk.table("schemas")
    files: list[str] = []
    if version >= 0:
        keep = reported_files(committed)
        files = [f for f in table.files(version) if keep(f[len(table.uri) + 1:] if f.startswith(table.uri + "/") else f)]
    key = hashlib.sha256("\n".join(sorted(files)).encode()).hexdigest()
    path = f"{lk.path}/{CURRENT}/{CACHE}"
    cached = _read(lk, path)
    if cached is not None and cached.get("format") == FORMAT and cached.get("files") == key:
        latest = cached["latest"]
    else:
        names = [c.name for c in SCHEMA_VERSION_COLUMNS]
        rows = read_files(lk.spark, table, files, names) if files else lk.spark.createDataFrame([], table.schema)
        latest = latest_schemas(widen_over_tables(fold_versions(rows.select(*names))))
        lk.fs.write_text(path, orjson.dumps({"format": FORMAT, "files": key, "latest": latest}).decode())
    return {h: sv for h, sv in latest.items() if matches(TableId(*(sv[c] for c in IDENT)), tables)}


def _read(lk: Lake, path: str) -> dict[str, Any] | None:
    try:
        return orjson.loads(lk.fs.read_text(path)) if lk.fs.exists(path) else None
    except (OSError, orjson.JSONDecodeError):
        return None  # a torn or foreign file: fold again and replace it
