"""Byte streams under every container reader: look-ahead, position, and gzip undone by its magic number.

Why here: a reader must peek at a file's first bytes to choose the container, then read it from the start,
without seeking (object-store streams and gzip streams cannot seek). A damaged gzip stream must not raise
out of the middle of a reader: :class:`Source` reports end of data and keeps the damage, so the reader yields
every complete record before the cut and then one `truncated_gzip` / `corrupt_gzip` error.
"""

from __future__ import annotations

import zlib
from typing import IO

from cdcnorm.containers.errors import RAW_CAP

GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 16
_OUT_CHUNK = 1 << 18


class Gunzip:
    """Inflate a gzip stream (any number of members) as it is read; damage ends the data and is kept.

    `damage` is then (error_class, message): `truncated_gzip` when the input ends inside a member,
    `corrupt_gzip` when the bytes do not inflate (bad data, bad checksum, garbage after a member).
    """

    def __init__(self, fh: IO[bytes]):
        self._fh = fh
        self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._in = b""
        self._started = False
        self._done = False
        self.compressed_read = 0
        self.produced = 0
        self.damage: tuple[str, str] | None = None
        self._member = bytearray()  # the current member's compressed bytes (capped): the raw bytes of damage
        self.damaged_bytes = b""
        self.damaged_length = 0

    def read(self, n: int = -1) -> bytes:
        """Up to `n` inflated bytes (fewer at a member boundary); b'' at the end of data or at damage."""
        while not self._done:
            if not self._in:
                chunk = self._fh.read(_CHUNK)
                self.compressed_read += len(chunk)
                if not chunk:
                    self._done = True
                    if self._started and not self._z.eof:
                        self._fail("truncated_gzip", "the gzip stream ends inside a member (the copy was cut)")
                    break
                self._in = chunk
                self._keep(chunk)
            self._started = True
            try:
                out = self._z.decompress(self._in, _OUT_CHUNK if n is None or n < 0 else max(n, 1))
            except zlib.error as exc:
                self._fail("corrupt_gzip", f"the gzip stream cannot be inflated ({exc})")
                break
            self._in = self._z.unconsumed_tail
            if self._z.eof:
                self._next_member(self._z.unused_data + self._in)
            if out:
                self.produced += len(out)
                return out
        return b""

    def _keep(self, chunk: bytes) -> None:
        room = RAW_CAP - len(self._member)
        if room > 0:
            self._member += chunk[:room]
        self.damaged_length += len(chunk)

    def _next_member(self, rest: bytes) -> None:
        """After a member's trailer: another member, zero padding, or garbage (damage)."""
        self._in = b""
        self._member, self.damaged_length = bytearray(), 0
        self._keep(rest)
        if not rest.strip(b"\x00"):
            self._started = False
            self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
            return
        if rest[:2] != GZIP_MAGIC and len(rest) >= 2:
            self._fail("corrupt_gzip", "bytes after a gzip member are not another gzip member")
            return
        self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._started = False
        self._in = rest

    def _fail(self, error_class: str, why: str) -> None:
        """Stop at damage; keep the compressed bytes from the damaged member's start to the end of the file (the
        first RAW_CAP of them; `damaged_length` is their true length)."""
        self._done = True
        while chunk := self._fh.read(_CHUNK):
            self.compressed_read += len(chunk)
            self._keep(chunk)
        self.damaged_bytes = bytes(self._member)
        self.damage = (error_class, f"{why}, after {self.produced} inflated bytes "
                                    f"(compressed byte {self.compressed_read})")


class Source:
    """A forward-only input stream with look-ahead (`peek`), its position (`pos`) and gzip damage (`damage`).

    Gzip is detected by its magic number and undone as the stream is read; `pos` counts the bytes handed out
    (inflated bytes for gzip), so record offsets are positions in what the reader sees.
    """

    def __init__(self, fh: IO[bytes], decompress: bool = True):
        self._file = fh
        head = _read_full(fh, 2)
        self.compressed = decompress and head == GZIP_MAGIC
        self._gz = Gunzip(_Replay(head, fh)) if self.compressed else None
        self._buf = b"" if self.compressed else head
        self.pos = 0

    @property
    def damage(self) -> tuple[str, str] | None:
        """(error_class, message) when the gzip stream broke; None otherwise."""
        return self._gz.damage if self._gz is not None else None

    @property
    def damaged_bytes(self) -> tuple[bytes, int]:
        """The compressed bytes of a broken gzip stream from the damaged member on (capped), and their length."""
        if self._gz is None:
            return b"", 0
        return self._gz.damaged_bytes, self._gz.damaged_length

    def _raw_read(self, n: int) -> bytes:
        return self._gz.read(n) if self._gz is not None else self._file.read(n)

    def peek(self, n: int) -> bytes:
        """The next `n` bytes (fewer at the end) without consuming them."""
        while len(self._buf) < n:
            more = self._raw_read(max(n - len(self._buf), _CHUNK))
            if not more:
                break
            self._buf += more
        return self._buf[:n]

    def read(self, n: int = -1) -> bytes:
        """Up to `n` bytes (all that is left when n < 0); fewer only at the end of data."""
        if n is None or n < 0:
            parts = [self._buf]
            while more := self._raw_read(_OUT_CHUNK):
                parts.append(more)
            data, self._buf = b"".join(parts), b""
        else:
            if len(self._buf) < n:
                self.peek(n)
            data, self._buf = self._buf[:n], self._buf[n:]
        self.pos += len(data)
        return data

    def read_some(self, n: int) -> bytes:
        """Whatever is buffered or one underlying read, at most `n` bytes: b'' only at the end."""
        if not self._buf:
            self._buf = self._raw_read(n)
        data, self._buf = self._buf[:n], self._buf[n:]
        self.pos += len(data)
        return data

    def seekable_file(self) -> IO[bytes] | None:
        """The underlying file rewound to its start, when it is uncompressed and seekable (Parquet needs it)."""
        if self.compressed:
            return None
        try:
            if self._file.seekable():
                self._file.seek(0)
                self._buf, self.pos = b"", 0
                return self._file
        except (AttributeError, OSError, ValueError):
            pass
        return None


class _Replay:
    """Bytes already read, then the rest of a file: the one place a peeked head is replayed."""

    def __init__(self, head: bytes, fh: IO[bytes]):
        self._head, self._fh = head, fh

    def read(self, n: int = -1) -> bytes:
        if self._head:
            data = self._head if n is None or n < 0 else self._head[:n]
            self._head = self._head[len(data):]
            return data
        return self._fh.read(n)


def _read_full(fh: IO[bytes], n: int) -> bytes:
    data = b""
    while len(data) < n:
        more = fh.read(n - len(data))
        if not more:
            break
        data += more
    return data


def as_source(fh: IO[bytes] | Source) -> Source:
    """A Source over `fh` (gzip undone), or `fh` itself when it already is one."""
    return fh if isinstance(fh, Source) else Source(fh)


def rewindable(fh: IO[bytes]) -> IO[bytes]:
    """`fh` when it can seek, else a copy spooled to a temporary file (for two passes over one input, e.g.
    Replicate's metadata prescan); never a copy in memory beyond 8 MiB."""
    try:
        if fh.seekable():
            return fh
    except (AttributeError, OSError, ValueError):
        pass
    import shutil
    import tempfile

    spool = tempfile.SpooledTemporaryFile(max_size=8 << 20)  # noqa: SIM115 - the caller's to close
    shutil.copyfileobj(fh, spool, 1 << 20)
    spool.seek(0)
    return spool  # type: ignore[return-value]


def inflated_head(head: bytes, limit: int = 1 << 20) -> bytes | None:
    """The first inflated bytes of a gzip file's head (for sniffing), `head` itself when it is not gzip, or
    None when the gzip bytes do not inflate."""
    if head[:2] != GZIP_MAGIC:
        return head
    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, limit)
    except zlib.error:
        return None
