"""Qlik Replicate (Attunity): Kafka / Event Hubs messages, as JSON, Avro envelopes or the Confluent wire format.

The package holds the adapter (`adapter.py`), the metadata catalog (`catalog.py`) and the column masks
(`masks.py`); this module only declares the vendor, so the registry, the CLI and compare can name it without
importing the decoder.
"""

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

__all__ = ["SPEC"]
