"""Migrating from one CDC vendor to another: `cdcnorm compare` and `cdcnorm cutover`.

`compare(spark, left_lake, right_lake, ...)` returns the JSON report: per table the final-state diff
(:mod:`.final_state`), the change-stream match (:mod:`.streams`) and latency (:mod:`.latency`), with a verdict
(:mod:`.report`); :mod:`.html` renders the self-contained HTML report. Lossy vendor projections that explain a
difference are declared in :mod:`.rules`. `cutover.cutover(spark, old, new, lake, ...)` stitches one
continuous history from two vendors' streams. Both open their sides with :mod:`.sides` and match changes with
:mod:`.matching`. :mod:`.scenario` builds a two-vendor migration scenario from one vendor's history, for tests
and the demo. Terminal output and exit codes live in `cdcnorm.cli.compare` and `cdcnorm.cli.cutover`.
"""

from __future__ import annotations

from cdcnorm.migrate.report import compare, write_reports
from cdcnorm.migrate.rules import RULES, LossyRule

__all__ = ["RULES", "LossyRule", "compare", "write_reports"]
