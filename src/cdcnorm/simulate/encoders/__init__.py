"""One encoder per vendor: a simulated history written as that vendor delivers it (independent of the adapters).

Each encoder module ends with `FORMATS`, one :class:`SimFormat` per vendor format it writes: the encoder class,
the input folder, and the format's truth projection (which value kind a faithful decoder yields per source
column, whether the format can express a truncate or the added column). `cdcnorm.simulate.formats` collects
them for every registered vendor. Encoders are written from the vendor references, never from the decoders:
nothing here imports `cdcnorm.adapters`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cdcnorm.simulate.history import Col, TableDef

COMMON_KINDS = {"int": "int", "bigint": "int", "double": "float", "boolean": "bool", "string": "str"}
"""Value kinds every format delivers unchanged (source base type -> kind)."""


def _no_options(out: Path, info: dict[str, Any]) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class SimFormat:
    """One simulated vendor format: how it is written and what it can carry.

    Attributes:
        vendor: the registered vendor name whose adapter reads it.
        folder: its input folder under `OUT/<vendor>/` (and the encoder's `fmt` argument).
        encoder: the encoder class, called as `encoder(out, defs, seed, quirks, rotate, folder)`.
        truth_kind: `(flavour, column) -> value kind` (see docs/simulate.md and `simulate.truth`).
        vendor_type: `(table, column) -> the vendor's type name` for the manifest.
        carries_truncate: the format can express a truncate (else the truth keeps the truncated rows).
        carries_added_column: the format delivers the column a DDL adds (else the truth drops it).
        extra_outputs: folders under OUT the encoder writes besides its input (cleaned before a run).
        user_options: `(OUT, manifest entry) -> adapter options` a user of the format must pass.
        time_unit_us: the precision of its source times; `as_of` checks pick points at it.
    """

    vendor: str
    folder: str
    encoder: Callable[..., Any]
    truth_kind: Callable[[str, Col], str]
    vendor_type: Callable[[TableDef, Col], str]
    carries_truncate: bool = False
    carries_added_column: bool = True
    extra_outputs: tuple[str, ...] = ()
    user_options: Callable[[Path, dict[str, Any]], dict[str, Any]] = _no_options
    time_unit_us: int = 1000
    """The coarsest source time the format carries (µs): milliseconds, or whole seconds (Maxwell's `ts`)."""

    @property
    def name(self) -> str:
        """`<vendor>-<folder>`, e.g. `datahub-tuple`."""
        return f"{self.vendor}-{self.folder}"
