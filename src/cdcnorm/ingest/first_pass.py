"""The generic first pass: what an adapter wants from the whole input (and the lake) before decoding.

Why in the pipeline: decoding runs in parallel tasks, so a record may need something another file or partition
holds (Replicate data messages need the metadata message of their table). The adapter only says what it wants
from one file or one message (`Adapter.first_pass_file` / `first_pass_message`, on the executors); this module
runs that as one Spark job, keeps the distinct items (they are few and small), reads the lake's stored schema
versions, and hands both to `Adapter.prepare`. No adapter builds a Spark plan or reads the lake itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from cdcnorm.adapters.base import Adapter, FirstPass
from cdcnorm.runtime.fs import open_input

if TYPE_CHECKING:
    from cdcnorm.lake.store import Lake

_ITEMS = pa.schema([pa.field("item", pa.string())])


def first_pass(adapter: Adapter, source: DataFrame, kind: str, lake: Lake | None) -> FirstPass:
    """Run the adapter's first pass over `source` (files: `path`; messages: `value`) and read the lake."""
    items = _scan(adapter, source, kind) if adapter.needs_first_pass() else []
    stored = stored_schemas(lake, adapter.name) if lake is not None and adapter.uses_stored_schemas else []
    return FirstPass(kind=kind, items=items, stored_schemas=stored)


def _scan(adapter: Adapter, source: DataFrame, kind: str) -> list[Any]:
    if kind == "files":
        scanned = source.select("path").mapInArrow(_FileScan(adapter), "item string")
    else:
        scanned = source.select("value").mapInArrow(_MessageScan(adapter), "item string")
    # Only the distinct items reach the driver: the adapter promises they are few and small (metadata).
    return [orjson.loads(r["item"]) for r in scanned.distinct().collect()]


class _FileScan:
    """mapInArrow function: the adapter's first-pass items of each file, as JSON text."""

    def __init__(self, adapter: Adapter):
        self.adapter = adapter

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            found: list[str] = []
            for path in batch.column("path").to_pylist():
                try:
                    with open_input(path) as fh:
                        found += [orjson.dumps(item).decode() for item in self.adapter.first_pass_file(path, fh)]
                except Exception:  # an unreadable file is quarantined by the decoding pass, with its reason
                    continue
            yield pa.RecordBatch.from_pydict({"item": found}, schema=_ITEMS)


class _MessageScan:
    """mapInArrow function: the adapter's first-pass items of each raw message, as JSON text."""

    def __init__(self, adapter: Adapter):
        self.adapter = adapter

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            found = [orjson.dumps(item).decode() for value in batch.column("value").to_pylist()
                     for item in self.adapter.first_pass_message(value)]
            yield pa.RecordBatch.from_pydict({"item": found}, schema=_ITEMS)


def stored_schemas(lake: Lake, vendor: str) -> list[dict[str, Any]]:
    """The schema versions earlier runs stored for one vendor (metadata: one row per table version)."""
    return [r.asDict(recursive=True) for r in lake.schemas().where(F.col("vendor") == vendor).collect()]
