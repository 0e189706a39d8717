"""Alibaba DataHub declared once: formats, flags, compare rules and scenario projections (light: no pyspark)."""


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
