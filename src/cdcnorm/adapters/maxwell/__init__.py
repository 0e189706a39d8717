"""Maxwell's daemon: MySQL binlog rows, bootstrap snapshots and DDL events as flat JSON objects.

The package: the adapter (`adapter.py`) and one module per decoding step: what one message is, with its key
names and its encryption undone (`envelope.py`, `crypto.py`), order, identity and transaction fields
(`positions.py`), column values typed from declared MySQL types (`values.py`), the rows a data event becomes
(`rows.py`), DDL events (`schema_events.py`) and options (`options.py`). This module declares the vendor, so
the registry, the CLI and compare can name it without importing the decoder.
"""

from __future__ import annotations

from cdcnorm.adapters.maxwell.spec import SPEC
from cdcnorm.adapters.spec import lazy_adapter

__all__ = ["SPEC", "MaxwellAdapter"]

__getattr__ = lazy_adapter(SPEC)
"""`MaxwellAdapter` is imported on first use: naming the vendor must not start pyspark."""
