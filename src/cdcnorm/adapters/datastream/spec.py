"""Google Cloud Datastream declared once: formats, flags, compare rules and scenario projections (light: no pyspark)."""


from __future__ import annotations

from typing import Any

from cdcnorm.adapters.spec import MIDNIGHT_DATE, LossyRule, VendorSpec


def _hex(x: Any) -> Any:
    from pyspark.sql import functions as F

    return F.lower(F.hex(x))


SPEC = VendorSpec(
    name="datastream",
    adapter="cdcnorm.adapters.datastream.adapter:DatastreamAdapter",
    formats=("datastream.json", "datastream.avro", "datastream.bigquery"),
    flags=("delete_by_is_deleted", "key_change", "orphan_half", "timestamp_as_string", "unverified_source"),
    summary="Google Cloud Datastream JSON / Avro files and BigQuery exports",
    compare_rules=(
        LossyRule(
            "datastream_mysql_date_midnight", "datastream", ("timestamp", "timestamp_ntz"), ("date",),
            MIDNIGHT_DATE, "CAST({x} AS STRING)",
            "Datastream's MySQL JSON output carries a DATE as a midnight timestamp",
            source_db="mysql",
        ),
        LossyRule(
            "datastream_mysql_binary_hex", "datastream", ("string",), ("binary",),
            "lower({x})", "lower(hex({x}))",
            "Datastream's MySQL JSON output carries binary columns as hex strings",
            source_db="mysql",
        ),
    ),
    scenario_projections={
        "datastream_mysql": {
            "date": ("timestamp_ntz", lambda x: x.cast("timestamp_ntz")),
            "binary": ("string", _hex),
        },
    },
)
