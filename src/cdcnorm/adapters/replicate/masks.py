"""Qlik Replicate `changeMask` / `columnMask` decoding.

Why this is its own module: the vendor documentation says the masks are "in little-endian order", and reading
the hex string byte-little-endian gives ordinals beyond the last column on every real message (reference §5).
The only reading that fits all real samples: the whole hex string (or the Avro `bytes`) is ONE big-endian
unsigned number and bit k (least significant = 0) is column ordinal k+1. Leading `00` bytes are padding; the
width is arbitrary (37-column tables give 5-byte masks), so Python ints are used, never 64-bit arithmetic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cdcnorm.errors import DecodeError

_HEX = re.compile(r"[0-9A-Fa-f]+")


def mask_value(mask: str | bytes | bytearray | memoryview | None) -> int | None:
    """The mask as an unsigned integer, or None when the message carries no mask.

    JSON masks are hex strings (`"008080"`); Avro masks are `bytes` with the same big-endian meaning. An empty
    string is treated like a missing mask (REFRESH rows carry `""` or null).

    Raises:
        DecodeError: `bad_hex` when a string mask is not hexadecimal.
    """
    if mask is None:
        return None
    if isinstance(mask, bytes | bytearray | memoryview):
        return int.from_bytes(bytes(mask), "big")
    if not isinstance(mask, str):
        raise DecodeError(
            "bad_hex",
            f"a change/column mask must be a hex string, got {type(mask).__name__} "
            f"{mask!r}; fix the producer's message format",
        )
    text = mask.strip()
    if not text:
        return None
    if not _HEX.fullmatch(text):
        raise DecodeError(
            "bad_hex",
            f"mask {mask!r} is not a hexadecimal string; the message is damaged or was "
            "re-encoded by a custom message format — fix it and re-process it",
        )
    return int(text, 16)


def mask_ordinals(value: int | None) -> list[int] | None:
    """Column ordinals (1-based) whose bit is set, ascending; None for a missing mask."""
    if value is None:
        return None
    ords = []
    k = 0
    while value:
        if value & 1:
            ords.append(k + 1)
        value >>= 1
        k += 1
    return ords


@dataclass(frozen=True, slots=True)
class DecodedMask:
    """A mask resolved against a table's columns: the named columns and whether bits beyond them were set."""

    columns: list[str] | None
    beyond: list[int]


def resolve(mask: str | bytes | None, names_by_ordinal: dict[int, str], ncols: int) -> DecodedMask:
    """Column names for the set bits; ordinals above `ncols` are returned in `beyond` (ignored, flagged)."""
    ords = mask_ordinals(mask_value(mask))
    if ords is None:
        return DecodedMask(None, [])
    names = [names_by_ordinal[o] for o in ords if o <= ncols and o in names_by_ordinal]
    return DecodedMask(names, [o for o in ords if o > ncols])


def absent_columns(mask: str | bytes | None, names_by_ordinal: dict[int, str]) -> list[str] | None:
    """Columns whose columnMask bit is 0, in ordinal order; None when there is no column mask."""
    value = mask_value(mask)
    if value is None:
        return None
    return [name for o, name in sorted(names_by_ordinal.items()) if not (value >> (o - 1)) & 1]
