"""GoldenGate declared once: formats, flags and compare projections (light: no pyspark)."""

from __future__ import annotations

from cdcnorm.adapters.spec import VendorSpec

SPEC = VendorSpec(
    name="goldengate",
    adapter="cdcnorm.adapters.goldengate.adapter:GoldenGateAdapter",
    formats=("goldengate.json", "goldengate.json_row", "goldengate.avro_op"),
    flags=("before_unknown", "key_change", "timestamp_as_string", "unknown_position", "untyped_values"),
    summary="Oracle GoldenGate for Big Data / DAA: JSON op- and row-modeled, Avro op, Kafka transaction mode",
)
