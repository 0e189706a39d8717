"""Alibaba DataWorks -> DataHub: Blob JSON messages and TUPLE rows (CSV, JSON lines, Parquet).

The package holds the adapter (`adapter.py`: reading and dispatch), its options (`options.py`), input
recognition (`files.py`), the op/engine tables (`vocabulary.py`), Blob messages (`blob.py`, `blob_values.py`),
the TUPLE topic codec (`tuple_topic.py`), helpers both codecs share (`scalars.py`), the DDL parser (`ddl.py`),
row building (`changes.py`) and UPDATE pairing (`pairing.py`); this module only declares the vendor, so the
registry, the CLI and compare can name it without importing the decoder (`DataHubAdapter` is imported on first
use).
"""

from __future__ import annotations

from typing import Any

from cdcnorm.adapters.spec import (
    DOUBLE_CLOSE,
    EXACT_NUMERIC,
    MIDNIGHT_DATE,
    NUMBER_TEXT,
    TEXT_TYPES,
    LossyRule,
    VendorSpec,
)


def _millis(x: Any) -> Any:
    from pyspark.sql import functions as F

    return F.date_trunc("MILLISECOND", x)


SPEC = VendorSpec(
    name="datahub",
    adapter="cdcnorm.adapters.datahub.adapter:DataHubAdapter",
    formats=("datahub.blob", "datahub.tuple"),
    flags=("key_change", "no_schema", "orphan_after", "orphan_before"),
    summary="Alibaba DataWorks -> DataHub Blob JSON and TUPLE topics",
    compare_rules=(
        LossyRule(
            "datahub_date_millis", "datahub", ("timestamp",), ("timestamp", "timestamp_ntz"),
            "date_trunc('MILLISECOND', {x})", "date_trunc('MILLISECOND', CAST({x} AS TIMESTAMP))",
            "DataHub DATE fields carry epoch milliseconds: compared with the other side truncated to milliseconds",
            same_type=True,
        ),
        LossyRule(
            "datahub_date_as_timestamp", "datahub", ("timestamp",), ("date",),
            MIDNIGHT_DATE, "CAST({x} AS STRING)",
            "DataHub has no date type: a date arrives as midnight UTC in epoch milliseconds",
        ),
        LossyRule(
            "datahub_date_millis_text", "datahub", ("timestamp",), TEXT_TYPES,
            "date_trunc('MILLISECOND', {x})", "date_trunc('MILLISECOND', try_cast({x} AS TIMESTAMP))",
            "DataHub DATE fields carry epoch milliseconds; the other side's ISO text is compared truncated to ms",
            other_as_text=True,
        ),
        LossyRule(
            "datahub_decimal_text", "datahub", ("string",), ("string",),
            NUMBER_TEXT, NUMBER_TEXT,
            "DataHub carries a wide decimal as text with its own scale: decimal text compared without trailing zeros",
            same_type=True,
        ),
        LossyRule(
            "datahub_no_decimal", "datahub", ("double", "float", "string"), EXACT_NUMERIC,
            "CAST({x} AS DOUBLE)", "CAST({x} AS DOUBLE)",
            "DataHub has no exact decimal type (DOUBLE or STRING): compared as doubles, within a double's precision",
            equal_sql=DOUBLE_CLOSE,
        ),
    ),
    scenario_projections={
        "datahub": {
            "date": ("timestamp", lambda x: x.cast("timestamp")),
            "decimal": ("double", lambda x: x.cast("double")),
            "timestamp": ("timestamp", _millis),
        },
    },
)

__all__ = ["SPEC", "DataHubAdapter"]


def __getattr__(name: str) -> Any:
    """`DataHubAdapter` is imported on first use: naming the vendor must not start pyspark."""
    if name == "DataHubAdapter":
        from cdcnorm.adapters.datahub.adapter import DataHubAdapter

        return DataHubAdapter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
