"""The container tier: one streaming reader per file container, shared by every vendor.

Layers: sources (list and open files) -> containers (this package: delimit records, undo gzip, recover
from damage) -> adapters (vendor semantics: op maps, type maps, ordering, identity) -> canonical rows.

Every reader is a generator of :class:`Record` (index, byte offset, raw bytes, parsed value) or
:class:`Damage` (a region that could not be delimited or decoded, with its raw bytes and an error class
from :data:`CONTAINER_ERRORS`); no reader holds a whole file in memory. :func:`each_record` is the record
loop adapters run over them: it opens each input record in the batch builder, quarantines damage, and turns
a :class:`~cdcnorm.errors.DecodeError` raised by the adapter's per-record decode into a quarantine row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

from cdcnorm.containers.avro import AVRO_MAGIC, AvroFile, AvroHeaderError
from cdcnorm.containers.csv_records import csv_records
from cdcnorm.containers.errors import CONTAINER_ERRORS, RAW_CAP, Damage, Record, capped
from cdcnorm.containers.json_records import JsonRecords, JsonTooDeep, loads_exact, loads_wide_ints
from cdcnorm.containers.parquet import PARQUET_MAGIC, ParquetRows, parquet_rows
from cdcnorm.containers.stream import GZIP_MAGIC, Source, as_source, inflated_head, rewindable
from cdcnorm.errors import DecodeError

__all__ = [
    "AVRO_MAGIC", "CONTAINER_ERRORS", "GZIP_MAGIC", "PARQUET_MAGIC", "RAW_CAP", "AvroFile", "AvroHeaderError",
    "Damage", "JsonRecords", "JsonTooDeep", "ParquetRows", "Record", "Source", "as_source", "capped", "container_of",
    "csv_records", "each_record", "inflated_head", "rewindable", "loads_exact", "loads_wide_ints", "parquet_rows",
]


def container_of(src: Source) -> str:
    """`avro`, `parquet`, `json` (first non-blank byte `{` or `[`), `empty` or `other`, by the first bytes."""
    head = src.peek(4)
    if head == AVRO_MAGIC:
        return "avro"
    if head == PARQUET_MAGIC:
        return "parquet"
    probe = src.peek(1 << 16)
    text = probe.removeprefix(b"\xef\xbb\xbf").lstrip()
    if not text and src.damage is not None:  # a gzip stream broken before its first record: the JSON reader
        return "json"  # reports it (with the compressed bytes), so the file is never silently empty
    if not text:
        return "empty" if len(probe) < 1 << 16 else "other"
    return "json" if text[:1] in (b"{", b"[") else "other"


def unknown_format(src: Source, what: str) -> Damage:
    """The whole file as one `unknown_format` error (first 16 MiB kept)."""
    rest = src.read(RAW_CAP)
    more = bool(src.read(1))
    note = f" (raw holds its first {RAW_CAP >> 20} MiB)" if more else ""
    return Damage(0, 0, rest, "unknown_format", f"{what}{note}")


Origin = Callable[[Record | Damage], dict[str, Any]]


def _default_origin(rec: Record | Damage) -> dict[str, Any]:
    return {"index": rec.index, "offset": str(rec.offset), "raw": rec.raw}


def each_record(path: str, items: Iterable[Record | Damage], out: Any, decode: Callable[[Record], None],
                origin: Origin = _default_origin) -> Iterator[None]:
    """The record loop: per container record, open it in `out` and decode it; quarantine damage and
    DecodeErrors with the record's raw bytes. Yields once per record (the caller flushes batches)."""
    for item in items:
        if isinstance(item, Damage):  # the vendor's origin (e.g. line numbers), with the damage's offset and bytes
            out.begin_record(path, **{**origin(item), "offset": str(item.offset), "raw": item.raw})
            out.quarantine(item.error_class, f"{path}: {item.message}")
        else:
            out.begin_record(path, **origin(item))
            try:
                decode(item)
            except DecodeError as exc:
                out.quarantine(exc.error_class, exc.message, raw=exc.raw)
        yield


def open_source(fh: IO[bytes] | Source) -> Source:
    """The input stream with gzip undone (detected by magic)."""
    return as_source(fh)
