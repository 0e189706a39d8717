"""Update halves that pair across runs: a lone half waits for its partner, then is emitted as an orphan; a
partner that arrives after that replaces the orphan (`supersedes`).

Why: DataHub delivers an UPDATE as two records (`UPDATE_BEFOR`, `UPDATE_AFTER`) and Datastream a primary-key
change as two (`UPDATE-DELETE`, `UPDATE-INSERT`); a file boundary (or a micro-batch boundary) may fall between
them. Pairing only within one run leaves such halves orphans for ever.

The state is the lake's `halves` Delta table, partitioned by vendor, append-only: a run appends entries and
tombstones, never rewrites another run's files, so concurrent writers need no lock (the same rule as the rest of
the lake). Entries:

- `waiting`: a lone half held back (not emitted) until its event time (source time, else capture time) is
  older than the newest event time seen on its stream minus the pairing wait;
- `orphaned`: a half that was emitted as an orphan, remembered for `pair_memory_days` (default
  :data:`DEFAULT_PAIR_MEMORY_DAYS`, of event time behind the newest on its stream), so a late partner can still
  pair with it;
- `released`: a tombstone ending the entry whose `entry_id` it names (a waiting half paired or released, an
  orphan superseded or expired).

Per run (in Spark, no row reaches the driver but one maximum): the run's halves plus the waiting entries are
grouped by pair id. A complete group is paired as usual. A lone group whose opposite half is remembered as an
orphan is paired with a copy of it (records zeroed: they were counted when the orphan was emitted); the rows this
produces carry `supersedes = <orphan event id>` when the adapter's paired rows have ids of their own (DataHub),
and the orphan's own re-emission is dropped (Datastream keeps the halves' ids: the late half is simply emitted).
A complete group whose half was already emitted as an orphan (that half redelivered with its partner) supersedes
the orphan the same way.
A batch run (no wait) passes the state by when the state cannot change its outcome: the driver reads a local
lake's few state entries (:func:`memory`), and when none is waiting, none has expired and none of the run's halves
shares a pair id with a remembered orphan (counted by the staging write), the run pairs within itself and only
appends its new orphans (:func:`flush_past_memory`): the same rows, entries and figures as the state path, without
its Spark jobs (a daily job's run costs what its new files cost, not that of the state).
A lone half of a role that never waits (`Adapter.waiting_roles`: Datastream's UPDATE-INSERT alone is an
ordinary update) passes through, and a lone half whose partner of such a role the lake already holds
(:func:`emitted_halves`) is released at once: nothing is left to pair with it. Another lone group is released
as an orphan when it is old enough, or always when the run flushes (a batch run with no wait), else it waits. A waiting half's records count as the report's `held` outcome (net: held at the end
minus held at the start), so every report still reconciles. The table stays small: after a run, when a vendor's
live files exceed :data:`COMPACT_FILES`, they are rewritten into one file of the live entries (tombstones and
their targets dropped) in a `dataChange=false` commit that is skipped if it conflicts.
"""

from __future__ import annotations

import datetime as dt
import secrets
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from cdcnorm.canonical.emit import KIND_CHANGE, decoded_schema
from cdcnorm.canonical.emit import Bookkeeping as B
from cdcnorm.lake.delta.files import write_files
from cdcnorm.lake.delta.read import read_files
from cdcnorm.lake.delta.table import rewrite
from cdcnorm.runtime.fs import is_local, local_path

if TYPE_CHECKING:
    from cdcnorm.adapters import Adapter
    from cdcnorm.lake.store import Lake

DEFAULT_PAIR_MEMORY_DAYS = 30
"""Days of event time an orphan half stays remembered for a late partner (`--pair-memory-days`): the `halves`
table holds, per vendor, the orphans of that many days plus the halves still waiting (their tombstones are
compacted away after each run that wrote some)."""
TABLE = "halves"
WAITING, ORPHANED, RELEASED = "waiting", "orphaned", "released"
COMPACT_FILES = 16
"""A vendor's live state files above which a run compacts them."""
MEMORY_PAIRS_MAX = 10_000
"""Remembered orphan pair ids above which a run takes the state path rather than test its halves against them."""

_DECODED = [f.name for f in decoded_schema().fields]


@dataclass
class Pairing:
    """What the pairing step produced for one run."""

    changes: DataFrame
    """the run's change rows ready for the adapter's post_process (halves to pair or release, no waiting one)"""
    entries: DataFrame
    """rows to append to the `halves` table (new entries and tombstones)"""
    dropped_ids: DataFrame | None
    """event ids (`_drop_id`) of re-injected orphans: their re-emission after post_process is dropped (None:
    none can be, the run had no state)"""
    supersede: DataFrame | None
    """(`_sup_id`, `_supersedes`): paired rows' event ids and the orphan each one replaces (None: none)"""
    counts: DataFrame | None
    """rows whose sums are `held_in` / `held_out` (records waiting at the start / end) and `state_rows` (live
    entries after): summed by the report's aggregation (None: nothing held, one state row per entry)"""
    state_before: int = field(default=0)
    """live entries the state held before the run, when `counts` is None (added to `state_rows`)"""


@dataclass(frozen=True)
class Memory:
    """What the driver read of a vendor's live pairing state (a local lake's: a few small files)."""

    live: int
    """live entries (waiting and orphaned)"""
    waiting: int
    """waiting halves"""
    expired: int
    """orphans older than the retention: a run that sees them writes their tombstones (the state path)"""
    orphan_pairs: frozenset[str]
    """pair ids of the remembered orphans"""

    def passable(self) -> bool:
        """Whether a batch run whose halves share no pair id with an orphan may pass the state by."""
        return not self.waiting and not self.expired and len(self.orphan_pairs) <= MEMORY_PAIRS_MAX


def event_time() -> Column:
    return F.coalesce(F.col("source_ts"), F.col("capture_ts"))


def _role() -> Column:
    return F.substring_index(F.col(B.PAIR_ROLE), "/", 1)


def _entry_id(kind: str) -> Column:
    parts = [F.lit(kind), F.col(B.PAIR), F.col(B.PAIR_ROLE), F.col("event_id"), F.to_json("origin")]
    return F.sha2(F.concat_ws("\u0001", *[F.coalesce(p, F.lit("")) for p in parts]), 256)


def _entries(rows: DataFrame, kind: str) -> DataFrame:
    return rows.select(*[F.col(f"`{n}`") for n in _DECODED], F.lit(kind).alias("entry_kind"),
                       _entry_id(kind).alias("entry_id"), event_time().alias("event_time"))


def _tombstones(entry_ids: DataFrame, vendor: str) -> DataFrame:
    nulls = [F.lit(None).cast(f.dataType).alias(f.name) for f in decoded_schema().fields if f.name != "vendor"]
    return entry_ids.select(F.lit(vendor).alias("vendor"), *nulls, F.lit(RELEASED).alias("entry_kind"),
                            F.col("entry_id"), F.lit(None).cast("timestamp").alias("event_time")
                            ).select(*_DECODED, "entry_kind", "entry_id", "event_time")


def state_files(lk: Lake, vendor: str) -> list[str]:
    """The vendor's live state files (read from the table's log once per run)."""
    table = lk.table(TABLE)
    if not table.exists():
        return []
    return [f["uri"] for f in table.live(handle=table.fresh()) if f["partition"].get("vendor") == vendor]


def needed(files: list[str], has_waiting_half: bool, balanced: bool = False) -> bool:
    """Whether a run must go through the pairing state: the vendor has live state `files`, or the run has a half
    that may wait and not every pair of the run is complete (`balanced`, observed by the staging write: see
    :func:`balance`); otherwise pairing within the run suffices: with no state, a run whose pairs are all
    complete pairs every half (no hold, no orphan, no tombstone), exactly what pairing within the run does."""
    return bool(files) or (has_waiting_half and not balanced)


def balance(adapter: Adapter) -> list[Column]:
    """Two aggregate columns for the staging write's observation: over the run's halves, the sum of a 64-bit
    hash of the pair id, counted + for the adapter's first waiting role and - for any other role, under two
    different hashes. Both are zero when every pair of the run holds as many halves of one role as of the other
    (every pair complete); a pair with a lone half leaves its hash in the sum. A zero by chance needs the hashes
    of different pairs to cancel, under both hashes at once (odds about 2^-128); any other role, or a pair with
    a redelivered half, leaves a non-zero sum, which only means the run takes the state path, as before."""
    half = (F.col(B.KIND) == KIND_CHANGE) & F.col(B.PAIR).isNotNull()
    sign = F.when(_role() == adapter.waiting_roles[0], 1).otherwise(-1)
    hashes = (F.xxhash64(F.col(B.PAIR)), F.xxhash64(F.lit("cdcnorm-pair"), F.col(B.PAIR)))
    return [F.sum(F.when(half, sign * h.cast("decimal(38,0)"))).alias(f"_balance{i}") for i, h in enumerate(hashes)]


def balanced(observed: dict) -> bool:
    """Whether the sums of :func:`balance` (as observed) say every pair of the run is complete."""
    return all(int(observed.get(f"_balance{i}") or 0) == 0 for i in range(2))


def may_wait(adapter: Adapter) -> Column:
    """Whether a decoded change row is a half of a role that may wait for its partner."""
    return _role().isin(*adapter.waiting_roles)


def memory(files: list[str], retention_days: int) -> Memory | None:
    """The live state of these files as the driver reads it (None: no file, or a remote lake's files, which only
    Spark reads: such a run takes the state path)."""
    if not files or not all(is_local(u) for u in files):
        return None
    rows = pq.read_table([local_path(u) for u in files], columns=[B.PAIR, "entry_kind", "entry_id", "event_time"])
    kinds = rows.column("entry_kind")
    ended = pc.filter(rows.column("entry_id"), pc.equal(kinds, RELEASED))
    live = rows.filter(pc.and_(pc.not_equal(kinds, RELEASED), pc.invert(pc.is_in(rows.column("entry_id"), ended))))
    orphans = live.filter(pc.equal(live.column("entry_kind"), ORPHANED))
    times = orphans.column("event_time")
    newest = pc.max(times).as_py()
    expired = int(pc.sum(pc.is_null(times)).as_py() or 0)
    if newest is not None:  # the rule of _expired: event time before the newest orphan's minus the retention
        limit = newest - dt.timedelta(days=int(retention_days))
        expired += int(pc.sum(pc.less(times, pa.scalar(limit, times.type))).as_py() or 0)
    return Memory(live.num_rows, live.num_rows - orphans.num_rows, expired,
                  frozenset(p for p in orphans.column(B.PAIR).to_pylist() if p is not None))


def memory_hits(mem: Memory | None) -> list[Column]:
    """The staging write's count of the run's halves whose pair id a remembered orphan has (`_memory_hits`)."""
    if mem is None or not mem.passable() or not mem.orphan_pairs:
        return []
    return [F.count_if(F.col(B.PAIR).isin(sorted(mem.orphan_pairs))).alias("_memory_hits")]


def passes_by(mem: Memory | None, wait_seconds: float | None, hits: int | None) -> bool:
    """Whether a run may pass the pairing state by (:func:`flush_past_memory`): a batch run (no wait), the state
    read by the driver and passable, and none of the run's halves met a remembered orphan (`hits`)."""
    return not wait_seconds and mem is not None and mem.passable() and not (mem.orphan_pairs and hits)


def flush_past_memory(adapter: Adapter, changes: DataFrame, mem: Memory) -> Pairing:
    """:func:`pair_across_runs` of a run that :func:`passes_by` the state: nothing waits, nothing is late or
    expires, no remembered orphan meets a half of the run, so the state path would pair within the run and add the
    run's lone halves as orphans: exactly :func:`_flush_without_state`, whose state figure starts at the live
    entries."""
    flushed = _flush_without_state(adapter, changes)
    flushed.state_before = mem.live
    return flushed


def live_entries(lk: Lake, files: list[str]) -> DataFrame | None:
    """The live entries of these state files (waiting and orphaned, tombstoned ones removed); None without files."""
    if not files:
        return None
    return _live(read_files(lk.spark, lk.table(TABLE), files))


def _live(rows: DataFrame) -> DataFrame:
    """State entries minus those a `released` tombstone ended."""
    ended = rows.where(F.col("entry_kind") == RELEASED).select("entry_id")
    return rows.where(F.col("entry_kind") != RELEASED).join(ended, "entry_id", "left_anti")


def emitted_halves(lk: Lake, adapter: Adapter, files: list[str]) -> DataFrame | None:
    """The pair ids (`_pair`) of the halves of a role that never waits (:meth:`Adapter.emitted_half_pair`) that
    the lake's changes `files` hold (the run's dedup scope: the days its changes fall in, where a half's partner
    falls too); None when there can be none."""
    pair = adapter.emitted_half_pair()
    if pair is None or not files:
        return None
    rows = read_files(lk.spark, lk.table("changes"), files)  # the expression's columns only are scanned
    return rows.select(pair.alias(B.PAIR)).where(F.col(B.PAIR).isNotNull()).distinct()


def pair_across_runs(lk: Lake, adapter: Adapter, changes: DataFrame, wait_seconds: float | None,
                     retention_days: int, stage_path: str, files: list[str] | None = None,
                     emitted: DataFrame | None = None) -> Pairing:
    """Combine the run's decoded change rows with the vendor's pairing state (see the module doc).

    `wait_seconds` None (or 0) flushes: every lone half is released as an orphan now (a batch run). The halves
    and their decisions are written once to `stage_path` (they are few), so the run's later steps (dedup check,
    report, writes) read them instead of re-running the grouping and joins. `emitted` (:func:`emitted_halves`):
    pair ids whose half of a role that never waits the lake already holds. A lone half of such a pair is released
    at once, wait or not: that partner was emitted without a state entry (Datastream's UPDATE-INSERT is emitted
    by the batch that brings it), so nothing can ever come to pair with the half, and holding it would keep its
    change (the DELETE of a key change's old key) out of the lake until the stream's events are a wait newer.
    """
    vendor = adapter.name
    spark = changes.sparkSession
    state = live_entries(lk, state_files(lk, vendor) if files is None else files)
    if state is None and not wait_seconds:
        return _flush_without_state(adapter, changes)
    if state is None:
        state = spark.createDataFrame([], lk.specs[TABLE].schema)
    is_half = F.col(B.PAIR).isNotNull()
    waiting = state.where(F.col("entry_kind") == WAITING)
    orphaned = state.where(F.col("entry_kind") == ORPHANED)
    # a waiting entry carries its stored entry id, which its tombstone names when it leaves the state
    fresh = changes.where(is_half).select(*_DECODED, F.lit(False).alias("_from_state"),
                                          F.lit(None).cast("string").alias("_entry"))
    pool = fresh.unionByName(waiting.select(*_DECODED, F.lit(True).alias("_from_state"), F.col("entry_id").alias("_entry")))
    memory = orphaned.select(F.col(B.PAIR).alias("_m_pair"), _role().alias("_m_role"),
                             F.col("event_id").alias("_m_id"), F.col("entry_id").alias("_m_entry"))
    groups = pool.groupBy(B.PAIR).agg(F.collect_set(_role()).alias("_roles"), F.max(event_time()).alias("_t"),
                                      F.first(_stream_of()).alias("_stream"))
    late_groups = (groups.where(F.size("_roles") == 1).join(
        memory, (F.col(B.PAIR) == F.col("_m_pair")) & ~F.array_contains("_roles", F.col("_m_role")))
        .select(B.PAIR).distinct().withColumn("_late", F.lit(True)))
    released = _with_release(groups, changes, state, wait_seconds)
    if emitted is not None and wait_seconds:  # without a wait every lone half is released anyway
        partnered = emitted.select(B.PAIR).distinct().withColumn("_partnered", F.lit(True))
        released = (released.join(partnered, B.PAIR, "left")
                    .withColumn("_releasable", F.col("_releasable") | F.col("_partnered").isNotNull())
                    .drop("_partnered"))
    decided = (released.join(late_groups, B.PAIR, "left")
               .withColumn("_decision", F.when(F.size("_roles") > 1, "pair")
                           .when(F.col("_late").isNotNull(), "late")
                           .when(~F.array_contains(F.lit(list(adapter.waiting_roles)), F.col("_roles")[0]), "pass")
                           .when(F.col("_releasable"), "release")
                           .otherwise("hold"))
               .select(B.PAIR, "_decision"))
    staged = pool.join(decided, B.PAIR)
    staged.write.mode("overwrite").parquet(stage_path)
    pooled = spark.read.schema(staged.schema).parquet(stage_path)  # the schema given: no inference job

    # the orphans a pair replaces: a late partner's ("late": the orphan is re-injected to pair with it), and
    # the orphan of a half redelivered with its partner ("pair": the redelivered copy pairs, the orphan stays
    # emitted, so the pair must supersede it all the same)
    late = (pooled.where(F.col("_decision").isin("late", "pair")).select(B.PAIR, "_decision", _role().alias("_role"))
            .distinct()
            .join(memory, (F.col(B.PAIR) == F.col("_m_pair")) & (F.col("_role") != F.col("_m_role")))
            .select(B.PAIR, "_decision", "_m_id", F.col("_m_entry").alias("entry_id")).distinct())
    reinjected = (orphaned.join(late.where(F.col("_decision") == "late").select("entry_id"), "entry_id", "left_semi")
                  .select(*_DECODED).withColumn(B.RECORDS, F.lit(0)).withColumn(B.MERGED, F.lit(0)))
    to_pair = pooled.where(F.col("_decision") != "hold").select(*_DECODED)
    out = changes.where(~is_half).unionByName(to_pair).unionByName(reinjected)

    held_new = _entries(pooled.where((F.col("_decision") == "hold") & ~F.col("_from_state")), WAITING)
    orphans_new = _entries(pooled.where(F.col("_decision") == "release"), ORPHANED).dropDuplicates(["entry_id"])
    ended = (pooled.where((F.col("_decision") != "hold") & F.col("_from_state"))
             .select(F.col("_entry").alias("entry_id"))
             .unionByName(late.select("entry_id"))
             .unionByName(_expired(orphaned, retention_days)))
    entries = held_new.unionByName(orphans_new).unionByName(_tombstones(ended.distinct(), vendor))

    dropped = late.select(F.col("_m_id").alias("_drop_id")).distinct()
    ids = adapter.paired_event_ids(F.col(B.PAIR))
    supersede = (late.select(F.explode(ids).alias("_sup_id"), F.col("_m_id").alias("_supersedes"))
                 .groupBy("_sup_id").agg(F.min("_supersedes").alias("_supersedes")))
    return Pairing(out, entries, dropped, supersede, _count_rows(pooled, state, entries))


def _decision(adapter: Adapter) -> Column:
    """A group's decision from its roles (`_roles`) when nothing is late and every lone half may be released."""
    return (F.when(F.size("_roles") > 1, "pair")
            .when(~F.array_contains(F.lit(list(adapter.waiting_roles)), F.col("_roles")[0]), "pass")
            .otherwise("release"))


def _flush_without_state(adapter: Adapter, changes: DataFrame) -> Pairing:
    """:func:`pair_across_runs` with no state and no wait (a batch run into a lake whose vendor has no live
    entries), the same figures without the staged pool: nothing waits, nothing is late, nothing ends, so every
    change passes unchanged (complete pairs pair, lone halves are released as orphans) and the only rows the
    pairing adds are the `orphaned` entries of the lone halves of a waiting role (one `state_rows` each). No
    write of the pool, no join of it: a small run's pairing is a few plans cheaper, and a larger one's changes
    do not go through the pool at all."""
    halves = changes.where(F.col(B.PAIR).isNotNull()).select(*_DECODED)
    roles = F.collect_set(_role()).over(Window.partitionBy(B.PAIR))
    released = (halves.withColumn("_roles", roles).where(_decision(adapter) == "release")
                .select(*[F.col(f"`{n}`") for n in _DECODED]))
    return Pairing(changes, _entries(released, ORPHANED).dropDuplicates(["entry_id"]), None, None, None)


def _count_rows(pooled: DataFrame, state: DataFrame, entries: DataFrame) -> DataFrame:
    """Rows whose column sums are the run's pairing figures, summed by the run's one report aggregation: no
    aggregation (and no join of two aggregations, a Spark job of its own) here."""
    n = F.coalesce(F.col(B.RECORDS), F.lit(0)) + F.coalesce(F.col(B.MERGED), F.lit(0))
    zero = F.lit(0).cast("long")
    held = pooled.select(F.when(F.col("_from_state"), n).otherwise(0).cast("long").alias("held_in"),
                         F.when(F.col("_decision") == "hold", n).otherwise(0).cast("long").alias("held_out"),
                         zero.alias("state_rows"))
    live = state.select(zero.alias("held_in"), zero.alias("held_out"), F.lit(1).cast("long").alias("state_rows"))
    added = entries.select(zero.alias("held_in"), zero.alias("held_out"),
                           F.when(F.col("entry_kind") == RELEASED, -1).otherwise(1).cast("long").alias("state_rows"))
    return held.unionByName(live).unionByName(added)


def _stream_of() -> Column:
    return F.coalesce(F.col("stream"), F.lit(""))


def _with_release(groups: DataFrame, changes: DataFrame, state: DataFrame, wait_seconds: float | None) -> DataFrame:
    """`groups` with `_releasable`: the group's newest event time is older than its stream's newest event time
    (this run's changes and the state) minus the wait; always when flushing (no wait). Per stream, because one
    stream's progress says nothing of another's: several streams of a vendor share the state."""
    if not wait_seconds:
        return groups.withColumn("_releasable", F.lit(True))
    newest = (changes.select(_stream_of().alias("_stream"), event_time().alias("_n"))
              .unionByName(state.select(_stream_of().alias("_stream"), F.col("event_time").alias("_n")))
              .groupBy("_stream").agg(F.max("_n").alias("_newest")))
    horizon = F.unix_micros("_newest") - F.lit(int(float(wait_seconds) * 1_000_000))
    releasable = F.col("_newest").isNull() | F.col("_t").isNull() | (F.unix_micros("_t") < horizon)
    return groups.join(newest, "_stream", "left").withColumn("_releasable", releasable).drop("_newest")


def _expired(orphaned: DataFrame, retention_days: int) -> DataFrame:
    """Orphans remembered longer than the retention (event time) are forgotten."""
    # a window over the vendor (the state files are one vendor's), not a join with an aggregation: such a join
    # is a broadcast, a Spark job of its own in every run that reads the state
    limit = F.col("_newest") - F.make_interval(days=F.lit(int(retention_days)))
    old = (orphaned.withColumn("_newest", F.max("event_time").over(Window.partitionBy("vendor")))
           .where(F.col("event_time").isNull() | (F.col("event_time") < limit)))
    return old.select("entry_id")


def apply_pairing(rows: DataFrame, pairing: Pairing | None) -> DataFrame:
    """After the adapter's post_process: drop re-emitted orphans and set `supersedes` on late pairs."""
    if pairing is None or pairing.dropped_ids is None:  # nothing re-injected, nothing superseded
        return rows.withColumn("supersedes", F.lit(None).cast("string"))
    kept = rows.join(pairing.dropped_ids, F.col("event_id") == F.col("_drop_id"), "left_anti")
    joined = kept.join(pairing.supersede, F.col("event_id") == F.col("_sup_id"), "left")
    return joined.withColumn("supersedes", F.col("_supersedes")).drop("_sup_id", "_supersedes")


def mark_emitted_pairs(marked: DataFrame, existing: DataFrame | None, adapter: Adapter) -> DataFrame:
    """A lone half whose pair's rows the lake already holds (`Adapter.paired_event_ids`) is a redelivered half of
    a pair emitted earlier (or the separate copy of a one-message UPDATE): a duplicate, not an orphan.
    (Datastream's pairs keep the halves' own ids, so its rows are unaffected.)"""
    if existing is None:
        return marked
    emitted = existing.select(F.col("event_id").alias("_c")).distinct()
    candidates = marked.where(F.col(B.PAIR).isNotNull()).select(
        F.col("event_id").alias("_half"), F.explode(adapter.paired_event_ids(F.col(B.PAIR))).alias("_c"))
    hits = candidates.join(emitted, "_c").select("_half").distinct().withColumn("_pair_emitted", F.lit(True))
    joined = marked.join(hits, F.col("event_id") == F.col("_half"), "left")
    return (joined.withColumn("_dup", F.col("_dup") | F.coalesce(F.col("_pair_emitted"), F.lit(False)))
            .drop("_half", "_pair_emitted"))


def compact(lk: Lake, vendor: str) -> bool:
    """Rewrite a vendor's live state files into one when they are many (skipped on a conflict); True if done."""
    table = lk.table(TABLE)
    if not table.exists():
        return False
    handle = table.fresh()
    files = [f for f in table.live(handle=handle) if f["partition"].get("vendor") == vendor]
    if len(files) <= COMPACT_FILES:
        return False
    live = _live(read_files(lk.spark, table, [f["uri"] for f in files]))
    prefix = f"compact={int(time.time() * 1000)}-{secrets.token_hex(3)}"
    written = write_files(live.select(*[f.name for f in table.schema.fields]), table, prefix)
    return rewrite(table, files, written, handle, "compact-halves")
