"""AWS DMS declared once: formats, flags and compare projections (light: no pyspark)."""

from __future__ import annotations

from cdcnorm.adapters.spec import VendorSpec

SPEC = VendorSpec(
    name="dms",
    adapter="cdcnorm.adapters.dms.adapter:DmsAdapter",
    formats=("dms.csv", "dms.parquet", "dms.json"),
    flags=("file_order", "key_change", "no_schema", "op_from_settings"),
    sample_options={},
    summary="AWS DMS S3 target files (CSV, Parquet; --vendor dms) and Kinesis / Kafka JSON messages",
)
