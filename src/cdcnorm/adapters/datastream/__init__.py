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

from cdcnorm.adapters.datastream.spec import SPEC
from cdcnorm.adapters.spec import lazy_adapter

__all__ = ["SPEC", "DatastreamAdapter"]

__getattr__ = lazy_adapter(SPEC)
"""`DatastreamAdapter` is imported on first use: naming the vendor must not start pyspark."""
