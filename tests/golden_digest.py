"""Golden digests: what normalize produces for the samples and a quirk-on simulated history, in a reviewable form.

Why: structural moves must not change output. Every canonical row is reduced to one line (its event id, table,
operation and a digest of all its columns), every quarantine row to its reason, origin, raw-bytes digest and
message, plus the run reports' outcome counts. Absolute paths are replaced by `<root>` (also inside a sort key
that orders by file position) so the files compare across checkouts. Regenerate with `CDCNORM_UPDATE_GOLDEN=1 pytest tests/test_golden.py`; the diff of
`tests/golden/*.json` then lists every changed row.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pyspark.sql import functions as F

GOLDEN = Path(__file__).resolve().parent / "golden"
_REPORT_FIELDS = ("records_read", "outcomes", "quarantine_by_reason", "filters_by_rule", "metadata_by_kind",
                  "rows_written", "reconciled")


def _clean(value: Any, root: str) -> Any:
    text = json.dumps(value, sort_keys=True, default=str)
    return json.loads(text.replace(root.rstrip("/"), "<root>"))


def lake_digest(spark, lake: str, root: str, reports: dict[str, dict]) -> dict[str, Any]:
    """The golden form of a lake: one line per canonical row, one entry per quarantine row, report counts."""
    from cdcnorm.lake.store import Lake

    lk = Lake(spark, lake)
    ch = lk.changes()
    cols = []
    for f in ch.schema.fields:
        if f.name in ("key", "before", "after"):
            cols.append(F.to_json(F.col(f.name)).alias(f.name))
        elif f.name in ("key_bytes", "sort_key"):
            cols.append(F.hex(F.col(f.name)).alias(f.name))
        else:
            cols.append(F.col(f"`{f.name}`"))
    changes = {}
    root_hex = root.rstrip("/").encode().hex().upper()
    for row in ch.select(*cols).collect():  # test-only: a few thousand rows
        d = _clean(row.asDict(recursive=True), root)
        if d.get("sort_key"):  # a file's path in an order by file position (Canal files without offsets)
            d["sort_key"] = d["sort_key"].replace(root_hex, "<root>")
        if d.get("supersedes") is None:  # canonical 2's column: null rows keep their version-1 digests
            d.pop("supersedes", None)
        digest = hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]
        changes[d["event_id"]] = f"{d['stream']} {d['table']} {d['op']} {digest}"
    quarantine = []
    for row in lk.quarantine(include_resolved=True).drop("quarantined_at", "quarantine_id").collect():
        d = row.asDict(recursive=True)
        raw = d.pop("raw")
        d["raw"] = None if raw is None else f"sha256:{hashlib.sha256(bytes(raw)).hexdigest()[:16]} len:{len(raw)}"
        quarantine.append(_clean(d, root))
    quarantine.sort(key=lambda d: json.dumps(d, sort_keys=True))
    runs = {name: {k: r.get(k) for k in _REPORT_FIELDS} for name, r in sorted(reports.items())}
    return {"reports": runs, "changes": dict(sorted(changes.items())), "quarantine": quarantine}


def compare(name: str, actual: dict[str, Any], update: bool) -> list[str]:
    """Differences between a golden file and the actual digest, one line each (or write it when updating)."""
    path = GOLDEN / f"{name}.json"
    if update:
        path.write_text(json.dumps(actual, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return []
    expected = json.loads(path.read_text(encoding="utf-8"))
    problems = []
    if expected["reports"] != actual["reports"]:
        problems.append(f"reports: expected {expected['reports']}, got {actual['reports']}")
    exp, act = expected["changes"], actual["changes"]
    for eid in sorted(set(exp) | set(act)):
        if exp.get(eid) != act.get(eid):
            problems.append(f"change {eid}: expected {exp.get(eid)}, got {act.get(eid)}")
    eq = [json.dumps(d, sort_keys=True) for d in expected["quarantine"]]
    aq = [json.dumps(d, sort_keys=True) for d in actual["quarantine"]]
    problems += [f"quarantine row missing: {d}" for d in eq if d not in aq]
    problems += [f"quarantine row new: {d}" for d in aq if d not in eq]
    return problems
