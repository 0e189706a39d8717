"""The lake: its Delta tables, how a run commits into them, and their administration.

- :mod:`~cdcnorm.lake.store`: the :class:`~cdcnorm.lake.store.Lake` (tables, readers at the committed cut) and
  the public readers `read_changes`, `read_quarantine`, `read_schemas`;
- :mod:`~cdcnorm.lake.tables`: each table's layout (partitioning, sort order, statistics);
- :mod:`~cdcnorm.lake.dedup`: the duplicate check of a run's changes against the lake;
- :mod:`~cdcnorm.lake.commit`: the commit protocol (staged files, an intent, idempotent Delta commits,
  completion of a crashed run's intent) and `open_lake`;
- :mod:`~cdcnorm.lake.derived`: derived streams (a cut-over's, a scenario's) committed as runs;
- :mod:`~cdcnorm.lake.lock`: the writer lock of stores without atomic rename;
- :mod:`~cdcnorm.lake.delta`: Delta tables without Spark's Delta jars (Spark writes, delta-rs commits);
- :mod:`~cdcnorm.lake.admin`: `cdcnorm lake upgrade | check | maintain`.
"""
