"""A second Delta reader for tests, written from the protocol alone: it shares no code with delta-rs, DuckDB's
Delta extension or cdcnorm, so agreeing with them means the lake tables are Delta as the protocol defines it.

Only the parts of the protocol a cdcnorm lake uses are read: commit files `_delta_log/<v>.json`, classic
checkpoints (`<v>.checkpoint.parquet` and multi-part `<v>.checkpoint.<i>.<n>.parquet`) found through
`_delta_log/_last_checkpoint`, add / remove reconciliation by path, partition values from the log, and the
table schema from `metaData.schemaString`. A table needing more (deletion vectors, column mapping, v2
checkpoints, ...) is refused rather than misread.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq

UNDERSTOOD_FEATURES = frozenset({"variantType", "variantType-preview", "appendOnly", "invariants",
                                 "timestampNtz", "checkConstraints"})


@dataclass
class Snapshot:
    """A table's state at one version: its live files and the newest protocol and metadata actions."""

    version: int
    checkpoint: int | None
    protocol: dict[str, Any]
    metadata: dict[str, Any]
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Live add actions by decoded path (relative to the table)."""
    txns: dict[str, int] = field(default_factory=dict)

    @property
    def schema(self) -> dict[str, Any]:
        return json.loads(self.metadata["schemaString"])

    @property
    def partition_columns(self) -> list[str]:
        return list(self.metadata.get("partitionColumns") or [])


def _log(table: str) -> str:
    return os.path.join(table, "_delta_log")


def _commit_versions(table: str) -> list[int]:
    names = os.listdir(_log(table))
    return sorted(int(n[:-5]) for n in names if n.endswith(".json") and len(n) == 25 and n[:20].isdigit())


def _checkpoint_files(table: str) -> tuple[int | None, list[str]]:
    """The last checkpoint's version and Parquet file(s), as `_last_checkpoint` names them."""
    pointer = os.path.join(_log(table), "_last_checkpoint")
    if not os.path.exists(pointer):
        return None, []
    with open(pointer) as f:
        last = json.load(f)
    v = int(last["version"])
    if last.get("parts"):
        n = int(last["parts"])
        names = [f"{v:020d}.checkpoint.{i:010d}.{n:010d}.parquet" for i in range(1, n + 1)]
    else:
        names = [f"{v:020d}.checkpoint.parquet"]
    paths = [os.path.join(_log(table), n) for n in names]
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        raise ValueError(f"_last_checkpoint names {missing}, which do not exist (v2 checkpoints are not read)")
    return v, paths


def _apply(snap: Snapshot, action: dict[str, Any]) -> None:
    """One log action, in log order: later adds / removes of a path replace earlier ones."""
    if action.get("add"):
        add = action["add"]
        snap.files[unquote(add["path"])] = add
    elif action.get("remove"):
        snap.files.pop(unquote(action["remove"]["path"]), None)
    elif action.get("metaData"):
        snap.metadata = action["metaData"]
    elif action.get("protocol"):
        snap.protocol = action["protocol"]
    elif action.get("txn"):
        snap.txns[action["txn"]["appId"]] = int(action["txn"]["version"])


def _checkpoint_actions(paths: list[str]) -> list[dict[str, Any]]:
    """The actions of a checkpoint as dicts shaped like the JSON log's (a checkpoint row holds one action)."""
    out = []
    for p in paths:
        rows = pq.read_table(p, columns=[c for c in ("protocol", "metaData", "txn", "add", "remove")
                                         if c in pq.read_schema(p).names]).to_pylist()
        for row in rows:
            for key, value in row.items():
                if value is None:
                    continue
                if key == "add":
                    value = {**value, "partitionValues": _as_dict(value.get("partitionValues"))}
                if key == "metaData":
                    value = {**value, "configuration": _as_dict(value.get("configuration"))}
                out.append({key: value})
    return out


def _as_dict(m: Any) -> dict[str, Any]:
    """A Parquet map as pyarrow returns it (a list of pairs) as a dict."""
    if m is None:
        return {}
    return dict(m) if isinstance(m, list) else m


def snapshot(table: str, version: int | None = None) -> Snapshot:
    """Replay the log: from the last checkpoint (when it is not newer than `version`), then every commit."""
    table = os.path.abspath(table)
    cp_version, cp_paths = _checkpoint_files(table)
    if version is not None and cp_version is not None and cp_version > version:
        cp_version, cp_paths = None, []
    snap = Snapshot(version=-1, checkpoint=cp_version, protocol={}, metadata={})
    if cp_version is not None:
        for action in _checkpoint_actions(cp_paths):
            _apply(snap, action)
        snap.version = cp_version
    for v in _commit_versions(table):
        if v <= snap.version or (version is not None and v > version):
            continue
        if v != snap.version + 1:
            raise ValueError(f"{table}: commit {v} follows {snap.version}; the log has a gap")
        with open(os.path.join(_log(table), f"{v:020d}.json")) as f:
            for line in f:
                if line.strip():
                    _apply(snap, json.loads(line))
        snap.version = v
    if snap.version < 0 or not snap.metadata:
        raise ValueError(f"{table} holds no Delta table")
    _refuse_unknown(table, snap)
    return snap


def _refuse_unknown(table: str, snap: Snapshot) -> None:
    used = set(snap.protocol.get("readerFeatures") or []) | set(snap.protocol.get("writerFeatures") or [])
    config = snap.metadata.get("configuration") or {}
    unknown = sorted(used - UNDERSTOOD_FEATURES)
    if config.get("delta.columnMapping.mode", "none") != "none":
        unknown.append("columnMapping")
    if any(a.get("deletionVector") for a in snap.files.values()):
        unknown.append("deletionVectors")
    if unknown:
        raise ValueError(f"{table} needs {unknown}, which this test reader does not implement")


# -- Delta types as Arrow types -----------------------------------------------------------------------------
_PRIMITIVES = {
    "string": pa.string(), "long": pa.int64(), "integer": pa.int32(), "short": pa.int16(), "byte": pa.int8(),
    "float": pa.float32(), "double": pa.float64(), "boolean": pa.bool_(), "binary": pa.binary(),
    "date": pa.date32(), "timestamp": pa.timestamp("us", tz="UTC"), "timestamp_ntz": pa.timestamp("us"),
}


def arrow_type(t: Any) -> pa.DataType:
    """The Arrow type of a Delta schema type; a variant is the struct of its two binaries (`value`,
    `metadata`), exactly as the protocol stores it in Parquet."""
    if isinstance(t, str):
        if t == "variant":
            return pa.struct([pa.field("value", pa.binary(), False), pa.field("metadata", pa.binary(), False)])
        if t.startswith("decimal("):
            p, s = t[len("decimal("):-1].split(",")
            return pa.decimal128(int(p), int(s))
        return _PRIMITIVES[t]
    kind = t["type"]
    if kind == "struct":
        return pa.struct([pa.field(f["name"], arrow_type(f["type"]), f.get("nullable", True)) for f in t["fields"]])
    if kind == "array":
        return pa.list_(pa.field("element", arrow_type(t["elementType"]), t.get("containsNull", True)))
    if kind == "map":
        return pa.map_(arrow_type(t["keyType"]), arrow_type(t["valueType"]))
    raise ValueError(f"unknown Delta type {t!r}")


def arrow_schema(snap: Snapshot) -> pa.Schema:
    return pa.schema([pa.field(f["name"], arrow_type(f["type"]), True) for f in snap.schema["fields"]])


# -- reading rows -------------------------------------------------------------------------------------------
def _file_rows(path: str, schema: pa.Schema, partition_columns: list[str], add: dict[str, Any]) -> pa.Table:
    """One data file's rows in the table's schema: data columns from the file (a column the file lacks is
    null), partition columns from the add action's `partitionValues` (a missing or null value is null)."""
    data = pq.read_table(path)
    n = data.num_rows
    columns = []
    for f in schema:
        if f.name in partition_columns:
            raw = (add.get("partitionValues") or {}).get(f.name)
            columns.append(pa.array([raw] * n, pa.string()).cast(f.type))
        elif f.name in data.column_names:
            columns.append(data.column(f.name).cast(f.type))
        else:
            columns.append(pa.nulls(n, f.type))
    return pa.Table.from_arrays(columns, schema=schema)


def read(table: str, version: int | None = None) -> tuple[pa.Table, Snapshot]:
    """The table's rows at `version` (latest by default) and the snapshot they were read from."""
    snap = snapshot(table, version)
    schema = arrow_schema(snap)
    root = os.path.abspath(table)
    parts = [_file_rows(os.path.join(root, rel), schema, snap.partition_columns, add)
             for rel, add in sorted(snap.files.items())]
    return (pa.concat_tables(parts) if parts else schema.empty_table()), snap
