"""Verify incremental apply, history and point-in-time state against the simulator's version list.

Why a module of its own: the stepwise end-to-end run (normalize part of a format's files, apply, normalize
more, apply again, late files one step behind) and its checks are shared by the fast test (one format) and the
slow one (every format), and they compare exactly, with typed tokens (:func:`cdcnorm.simulate.verify.token`).
"""

from __future__ import annotations

import datetime as dt
import random
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from cdcnorm.simulate import Manifest, load_versions
from cdcnorm.simulate.formats import FORMATS
from cdcnorm.simulate.truth import project_value
from cdcnorm.simulate.verify import (
    _decimal_repr_columns,
    _normalized,
    _wide_decimal_columns,
    applied_rows,
    compare_table,
    expected_tables,
    token,
)

MS = dt.timedelta(milliseconds=1)


def steps_of(manifest: Manifest, vf: str, n: int = 3) -> list[list[str]]:
    """A format's input files in `n` deliveries by path order; a late file (manifest `late_files`) comes one
    step after the files around it."""
    folder = manifest.input_dir(vf)
    files = sorted(p.relative_to(folder).as_posix() for p in Path(folder).rglob("*") if p.is_file())
    late = set(manifest.vendor_formats[vf].get("late_files") or [])
    steps: list[list[str]] = [[] for _ in range(n)]
    for i, f in enumerate(files):
        k = i * n // max(1, len(files))
        steps[min(k + 1, n - 1) if f in late else k].append(str(Path(folder) / f))
    return [s for s in steps if s]


def _project(info: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    return {c["name"]: project_value(c["truth_kind"], row.get(c["name"])) for c in info["columns"]}


def truth_versions(manifest: Manifest, vf: str) -> dict[str, list[dict[str, Any]]]:
    """Each table's versions as `vf` can carry them (a truncate it cannot express closes nothing)."""
    carries = manifest.vendor_formats[vf]["carries_truncate"]
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for v in load_versions(manifest.out):
        if v["closed_by"] == "TRUNCATE" and not carries:
            v = {**v, "closed_by": None, "seq_to": None, "ts_to": None}
        out[v["table"]].append(v)
    return out


def _floor_ms(t: dt.datetime, unit_us: int = 1000) -> dt.datetime:
    """A time floored to the format's source-time precision (milliseconds unless it carries less)."""
    if unit_us >= 1_000_000:
        return t.replace(microsecond=0)
    return t.replace(microsecond=t.microsecond // unit_us * unit_us)


def check_history(history: dict, manifest: Manifest, vf: str, natural: bool = False) -> list[str]:
    """The history tables equal the truth's versions: per key, the same rows in the same order, each closed the
    same way (by the next version, by a DELETE / TRUNCATE, or still current): no overlap, no gap."""
    problems = []
    versions = truth_versions(manifest, vf)
    for tid, info in expected_tables(manifest, vf, natural).items():
        df = history.get(tid)
        if df is None:
            problems.append(f"{info['name']}: no history table")
            continue
        names = [c["name"] for c in info["columns"]]
        pk = info["primary_key"]
        by_value = _decimal_repr_columns(info)
        got = _lake_versions(df, names, pk, info, by_value)
        want: dict[tuple, list] = defaultdict(list)
        for v in sorted(versions[info["name"]], key=lambda v: v["seq_from"]):
            row = _normalized([_project(info, v["row"])], by_value)[0]
            closed = "current" if v["closed_by"] is None else ("next" if v["closed_by"] == "UPDATE" else "end")
            key = tuple(token(row[k]) for k in pk) if pk else ()
            want[key].append((tuple(token(row[n]) for n in names), closed))
        if not pk:
            if Counter(got[()]) != Counter(want[()]):
                problems.append(f"{info['name']}: keyless versions differ ({len(got[()])} vs {len(want[()])})")
            continue
        bad = [k for k in set(got) | set(want) if got.get(k) != want.get(k)]
        if bad:
            k = sorted(bad, key=str)[0]
            problems.append(f"{info['name']}: {len(bad)} key(s) with other versions; e.g. {k}: "
                            f"lake {got.get(k)} truth {want.get(k)}")
    return problems


def _lake_versions(df: DataFrame, names: list[str], pk: list[str], info: dict[str, Any],
                   by_value: set[str]) -> dict[tuple, list]:
    cols = [*names, "valid_from", "closed_by_op", "is_current"]
    rows = _normalized(applied_rows(df.select(*cols), _wide_decimal_columns(info)), by_value)
    out: dict[tuple, list] = defaultdict(list)
    for r in sorted(rows, key=lambda r: bytes(r["valid_from"])):
        closed = "current" if r["is_current"] else ("end" if r["closed_by_op"] in ("DELETE", "TRUNCATE") else "next")
        key = tuple(token(r[k]) for k in pk) if pk else ()
        out[key].append((tuple(token(r[n]) for n in names), closed))
    return out


def as_of_points(manifest: Manifest, vf: str, n: int = 20, seed: int = 0) -> list[dt.datetime]:
    """`n` source times (milliseconds, what every vendor carries, or the format's coarser unit) that fall between
    two changes."""
    unit = FORMATS[vf].time_unit_us
    times = sorted({_floor_ms(v["ts_from"], unit) for vs in truth_versions(manifest, vf).values() for v in vs
                    if v["seq_from"] > 0})
    clean = [t for t, nxt in zip(times, times[1:], strict=False) if nxt > t]
    return sorted(random.Random(seed).sample(clean, min(n, len(clean))))


def truth_at(manifest: Manifest, vf: str, at: dt.datetime) -> dict[str, list[dict[str, Any]]]:
    """Each table's rows at source time `at` (versions open then), projected for `vf`."""
    out: dict[str, list[dict[str, Any]]] = {}
    infos = {i["name"]: i for i in expected_tables(manifest, vf).values()}
    unit = FORMATS[vf].time_unit_us
    for table, vs in truth_versions(manifest, vf).items():
        out[table] = [_project(infos[table], v["row"]) for v in vs
                      if _floor_ms(v["ts_from"], unit) <= at and (v["ts_to"] is None or _floor_ms(v["ts_to"], unit) > at)]
    return out


def check_as_of(spark: SparkSession, lake: str, manifest: Manifest, vf: str, points: list[dt.datetime],
                natural: bool = False) -> list[str]:
    """`cdcnorm.apply(as_of=T)` equals the truth at T for every point."""
    from cdcnorm.state import apply

    problems = []
    tables = expected_tables(manifest, vf, natural)
    for at in points:
        frames = apply(spark, lake, as_of=at)
        truth = truth_at(manifest, vf, at)
        for tid, info in tables.items():
            rows = truth[info["name"]]
            df = frames.get(tid)
            if df is None:
                if rows:
                    problems.append(f"{at}: {info['name']} missing, truth has {len(rows)} row(s)")
                continue
            problems += [f"{at}: {info['name']}: {p}" for p in compare_table(df, rows, info)]
        frames.unpersist()
    return problems
