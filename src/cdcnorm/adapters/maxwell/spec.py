"""Maxwell declared once: formats, flags and the samples' options (light: no pyspark)."""

from __future__ import annotations

from cdcnorm.adapters.spec import VendorSpec

SPEC = VendorSpec(
    name="maxwell",
    adapter="cdcnorm.adapters.maxwell.adapter:MaxwellAdapter",
    formats=("maxwell.json",),
    flags=("changed_columns_partial", "key_change", "timestamp_as_string", "unknown_position", "untyped_values"),
    sample_options={},
    summary="Maxwell's daemon MySQL change rows, bootstrap snapshots and DDL events (JSON, optionally encrypted)",
)
