"""AWS Database Migration Service: S3 target files (CSV, Parquet) and Kinesis / Kafka target messages.

The package: the adapter (`adapter.py`) and one module per decoding step: where an S3 file sits and what it
is (`paths.py`), the rows of a CSV or Parquet file (`files.py`), one S3 row as a change (`rows.py`), one
stream message as a change or DDL (`messages.py`), typed values (`values.py`) and options (`options.py`).
This module declares the vendor, so the registry, the CLI and compare can name it without importing the decoder.
"""

from __future__ import annotations

from cdcnorm.adapters.dms.spec import SPEC
from cdcnorm.adapters.spec import lazy_adapter

__all__ = ["SPEC", "DmsAdapter"]

__getattr__ = lazy_adapter(SPEC)
"""`DmsAdapter` is imported on first use: naming the vendor must not start pyspark."""
