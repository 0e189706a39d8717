"""Parquet files, streamed by row group and record batch (DataHub TUPLE exports, BigQuery exports).

Why by row group: a damaged row group (a bad page, a checksum) must cost only its rows: it becomes one
`corrupt_parquet` error holding the row group's bytes (bounded), and the next row groups are still read. A
footer that cannot be read loses the file: one error with its first bytes. Parquet needs random access, so a
stream that cannot seek (a gzip-compressed export, some object-store streams) is spooled to a temporary file,
never held in memory.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from typing import IO, Any

from cdcnorm.containers.errors import RAW_CAP, Damage, Record, capped
from cdcnorm.containers.stream import Source

PARQUET_MAGIC = b"PAR1"
BATCH_ROWS = 1024
_SPOOL_IN_MEMORY = 8 << 20


def _random_access(src: Source) -> IO[bytes]:
    fh = src.seekable_file()
    if fh is not None:
        return fh
    spool = tempfile.SpooledTemporaryFile(max_size=_SPOOL_IN_MEMORY)  # noqa: SIM115 - closed by the caller
    shutil.copyfileobj(src, spool, 1 << 20)  # type: ignore[misc]
    spool.seek(0)
    return spool


def _byte_range(meta: Any, rg: int) -> tuple[int, int]:
    """First and last (exclusive) byte of a row group's column chunks."""
    group = meta.row_group(rg)
    start, end = None, 0
    for c in range(group.num_columns):
        col = group.column(c)
        first = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
        start = first if start is None else min(start, first)
        end = max(end, first + col.total_compressed_size)
    return start or 0, end


def _bytes_at(fh: IO[bytes], start: int, end: int) -> tuple[bytes, str]:
    try:
        fh.seek(start)
        data = fh.read(min(end - start, RAW_CAP))
    except (OSError, ValueError):
        return b"", " (its bytes could not be re-read)"
    return capped(data, end - start)


class ParquetRows:
    """Rows as dicts (`Record.offset` is `row group:row`); a damaged row group or footer is one error.

    `schema_arrow` is the file's Arrow schema once iteration has started (None for an unreadable footer).
    """

    def __init__(self, src: Source, batch_rows: int = BATCH_ROWS):
        self._src, self._batch_rows = src, batch_rows
        self.schema_arrow: Any = None

    def __iter__(self) -> Iterator[Record | Damage]:
        import pyarrow.parquet as pq

        fh = _random_access(self._src)
        try:
            try:
                pf = pq.ParquetFile(fh)
                self.schema_arrow = pf.schema_arrow
            except Exception as exc:  # noqa: BLE001 - any reader failure is a damaged file, not a crash
                fh.seek(0)
                raw, note = capped(fh.read(RAW_CAP + 1))
                yield Damage(0, 0, raw, "corrupt_parquet",
                             f"not a readable Parquet file ({type(exc).__name__}: {exc}); no row was decoded - "
                             f"re-export the file and re-run{note}")
                return
            yield from self._row_groups(pf, fh)
        finally:
            if fh is not getattr(self._src, "_file", None):
                fh.close()

    def _row_groups(self, pf: Any, fh: IO[bytes]) -> Iterator[Record | Damage]:
        index = 0
        for rg in range(pf.num_row_groups):
            n = 0
            try:
                for batch in pf.iter_batches(batch_size=self._batch_rows, row_groups=[rg]):
                    for row in batch.to_pylist():
                        yield Record(index, f"{rg}:{n}", None, row)
                        index += 1
                        n += 1
            except Exception as exc:  # noqa: BLE001 - a damaged row group: keep its bytes, read the next
                start, end = _byte_range(pf.metadata, rg)
                raw, note = _bytes_at(fh, start, end)
                yield Damage(index, f"{rg}:{n}", raw, "corrupt_parquet",
                             f"row group {rg} cannot be read from row {n} on ({type(exc).__name__}: {exc}); "
                             f"the other row groups were decoded, raw holds this row group's bytes "
                             f"{start}-{end} - re-export the file and re-run{note}")
                index += 1


def parquet_rows(src: Source, batch_rows: int = BATCH_ROWS) -> Iterator[Record | Damage]:
    """Rows of a Parquet file (see :class:`ParquetRows`)."""
    return iter(ParquetRows(src, batch_rows))
