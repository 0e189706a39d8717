"""Qlik Replicate (Attunity): Kafka / Event Hubs messages, as JSON, Avro envelopes or the Confluent wire format.

The package: the adapter (`adapter.py`) and one module per decoding step: message envelopes (`envelope.py`),
files (`files.py`), the metadata catalog (`catalog.py`), column values (`values.py`), masks (`masks.py`),
stream / table naming (`naming.py`), ordering and identity (`positions.py`) and the rows a message becomes
(`changes.py`). This module declares the vendor, so the registry, the CLI and compare can name it without
importing the decoder; `ReplicateAdapter` is imported from here only when asked for.
"""

from __future__ import annotations

from cdcnorm.adapters.replicate.spec import SPEC
from cdcnorm.adapters.spec import lazy_adapter

__all__ = ["SPEC", "ReplicateAdapter"]

__getattr__ = lazy_adapter(SPEC)
"""`ReplicateAdapter` is imported on first use: naming the vendor must not start pyspark."""
