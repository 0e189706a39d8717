"""Verify a simulated history end to end: simulate -> normalize (every vendor format into one lake) -> apply -> truth.

Why a module of its own: the end-to-end tests, their slow larger runs and `make demo` share the orchestration, and the
comparison must be exact and explain itself. Values are compared as *typed* tokens (a Decimal keeps its digits
and scale, an int is not a Decimal, an aware timestamp is not a naive one), so a projection mistake on either
side shows up as a difference instead of hiding behind Python's `1 == Decimal("1.0")`.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
import time
from collections import Counter
from collections.abc import Collection
from decimal import Decimal
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdcnorm.ingest.pipeline import normalize
from cdcnorm.simulate import VENDOR_FORMATS, Manifest, load_truth, simulate
from cdcnorm.simulate.formats import FORMATS
from cdcnorm.state import TableId, apply

UTC = dt.UTC
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
_WIDE_DECIMAL = re.compile(r"decimal\((\d+),\s*(\d+)\)")


def stream_of(vf: str) -> str:
    """Each vendor format is its own stream, so formats of one vendor never share event ids or tables."""
    return f"e2e-{vf}"


def options_for(vf: str, manifest: Manifest, natural: bool = False) -> dict[str, Any]:
    """Adapter options a user of that vendor format would pass (the input alone does not say them).

    Each format's encoder module says which (e.g. TUPLE topics need their schemas, engine, database and keys).
    `natural`: no `stream` option, so the stream is what the vendor output itself says (the manifest's identity).
    """
    user = FORMATS[vf].user_options(Path(manifest.out), manifest.vendor_formats[vf])
    return user if natural else {"stream": stream_of(vf), **user}


def build_lake(spark: SparkSession, out: str | Path, lake: str | Path, *, tables: int, rows: int, changes: int,
               seed: int, formats: tuple[str, ...] = tuple(VENDOR_FORMATS), natural: Collection[str] = (),
               rotate: int = 500) -> dict[str, Any]:
    """Simulate once, normalize every format into one lake, apply; returns reports, frames and timings.
    `natural`: formats normalized without a `stream` option, so their streams are what the vendor output says
    (see :func:`options_for`); `rotate`: records per simulated file."""
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    manifest = simulate(out, vendors=list(formats), tables=tables, rows=rows, changes=changes, seed=seed,
                        rotate=rotate)
    timings["simulate"] = time.perf_counter() - t0
    reports: dict[str, dict[str, Any]] = {}
    for vf in formats:
        t0 = time.perf_counter()
        result = normalize([str(manifest.input_dir(vf))], VENDOR_FORMATS[vf][0], spark=spark,
                                   options=options_for(vf, manifest, vf in natural), lake=str(lake))
        reports[vf] = result.report
        timings[f"normalize {vf}"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    frames = apply(spark, str(lake))
    timings["apply"] = time.perf_counter() - t0
    return {"manifest": manifest, "reports": reports, "frames": frames, "timings": timings}


def streams_of(manifest: Manifest, vf: str, natural: bool = False) -> set[str]:
    """The streams a vendor format's tables land in: the e2e stream, or (`natural`) the manifest's."""
    return {t.stream for t in expected_tables(manifest, vf, natural)}


def expected_tables(manifest: Manifest, vf: str, natural: bool = False) -> dict[TableId, dict[str, Any]]:
    """The lake identity of every table of a vendor format (the manifest's, with the e2e stream unless `natural`)."""
    result = {}
    for name, info in manifest.vendor_formats[vf]["tables"].items():
        stream = info["stream"] if natural else stream_of(vf)
        tid = TableId(info["vendor"], stream, info["database"], info["schema"], info["table"])
        result[tid] = {**info, "name": name}
    return result


# -- exact typed tokens ----------------------------------------------------------------------------------------
def token(value: Any) -> Any:
    """A hashable, type-tagged form of a Python value: equal tokens mean the same type and the same value."""
    if value is None:
        return None
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("float", value.hex())
    if isinstance(value, Decimal):
        return ("decimal", value.as_tuple())
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, bytes | bytearray):
        return ("bytes", bytes(value))
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            return ("ts_ntz", value.isoformat(timespec="microseconds"))
        return ("ts", value.astimezone(UTC).isoformat(timespec="microseconds"))
    if isinstance(value, dt.date):
        return ("date", value.isoformat())
    if isinstance(value, dict):
        return ("dict", tuple(sorted((k, token(v)) for k, v in value.items())))
    if isinstance(value, list | tuple):
        return ("list", tuple(token(v) for v in value))
    raise TypeError(f"no token for {type(value).__name__}: {value!r}")


def _wide_decimal_columns(info: dict[str, Any]) -> set[str]:
    """Columns whose truth is an exact Decimal the lake stores as text (precision > 38)."""
    wide = set()
    for c in info["columns"]:
        m = _WIDE_DECIMAL.fullmatch(c["source_type"])
        if c["truth_kind"] == "decimal" and m and int(m.group(1)) > 38:
            wide.add(c["name"])
    return wide


def applied_rows(df: DataFrame, wide: set[str]) -> list[dict[str, Any]]:
    """The applied table's rows as typed Python values (test-only collect of a small table).

    Timestamps travel as epoch microseconds (PySpark would turn them into naive local times), VARIANT values
    are read with `toPython` in a wide decimal context, >38-digit decimals stored as text become `Decimal`.
    """
    kinds = {f.name: f.dataType for f in df.schema.fields}
    cols = [F.unix_micros(F.col(f"`{n}`")).alias(n) if isinstance(t, T.TimestampType) else F.col(f"`{n}`")
            for n, t in kinds.items()]
    rows = []
    with decimal.localcontext() as ctx:
        ctx.prec = 200
        for r in df.select(*cols).collect():
            row = {}
            for n, t in kinds.items():
                v = r[n]
                if v is not None and isinstance(t, T.TimestampType):
                    v = EPOCH + dt.timedelta(microseconds=v)
                elif v is not None and isinstance(t, T.VariantType):
                    v = v.toPython()
                if isinstance(v, str) and n in wide:
                    v = Decimal(v)
                row[n] = v
            rows.append(row)
    return rows


def _decimal_repr_columns(info: dict[str, Any]) -> set[str]:
    """Columns whose truth is a JSON number the lake types as the column's inferred decimal: compared by value,
    since the column's scale (`1.50`) need not be the text's (`1.5`)."""
    return {c["name"] for c in info["columns"] if c["truth_kind"] == "decimal_repr"}


def _normalized(rows: list[dict[str, Any]], columns: set[str]) -> list[dict[str, Any]]:
    """Rows with the Decimals of `columns` reduced to their value (`1.50` and `1.5` become one token)."""
    return [{n: (v.normalize() if n in columns and isinstance(v, Decimal) else v) for n, v in r.items()} for r in rows]


def compare_table(df: DataFrame, truth: list[dict[str, Any]], info: dict[str, Any], limit: int = 5) -> list[str]:
    """Differences between an applied table and its truth (empty = exactly equal); keyless tables as multisets."""
    problems: list[str] = []
    want_cols = [c["name"] for c in info["columns"]]
    if df.columns != want_cols and sorted(df.columns) != sorted(want_cols):
        problems.append(f"columns {df.columns} != truth {want_cols}")
    got = applied_rows(df, _wide_decimal_columns(info))
    by_value = _decimal_repr_columns(info)
    if by_value:  # a JSON number typed as the column's inferred decimal: equal value, the column's scale
        got, truth = _normalized(got, by_value), _normalized(truth, by_value)
    names = sorted(set(want_cols) & set(df.columns))
    pk = info["primary_key"]
    if not pk:
        g = Counter(tuple(token(r[n]) for n in names) for r in got)
        w = Counter(tuple(token(r[n]) for n in names) for r in truth)
        if g != w:
            extra, missing = list((g - w).elements()), list((w - g).elements())
            problems.append(f"keyless rows: {len(got)} applied vs {len(truth)} truth; {len(extra)} unexpected, "
                            f"{len(missing)} missing; e.g. unexpected {extra[:1]} missing {missing[:1]}")
        return problems
    g_rows = {tuple(token(r[k]) for k in pk): r for r in got}
    w_rows = {tuple(token(r[k]) for k in pk): r for r in truth}
    if len(g_rows) != len(got):
        problems.append(f"{len(got) - len(g_rows)} duplicate keys in the applied table")
    extra, missing = sorted(g_rows.keys() - w_rows.keys()), sorted(w_rows.keys() - g_rows.keys())
    if extra or missing:
        problems.append(f"keys: {len(extra)} unexpected {extra[:limit]}, {len(missing)} missing {missing[:limit]}")
    diffs = []
    for key in sorted(g_rows.keys() & w_rows.keys()):
        d = {n: (token(g_rows[key][n]), token(w_rows[key][n])) for n in names
             if token(g_rows[key][n]) != token(w_rows[key][n])}
        if d:
            diffs.append((key, d))
    if diffs:
        by_col = Counter(n for _, d in diffs for n in d)
        problems.append(f"{len(diffs)} rows differ (by column: {dict(by_col)}); first: "
                        + "; ".join(f"{k}: " + ", ".join(f"{n} applied={a} truth={b}" for n, (a, b) in d.items())
                                    for k, d in diffs[:limit]))
    return problems


def check_format(frames: dict[TableId, DataFrame], manifest: Manifest, vf: str, natural: bool = False) -> list[str]:
    """Every table of one vendor format: present in the apply result and exactly equal to its truth."""
    truth = load_truth(manifest.out, vf)
    problems = []
    expected = expected_tables(manifest, vf, natural)
    for tid, info in expected.items():
        if tid not in frames:
            near = [t for t in frames if t.stream == tid.stream]
            problems.append(f"{tid} not applied (this format's tables: {near})")
            continue
        problems += [f"{info['name']}: {p}" for p in compare_table(frames[tid], truth[info["name"]], info)]
    streams = {t.stream for t in expected}
    stray = [t for t in frames if t.vendor == FORMATS[vf].vendor and t.stream in streams and t not in expected]
    if stray:
        problems.append(f"tables the source does not have: {stray}")
    return problems
