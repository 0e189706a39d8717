"""Debezium declared once: formats, flags and the samples' options (light: no pyspark)."""

from __future__ import annotations

from cdcnorm.adapters.spec import VendorSpec

SPEC = VendorSpec(
    name="debezium",
    adapter="cdcnorm.adapters.debezium.adapter:DebeziumAdapter",
    formats=("debezium.json", "debezium.avro", "debezium.avro_registry"),
    flags=("key_change", "timestamp_as_string", "unknown_position", "untyped_values"),
    sample_options={"schema_registry": "debezium/registry"},
    summary="Debezium change events (Kafka Connect, Server, Engine): JSON with or without schemas, Avro",
)
