"""What a vendor package declares once: its formats, flags and compare projections (:class:`VendorSpec`).

Why a spec apart from the adapter class: the registry, the CLI help, the simulator and compare need a vendor's
name, formats and lossy projections without importing its decoder (pyspark, fastavro, ...). A vendor package's
`__init__.py` holds one `VENDOR = VendorSpec(...)` and nothing heavy; the adapter class reads its `formats`
from it. Options stay a pydantic model on the adapter class (`spec.adapter_class().Options`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cdcnorm.adapters.base import Adapter

INTEGRAL = ("int", "bigint", "smallint", "tinyint")
EXACT_NUMERIC = (*INTEGRAL, "decimal")
FLOATING = ("double", "float")
TEXT_TYPES = ("string", "variant")

MIDNIGHT_DATE = ("CASE WHEN {x} IS NULL THEN NULL WHEN date_trunc('DAY', {x}) = {x} "
                 "THEN CAST(CAST({x} AS DATE) AS STRING) ELSE CAST({x} AS STRING) END")
"""SQL: a midnight timestamp as its date text, any other instant as its timestamp text."""
DOUBLE_CLOSE = ("(({a}) <=> ({b}) OR abs(({a}) - ({b})) <= 1e-15 * greatest(abs({a}), abs({b})))")
"""SQL: two doubles equal within a double's precision."""
NUMBER_TEXT = ("CASE WHEN {x} RLIKE '^[+-]?[0-9]*\\\\.[0-9]+$' "
               "THEN regexp_replace(regexp_replace({x}, '0+$', ''), '\\\\.$', '') ELSE {x} END")
"""SQL: decimal text without the trailing zeros of its scale."""


def base_type(type_name: str) -> str:
    """A Spark type name without its parameters for decimals (`decimal(12,2)` -> `decimal`)."""
    t = type_name.lower()
    return "decimal" if t.startswith("decimal") else t


@dataclass(frozen=True)
class LossyRule:
    """A documented lossy projection: where it applies and how both sides are normalised before `<=>`.

    `vendor` is the vendor whose output is lossy (None: any vendor); `{x}` in the SQL is the column.
    """

    name: str
    vendor: str | None
    lossy_types: tuple[str, ...]
    other_types: tuple[str, ...]
    lossy_sql: str
    other_sql: str
    explanation: str
    source_db: str | None = None
    equal_sql: str = "({a}) <=> ({b})"
    as_text: bool = False
    """Read the lossy side as text first (a VARIANT scalar as its text, a string as is)."""
    other_as_text: bool = False
    """Read the other side as text first."""
    same_type: bool = False
    """Also applies when both sides have the same type (the values, not the types, are projected)."""

    def applies(self, vendor: str, ltype: str, other_type: str, source_db: str | None) -> bool:
        return ((self.vendor is None or self.vendor == vendor)
                and (self.source_db is None or (source_db or "").lower() == self.source_db)
                and base_type(ltype) in self.lossy_types and base_type(other_type) in self.other_types)


Projection = dict[str, tuple[str, Callable[[Any], Any]]]
"""A scenario value projection: base type -> (the type the vendor delivers, Spark Column -> Column)."""


@dataclass(frozen=True)
class VendorSpec:
    """One vendor, declared once in its package's `__init__.py`.

    Attributes:
        name: the vendor name (`vendor` column, `--vendor`, `samples/<name>/`).
        adapter: the adapter class as `"module:Class"`, imported only when the vendor is used.
        formats: the `format` values its rows carry, e.g. `("acme.json",)`.
        flags: the `canonical.schema.FLAGS` its adapter emits itself (the contract suite checks the rows).
        compare_rules: the documented lossy projections of its output (`cdcnorm compare` applies them).
        scenario_projections: named value projections a migration scenario can give a simulated new vendor.
        encoder: the simulator encoder module (default `cdcnorm.simulate.encoders.<name>` when it exists).
        sample_options: options its `samples/<name>/` folder needs (paths relative to `samples/`).
        summary: one line for help texts.
    """

    name: str
    adapter: str
    formats: tuple[str, ...]
    flags: tuple[str, ...] = ()
    compare_rules: tuple[LossyRule, ...] = ()
    scenario_projections: dict[str, Projection] = field(default_factory=dict)
    encoder: str | None = None
    sample_options: dict[str, str] = field(default_factory=dict)
    """Options the bundled `samples/<name>/` folder needs, values as paths relative to `samples/`."""
    summary: str = ""
    klass: type[Adapter] | None = field(default=None, compare=False, repr=False)
    """The adapter class itself, when it was registered as an object (it may not be importable by name)."""

    def adapter_class(self) -> type[Adapter]:
        """Import and return the adapter class."""
        if self.klass is not None:
            return self.klass
        module, _, attr = self.adapter.partition(":")
        return getattr(importlib.import_module(module), attr)

    @classmethod
    def of_adapter(cls, klass: type[Adapter]) -> VendorSpec:
        """A spec read from an adapter class's own attributes (for plug-ins that register only a class)."""
        return cls(name=klass.name, adapter=f"{klass.__module__}:{klass.__qualname__}", formats=tuple(klass.formats),
                   flags=tuple(getattr(klass, "flags", ())), summary=(klass.__doc__ or "").strip().split("\n")[0],
                   klass=klass)


def lazy_adapter(spec: VendorSpec) -> Callable[[str], Any]:
    """A vendor package's module `__getattr__` that imports its adapter class on first use.

    Why: the registry, the CLI and compare name vendors through their package; importing the decoder (and
    pyspark) must wait until a vendor is really used.
    """
    class_name = spec.adapter.partition(":")[2]

    def __getattr__(name: str) -> Any:
        if name == class_name:
            return spec.adapter_class()
        raise AttributeError(f"module {spec.adapter.partition(':')[0].rsplit('.', 1)[0]!r} has no attribute {name!r}")

    return __getattr__
