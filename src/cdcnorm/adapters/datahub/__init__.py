"""Alibaba DataWorks -> DataHub: Blob JSON messages and TUPLE rows (CSV, JSON lines, Parquet).

The package holds the adapter (`adapter.py`: reading and dispatch), its options (`options.py`), input
recognition (`files.py`), the op/engine tables (`vocabulary.py`), Blob messages (`blob.py`, `blob_values.py`),
the TUPLE topic codec (`tuple_topic.py`), the scalar functions both codecs share (`scalars.py`), the DDL parser (`ddl.py`),
row building (`changes.py`) and UPDATE pairing (`pairing.py`); this module only declares the vendor, so the
registry, the CLI and compare can name it without importing the decoder (`DataHubAdapter` is imported on first
use).
"""

from __future__ import annotations

from cdcnorm.adapters.datahub.spec import SPEC
from cdcnorm.adapters.spec import lazy_adapter

__all__ = ["SPEC", "DataHubAdapter"]

__getattr__ = lazy_adapter(SPEC)
"""`DataHubAdapter` is imported on first use: naming the vendor must not start pyspark."""
