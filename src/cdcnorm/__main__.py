"""`python -m cdcnorm`, and the entry script `spark-submit` runs: the same as the `cdcnorm` console script.

Why a file of its own: `spark-submit` takes a Python *file* (a name ending in `.py`), not a module or the
`cdcnorm` console script. Its path: `python -c 'import cdcnorm.cli as c; print(c.submit_script())'`.
Run as a file, Python puts this folder first on `sys.path`, where cdcnorm's own module names (`fs`, `state`,
`errors`, ...) would shadow top-level packages; it is taken off before anything is imported.
"""

from __future__ import annotations

import os
import sys

if __spec__ is None and sys.path and os.path.abspath(sys.path[0] or os.curdir) == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]

from cdcnorm.cli.program import main  # noqa: E402

main()
