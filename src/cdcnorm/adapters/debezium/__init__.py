"""Debezium: change events of the MySQL / MariaDB, PostgreSQL, SQL Server, Oracle and MongoDB connectors.

The package: the adapter (`adapter.py`) and one module per decoding step: which shape a message has and what
it is (`envelope.py`), the files a dump holds (`files.py`), per-schema column decoders (`columns.py`),
keys (`keys.py`), ordering and identity per connector (`positions.py`), the rows a data event becomes
(`changes.py`), heartbeat / transaction / schema-change rows (`control.py`), MongoDB documents (`mongo.py`)
and options (`options.py`). Typed values are decoded by `values.py` from Connect schema nodes (`fields.py`)
with the decoders of `scalars.py`, `numeric.py` and `temporal.py`; schemaless columns by `untyped.py`, the
unavailable-value placeholder by `unavailable.py`. This module declares the vendor, so the registry, the CLI
and compare can name it without importing the decoder.
"""

from __future__ import annotations

from cdcnorm.adapters.debezium.spec import SPEC
from cdcnorm.adapters.spec import lazy_adapter

__all__ = ["SPEC", "DebeziumAdapter"]

__getattr__ = lazy_adapter(SPEC)
"""`DebeziumAdapter` is imported on first use: naming the vendor must not start pyspark."""
