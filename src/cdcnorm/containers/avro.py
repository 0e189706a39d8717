"""Avro object container files, read block by block with recovery on the file's sync marker.

Why not `fastavro.reader`: it stops at the first damaged byte and loses the rest of the file. Here a corrupt
block (bad sync marker, a size that makes no sense, a codec failure, a datum that does not match the schema)
is one `corrupt_avro` error holding that block's bytes, and reading goes on at the next occurrence of the
16-byte sync marker, so the good blocks before AND after it are decoded. A file that ends inside a block
yields the records that block still holds, then one `truncated_avro` error with the bytes from the block on.
Records are decoded with `fastavro.schemaless_reader` against the writer schema (after the caller's
`prepare_schema`, e.g. Datastream strips logical types to convert values itself).
"""

from __future__ import annotations

import io
import json
import zlib
from collections.abc import Callable, Iterator
from typing import Any

from cdcnorm.containers.errors import RAW_CAP, Damage, Record, capped
from cdcnorm.containers.stream import Source

AVRO_MAGIC = b"Obj\x01"
MAX_BLOCK_BYTES = 256 << 20
"""A block header announcing more bytes than this is damage (a random size would read the rest of the file)."""
_SCAN_CHUNK = 1 << 16


class AvroHeaderError(Exception):
    """The header cannot be read; `error_class` is `truncated_avro` or `corrupt_avro`."""

    def __init__(self, error_class: str, message: str):
        super().__init__(message)
        self.error_class = error_class


def _read_long(src: Source, at_start: bool = False) -> int | None:
    """Avro zigzag varint; None when the stream ends cleanly before the first byte (at_start)."""
    shift = acc = 0
    while True:
        b = src.read(1)
        if not b:
            if at_start and shift == 0:
                return None
            raise EOFError("the file ends inside a block header")
        acc |= (b[0] & 0x7F) << shift
        if not b[0] & 0x80:
            return (acc >> 1) ^ -(acc & 1)
        shift += 7
        if shift > 63:
            raise ValueError("a varint longer than 64 bits")


def _read_bytes(src: Source) -> bytes:
    n = _read_long(src) or 0
    if n < 0:
        raise ValueError("a negative length in the header")
    data = src.read(n)
    if len(data) < n:
        raise EOFError("the file ends inside the header")
    return data


def decompress(codec: str, data: bytes) -> bytes:
    """One block's bytes under the file's codec (null, deflate, bzip2, xz, snappy)."""
    if codec == "null":
        return data
    if codec == "deflate":
        return zlib.decompressobj(-15).decompress(data)
    if codec == "bzip2":
        import bz2

        return bz2.decompress(data)
    if codec == "xz":
        import lzma

        return lzma.decompress(data)
    if codec == "snappy":
        from cramjam import snappy  # type: ignore[import-not-found]

        return bytes(snappy.decompress_raw(data[:-4]))
    raise ValueError(f"unsupported Avro codec {codec!r}")


class AvroFile:
    """Blocks and records of one Avro object container file.

    Create it, call :meth:`read_header` (raises :class:`AvroHeaderError`, with the bytes read so far in
    `header_bytes`), look at `writer_schema`, then iterate :meth:`records`.
    """

    def __init__(self, src: Source, prepare_schema: Callable[[Any], Any] | None = None, keep_raw: bool = True):
        """`keep_raw=False`: records carry no raw bytes (None), for readers that never quarantine a decoded
        record with its datum bytes (copying each datum out of its block is then saved)."""
        self._src = src
        self._prepare = prepare_schema
        self._keep_raw = keep_raw
        self.writer_schema: Any = None
        self.metadata: dict[str, bytes] = {}
        self.codec = "null"
        self.sync = b""
        self._parsed: Any = None
        self._index = 0
        self._block_start = 0
        self._last_count = 0  # records the last block gave
        self._last_error: str | None = None  # why the last block stopped early
        self.header_bytes = bytearray()  # the header as read (the raw bytes of a damaged or foreign file)

    def read_header(self) -> None:
        src = _Recording(self._src)
        self.header_bytes = src.seen
        try:
            if src.read(4) != AVRO_MAGIC:
                raise ValueError("no Avro magic")
            while True:
                n = _read_long(src)  # type: ignore[arg-type]
                if not n:
                    break
                if n < 0:
                    n = -n
                    _read_long(src)  # type: ignore[arg-type]
                for _ in range(n):
                    k = _read_bytes(src).decode()  # type: ignore[arg-type]
                    self.metadata[k] = _read_bytes(src)  # type: ignore[arg-type]
            self.sync = src.read(16)
            if len(self.sync) < 16:
                raise EOFError("the file ends inside the header")
            self.writer_schema = json.loads(self.metadata["avro.schema"])
            self.codec = self.metadata.get("avro.codec", b"null").decode() or "null"
            import fastavro

            schema = self._prepare(self.writer_schema) if self._prepare else self.writer_schema
            self._parsed = fastavro.parse_schema(schema)
        except Exception as exc:  # noqa: BLE001 - any header damage: the whole file is one error
            raise AvroHeaderError("truncated_avro" if isinstance(exc, EOFError) else "corrupt_avro",
                                  f"the Avro header cannot be read ({type(exc).__name__}: {exc})") from None
        finally:
            src.stop()

    def header_damage(self, exc: AvroHeaderError) -> Damage:
        """The whole file as one error (the header is damaged, nothing can be decoded)."""
        head = bytes(self.header_bytes)
        rest = self._src.read(RAW_CAP)
        total = len(head) + len(rest) + len(self._src.read(1))
        raw, note = capped(head + rest, total if total <= len(head) + len(rest) else RAW_CAP + 1)
        return Damage(0, 0, raw, exc.error_class, f"{exc}; no record was decoded - re-copy the file{note}")

    def records(self) -> Iterator[Record | Damage]:
        """Every record, block by block; damage is one error per damaged region."""
        while True:
            src = self._src
            start = src.pos
            self._block_start = start
            try:
                count = _read_long(src, at_start=True)
                if count is None:
                    return
                size = _read_long(src)
            except EOFError:
                yield self._truncated(start, b"", "the file ends inside a block header")
                return
            except ValueError as exc:
                yield from self._resync(start, f"the block header at byte {start} is damaged ({exc})")
                continue
            assert size is not None
            if count < 0 or size < 0 or size > MAX_BLOCK_BYTES:
                yield from self._resync(start, f"the block at byte {start} announces {count} records in "
                                        f"{size} bytes, which is not a block")
                continue
            data = src.read(size)
            trailer = src.read(16)
            if len(data) < size or len(trailer) < 16:
                yield from self._decode(data, count, partial=True)
                got = self._last_count
                yield self._truncated(start, _zigzag(count) + _zigzag(size) + data + trailer,
                                      f"the file ends inside the block at byte {start} ({got} of {count} "
                                      "records recovered)")
                return
            if trailer != self.sync:
                yield from self._resync(start, f"the block at byte {start} does not end with the file's sync "
                                        "marker", already=data + trailer)
                continue
            records = list(self._decode(data, count, partial=False))
            if self._last_error is None:
                yield from records
                continue
            yield from records
            kept, note = capped(_zigzag(count) + _zigzag(size) + data + trailer)
            yield self._next_damage(start, kept, "corrupt_avro",
                                    f"the block at byte {start} cannot be decoded ({self._last_error}); "
                                    f"{len(records)} of its {count} records were recovered, the blocks around "
                                    f"it were decoded - re-copy the file and re-run{note}")

    # -- blocks ----------------------------------------------------------------------------------------------
    def _decode(self, data: bytes, count: int, partial: bool) -> Iterator[Record]:
        """Records of one block (all of them, or those before the damage; `_last_error` says why it stopped)."""
        import fastavro

        self._last_count, self._last_error = 0, None
        try:
            body = io.BytesIO(decompress(self.codec, data))
        except Exception as exc:  # noqa: BLE001 - any codec failure is damage
            self._last_error = f"the block cannot be decompressed: {exc}"
            return
        buf = body.getbuffer()
        size = len(buf)
        decoded: list = []
        read, parsed, tell = fastavro.schemaless_reader, self._parsed, body.tell
        try:
            if self._keep_raw:
                for _ in range(count):
                    at = tell()
                    value = read(body, parsed, None)
                    decoded.append((bytes(buf[at:tell()]), value))
            else:
                for _ in range(count):
                    decoded.append((None, read(body, parsed, None)))
        except Exception as exc:  # noqa: BLE001 - any decode failure is damage
            self._last_error = f"{type(exc).__name__}: {exc}"
        if self._last_error is None and not partial and tell() != size:
            self._last_error = f"{size - tell()} bytes left over after {count} records"
            decoded = []
        del buf
        self._last_count = len(decoded)
        for raw, value in decoded:
            rec = Record(self._index, self._block_start, raw, value)
            self._index += 1
            yield rec

    def _next_damage(self, offset: int, raw: bytes, error_class: str, message: str) -> Damage:
        d = Damage(self._index, offset, raw, error_class, message)
        self._index += 1
        return d

    def _truncated(self, start: int, block: bytes, why: str) -> Damage:
        kept, note = capped(block)
        return self._next_damage(start, kept, "truncated_avro",
                                 f"damaged Avro from record {self._index} on: {why}. The records before it were "
                                 f"decoded; raw holds the file's bytes from the damaged block (offset {start}) "
                                 f"- re-copy the file and re-run{note}")

    def _resync(self, start: int, why: str, already: bytes = b"") -> Iterator[Damage]:
        """Skip to just after the next sync marker; the bytes skipped are one `corrupt_avro` error."""
        src = self._src
        # the block header bytes already consumed are not kept (they are a few varints); the scan starts at
        # what follows them
        kept = bytearray(already[:RAW_CAP])
        window = bytes(already)
        total = len(already)
        while True:
            i = window.find(self.sync)
            if i >= 0:
                leftover = window[i + 16:]
                break
            tail = window[-15:]
            more = src.read(_SCAN_CHUNK)
            if not more:
                leftover = None
                break
            total += len(more)
            if len(kept) < RAW_CAP:
                kept += more[:RAW_CAP - len(kept)]
            window = tail + more
        if leftover is not None:
            skipped = total - len(leftover)
            kept = kept[:skipped]
            self._src = _Rejoined(leftover, src) if leftover else src  # type: ignore[assignment]
        else:
            skipped = total
        note = f" (raw holds the first {RAW_CAP >> 20} MiB of {skipped} bytes)" if skipped > RAW_CAP else ""
        after = ("reading went on after the next sync marker" if leftover is not None
                 else "no sync marker follows: the rest of the file is this error")
        yield self._next_damage(start, bytes(kept), "corrupt_avro",
                                f"{why}; {after}. The blocks before it were decoded - re-copy the file and "
                                f"re-run{note}")
        if leftover is None:
            self._src = _Ended(src)  # type: ignore[assignment]


def _zigzag(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


class _Recording:
    """Reads through to a source and keeps what it read (the header, for the error of a damaged one)."""

    def __init__(self, src: Source):
        self._src, self.seen, self._on = src, bytearray(), True

    def read(self, n: int = -1) -> bytes:
        data = self._src.read(n)
        if self._on and len(self.seen) < RAW_CAP:
            self.seen += data
        return data

    def stop(self) -> None:
        self._on = False


class _Rejoined:
    """Bytes read past a sync marker during a resync, then the rest of the source (same `pos` arithmetic)."""

    def __init__(self, head: bytes, src: Any):
        self.pos = src.pos - len(head)
        if isinstance(src, _Rejoined):  # a resync inside a resync: one layer, never a chain of them
            head, src = head + src._head, src._src
        self._head, self._src = head, src

    def read(self, n: int = -1) -> bytes:
        if self._head:
            if n is None or n < 0:
                data, self._head = self._head + self._src.read(), b""
            else:
                data, self._head = self._head[:n], self._head[n:]
                if len(data) < n:
                    data += self._src.read(n - len(data))
        else:
            data = self._src.read(n)
        self.pos += len(data)
        return data


class _Ended:
    """A source with nothing left (after a resync that found no further sync marker)."""

    def __init__(self, src: Any):
        self.pos = src.pos

    def read(self, n: int = -1) -> bytes:
        return b""
