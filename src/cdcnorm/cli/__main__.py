"""`python -m cdcnorm.cli`: the same as the `cdcnorm` console script."""

from __future__ import annotations

from cdcnorm.cli.program import main

main()
