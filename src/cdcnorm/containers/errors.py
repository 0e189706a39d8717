"""The vocabulary of container damage, shared by every vendor, and what a container reader yields.

Why one vocabulary: the same damaged file (a cut gzip, a corrupt Avro block, a broken object in concatenated
JSON) must get the same error class and the same recovery whichever vendor's files it is, so that a person
reading the quarantine learns one set of tags. `docs/canonical.md` renders this table (a test keeps it in step).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CONTAINER_ERRORS: dict[str, str] = {
    "truncated_gzip": "the gzip stream ends before its end marker (a cut copy): the records before the cut are decoded; "
                      "raw holds the incomplete last record, or the compressed bytes of the cut member when the cut "
                      "falls between records",
    "corrupt_gzip": "the gzip stream cannot be inflated (bad data or checksum): the records before the damage are "
                    "decoded; raw holds the compressed bytes from the damaged member to the end of the file",
    "bad_json": "a JSON line, object or array element that does not parse: the records after it are decoded",
    "json_too_deep": "a JSON record nested deeper than the reader's depth limit (kept raw, never a crash)",
    "json_too_large": "a JSON record that does not end within the reader's size limit (`max_object_bytes`)",
    "truncated_avro": "an Avro file or message that ends inside its header, a block or a datum",
    "corrupt_avro": "Avro bytes that do not decode (bad sync marker, codec failure, datum not matching its schema): "
                    "the good blocks before and after a corrupt block are decoded",
    "corrupt_parquet": "a Parquet footer, row group or page that cannot be read: the readable row groups are decoded",
    "bad_csv": "a CSV record that cannot be split into fields, or has the wrong number of fields",
    "bad_encoding": "a text record (a JSON line or object, a CSV row) that is not valid UTF-8: the records around it are decoded",
    "unknown_format": "a file whose container is none that the vendor writes (kept raw, first 16 MiB)",
}
"""Container damage: error class -> meaning (documented in docs/canonical.md, section container errors)."""

RAW_CAP = 16 * 1024 * 1024
"""At most this many bytes of a damaged region are kept as the quarantine's raw bytes (the message says more)."""


@dataclass(slots=True)
class Record:
    """One record a container delimits: its index in the file, byte offset, raw bytes and parsed value.

    `offset` is a byte offset in the decompressed stream (a CSV record's is its first line, `line N`; a
    Parquet row's `row group:row`). `raw` is None where the container has no per-record bytes (Parquet).
    """

    index: int
    offset: int | str
    raw: bytes | None
    value: Any = None


@dataclass(slots=True)
class Damage:
    """A region of a file the container could not delimit or decode into a record; counted as one record."""

    index: int
    offset: int | str
    raw: bytes | None
    error_class: str
    message: str

    def __post_init__(self) -> None:
        if self.error_class not in CONTAINER_ERRORS:  # pragma: no cover - a reader bug
            raise ValueError(f"{self.error_class!r} is not a container error class")


def capped(data: bytes, total: int | None = None) -> tuple[bytes, str]:
    """The bytes kept for a damaged region and a note saying so when they are not all of it."""
    total = len(data) if total is None else total
    if total <= RAW_CAP:
        return data, ""
    return data[:RAW_CAP], f" (raw holds the first {RAW_CAP >> 20} MiB of {total} bytes)"
