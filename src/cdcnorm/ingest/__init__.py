"""One normalize run: input -> first pass -> adapter decode -> update-half pairing -> staging -> the lake.

- :mod:`~cdcnorm.ingest.pipeline`: the orchestration of one run and `normalize`, the public entry point;
- :mod:`~cdcnorm.ingest.sources`: input files and Kafka-shaped message frames as decoded rows (executors);
- :mod:`~cdcnorm.ingest.first_pass`: what an adapter must know before decoding (e.g. Replicate's metadata);
- :mod:`~cdcnorm.ingest.pairing`: update halves paired within a run and across runs (the `halves` table);
- :mod:`~cdcnorm.ingest.schema_rows`, :mod:`~cdcnorm.ingest.schema_fold`: table schema versions;
- :mod:`~cdcnorm.ingest.figures`: the run report's figures in one aggregation;
- :mod:`~cdcnorm.ingest.retry`: `cdcnorm quarantine retry`.
"""
