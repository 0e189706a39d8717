"""One simulated history through several vendor formats in one lake, and the cut-over proof: shared by the
migration tests of each vendor (`test_*_migration.py`, `test_vendor_matrix.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cdcnorm
from cdcnorm.migrate import compare
from cdcnorm.migrate.cutover import cutover
from cdcnorm.simulate import simulate
from cdcnorm.simulate.verify import options_for


def history_lake(spark, root: Path, formats: list[str], quirks: list[str] | tuple[str, ...] = (),
                 tables: int = 2, rows: int = 8, changes: int = 30) -> tuple[Path, str]:
    """Simulate one history in `formats` under `root / "sim"` and normalize each into `root / "lake"`: (root,
    lake). Each format's vendor is its name's first part; its options are the ones a user of it passes."""
    manifest = simulate(root / "sim", vendors=formats, tables=tables, rows=rows, changes=changes, quirks=list(quirks))
    lake = str(root / "lake")
    for vf in formats:
        cdcnorm.normalize([str(manifest.input_dir(vf))], vf.split("-", 1)[0], spark=spark, lake=lake,
                          options=options_for(vf, manifest))
    return root, lake


def assert_cutover_loses_and_doubles_nothing(spark, root: Path, lake: str, old: str, new: str,
                                             tables: list[str] | None = None) -> dict[str, Any]:
    """Cut over from `old` to `new` into a stitched stream: every table switched, the stitched stream equals the
    new vendor's (no row only on one side), and running the cut-over again writes nothing."""
    out = str(root / f"stitched-{old}-{new}")
    kw = {"tables": tables} if tables else {}
    rep = cutover(spark, lake, lake, out, old_vendor=old, new_vendor=new, stream="stitched", **kw)
    assert rep["status"] == "done", rep
    if not tables:
        assert rep["unmatched_tables"] == {"old": [], "new": []}
    assert all(t["status"] == "ok" for t in rep["tables"])
    check = compare(spark, out, lake, left_vendor=f"{new}:stitched", right_vendor=new, **kw)
    assert check["equal"] is True, [t["reasons"] for t in check["tables"]]
    for t in check["tables"]:
        assert t["state"]["rows_only_left"] == t["state"]["rows_only_right"] == 0
    again = cutover(spark, lake, lake, out, old_vendor=old, new_vendor=new, stream="stitched", **kw)
    assert again["rows_written"] == 0 and again["rows_skipped_existing"] == rep["rows_written"]
    return rep
