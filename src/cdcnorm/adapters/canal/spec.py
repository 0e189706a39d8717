"""Canal declared once: formats, flags and compare projections (light: no pyspark)."""

from __future__ import annotations

from cdcnorm.adapters.spec import VendorSpec

SPEC = VendorSpec(
    name="canal",
    adapter="cdcnorm.adapters.canal.adapter:CanalAdapter",
    formats=("canal.json",),
    flags=("changed_columns_partial", "key_change", "unknown_position", "untyped_values"),
    summary="Alibaba Canal flat messages (canal-json; also TiCDC and Huawei DRS): JSON lines or Kafka messages",
)
