"""`cdcnorm lake ...`: administration of a lake, one module per command.

- :mod:`~cdcnorm.lake.admin.upgrade`: a format-1 lake (Parquet folders, JSON run reports) becomes a format-2 lake
  (Delta tables) by registering its committed files where they are; no data file is rewritten or moved.
- :mod:`~cdcnorm.lake.admin.check`: a full audit (duplicate event ids, unreferenced files, pending runs, report
  reconciliation); explicit, so it may scan the whole lake.
- :mod:`~cdcnorm.lake.admin.maintain`: log checkpoints, compaction of small files, vacuum of old unreferenced
  files and stale staging folders.
"""
