"""One `cdcnorm apply` with writes: which tables take the new changes incrementally, which are rebuilt, and the
commits that bring each target up to date (orchestration only; the merge is :mod:`cdcnorm.state.keyed`).

Why: each target has its own bookmark, so tables are grouped by the `changes` version they were applied at
(usually one group); a group's new data files are read once for all of its tables.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from cdcnorm.canonical.schema import COLUMN_NAMES
from cdcnorm.errors import UsageError
from cdcnorm.lake.delta.read import read_files, read_table
from cdcnorm.lake.store import Lake
from cdcnorm.lake.tables import run_of
from cdcnorm.runtime.fs import delete_file
from cdcnorm.state import keyed
from cdcnorm.state.batch import NotIncremental, new_files
from cdcnorm.state.bookmark import combine, needs_rebuild, plan_json, stats_from_json, stats_json
from cdcnorm.state.hints import apply_hints, check_hints_used
from cdcnorm.state.index import build_summary, read_index, write_index
from cdcnorm.state.merge import applicable, keyed_entries, keyless_state
from cdcnorm.state.observed import fill, lean_stats, observe
from cdcnorm.state.paths import CURRENT, TOMBSTONES, TableId
from cdcnorm.state.plan import (
    IDENT,
    TablePlan,
    matches,
    name_filter,
    of_table,
    plan_tables,
    table_hash,
    table_stats,
)
from cdcnorm.state.presumed import PRESUMED, checks, confirmed, presumed_stats, target_bounds
from cdcnorm.state.ranges import key_bounds
from cdcnorm.state.schema_cache import folded_schemas
from cdcnorm.state.target import (
    FILE_ROWS,
    KEY,
    META_FIELDS,
    TOMBSTONE_SCHEMA,
    applied_version,
    commit,
    covering,
    file_ranges,
    read_bookmark,
    target,
    touched_files,
    user_columns,
    write_sorted,
    written_rows,
)
from cdcnorm.state.types import OutputColumn
from cdcnorm.state.write import output_schema, typed_keyless

if TYPE_CHECKING:
    from cdcnorm.lake.delta.table import DeltaTableRef


class ApplyResult(dict):
    """`{TableId: DataFrame}` of current-state tables, plus `summary` (what was written and counted)."""

    def __init__(self, frames: dict[TableId, DataFrame], summary: dict[str, Any], cached: list[DataFrame] | None = None,
                 history: dict[TableId, DataFrame] | None = None):
        super().__init__(frames)
        self.summary = summary
        self._cached = cached or []
        self.history = history or {}
        """With `history=True`: each table's SCD type 2 versions (read from `LAKE/history/...`)."""

    def unpersist(self) -> None:
        """Free the persisted state behind `write=False` views (they recompute if used afterwards)."""
        for df in self._cached:
            df.unpersist()


@dataclass
class Cut:
    """What this apply brings the targets up to: the lake versions and the committed runs at its cut."""

    changes: int
    schemas: int
    committed: set[str]
    pending: list[str] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)
    """The committed runs' rows (with their reports: :mod:`cdcnorm.state.presumed`)."""


def prepared(changes: DataFrame, known_none: bool = False) -> DataFrame:
    """Changes as apply takes them: superseded orphans dropped, with the table hash. `known_none`: the log
    shows no change names another (:func:`none_superseded`), so not even the one-column look is needed.

    A redelivery that reached the lake twice (older than the dedup window) is not removed here: applying the
    same event twice to a keyed table changes nothing (same `sort_key`, same values, the merge keeps one), so
    the whole-lake shuffle a `dropDuplicates` costs is spent only where a copy would count: keyless tables and
    history (:func:`once`)."""
    check = "supersedes" in changes.columns and not known_none
    df = without_superseded(changes) if check and _supersedes_any(changes) else changes
    return df.withColumn("_tid", table_hash())


def _supersedes_any(changes: DataFrame) -> bool:
    """Whether any change names another in `supersedes` (rare: a late pair of an orphan half). One small job
    that reads only that column, instead of joining every change against an empty set on every pass."""
    return bool(changes.where(F.col("supersedes").isNotNull()).select("supersedes").limit(1).count())


def none_superseded(table: DeltaTableRef, version: int, paths: set[str] | None = None) -> bool:
    """Whether the `changes` log proves that no live file at `version` (among `paths`) names a superseded change
    (`DeltaTableRef.all_null`); when it cannot, :func:`_supersedes_any` looks (one Spark job, about 0.5 to 1 CPU
    s of planning and scanning whatever the lake's size)."""
    return table.all_null("supersedes", version, paths)


def _lake_changes(lk: Lake, cut: Cut) -> DataFrame:
    """The lake's changes at the cut, :func:`prepared` with what the log proves about `supersedes`."""
    return prepared(lk.changes(), none_superseded(lk.table("changes"), cut.changes))


def without_superseded(changes: DataFrame) -> DataFrame:
    """Drop orphan halves a later paired row replaces (`supersedes`): one change is never applied twice.
    Incremental: within one batch; an orphan applied by an earlier apply stays applied and its pair is merged on
    top by the usual per-column rule (not re-checked against earlier batches: see docs/apply.md)."""
    replaced = changes.where(F.col("supersedes").isNotNull()).select(F.col("supersedes").alias("event_id"))
    return changes.join(F.broadcast(replaced.distinct()), "event_id", "left_anti")


def once(rows: DataFrame) -> DataFrame:
    """Each event id once (keyless tables and history, where a second copy would count)."""
    return rows.dropDuplicates(["event_id"])


def table_state(changes: DataFrame, plan: TablePlan) -> DataFrame:
    """One table's current state from all of its (prepared) changes, user columns only (compute, no write)."""
    rows = applicable(changes, plan)
    if plan.key_mode == "keyless":
        return typed_keyless(keyless_state(once(rows)), plan)
    return keyed.live_rows(keyed.merged(plan, keyed.batch_entries(rows, plan), None, None)).drop(*[f.name for f in META_FIELDS])


def target_schema(plan: TablePlan):
    return output_schema(plan, META_FIELDS)


def apply_lake(lk: Lake, tables: list[str] | None, full: bool = False, history: bool = False,
               track_columns: list[str] | None = None, hints: dict[str, str] | None = None):
    """Bring every selected target up to the lake's cut: frames read from the targets, and the summary.

    `hints` (cdcnorm.state.hints) retype columns of every plan right after it is made, before the plan is
    compared with the bookmark's: a hint that changes a table's types rebuilds the table."""
    hints = hints or {}
    runs = lk._runs()
    cut_versions = lk._cut(runs)
    cut = Cut(cut_versions.get("changes", -1), cut_versions.get("schemas", -1), {r["run_id"] for r in runs}, runs=runs)
    cut.pending = [f["path"] for f in lk.table("changes").live(cut.changes)
                   if run_of(f["path"]) is not None and run_of(f["path"]) not in cut.committed] if cut.changes >= 0 else []
    selected = name_filter(tables)
    latest = folded_schemas(lk, cut.schemas, cut.committed, tables)  # widened over every version (canonical.inferred)
    bookmarks = _bookmarks(lk, tables)
    if hints and not tables:  # refuse a hint naming no table before anything is written
        check_hints_used(hints, [*bookmarks, *(TableId(*(sv[c] for c in IDENT)) for sv in latest.values())],
                         lambda: lk.changes().select(*IDENT).distinct().collect())
    plans: dict[TableId, TablePlan] = {}
    seen: dict[str, dict[str, Any]] = {}  # every table's aggregate this apply read (non-data tables' counts too)
    rebuild: dict[TableId, str] = {}
    notes: list[str] = []
    groups: dict[int, list[TableId]] = {}
    for tid, bm in bookmarks.items():
        groups.setdefault(-2 if full else bm["since"], []).append(tid)
    for since, tids in sorted(groups.items()):
        if since == -2:
            rebuild.update({t: ("--full", None) for t in tids})
            continue
        try:
            batch = new_files(lk, since, cut.changes, cut.committed, bookmarks[tids[0]]["pending"])
        except NotIncremental as exc:
            notes.append(f"rebuilding {len(tids)} table(s) from all changes: {exc}")
            rebuild.update({t: (str(exc), None) for t in tids})
            continue
        _incremental(lk, cut, batch.files, tids, bookmarks, latest, selected, plans, rebuild, seen, hints)
    _rebuild(lk, cut, selected, latest, bookmarks, rebuild, plans, seen, hints)
    if tables and not plans:
        raise UsageError(f"No table in {lk.path} matches {', '.join(tables)} (give table, schema.table or db.schema.table).")
    ordered = [plans[t] for t in sorted(plans, key=lambda t: tuple("" if v is None else v for v in t))]
    if history:
        write_history(lk, cut, ordered, track_columns)
    summary = build_summary(lk.path, ordered, {**seen, **{p.hid: p.stats for p in ordered}})
    summary["notes"] = notes
    write_index(lk, summary, replace_all=not tables)
    frames = {p.tid: user_columns(read_table(lk.spark, _current(lk, p))) for p in ordered}
    hist = {}
    if history:
        from cdcnorm.state.paths import HISTORY

        hist = {p.tid: read_table(lk.spark, target(lk.spark, lk.path, p.tid, history_schema(p), HISTORY,
                                                   lk.storage_options)) for p in ordered}
    return ApplyResult(frames, summary, history=hist)


# -- which tables, from where -----------------------------------------------------------------------------------
def _bookmarks(lk: Lake, tables: list[str] | None) -> dict[TableId, dict[str, Any]]:
    """Selected tables that have a target with a bookmark; `since`: the version both of its tables reached."""
    out = {}
    for e in read_index(lk.spark, lk.path, lk):
        tid = TableId(*(e[c] for c in IDENT))
        if not matches(tid, tables):
            continue
        cur = target(lk.spark, lk.path, tid, None, CURRENT, lk.storage_options)
        bm = read_bookmark(cur)
        if bm is None:
            continue
        tomb = applied_version(target(lk.spark, lk.path, tid, TOMBSTONE_SCHEMA, TOMBSTONES, lk.storage_options))
        since = bm["changes"] if tomb is None else min(bm["changes"], tomb)
        out[tid] = {**bm, "since": since, "stats": stats_from_json(bm["stats"])}
    return out


def _incremental(lk: Lake, cut: Cut, files: list[str], tids: list[TableId], bookmarks, latest, selected,
                 plans, rebuild, seen, hints) -> None:
    """Apply one group's new files to its tables; tables that must be rebuilt are noted in `rebuild`."""
    spark = lk.spark
    table = lk.table("changes")
    batch = read_files(spark, table, [f"{table.uri}/{f}" for f in files]).select(*COLUMN_NAMES) if files else None
    if batch is not None:
        batch = prepared(batch, none_superseded(table, cut.changes, set(files)))
        if selected is not None:
            batch = batch.where(selected)
        batch = batch.persist(StorageLevel.MEMORY_AND_DISK)
    stats = table_stats(batch, set(latest)) if batch is not None else {}
    seen.update(stats)
    by_tid = {TableId(*(s[c] for c in IDENT)): s for s in stats.values()}
    known = set(tids)
    for tid in by_tid.keys() - known:
        if tid not in bookmarks:
            rebuild[tid] = ("new table", by_tid[tid]["_tid"])
    for tid in tids:
        bm = bookmarks[tid]
        new = by_tid.get(tid)
        st = combine(bm["stats"], new)
        hid = bm["hid"]
        sv = latest.get(hid)
        plan = plan_tables({hid: {**st, "_tid": hid, **dict(zip(IDENT, tid, strict=True))}}, {hid: sv} if sv else {})
        if not plan:
            continue
        plan = plan[0]
        if new is None:
            plan.columns = [OutputColumn(n, t, c, "data") for n, t, c in bm["plan"]["columns"]] \
                if plan.schema_source == "inferred" else plan.columns
        apply_hints([plan], hints, require_all=False)
        why = needs_rebuild(plan, bm)
        if why:
            rebuild[tid] = (why, hid)
            continue
        plans[tid] = plan
        _apply_batch(lk, cut, plan, bm, batch if new else None, new)
    if batch is not None:
        batch.unpersist()


def _apply_batch(lk: Lake, cut: Cut, plan: TablePlan, bm: dict[str, Any], changes: DataFrame | None,
                 new: dict[str, Any] | None) -> None:
    """Rewrite the files of one table the batch touches; commit target then tombstones (each skipped when it is
    already at this version: a retried apply)."""
    cur, tomb = _current(lk, plan), _tombs(lk, plan)
    done_cur = (applied_version(cur) or -1) >= cut.changes
    done_tomb = (applied_version(tomb) or -1) >= cut.changes
    plan.applied = {"mode": "incremental", "changes": (new or {}).get("row_changes", 0) + (new or {}).get("truncates", 0),
                    "files_rewritten": 0, "files_written": 0}
    if changes is None or (done_cur and done_tomb):
        plan.rows = bm["rows"]
        if not done_cur:
            commit(cur, [], [], cut.changes, _bookmark(cut, plan))
        if not done_tomb:
            commit(tomb, [], [], cut.changes, None)
        return
    entries = keyed.batch_entries(applicable(changes, plan), plan)
    everything = plan.truncated_at != bm["stats"].get("truncated_at")  # a new truncate touches every row
    ranges, tranges = file_ranges(cur), file_ranges(tomb)
    span = _key_span(plan, new)
    touched = ranges if everything else covering(ranges, span)
    ttouched = tranges if everything else covering(tranges, span)
    if touched is None or ttouched is None:  # keys spread over the table: the exact files, by a range join
        entries = entries.persist(StorageLevel.MEMORY_AND_DISK)
        touched = touched_files(lk.spark, ranges, entries) if touched is None else touched
        ttouched = touched_files(lk.spark, tranges, entries) if ttouched is None else ttouched
    state = read_files(lk.spark, cur, [f"{cur.uri}/{f['path']}" for f in touched]) if touched else None
    tombs = read_files(lk.spark, tomb, [f"{tomb.uri}/{f['path']}" for f in ttouched]) if ttouched else None
    estimate = sum(f["rows"] for f in touched) + sum(f["rows"] for f in ttouched) + int(new.get("row_changes") or 0)
    m = keyed.merged(plan, entries, state, tombs, 1 if estimate <= 4 * FILE_ROWS else _parts(estimate))
    # without a DELETE in the batch or a touched tombstone no key can be deleted: write straight from the merge
    dead_possible = bool(tombs is not None or new.get("deletes", 1))
    live = dead = None
    if dead_possible:
        m = m.persist(StorageLevel.MEMORY_AND_DISK)
        live, dead = _counts(m)
    kept = sum(f["rows"] for f in ranges) - sum(f["rows"] for f in touched)
    prefix = f"apply-v{cut.changes}-{secrets.token_hex(4)}"
    adds = write_sorted(keyed.live_rows(m), cur, prefix, estimate, presorted=True) if live != 0 else []
    plan.rows = kept + written_rows(adds)
    if not done_cur:
        commit(cur, adds, touched, cut.changes, _bookmark(cut, plan))
        plan.applied["files_rewritten"] += len(touched)
        plan.applied["files_written"] += len(adds)
    if not done_tomb:
        tadds = write_sorted(keyed.tombstone_rows(m), tomb, prefix, dead) if dead else []
        commit(tomb, tadds, ttouched, cut.changes, None)
        plan.applied["files_rewritten"] += len(ttouched)
        plan.applied["files_written"] += len(tadds)
    m.unpersist()
    entries.unpersist()


def _parts(rows: int) -> int:
    """Range partitions for about `rows` rows: one file each. An incremental batch of up to four files' worth is
    merged in one partition instead (files are still cut at FILE_ROWS): a range shuffle into several would
    first sample its input by computing it, which costs more than writing a few files in one task."""
    return max(1, -(-rows // FILE_ROWS))


def _key_span(plan: TablePlan, new: dict[str, Any]) -> tuple[str, str] | None:
    """The batch's lowest and highest `_cdc_key` from its aggregate (event keys only: `_cdc_key` is the hex of
    `key_bytes`), or None when not known."""
    lo, hi = new.get("min_key"), new.get("max_key")
    if plan.key_mode != "event" or lo is None or hi is None:
        return None
    return bytes(lo).hex().upper(), bytes(hi).hex().upper()


def _counts(m: DataFrame) -> tuple[int, int]:
    r = m.agg(F.count_if(F.col("_live")).alias("live"),
              F.count_if(~F.col("_live") & F.col("_cdc_deleted_at").isNotNull()).alias("dead")).collect()[0]
    return int(r["live"] or 0), int(r["dead"] or 0)


def _rebuild(lk: Lake, cut: Cut, selected, latest, bookmarks, rebuild: dict[TableId, tuple[str, str | None]],
             plans, seen, hints) -> None:
    """Every table without a bookmark, or marked for a rebuild, from all of its changes at the cut."""
    everything = not bookmarks or all(t in rebuild for t in bookmarks)
    if not everything and not rebuild:
        return
    known_none = none_superseded(lk.table("changes"), cut.changes)
    changes = prepared(lk.changes(), known_none)
    schemas_only = set(latest)
    if selected is not None:
        changes = changes.where(selected)
    if not everything:
        hids = sorted({bookmarks[t]["hid"] if t in bookmarks else h for t, (_, h) in rebuild.items()} - {None})
        changes = changes.where(F.col("_tid").isin(*hids))
        schemas_only = {h for h in latest if h in hids}
    # the run reports' figures when they account for every change (cdcnorm.state.presumed), else the lean
    # statistics when they can plan every table: the merge observes the rest (cdcnorm.state.observed)
    stats = presumed_stats(lk, cut.changes, cut.runs, latest, bookmarks) \
        if everything and selected is None and known_none else None
    stats = stats or lean_stats(changes, set(latest)) or table_stats(changes, set(latest))
    if len(stats) > 1:  # several tables read the same changes: keep them once instead of scanning per table
        changes = changes.persist(StorageLevel.MEMORY_AND_DISK)
    args = (lk, cut, changes, everything, schemas_only, latest, bookmarks, rebuild, plans, seen, hints)
    if not _rebuild_plans(stats, *args):  # a presumed figure did not hold: plan the rest from the changes
        _rebuild_plans(lean_stats(changes, set(latest)) or table_stats(changes, set(latest)), *args)
    changes.unpersist()


def _rebuild_plans(stats, lk: Lake, cut: Cut, changes: DataFrame, everything: bool, schemas_only, latest, bookmarks,
                   rebuild, plans, seen, hints) -> bool:
    """Rebuild each planned table not done yet; False when one's presumed statistics did not hold (nothing of it
    committed: the caller plans the rest again)."""
    seen.update(stats)
    for plan in plan_tables(stats, {h: latest[h] for h in schemas_only}):
        if not everything and plan.tid not in rebuild and plan.tid in bookmarks:
            continue
        if plan.tid in plans:
            continue
        apply_hints([plan], hints, require_all=False)
        plans[plan.tid] = plan
        if not _rebuild_table(lk, cut, plan, changes,
                              rebuild.get(plan.tid, ("--full" if bookmarks else "first apply", None))[0]):
            del plans[plan.tid]
            return False
    return True


def _rebuild_table(lk: Lake, cut: Cut, plan: TablePlan, changes: DataFrame, why: str) -> bool:
    """One table from all of its changes, committed; False (nothing committed) when its statistics were presumed
    (:mod:`cdcnorm.state.presumed`) and the merge observed other figures."""
    cur, tomb = _current(lk, plan), _tombs(lk, plan)
    prefix = f"apply-v{cut.changes}-{secrets.token_hex(4)}"
    ranges = file_ranges(cur)
    old = len(ranges) + len(file_ranges(tomb))
    presumed = PRESUMED in plan.stats
    changes, seen = observe(changes, plan, checks() if presumed else None)
    rows = applicable(changes, plan)
    if plan.key_mode == "keyless":
        state = typed_keyless(keyless_state(once(rows)), plan, with_meta=True).persist(StorageLevel.MEMORY_AND_DISK)
        live, dead, m = state.count(), 0, state
        live_df = state
    else:
        parts = _parts(int(plan.stats.get("row_changes") or 0))
        bounds = key_bounds(plan.stats.get("key_sample"), parts) if plan.key_mode == "event" else None
        if bounds is None and presumed and plan.key_mode == "event":
            bounds = target_bounds(ranges, parts)  # no key sample: the target's own key ranges
        m = keyed.merged(plan, keyed.batch_entries(rows, plan, parts, bounds), None, None, parts, entries_ranged=True)
        live, dead = None, 0
        if plan.stats.get("deletes", 1):  # deleted keys: the merge feeds two tables, keep it once
            m = m.persist(StorageLevel.MEMORY_AND_DISK)
            live, dead = _counts(m)
        live_df = keyed.live_rows(m)
    adds = write_sorted(live_df, cur, prefix, live or 0, presorted=plan.key_mode != "keyless") if live != 0 else []
    if presumed and not confirmed(plan.stats, seen):
        for a in adds:
            delete_file(lk.spark, f"{cur.uri}/{a.path}")
        m.unpersist()
        return False
    fill(plan, seen)  # the merge ran (a write or the counts): its observed figures are in
    plan.rows = written_rows(adds)
    commit(cur, adds, [], cut.changes, _bookmark(cut, plan), overwrite=True)
    tadds = write_sorted(keyed.tombstone_rows(m), tomb, prefix, dead) if dead else []
    commit(tomb, tadds, [], cut.changes, None, overwrite=True)
    m.unpersist()
    plan.applied = {"mode": "rebuilt", "reason": why, "changes": plan.stats.get("row_changes", 0),
                    "files_rewritten": old, "files_written": len(adds) + len(tadds)}
    return True


# -- targets and bookmarks --------------------------------------------------------------------------------------
def _current(lk: Lake, plan: TablePlan):
    return target(lk.spark, lk.path, plan.tid, target_schema(plan), CURRENT, lk.storage_options)


def _tombs(lk: Lake, plan: TablePlan):
    return target(lk.spark, lk.path, plan.tid, TOMBSTONE_SCHEMA, TOMBSTONES, lk.storage_options)


def _bookmark(cut: Cut, plan: TablePlan) -> dict[str, Any]:
    return {"changes": cut.changes, "schemas": cut.schemas, "pending": cut.pending, "hid": plan.hid,
            "plan": plan_json(plan), "stats": stats_json({**plan.stats, "truncated_at": plan.truncated_at}),
            "rows": plan.rows}


__all__ = ["ApplyResult", "apply_lake", "prepared", "table_history", "table_state"]


# -- history ------------------------------------------------------------------------------------------------------
def history_schema(plan: TablePlan):
    from pyspark.sql import types as T

    extra = [T.StructField("valid_from", T.BinaryType()), T.StructField("valid_to", T.BinaryType()),
             T.StructField("valid_from_ts", T.TimestampType()), T.StructField("valid_to_ts", T.TimestampType()),
             T.StructField("is_current", T.BooleanType()), T.StructField("opened_by_op", T.StringType()),
             T.StructField("opened_by_event_id", T.StringType()), T.StructField("closed_by_op", T.StringType()),
             T.StructField("closed_by_event_id", T.StringType()), T.StructField(KEY, T.StringType())]
    return output_schema(plan, extra)


def table_history(changes: DataFrame, plan: TablePlan, track: list[str] | None) -> DataFrame:
    """One table's SCD type 2 versions from all of its (prepared) changes (:mod:`cdcnorm.state.history`)."""
    from dataclasses import replace

    from cdcnorm.state.history import keyed_history, keyless_history

    rows = once(applicable(changes, replace(plan, truncated_at=None)))
    if plan.key_mode == "keyless":
        return keyless_history(plan, rows)
    truncs = [(bytes(r["sort_key"]), r["source_ts"], r["event_id"]) for r in  # metadata: one row per TRUNCATE
              changes.where(of_table(plan.tid) & (F.col("op") == "TRUNCATE"))
              .select("sort_key", "source_ts", "event_id").collect()]
    names = {c.name for c in plan.columns}
    tracked = [c for c in track if c in names] if track else None
    return keyed_history(plan, keyed_entries(rows), sorted(truncs, key=lambda t: t[0]), tracked or None)


def write_history(lk: Lake, cut: Cut, plans: list[TablePlan], track: list[str] | None) -> None:
    """Each table's history under `LAKE/history/`, recomputed from its changes (one Delta overwrite per table)."""
    from cdcnorm.state.paths import HISTORY

    if not plans:
        return
    changes = _lake_changes(lk, cut).where(F.col("_tid").isin(*[p.hid for p in plans]))
    changes = changes.persist(StorageLevel.MEMORY_AND_DISK)
    for plan in plans:
        h = table_history(changes, plan, track).persist(StorageLevel.MEMORY_AND_DISK)
        n = h.count()
        ref = target(lk.spark, lk.path, plan.tid, history_schema(plan), HISTORY, lk.storage_options)
        adds = write_sorted(h, ref, f"apply-v{cut.changes}-{secrets.token_hex(4)}", n) if n else []
        old = len(file_ranges(ref))
        commit(ref, adds, [], cut.changes, {"changes": cut.changes, "versions": n, "track": track}, overwrite=True)
        plan.applied.update({"history_versions": n, "history_files_rewritten": old, "history_files_written": len(adds)})
        h.unpersist()
    changes.unpersist()
