"""The JVM decode path: JSON-lines files cut into lines in Python, the lines decoded by the adapter's Spark
expressions, the rest finished in Python (event ids, the lines the expressions hand back, the files' schema
versions).

Why three steps: Spark parses a line faster than CPython, but it has no BLAKE2b (the event id), and the Python
decoder is the reference for anything the expressions do not hold exactly. One Spark stage, narrow all along:

1. `_LineCutter` (mapInArrow over the listed files): a file the vectorised cut reproduces exactly
   (cdcnorm.containers.json_lines) becomes one `line` row per record with its exact origin (file, byte offset,
   line number); any other file (Avro, gzip damage, arrays, objects back to back, ...) is decoded whole by the
   Python decoder, as `cdcnorm.ingest.sources.decode_files` would.
2. The adapter's expressions (`JvmDecode.columns`): change rows, or `_fallback`.
3. `_Finisher` (mapInArrow over those rows): BLAKE2b event ids and sort keys of the Spark-decoded rows, the Python
   decode of `_fallback` lines (same origin, same rows as in a Python run), and each file's schema versions from
   what both observed (cdcnorm.canonical.cell_summary), as the Python decoder writes them at the end of a file.

A row decoded by the expressions carries `_rule = "jvm"` (a change row has no rule otherwise): the run report
counts the records each path took.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdcnorm.adapters.base import Adapter, JvmDecode, LineObservation
from cdcnorm.canonical.cell_summary import CellSummaries
from cdcnorm.canonical.emit import ARROW_SCHEMA, KIND_LINE, LINE, BatchBuilder, decoded_schema
from cdcnorm.canonical.emit import Bookkeeping as B
from cdcnorm.canonical.record import SchemaColumn, SchemaVersion
from cdcnorm.containers.json_lines import split_json_lines
from cdcnorm.ingest.sources import decode_files, decode_one_file, fewer_collections
from cdcnorm.runtime.fs import open_input

JVM_RULE = "jvm"
"""`_rule` of a change row the Spark expressions decoded."""
_LINE_ROWS = 1 << 16
_GROUP = ("stream", "database", "schema", "table", "schema_version")


def line_schema() -> T.StructType:
    """The cutter's rows: the decoded schema and the line's bytes."""
    return T.StructType([*decoded_schema().fields, T.StructField(LINE, T.BinaryType())])


_LINE_ARROW = pa.schema([*ARROW_SCHEMA, pa.field(LINE, pa.binary())])


def decode_listed(files: DataFrame, adapter: Adapter) -> DataFrame:
    """Decode the listed files on the adapter's Spark-expression path when it offers one for its options
    (`Adapter.jvm_decode`), else with the Python decoder (cdcnorm.ingest.sources.decode_files)."""
    jvm = adapter.jvm_decode()
    return decode_files_jvm(files, adapter, jvm) if jvm is not None else decode_files(files, adapter)


def decode_files_jvm(files: DataFrame, adapter: Adapter, jvm: JvmDecode) -> DataFrame:
    """Decode the listed files (`path`, `size`) with the adapter's Spark expressions where they hold, the Python
    decoder elsewhere: the same rows `decode_files` gives, in one narrow stage."""
    lines = files.mapInArrow(_LineCutter(adapter), line_schema())
    decoded = jvm.columns(lines)  # the line's bytes go on to Python only where the Python decoder needs them
    decoded = decoded.withColumn(LINE, F.when(F.col("_fallback"), F.col(LINE)))
    return decoded.mapInArrow(_Finisher(adapter, jvm), decoded_schema())


class _LineCutter:
    """mapInArrow function: each file as `line` rows, or decoded whole by the Python decoder."""

    def __init__(self, adapter: Adapter):
        self.adapter = adapter

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        adapter = self.adapter
        fmt = adapter.formats[0] if adapter.formats else adapter.name
        with fewer_collections():
            for batch in batches:
                for path in batch.column("path").to_pylist():
                    try:
                        with open_input(path, decompress=False) as fh:
                            lines = split_json_lines(fh)
                    except Exception:  # noqa: BLE001 - unreadable here: the Python decoder reports it
                        lines = None
                    if lines is None:
                        out = BatchBuilder()
                        out.set_context(adapter.name, fmt)
                        for decoded in decode_one_file(adapter, path, out):
                            yield _with_lines(decoded, None)
                        continue
                    yield from _line_batches(adapter.name, path, lines)


def _with_lines(batch: pa.RecordBatch, lines: pa.Array | None) -> pa.RecordBatch:
    column = lines if lines is not None else pa.nulls(batch.num_rows, pa.binary())
    return pa.RecordBatch.from_arrays([*batch.columns, column], schema=_LINE_ARROW)


def _line_batches(vendor: str, path: str, lines: Any) -> Iterator[pa.RecordBatch]:
    """`line` rows: origin (path, offset, line number), one record counted each, the bytes in `_line`."""
    n_all = len(lines.offsets)
    for start in range(0, n_all, _LINE_ROWS):
        stop = min(n_all, start + _LINE_ROWS)
        n = stop - start
        offsets = pa.array(lines.offsets[start:stop], pa.int64())
        origin = pa.StructArray.from_arrays(
            [pa.array([path] * n, pa.string()), pa.nulls(n, pa.string()), pc.cast(offsets, pa.string()),
             pa.array(lines.line_numbers[start:stop], pa.int64())],
            fields=list(ARROW_SCHEMA.field("origin").type))
        arrays = []
        for f in ARROW_SCHEMA:
            if f.name == "vendor":
                arrays.append(pa.array([vendor] * n, pa.string()))
            elif f.name == "origin":
                arrays.append(origin)
            elif f.name == B.KIND:
                arrays.append(pa.array([KIND_LINE] * n, pa.string()))
            elif f.name == B.RECORDS:
                arrays.append(pa.array(np.ones(n, np.int32)))
            elif f.name == B.MERGED:
                arrays.append(pa.array(np.zeros(n, np.int32)))
            else:
                arrays.append(pa.nulls(n, f.type))
        yield _with_lines(pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA), lines.values.slice(start, n))


class _Finisher:
    """mapInArrow function: event ids, fallback lines, and the files' schema versions."""

    def __init__(self, adapter: Adapter, jvm: JvmDecode):
        self.adapter, self.jvm = adapter, jvm

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        cells = CellSummaries()
        firsts: dict[tuple, tuple] = {}  # (file, ident) -> (line, source_db, primary_keys, source_ts)
        fmt = self.adapter.formats[0] if self.adapter.formats else self.adapter.name
        with fewer_collections():
            for batch in batches:
                fallback = batch.column("_fallback")
                has_fallback = fallback.null_count < len(fallback) and pc.any(fallback).as_py()
                fast = pc.is_valid(batch.column("_id_bytes"))
                if pc.any(fast).as_py():
                    batch = self._finish_fast(batch, fast, cells, firsts)
                kept = pc.invert(pc.fill_null(fallback, False)) if has_fallback else None
                out_batch = batch.filter(kept) if kept is not None else batch
                yield pa.RecordBatch.from_arrays([out_batch.column(f.name) for f in ARROW_SCHEMA], schema=ARROW_SCHEMA)
                if has_fallback:
                    yield from self._fallbacks(batch.filter(pc.fill_null(fallback, False)), cells, firsts, fmt)
            yield from self._schemas(cells, firsts, fmt)

    def _finish_fast(self, batch: pa.RecordBatch, fast: pa.Array, cells: CellSummaries,
                     firsts: dict[tuple, tuple]) -> pa.RecordBatch:
        ids, sorts, tails = (batch.column(n).to_pylist() for n in ("_id_bytes", "_sort_bytes", "_hash_text"))
        tail = self.jvm.id_tail
        blake = hashlib.blake2b
        event_ids: list[str | None] = []
        sort_keys: list[bytes | None] = []
        for data, sort, text in zip(ids, sorts, tails, strict=True):
            if data is None:
                event_ids.append(None)
                sort_keys.append(None)
                continue
            eid = blake(data if text is None else data + tail(text), digest_size=16).hexdigest()
            event_ids.append(eid)
            sort_keys.append(sort + b"\x02" + eid.encode() + b"\x00")
        names = batch.schema.names
        cols = list(batch.columns)
        cols[names.index("event_id")] = pc.if_else(fast, pa.array(event_ids, pa.string()),
                                                   batch.column("event_id"))
        cols[names.index("sort_key")] = pc.if_else(fast, pa.array(sort_keys, pa.binary()), batch.column("sort_key"))
        cols[names.index(B.RULE)] = pc.if_else(fast, pa.scalar(JVM_RULE), batch.column(B.RULE))
        finished = pa.RecordBatch.from_arrays(cols, schema=batch.schema)
        self._observe(finished.filter(fast), cells, firsts)
        return finished

    def _observe(self, rows: pa.RecordBatch, cells: CellSummaries, firsts: dict[tuple, tuple]) -> None:
        """Add the rows' cells to their file's summaries; remember each (file, version)'s first change."""
        origin = rows.column("origin")
        uri, line = pc.struct_field(origin, "uri"), pc.struct_field(origin, "index")
        groups = pa.StructArray.from_arrays([uri, *(rows.column(n) for n in _GROUP)], ["uri", *_GROUP])
        cells.add_cells(groups, line, rows.column("_cells"))
        names = ["uri", *_GROUP]
        table = pa.table({**{n: groups.field(n) for n in names}, "i": pa.array(np.arange(rows.num_rows))})
        for g in table.group_by(names, use_threads=False).aggregate([("i", "min")]).to_pylist():
            i = g.pop("i_min")
            _first(firsts, {n: g[n] for n in names},
                   (line[i].as_py(), rows.column("source_db")[i].as_py(), rows.column("primary_keys")[i].as_py(),
                    rows.column("source_ts")[i].as_py()))

    def _fallbacks(self, rows: pa.RecordBatch, cells: CellSummaries, firsts: dict[tuple, tuple],
                   fmt: str) -> Iterator[pa.RecordBatch]:
        """The Python decoder's rows of the lines the expressions handed back (schema versions observed, not
        emitted: they join the file's)."""
        out = BatchBuilder()
        out.set_context(self.adapter.name, fmt)
        origins = rows.column("origin").to_pylist()
        for origin, raw in zip(origins, rows.column(LINE).to_pylist(), strict=True):
            uri, line = origin["uri"], origin["index"]
            seen = self.jvm.fallback(uri, raw, int(origin["offset"]), line, out)
            for obs in seen:
                _merge(obs, uri, line, cells, firsts)
        out.end_record()
        if len(out):
            yield out.flush()

    def _schemas(self, cells: CellSummaries, firsts: dict[tuple, tuple], fmt: str) -> Iterator[pa.RecordBatch]:
        """Each (file, table version)'s schema version, as `flush_inferred` writes it at the end of a file."""
        if not firsts:
            return
        out = BatchBuilder()
        out.set_context(self.adapter.name, fmt)
        for key, (group, (_line, source_db, pks, source_ts)) in firsts.items():
            del key
            pk_pos = {k.lower(): i + 1 for i, k in enumerate(pks or [])}
            columns = [SchemaColumn(name, vendor_type, None, i + 1, pk_pos.get(name.lower()), None)
                       for i, (name, vendor_type) in enumerate(cells.vendor_types(group))]
            out.schema(SchemaVersion(vendor=self.adapter.name, stream=group["stream"],
                                     schema_version=group["schema_version"], columns=columns, source_db=source_db,
                                     database=group["database"], schema=group["schema"], table=group["table"],
                                     first_seen=source_ts))
        yield out.flush()


def _first(firsts: dict[tuple, tuple], group: dict, first: tuple) -> None:
    """Keep the change with the lowest line of each (file, version): its key columns and time make the version's."""
    key = tuple(group.values())
    if key not in firsts or first[0] < firsts[key][1][0]:
        firsts[key] = (group, first)


def _merge(obs: LineObservation, uri: str, line: int, cells: CellSummaries, firsts: dict[tuple, tuple]) -> None:
    stream, database, schema, table, version = obs.ident
    group = {"uri": uri, "stream": stream, "database": database, "schema": schema, "table": table,
             "schema_version": version}
    for image in obs.images:
        cells.add_python(group, line, image)
    _first(firsts, group, (line, obs.source_db, obs.primary_keys, obs.source_ts))
