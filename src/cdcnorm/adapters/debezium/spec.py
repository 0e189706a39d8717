"""Debezium declared once: formats, flags and the samples' options (light: no pyspark)."""

from __future__ import annotations

from cdcnorm.adapters.spec import DOUBLE_CLOSE, EXACT_NUMERIC, LossyRule, VendorSpec

SPEC = VendorSpec(
    name="debezium",
    adapter="cdcnorm.adapters.debezium.adapter:DebeziumAdapter",
    formats=("debezium.json", "debezium.avro", "debezium.avro_registry"),
    flags=("key_change", "timestamp_as_string", "unknown_position", "untyped_values"),
    compare_rules=(
        LossyRule(
            "debezium_decimal_double", "debezium", ("double", "float"), EXACT_NUMERIC,
            "CAST({x} AS DOUBLE)", "CAST({x} AS DOUBLE)",
            "a connector with decimal.handling.mode=double sends DECIMAL / NUMERIC columns as doubles: compared as "
            "doubles, within a double's precision",
            equal_sql=DOUBLE_CLOSE,
        ),
    ),
    sample_options={"schema_registry": "debezium/registry"},
    summary="Debezium change events (Kafka Connect, Server, Engine): JSON with or without schemas, Avro",
)
