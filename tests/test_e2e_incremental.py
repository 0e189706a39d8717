"""End to end, in steps: simulate -> (normalize part of the files, apply) x N, late files one step behind,
redeliveries throughout. Each step's incremental state equals a computation from all changes, the last equals
the truth and `full=True`, the history equals the truth's version list, and `as_of` equals the truth at random
points. One format in two steps and two points in `make test`; every format in three steps and 20 points in
`make test-slow`.
"""

from __future__ import annotations

from collections import Counter

import pytest

import cdcnorm
from cdcnorm.ingest.pipeline import normalize
from cdcnorm.ingest.retry import retry_quarantine
from cdcnorm.simulate import QUIRKS, VENDOR_FORMATS, simulate
from cdcnorm.simulate.verify import applied_rows, check_format, options_for, token
from cdcnorm.simulate.verify_steps import as_of_points, check_as_of, check_history, steps_of
from conftest import E2E_ROTATE, SMALL_HISTORY

FAST = "replicate-json"
QUIRKS_ON = [q for q in QUIRKS if q != "backfill_overlap"]
"""backfill_overlap shows a later state in the backfill than the log changes it replays: the current state is
right, but the history before the overlap point is the vendor's, not the source's."""


def _bag(df):
    return Counter(tuple(sorted((k, token(v)) for k, v in r.items())) for r in applied_rows(df, set()))


def run_format(spark, root, vf: str, points: int, steps: int = 3) -> list[str]:
    manifest = simulate(root / "sim", vendors=[vf], quirks=QUIRKS_ON, rotate=E2E_ROTATE, **SMALL_HISTORY)
    assert manifest.vendor_formats[vf]["late_files"], "the late_files quirk picked no file"
    lake = str(root / "lake")
    vendor = VENDOR_FORMATS[vf][0]
    problems = []
    for i, files in enumerate(steps_of(manifest, vf, steps)):
        normalize(files, vendor, spark=spark, options=options_for(vf, manifest), lake=lake)
        retry_quarantine(spark, lake, vendor, options_for(vf, manifest))
        res = cdcnorm.apply(spark, lake)
        fresh = cdcnorm.apply(spark, lake, write=False)
        for tid, df in res.items():
            if tid not in fresh or _bag(df) != _bag(fresh[tid]):
                problems.append(f"step {i}: {tid.name} incremental != from scratch")
        if i > 0:
            modes = {e["apply"]["mode"] for e in res.summary["tables"] if e["key_mode"] != "keyless"}
            assert modes <= {"incremental", "rebuilt"}
        fresh.unpersist()
    problems += check_format(res, manifest, vf)
    full = cdcnorm.apply(spark, lake, full=True, history=True)
    problems += [f"full: {t.name} != incremental" for t, df in full.items() if _bag(df) != _bag(res[t])]
    problems += check_history(full.history, manifest, vf)
    problems += check_as_of(spark, lake, manifest, vf, as_of_points(manifest, vf, points))
    return problems


def test_incremental_history_as_of_one_format(spark, tmp_path):
    problems = run_format(spark, tmp_path, FAST, points=2, steps=2)
    assert problems == [], "\n".join(problems)


@pytest.mark.slow
@pytest.mark.parametrize("vf", list(VENDOR_FORMATS))
def test_incremental_history_as_of_every_format(spark, tmp_path, vf):
    problems = run_format(spark, tmp_path, vf, points=20)
    assert problems == [], "\n".join(problems)
