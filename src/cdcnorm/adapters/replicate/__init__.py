"""Qlik Replicate (Attunity): Kafka / Event Hubs messages, as JSON, Avro envelopes or the Confluent wire format.

The package: the adapter (`adapter.py`) and one module per decoding step: message envelopes (`envelope.py`),
files (`files.py`), the metadata catalog (`catalog.py`), column values (`values.py`), masks (`masks.py`),
stream / table naming (`naming.py`), ordering and identity (`positions.py`) and the rows a message becomes
(`changes.py`). This module declares the vendor, so the registry, the CLI and compare can name it without
importing the decoder; `ReplicateAdapter` is imported from here only when asked for.
"""

from __future__ import annotations

from typing import Any

from cdcnorm.adapters.spec import VendorSpec

SPEC = VendorSpec(
    name="replicate",
    adapter="cdcnorm.adapters.replicate.adapter:ReplicateAdapter",
    formats=("replicate.json", "replicate.avro", "replicate.avro_registry"),
    flags=("column_mask_conflict", "key_change", "mask_bits_beyond_columns", "no_schema", "timestamp_as_string"),
    sample_options={"schema_registry": "replicate/registry"},
    summary="Qlik Replicate Kafka / Event Hubs messages (JSON, Avro, Schema Registry)",
)

__all__ = ["SPEC", "ReplicateAdapter"]


def __getattr__(name: str) -> Any:
    if name == "ReplicateAdapter":
        from cdcnorm.adapters.replicate.adapter import ReplicateAdapter

        return ReplicateAdapter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
