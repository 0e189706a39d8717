"""Compare two vendors' canonical streams of the same source tables (`cdcnorm compare`).

`compare(spark, left_lake, right_lake, ...)` returns the JSON report: per table the final-state diff
(:mod:`.state`), the change-stream match (:mod:`.streams`) and latency (:mod:`.latency`), with a verdict;
:mod:`.report` prints it and :mod:`.html` renders the self-contained HTML report. Lossy vendor projections
that explain a difference are declared in :mod:`.rules`. :mod:`.scenario` builds a two-vendor migration
scenario from one vendor's history, for tests and the demo.
"""

from __future__ import annotations

from cdcnorm.compare.report import compare, compare_command, print_summary, write_reports
from cdcnorm.compare.rules import RULES, LossyRule

__all__ = ["RULES", "LossyRule", "compare", "compare_command", "print_summary", "write_reports"]
