"""Qlik Replicate declared once: formats, flags, compare rules and scenario projections (light: no pyspark)."""


from __future__ import annotations

from cdcnorm.adapters.spec import VendorSpec

SPEC = VendorSpec(
    name="replicate",
    adapter="cdcnorm.adapters.replicate.adapter:ReplicateAdapter",
    formats=("replicate.json", "replicate.avro", "replicate.avro_registry"),
    flags=("column_mask_conflict", "key_change", "mask_bits_beyond_columns", "no_schema", "timestamp_as_string"),
    sample_options={"schema_registry": "replicate/registry"},
    summary="Qlik Replicate Kafka / Event Hubs messages (JSON, Avro, Schema Registry)",
)
