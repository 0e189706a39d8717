"""Canal: canal-json flat messages of Alibaba Canal (and the same shape from TiCDC and Huawei DRS).

The package: the adapter (`adapter.py`) and one module per decoding step: recognising a message and its kind
(`envelope.py`), `mysqlType` texts to decoders (`mysql_types.py`), a message's row type and images
(`rows.py`), the rows of a DML message with their order and identity (`changes.py`), DDL and watermark rows
(`control.py`) and options (`options.py`). This module declares the vendor, so the registry, the CLI and
compare can name it without importing the decoder.
"""

from __future__ import annotations

from cdcnorm.adapters.canal.spec import SPEC
from cdcnorm.adapters.spec import lazy_adapter

__all__ = ["SPEC", "CanalAdapter"]

__getattr__ = lazy_adapter(SPEC)
"""`CanalAdapter` is imported on first use: naming the vendor must not start pyspark."""
