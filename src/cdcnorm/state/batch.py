"""The changes committed to the lake since a bookmark: the data files a Delta log range added.

Why from the log and not from the live files: compaction (`cdcnorm lake maintain`) replaces live files with
`dataChange=false` adds that hold rows already applied; only the `dataChange=true` adds of the versions after
the bookmark are new changes. Files of a run whose report is not committed yet are invisible at the lake's cut
(`cdcnorm.lake.store.Lake.read`), so they are carried in the bookmark as pending and taken once their run commits.
When the range cannot be read exactly (log files cleaned, data files vacuumed, a `dataChange=true` remove),
the caller rebuilds from scratch and says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import unquote

import orjson

from cdcnorm.lake.store import Lake
from cdcnorm.lake.tables import run_of


@dataclass
class Batch:
    """New data files of `changes` (paths relative to the table) and the files still waiting for their run."""

    files: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)


class NotIncremental(Exception):
    """The log range since the bookmark cannot be read exactly: the message says why (apply rebuilds)."""


def new_files(lk: Lake, since: int, cut: int, committed: set[str], pending: list[str]) -> Batch:
    """Data files added with `dataChange=true` to `changes` in versions (since, cut], plus earlier pending files
    whose run is committed now."""
    table = lk.table("changes")
    out = Batch()
    for rel in pending:
        (out.files if run_of(rel) in committed else out.pending).append(rel)
    for v in range(since + 1, cut + 1):
        text = lk.fs.read_text_or_none(f"{lk.path}/changes/_delta_log/{v:020d}.json")
        if text is None:
            raise NotIncremental(f"the log of version {v} of {lk.path}/changes was cleaned up")
        for line in text.splitlines():
            if not line.strip():
                continue
            action = orjson.loads(line)
            if "remove" in action and action["remove"].get("dataChange", True):
                raise NotIncremental(f"version {v} of {lk.path}/changes removed data")
            add = action.get("add")
            if add is None or not add.get("dataChange", True):
                continue
            rel = unquote(add["path"])
            run = run_of(rel)
            (out.files if run is None or run in committed else out.pending).append(rel)
    missing = [rel for rel in out.files if not lk.fs.exists(f"{table.uri}/{rel}")]
    if missing:
        raise NotIncremental(f"{len(missing)} data file(s) applied next were vacuumed (e.g. {missing[0]})")
    return out
