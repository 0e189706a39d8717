"""normalize: sources -> adapter -> canonical rows, quarantine, schema versions and a reconciled run report.

Every input record has exactly one outcome (emitted, merged into another row, metadata only, filtered by a
named rule, duplicate, or quarantined) and the report's outcome counts add up to the records read.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from cdcnorm._version import __version__
from cdcnorm.adapters import Adapter, adapter_class, get_adapter, names
from cdcnorm.canonical.emit import (
    KIND_CHANGE,
    KIND_FILTERED,
    KIND_METADATA,
    KIND_QUARANTINE,
    KIND_SCHEMA,
)
from cdcnorm.canonical.emit import Bookkeeping as B
from cdcnorm.canonical.schema import (
    COLUMN_NAMES,
    QUARANTINE_COLUMNS,
    SCHEMA_VERSION_COLUMNS,
)
from cdcnorm.errors import CdcError, UsageError
from cdcnorm.ingest.figures import aggregate_figures
from cdcnorm.ingest.first_pass import first_pass
from cdcnorm.ingest.jvm_decode import JVM_RULE, decode_listed
from cdcnorm.ingest.listing import EMPTY_PARTS, Listing, empty_frames, known_only
from cdcnorm.ingest.pairing import (
    DEFAULT_PAIR_MEMORY_DAYS,
    Memory,
    apply_pairing,
    emitted_halves,
    flush_past_memory,
    mark_emitted_pairs,
    may_wait,
    memory,
    memory_hits,
    pair_across_runs,
    passes_by,
    state_files,
)
from cdcnorm.ingest.pairing import balance as pair_balance
from cdcnorm.ingest.pairing import balanced as pairs_balanced
from cdcnorm.ingest.pairing import compact as compact_halves
from cdcnorm.ingest.pairing import needed as pairing_needed
from cdcnorm.ingest.schema_rows import from_text, new_schema_texts, schema_rows, to_arrow
from cdcnorm.ingest.sources import decode_messages, files_frame, prepare_messages
from cdcnorm.lake.commit import open_lake, stage_and_commit, staged_rows
from cdcnorm.lake.dedup import (
    MARK_BY_IDS_ROWS,
    Touched,
    capture_span,
    dayless_capture,
    dedup_scope,
    mark_duplicates,
    with_source_day,
)
from cdcnorm.lake.ledger import known as known_inputs
from cdcnorm.lake.ledger import rows as ledger_rows
from cdcnorm.lake.store import Lake, new_run_id
from cdcnorm.lake.tables import STAGING, STAGING_PARQUET, source_day
from cdcnorm.runtime.fs import FileEntry, is_local, list_files, open_input
from cdcnorm.runtime.session import get_spark, use_portable_parquet
from cdcnorm.runtime.small_runs import planned_for

Progress = Callable[[str], None]


class NormalizeResult:
    """What a normalize run produced: new canonical rows, quarantine, schema versions and the run report.

    A committed run's DataFrames read its committed files, and are only built when asked for: a follow
    micro-batch needs the report alone, and building three readers of the lake (their file listings and
    plans) was a share of its fixed cost."""

    def __init__(self, changes: DataFrame | Callable[[], DataFrame], quarantine: DataFrame | Callable[[], DataFrame],
                 schemas: DataFrame | Callable[[], DataFrame], report: dict[str, Any], run_id: str,
                 lake: str | None = None, decoded: DataFrame | None = None):
        self._frames = {"changes": changes, "quarantine": quarantine, "schemas": schemas}
        self.report, self.run_id, self.lake, self.decoded = report, run_id, lake, decoded

    def _frame(self, name: str) -> DataFrame:
        got = self._frames[name]
        if not isinstance(got, DataFrame):
            got = self._frames[name] = got()
        return got

    @property
    def changes(self) -> DataFrame:
        return self._frame("changes")

    @property
    def quarantine(self) -> DataFrame:
        return self._frame("quarantine")

    @property
    def schemas(self) -> DataFrame:
        return self._frame("schemas")

    def __repr__(self) -> str:
        return f"NormalizeResult(run_id={self.run_id!r}, lake={self.lake!r}, report=...)"


def normalize(
    source: str | os.PathLike | list[str | os.PathLike] | DataFrame,
    vendor: str | Adapter | None = None,
    *,
    spark: SparkSession | None = None,
    options: dict[str, Any] | None = None,
    column_map: dict[str, str] | None = None,
    lake: str | None = None,
    progress: Progress | None = None,
    resolves: DataFrame | None = None,
    dedup_window_days: int | None = None,
    run_id: str | None = None,
    pair_wait_seconds: float | None = None,
    skipped_objects: dict[str, int] | None = None,
    reprocess: bool = False,
    pair_memory_days: int | None = None,
) -> NormalizeResult:
    """Normalize files (paths) or a raw-message DataFrame into canonical change rows.

    With `lake`, the run is committed into the lake's Delta tables (cdcnorm.lake.commit): rows already in the
    lake (in the source days the run's changes fall in, whatever their age; within `dedup_window_days` days of
    the run's newest day when given) are counted as duplicates, and concurrent runs into the same lake are safe; without it, the result's DataFrames are
    computed in memory. `resolves` (quarantine ids being retried) marks those ids resolved unless this run
    quarantined the same record again. `run_id` (default: a new unique id) names the run and its Delta
    transaction: a caller that may repeat a run (a micro-batch replayed after a crash) passes a deterministic one.
    With a lake, update halves pair across runs (cdcnorm.ingest.pairing): a lone half waits until its event time
    is `pair_wait_seconds` older than the newest seen (None or 0: it is emitted as an orphan at once, and a
    partner arriving later supersedes it; an orphan is remembered `pair_memory_days`, default
    DEFAULT_PAIR_MEMORY_DAYS). `skipped_objects`: objects the caller's own listing skipped (counted in
    the report). With a lake, files a committed run already read (same identity in the lake's input-file ledger,
    cdcnorm.lake.ledger) are skipped and counted as `files_skipped_known`, unless `reprocess`.
    """
    spark = spark or get_spark()
    use_portable_parquet(spark)
    started = dt.datetime.now(dt.UTC)
    run_id = run_id or new_run_id()
    lake_obj = open_lake(spark, lake) if lake else None
    return _normalize(source, vendor, spark, options, column_map, progress, resolves, run_id, started, lake_obj,
                      dedup_window_days, pair_wait_seconds, skipped_objects or {}, reprocess,
                      DEFAULT_PAIR_MEMORY_DAYS if pair_memory_days is None else int(pair_memory_days))


def _normalize(source: Any, vendor: str | Adapter | None, spark: SparkSession, options: dict[str, Any] | None,
               column_map: dict[str, str] | None, progress: Progress | None, resolves: DataFrame | None,
               run_id: str, started: dt.datetime, lake_obj: Lake | None,
               dedup_window_days: int | None, pair_wait: float | None,
               listing_skipped: dict[str, int], reprocess: bool = False,
               pair_memory: int = DEFAULT_PAIR_MEMORY_DAYS) -> NormalizeResult:
    say = progress or (lambda _msg: None)
    lake = lake_obj.path if lake_obj else None
    if isinstance(source, DataFrame):
        kind, inputs, skipped, files = "messages", ["<DataFrame>"], {}, Listing([], 0)
        raw = prepare_messages(source, column_map)
        adapter = _adapter(vendor or _detect_messages(raw), options)
        adapter = adapter.prepare(first_pass(adapter, raw, kind, lake_obj))
        decoded = decode_messages(raw, adapter)
    else:
        kind = "files"
        inputs = [os.fspath(source)] if isinstance(source, str | os.PathLike) else [os.fspath(p) for p in source]
        if not inputs:
            raise UsageError("No input given: name one or more files or folders.")
        say("listing input files")
        files, skipped = list_files(spark, inputs)
        for reason, n in listing_skipped.items():
            skipped[reason] = skipped.get(reason, 0) + n
        if not files:
            raise UsageError(f"No input files found under {', '.join(inputs)} (skipped: {skipped or 'none'}).")
        adapter = _adapter(vendor or _detect_files(files), options)
        files, skipped = _filter_files(adapter, files, skipped)
        if not files:
            raise UsageError(f"No data files among the inputs (skipped: {skipped}).")
        listing = Listing(files, 0)
        if lake_obj and not reprocess:
            known_ids = known_inputs(lake_obj, files)
            listing = Listing([f for f in files if f.identity() not in known_ids], len(known_ids))
            if not listing.files:
                say(f"all {listing.known} input files were read by earlier runs")
                report = known_only(lake_obj, build_report(EMPTY_PARTS, adapter, kind, inputs, listing, skipped,
                                                           run_id, started))
                return NormalizeResult(*empty_frames(spark), report, run_id, lake, None)
        with planned_for(spark, sum(f.size for f in listing.files)):
            frame = files_frame(spark, listing.files)
            adapter = adapter.prepare(first_pass(adapter, frame, kind, lake_obj))
            decoded = decode_listed(frame, adapter)
            return _decode_and_finish(decoded, adapter, spark, say, resolves, run_id, started, lake_obj, lake, kind,
                                      inputs, listing, skipped, dedup_window_days, pair_wait, pair_memory)
    return _decode_and_finish(decoded, adapter, spark, say, resolves, run_id, started, lake_obj, lake, kind, inputs,
                              files, skipped, dedup_window_days, pair_wait, pair_memory)


def _decode_and_finish(decoded: DataFrame, adapter: Adapter, spark: SparkSession, say: Progress,
                       resolves: DataFrame | None, run_id: str, started: dt.datetime, lake_obj: Lake | None,
                       lake: str | None, kind: str, inputs: list[str], listing: Listing, skipped: dict[str, int],
                       window: int | None, pair_wait: float | None, pair_memory: int) -> NormalizeResult:
    n_files = len(listing.files)
    say(f"decoding {n_files or 'DataFrame'} {'files' if n_files else ''} with the {adapter.name} adapter".replace("  ", " "))
    state = state_files(lake_obj, adapter.name) if lake_obj and adapter.waiting_roles else []
    mem = memory(state, pair_memory) if not pair_wait else None
    staged = _stage(decoded, lake_obj, run_id, adapter, mem)
    try:
        return _finish(staged, adapter, spark, say, resolves, run_id, started, lake_obj, lake, kind, inputs,
                       listing, skipped, window, pair_wait, pair_memory, state, mem)
    finally:
        if lake_obj:
            lake_obj.fs.delete(lake_obj._p(STAGING, run_id))


def _finish(staged: Staged, adapter: Adapter, spark: SparkSession, say: Progress, resolves: DataFrame | None,
            run_id: str, started: dt.datetime, lake_obj: Lake | None, lake: str | None, kind: str,
            inputs: list[str], listing: Listing, skipped: dict[str, int], window: int | None,
            pair_wait: float | None, pair_memory: int, state: list[str], mem: Memory | None) -> NormalizeResult:
    decoded = staged.decoded
    decoded_changes = decoded.where(F.col(B.KIND) == KIND_CHANGE)
    # the days come from the rows before post-processing (post-processing never adds a day)
    scope = dedup_scope(lake_obj, staged.days, window) if lake_obj else None
    pairing = None
    needs_state = lake_obj and adapter.waiting_roles and pairing_needed(state, bool(staged.has_waiting_half),
                                                                        staged.balanced)
    if needs_state and passes_by(mem, pair_wait, staged.memory_hits):
        pairing = flush_past_memory(adapter, decoded_changes, mem)
        decoded_changes = pairing.changes
    elif needs_state:
        say("pairing update halves with those of earlier runs")
        emitted = emitted_halves(lake_obj, adapter, scope.files) if pair_wait else None
        pairing = pair_across_runs(lake_obj, adapter, decoded_changes, pair_wait,
                                   pair_memory,
                                   lake_obj._p(STAGING, run_id, "pairing"), state, emitted)
        decoded_changes = pairing.changes
    changes = with_source_day(apply_pairing(adapter.post_process(decoded_changes), pairing))
    if lake_obj:
        say("checking the lake for duplicates")
        by_ids = MARK_BY_IDS_ROWS[0] <= (staged.changes or 0) <= MARK_BY_IDS_ROWS[1]
        marked = mark_duplicates(changes, scope.existing, by_ids).withColumn("_unchecked", scope.unchecked)
        if pairing or (adapter.waiting_roles and staged.has_waiting_half):  # as when the halves went via the state
            marked = mark_emitted_pairs(marked, scope.existing, adapter)
    else:
        marked = mark_duplicates(changes, None).withColumn("_unchecked", F.lit(False))

    now = dt.datetime.now(dt.UTC)
    # no plan for a quarantine a lake run has no row of and no resolution needs
    needs_quarantine = not lake_obj or resolves is not None or staged.has(KIND_QUARANTINE)
    quarantine = _quarantine_rows(decoded, now) if needs_quarantine else None
    resolved = None
    if resolves is not None:
        resolved = resolves.join(quarantine.select("quarantine_id"), "quarantine_id", "left_anti").distinct()
    if lake_obj and staged.has(KIND_QUARANTINE):  # else no quarantine row to check (nor to write)
        quarantine = quarantine.join(lake_obj.quarantine(include_resolved=True, latest=True).select("quarantine_id"),
                                     "quarantine_id", "left_anti")

    say("counting outcomes")
    # with a lake, the run's schema texts ride with the counts and are folded on the driver (cdcnorm.ingest.schema_fold)
    carry = bool(lake_obj) and staged.has(KIND_SCHEMA)
    parts = aggregate_figures(decoded, marked, pairing, carry)
    parts["schemas"] = new_schema_texts(parts["schemas"], lake_obj) if carry and lake_obj else []
    report = build_report(parts, adapter, kind, inputs, listing, skipped, run_id, started)
    if not lake_obj:
        report["finished_at"] = dt.datetime.now(dt.UTC).isoformat()
        kept = marked.where(~F.col("_dup")).select(*[F.col(f"`{n}`") for n in COLUMN_NAMES])
        return NormalizeResult(kept, quarantine, schema_rows(decoded), report, run_id, lake, decoded)

    say("writing the lake")
    decoded_kinds = {r["k_kind"] for r in parts["kind"]}
    # a table with no new row gets no write (each write is a few Spark jobs): the counts tell without a job
    frames = {"changes": marked.where(~F.col("_dup")),
              "quarantine": quarantine if KIND_QUARANTINE in decoded_kinds else None,
              # the new versions came with the counts (metadata): written from the driver's texts, if any
              "schemas": _schema_frame(spark, lake_obj, parts["schemas"]),
              "quarantine_resolved": resolved.withColumn("run_id", F.lit(run_id)) if resolved is not None else None,
              "halves": pairing.entries if pairing and parts["entries"] else None,
              "inputs": ledger_rows(lake_obj, listing.files, run_id, adapter.name)}

    def make_report(adds) -> dict[str, Any]:
        report["quarantine_new"] = staged_rows(adds, "quarantine")
        report["schema_versions_new"] = staged_rows(adds, "schemas")
        if resolved is not None:
            report["quarantine_resolved"] = staged_rows(adds, "quarantine_resolved")
        report["dedup_window_days"] = scope.window_days
        report["finished_at"] = dt.datetime.now(dt.UTC).isoformat()
        return report

    report = stage_and_commit(lake_obj, run_id, scope, frames, make_report)
    if pairing:
        compact_halves(lake_obj, adapter.name)
    # the result reads the run's committed files: its staging folder (decoded rows, pairing) is removed on return
    return NormalizeResult(
        lambda: lake_obj.run_rows("changes", run_id).select(*[F.col(f"`{n}`") for n in COLUMN_NAMES]),
        lambda: lake_obj.run_rows("quarantine", run_id).select(*[c.name for c in QUARANTINE_COLUMNS]),
        lambda: lake_obj.run_rows("schemas", run_id).select(*[c.name for c in SCHEMA_VERSION_COLUMNS]),
        report, run_id, lake, None)


def _schema_frame(spark: SparkSession, lake: Lake, texts: list[str]) -> DataFrame | pa.Table | None:
    """The run's new schema-version rows to write (None: none): the driver writes a local lake's few rows itself
    (cdcnorm.lake.delta.files.write_arrow, no Spark job); a remote lake's go through a Spark write."""
    if not texts:
        return None
    table = lake.table("schemas")
    return to_arrow(texts) if is_local(table.uri) and not table.partition_by else from_text(spark, texts)


def _filter_files(adapter: Adapter, files: list[FileEntry], skipped: dict[str, int]
                  ) -> tuple[list[FileEntry], dict[str, int]]:
    """Keep the data files; count documentation and code next to them as skipped objects."""
    kept = [f for f in files if adapter.accepts_file(f.path)]
    if len(kept) < len(files):
        skipped = {**skipped, "not_data_file": len(files) - len(kept)}
    return kept, skipped


def _adapter(vendor: str | Adapter, options: dict[str, Any] | None) -> Adapter:
    if isinstance(vendor, Adapter):
        return vendor
    return get_adapter(vendor, options)


@dataclass
class Staged:
    """The decoded rows, staged, and what the staging write observed of them on the way (no job of its own)."""

    decoded: DataFrame
    days: Touched | None = None
    """the distinct (vendor, source day) of the changes: the partitions the dedup check reads"""
    has_waiting_half: bool | None = None
    """whether a change is an update half of a role that may wait for its partner"""
    balanced: bool = False
    """whether every update pair of the run is complete (cdcnorm.ingest.pairing.balance)"""
    kinds: frozenset[str] | None = None
    """the kinds of the decoded rows (None: not observed)"""
    changes: int | None = None
    """how many decoded rows are changes (None: not observed)"""
    memory_hits: int | None = None
    """how many halves share a pair id with a remembered orphan (cdcnorm.ingest.pairing.memory_hits; None: not
    counted)"""

    def has(self, kind: str) -> bool:
        """Whether a decoded row may be of `kind`: a run builds no plan for a kind it has no row of."""
        return self.kinds is None or kind in self.kinds


def _stage(decoded: DataFrame, lake: Lake | None, run_id: str, adapter: Adapter, mem: Memory | None) -> Staged:
    """Decode once: stage the decoded rows (in the run's own staging folder of the lake, or in memory); the
    write observes the figures the dedup check and the pairing decision need (and the kinds of rows there are:
    no plan is built for a kind the run has no row of), sparing a Spark job each."""
    if lake is None:
        return Staged(decoded.persist(StorageLevel.MEMORY_AND_DISK))
    path = lake._p(STAGING, run_id, "decoded")
    change = F.col(B.KIND) == KIND_CHANGE
    waiting = may_wait(adapter) if adapter.waiting_roles else F.lit(False)
    seen = Observation()
    pairs = pair_balance(adapter) if adapter.waiting_roles else []
    hits = memory_hits(mem)
    dayless = change & F.col("source_ts").isNull()
    decoded.observe(seen, F.collect_set(F.when(change, F.struct(F.col("vendor"), source_day()))).alias("days"),
                    *dayless_capture(dayless),
                    F.max(change & F.coalesce(waiting, F.lit(False))).alias("waiting"),
                    F.collect_set(F.col(B.KIND)).alias("kinds"), F.count_if(change).alias("changes"),
                    *pairs, *hits).write.options(**STAGING_PARQUET).parquet(path)
    facts = seen.get
    days = {(d["vendor"], d[1]) for d in facts["days"] or []}
    span = capture_span(facts)
    touched = Touched(days, {v: span for v, d in days if d is None})
    return Staged(decoded.sparkSession.read.schema(decoded.schema).parquet(path), touched, bool(facts["waiting"]),
                  bool(pairs) and pairs_balanced(facts), frozenset(facts["kinds"] or ()), int(facts["changes"] or 0),
                  int(facts["_memory_hits"] or 0) if hits else None)


def _quarantine_rows(decoded: DataFrame, now: dt.datetime) -> DataFrame:
    q = decoded.where(F.col(B.KIND) == KIND_QUARANTINE)
    qid = F.sha2(F.concat(F.coalesce(F.to_json("origin"), F.lit("")).cast("binary"),
                          F.coalesce(F.col(B.RAW), F.lit(b"").cast("binary")),
                          F.coalesce(F.col(B.RULE), F.lit("")).cast("binary")), 256)
    out = q.select(
        "vendor", "format", "origin", F.col(B.RAW).alias("raw"), F.col(B.RULE).alias("error_class"),
        F.col(B.MESSAGE).alias("message"), F.lit(now).cast("timestamp").alias("quarantined_at"),
        qid.alias("quarantine_id"),
    )
    return out.dropDuplicates(["quarantine_id"]).select(*[c.name for c in QUARANTINE_COLUMNS])


def build_report(parts: dict[str, list[dict[str, Any]]], adapter: Adapter, kind: str, inputs: list[str],
                 listing: Listing, skipped: dict[str, int], run_id: str, started: dt.datetime) -> dict[str, Any]:
    """The run's report from its aggregated figures (:func:`cdcnorm.ingest.figures.aggregate_figures`), never from collected rows.

    Update halves waiting across runs are the `held` outcome: the records waiting at the end minus those waiting
    at the start, so outcomes still add up to the records read."""
    by_kind = {(r["k_kind"], r["k_rule"]): (int(r["records"] or 0), int(r["rows"] or 0)) for r in parts["kind"]}
    records_read = sum(rec for rec, _ in by_kind.values())
    change_records = sum(rec for (k, _), (rec, _) in by_kind.items() if k == KIND_CHANGE)
    jvm_records = by_kind.get((KIND_CHANGE, JVM_RULE), (0, 0))[0]
    groups = [{**r, "_dup": r["dup"]} for r in parts["group"]]
    kept_groups = [g for g in groups if not g["_dup"]]
    emitted = sum(int(g["records"] or 0) for g in kept_groups)
    merged = sum(int(g["merged"] or 0) for g in kept_groups)
    duplicate = sum(int(g["records"] or 0) + int(g["merged"] or 0) for g in groups if g["_dup"])
    outcomes = {
        "emitted": emitted,
        "merged": merged,
        "metadata": sum(rec for (k, _), (rec, _) in by_kind.items() if k == KIND_METADATA),
        "filtered": sum(rec for (k, _), (rec, _) in by_kind.items() if k == KIND_FILTERED),
        "duplicate": duplicate,
        "quarantined": sum(rec for (k, _), (rec, _) in by_kind.items() if k == KIND_QUARANTINE),
    }
    pairing_state = {}
    if adapter.waiting_roles:  # zero when the run needed no pairing state (cdcnorm.ingest.pairing.needed)
        h = parts["held"][0] if parts["held"] else {"held_in": 0, "held_out": 0, "state_rows": 0}
        held_in, held_out = int(h["held_in"] or 0), int(h["held_out"] or 0)
        outcomes["held"] = held_out - held_in
        pairing_state = {"halves_waiting_records": held_out, "halves_released_records": held_in,
                         "pairing_state_rows": int(h["state_rows"] or 0)}
    table_key = ("vendor", "stream", "database", "schema", "table")
    rows_by = sorted(({**{k: g[k] for k in table_key}, "op": g["op"], "rows": int(g["rows"])} for g in kept_groups),
                     key=lambda d: tuple(str(d[k] or "") for k in (*table_key, "op")))
    dup_tables: dict[tuple, int] = {}
    for g in groups:
        if g["_dup"]:
            t = tuple(g[k] for k in table_key)
            dup_tables[t] = dup_tables.get(t, 0) + int(g["records"] or 0) + int(g["merged"] or 0)
    dup_by = [{**dict(zip(table_key, t, strict=True)), "duplicates": n}
              for t, n in sorted(dup_tables.items(), key=lambda kv: tuple(str(x or "") for x in kv[0]))]
    beats: dict[tuple, Any] = {}
    for g in kept_groups:
        if g["op"] == "HEARTBEAT" and g["newest"] is not None:
            src = (g["vendor"], g["stream"], g["source_db"], g["database"])
            beats[src] = max(beats.get(src, g["newest"]), g["newest"])
    newest = max((g["newest"] for g in kept_groups if g["newest"] is not None and g["op"] != "HEARTBEAT"),
                 default=None)
    heartbeats = [{"vendor": v, "stream": st, "source_db": sd, "database": db, "newest": ts.isoformat()}
                  for (v, st, sd, db), ts in sorted(beats.items(), key=lambda kv: tuple(str(x) for x in kv[0]))]
    flags = {r["flag"]: int(r["rows"]) for r in parts["flag"]}
    accounted = sum(outcomes.values())
    conserved = emitted + merged + duplicate + outcomes.get("held", 0) == change_records
    return {
        "run_id": run_id,
        "cdcnorm_version": __version__,
        "started_at": started.isoformat(),
        "vendor": adapter.name,
        "input_kind": kind,
        "inputs": inputs,
        "files": len(listing.files),
        "files_skipped_known": listing.known,
        "skipped_objects": skipped,
        "records_read": records_read,
        "decode_paths": {"jvm": jvm_records, "python": records_read - jvm_records},
        "outcomes": outcomes,
        "reconciled": accounted == records_read and conserved,
        "rows_written": sum(r["rows"] for r in rows_by),
        "rows_by_table_op": rows_by,
        "quarantine_by_reason": {r: rows for (k, r), (_, rows) in by_kind.items() if k == KIND_QUARANTINE},
        "filters_by_rule": {r: rec for (k, r), (rec, _) in by_kind.items() if k == KIND_FILTERED},
        "metadata_by_kind": {r: rec for (k, r), (rec, _) in by_kind.items() if k == KIND_METADATA},
        "duplicates_by_table": dup_by,
        "dedup_unchecked": sum(int(g["unchecked"] or 0) for g in kept_groups),
        "flags": flags,
        "heartbeats": heartbeats,
        "newest_source_ts": newest.isoformat() if newest is not None else None,
        **pairing_state,
    }


def _detect_files(files: list[FileEntry]) -> str:
    """Guess the vendor from the first bytes of a few files (read on the driver: 64 KiB each at most)."""
    votes: dict[str, int] = {}
    for f in files[:20]:
        try:
            with open_input(f.path) as fh:
                head = fh.read(65536)
        except OSError:
            continue
        for name in _matching(f.path, head):
            votes[name] = votes.get(name, 0) + 1
    return _decide(votes, "files")


def _detect_messages(raw: DataFrame) -> str:
    votes: dict[str, int] = {}
    for row in raw.select("value", "topic").limit(20).collect():  # a 20-message sample, for detection only
        for name in _matching(row["topic"], bytes(row["value"] or b"")):
            votes[name] = votes.get(name, 0) + 1
    return _decide(votes, "messages")


def _matching(path: str | None, head: bytes) -> list[str]:
    found = []
    for name in names():
        try:
            if adapter_class(name).sniff(path, head):
                found.append(name)
        except (ImportError, CdcError):
            continue
    return found


def _decide(votes: dict[str, int], what: str) -> str:
    if not votes:
        raise UsageError(f"Could not recognise the vendor of these {what}; pass --vendor ({', '.join(names())}).")
    if len(votes) > 1:
        seen = ", ".join(f"{k} ({v})" for k, v in sorted(votes.items()))
        raise UsageError(f"These {what} look like more than one vendor's output: {seen}. Pass --vendor.")
    return next(iter(votes))
