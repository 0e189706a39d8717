"""One Delta table, committed through delta-rs (the `deltalake` package).

The table is addressed by a URI delta-rs understands (a local path, `gs://`, `s3://`, `abfss://`, ...) with
its object-store settings (`storage_options`); see docs/canonical.md "Object stores". Every commit may carry
app transactions (`Transaction(app_id, version)`), which is how cdcnorm makes a commit idempotent: before it
commits, a writer checks :meth:`DeltaTableRef.txn_version`, and two writers committing the same app id from
the same table version conflict (the loser gets :class:`Conflict`, reloads and re-checks).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, Schema
from deltalake.exceptions import CommitFailedError, TableNotFoundError
from deltalake.transaction import (
    AddAction,
    CommitProperties,
    RemoveAction,
    Transaction,
    create_table_with_add_actions,
)
from pyspark.sql.types import StructField, StructType

from cdcnorm.errors import LakeError

# Reader / writer features the jar-less path honours. Anything else (deletion vectors, column mapping, row
# tracking, ...) changes what a data file means, so a table using it is refused rather than misread.
SUPPORTED_FEATURES = frozenset({"variantType", "variantType-preview", "appendOnly", "invariants",
                                "timestampNtz", "checkConstraints"})


class Conflict(Exception):
    """Another writer committed first with an app transaction this commit also carries."""


def delta_uri(path: str) -> str:
    """The table location as delta-rs wants it: local paths absolute, `file:` URIs as plain paths."""
    if path.startswith("file://"):
        path = path[len("file://"):]
    elif path.startswith("file:"):
        path = path[len("file:"):]
    if "://" in path:
        return path.rstrip("/")
    return os.path.abspath(path)


@dataclass
class DeltaTableRef:
    """A Delta table of the lake: where it is, its Spark schema and its partition columns."""

    uri: str
    schema: StructType
    partition_by: tuple[str, ...] = ()
    storage_options: Mapping[str, str] | None = None
    _handle: DeltaTable | None = field(default=None, repr=False, compare=False)
    _at: tuple[int, DeltaTable] | None = field(default=None, repr=False, compare=False)

    # -- existence and features ----------------------------------------------------------------------------
    def exists(self) -> bool:
        return DeltaTable.is_deltatable(self.uri, storage_options=dict(self.storage_options or {}))

    def ensure(self) -> None:
        """Create the table (empty, version 0) if it does not exist yet; refuse unsupported features."""
        if not self.exists():
            try:
                create_table_with_add_actions(self.uri, self.delta_schema(), [], mode="ignore",
                                              partition_by=list(self.partition_by) or None,
                                              storage_options=dict(self.storage_options or {}))
            except Exception:  # a concurrent creator won: fine if the table is there now
                if not self.exists():
                    raise
        self.check_features()

    def delta_schema(self) -> Schema:
        return Schema.from_json(self.schema.json())

    def check_features(self) -> None:
        """Refuse a table whose protocol needs a feature this reader/writer cannot honour."""
        proto = self.handle().protocol()
        used = set(proto.reader_features or []) | set(proto.writer_features or [])
        unsupported = sorted(used - SUPPORTED_FEATURES)
        config = self.handle().metadata().configuration or {}
        if config.get("delta.columnMapping.mode", "none") != "none":
            unsupported.append("columnMapping")
        if config.get("delta.enableDeletionVectors") == "true" and "deletionVectors" not in unsupported:
            unsupported.append("deletionVectors")
        if unsupported:
            raise LakeError(
                f"The Delta table {self.uri} uses {', '.join(unsupported)}, which cdcnorm cannot read or write "
                "without Spark's Delta jars; rewrite it without these features (e.g. REORG / disable them) first."
            )

    # -- reading the log -----------------------------------------------------------------------------------
    def handle(self, version: int | None = None) -> DeltaTable:
        """The table at `version` (latest: loaded once, then brought up to date)."""
        opts = dict(self.storage_options or {})
        if version is not None:  # a version never changes: the last one asked for is kept (one apply asks again)
            if self._at is None or self._at[0] != version:
                self._at = (version, DeltaTable(self.uri, version=version, storage_options=opts))
            return self._at[1]
        if self._handle is None:
            try:
                self._handle = DeltaTable(self.uri, storage_options=opts)
            except TableNotFoundError as exc:
                raise LakeError(f"No Delta table at {self.uri}") from exc
        else:
            self._handle.update_incremental()
        return self._handle

    def version(self) -> int:
        return self.handle().version()

    def txn_version(self, app_id: str, version: int | None = None) -> int | None:
        return self.handle(version).transaction_version(app_id)

    def fresh(self) -> DeltaTable:
        """A handle loaded now, for a check-then-commit: the commit detects conflicts with anything committed
        after the version this handle read."""
        return DeltaTable(self.uri, storage_options=dict(self.storage_options or {}))

    def add_actions(self, version: int | None = None, handle: DeltaTable | None = None) -> pa.Table:
        """The live add actions (path, size, partition values, stats) at `version` as an Arrow table."""
        return pa.table((handle or self.handle(version)).get_add_actions(flatten=True))

    def live(self, version: int | None = None, handle: DeltaTable | None = None,
             stats: bool = False) -> list[dict[str, Any]]:
        """The live files as dicts: `path` (relative), `uri` (absolute), `size`, `partition` values; with `stats`,
        also `min`, `max` and `nulls` per column the log has statistics of (a file without them has none)."""
        acts = self.add_actions(version, handle)
        parts = {c: acts.column(f"partition.{c}").to_pylist() for c in self.partition_by
                 if f"partition.{c}" in acts.column_names}
        kinds = {"min": "min.", "max": "max.", "nulls": "null_count."}
        columns = {k: {n[len(pre):]: acts.column(n).to_pylist() for n in acts.column_names if n.startswith(pre)}
                   for k, pre in kinds.items()} if stats else {}
        out = []
        for i, path in enumerate(acts.column("path").to_pylist()):
            f = {"path": path, "uri": self.uri + "/" + path, "size": acts.column("size_bytes")[i].as_py(),
                 "partition": {c: parts[c][i] if c in parts else None for c in self.partition_by}}
            for k, cols in columns.items():
                f[k] = {c: v[i] for c, v in cols.items()}
            out.append(f)
        return out

    def all_null(self, column: str, version: int, paths: set[str] | None = None) -> bool:
        """Whether the log's statistics prove `column` null in every live file at `version` (among `paths`,
        relative, when given): each file counts as many nulls there as rows. A table without the version, or a
        file without that statistic (written before the column had one), proves nothing: False."""
        if version < 0 or not self.exists():
            return False
        acts = self.add_actions(version)
        if acts.num_rows == 0 or f"null_count.{column}" not in acts.column_names:
            return False
        files = zip(acts.column("path").to_pylist(), acts.column("num_records").to_pylist(),
                    acts.column(f"null_count.{column}").to_pylist(), strict=True)
        return all(n is not None and k == n for p, k, n in files if paths is None or p in paths)

    def files(self, version: int | None = None) -> list[str]:
        """Absolute URIs of the live data files at `version`."""
        return self.handle(version).file_uris()

    # -- committing ----------------------------------------------------------------------------------------
    def commit(self, adds: Iterable[AddAction], txns: Iterable[tuple[str, int]] = (),
               removes: Iterable[RemoveAction] = (), operation_note: Mapping[str, Any] | None = None,
               handle: DeltaTable | None = None) -> int:
        """Commit adds (and removes) with app transactions in one Delta transaction; the new version.

        Raises :class:`Conflict` when a concurrent commit carried one of the same app ids (the caller reloads
        and re-checks). Blind appends by writers with other app ids do not conflict.
        """
        dt = handle or self.handle()
        actions: list[AddAction | RemoveAction] = [*adds, *removes]
        props = CommitProperties(app_transactions=[Transaction(a, v) for a, v in txns],
                                 custom_metadata={k: str(v) for k, v in (operation_note or {}).items()} or None)
        try:
            dt.create_write_transaction(actions, "append", self.delta_schema(),
                                        partition_by=list(self.partition_by) or None, commit_properties=props)
        except CommitFailedError as exc:
            self._handle = None
            raise Conflict(str(exc)) from exc
        dt.update_incremental()
        return dt.version()


def rewrite(table: DeltaTableRef, files: Iterable[Mapping[str, Any]], written: Iterable[AddAction], handle: DeltaTable,
            operation: str) -> bool:
    """Replace live `files` (as `DeltaTableRef.live` lists them) by `written` in one commit that changes no data
    (`dataChange=false` on both sides: readers of changes skip it); False when a concurrent commit touched
    the same files (nothing is committed; the written files are orphans for vacuum)."""
    now_ms = int(time.time() * 1000)
    adds = [AddAction(a.path, a.size, dict(a.partition_values), a.modification_time, False, a.stats) for a in written]
    removes = [RemoveAction(f["path"], False, now_ms, f["size"], dict(f["partition"])) for f in files]
    try:
        table.commit(adds, removes=removes, handle=handle, operation_note={"cdcnorm.operation": operation})
    except Conflict:
        return False
    except Exception as exc:  # delta-rs reports a concurrent remove of the same file as a plain error
        if "oncurrent" not in str(exc) and "onflict" not in str(exc):
            raise
        return False
    return True


def add_columns(table: DeltaTableRef, fields: Iterable[StructField]) -> None:
    """Add nullable columns to an existing table (schema evolution; no data file is rewritten)."""
    schema = Schema.from_json(StructType([StructField(f.name, f.dataType, True) for f in fields]).json())
    try:
        table.handle().alter.add_columns(list(schema.fields))
    except Exception:  # a concurrent opener added them first: fine when they are there now
        have = {f.name for f in table.fresh().schema().fields}
        if any(f.name not in have for f in fields):
            raise
    table._handle = None


def add_action(d: Mapping[str, Any]) -> AddAction:
    """An AddAction from its plain-dict form (the form kept in a pending run's intent file)."""
    return AddAction(d["path"], int(d["size"]), dict(d["partition_values"]), int(d["modification_time"]),
                     bool(d.get("data_change", True)), d["stats"])


def add_dict(a: AddAction) -> dict[str, Any]:
    return {"path": a.path, "size": a.size, "partition_values": dict(a.partition_values),
            "modification_time": a.modification_time, "data_change": a.data_change, "stats": a.stats}
