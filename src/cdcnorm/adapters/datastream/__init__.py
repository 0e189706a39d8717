"""Google Cloud Datastream: JSON and Avro files on Cloud Storage, and BigQuery-destination exports.

This module only declares the vendor, so the registry, the CLI and compare can name it without importing the
decoder. The package, one job a module:

* `adapter.py`: the `DatastreamAdapter` - detection, files and messages to records, `post_process`;
* `events.py`: one event (JSON or Avro envelope) -> one change; `bigquery.py`: one BigQuery export row -> one change;
* `avro.py`: Avro writer schema -> converters, records -> events; `types.py`: the unified-type converters;
* `source_metadata.py`: engine, table identity, keys and position per source engine;
* `payload.py`: keys, payload hash and binary columns of a row image; `schemas.py`: per-file state, schema versions.
"""

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
    flags=("delete_by_is_deleted", "key_change", "timestamp_as_string", "unverified_source"),
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

__all__ = ["SPEC", "DatastreamAdapter"]


def __getattr__(name: str) -> Any:
    """`DatastreamAdapter` is imported on first use: declaring the vendor must not start pyspark."""
    if name == "DatastreamAdapter":
        from cdcnorm.adapters.datastream.adapter import DatastreamAdapter

        return DatastreamAdapter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
