"""Delta Lake tables without Spark's Delta jars: Spark writes the Parquet data files, delta-rs commits them.

- :mod:`cdcnorm.lake.delta.table`: one Delta table (create, refuse unsupported features, live files, commit with
  app transactions, conflicts surfaced as :class:`~cdcnorm.lake.delta.table.Conflict`).
- :mod:`cdcnorm.lake.delta.files`: write a DataFrame's rows as Parquet files inside the table folder with Spark's
  own writer and turn the written files into Delta add actions with per-file statistics.
- :mod:`cdcnorm.lake.delta.read`: a table (at a version, optionally pruned by partition) as a Spark DataFrame,
  resolved from the Delta log, so no Delta jar is needed to read either.
"""
