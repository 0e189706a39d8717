"""Oracle GoldenGate for Big Data / Distributed Applications: JSON (operation- and row-modeled) and Avro op output.

The package: the adapter (`adapter.py`) and one module per decoding step: which shape a record has and the
Kafka handler's transaction mode (`envelope.py`), `pos` and the time fields (`positions.py`), declared column
types (`values.py`), the rows one operation becomes (`changes.py`), the Avro op formatter (`avro.py`) and the
options (`options.py`). This module declares the vendor, so the registry, the CLI and compare can name it
without importing the decoder.
"""

from __future__ import annotations

from cdcnorm.adapters.goldengate.spec import SPEC
from cdcnorm.adapters.spec import lazy_adapter

__all__ = ["SPEC", "GoldenGateAdapter"]

__getattr__ = lazy_adapter(SPEC)
"""`GoldenGateAdapter` is imported on first use: naming the vendor must not start pyspark."""
