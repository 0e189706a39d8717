"""AWS DMS encoder: the S3 target's CSV and Parquet files (and, from `dms_kinesis.py`, the Kinesis target).

Written from docs/reference (dms.md), never from the decoder. The simulated task has the documented defaults
except where noted: one folder per table, `shop/<table>/` (every table's schema is `shop`); the full load in
`LOAD00000001` without an `Op` column (`IncludeOpForFullLoad=false`); CDC files named by the time of their
first change (`yyyymmdd-hhmmssSSS`, strictly increasing per table), a new one every `rotate` rows and at a
table's DDL; `Op` first (I / U / D), then the timestamp column `dms_commit_ts` (`TimestampColumnName`, commit
time as `yyyy-MM-dd HH:mm:ss.ffffff` UTC, at millisecond precision), then the data columns, then `BI_<key>`
columns holding the key's values before an update (an `add-before-image-columns` rule on the key columns, so a
key change can be told).
CSV: `AddColumnName=true` (a header in every file), NULL as an empty field. Parquet: the columns typed, the
timestamp column a string, timestamps microseconds UTC.

What DMS cannot deliver, in the truth: a truncate (no operation for it); DMS CSV has no types (the user
declares them, as the format's `user_options` do); timestamps arrive as UTC wall clock in CSV. Quirks of
this vendor (opt-in): `dms_inserts_only` (`CdcInsertsOnly`: CDC files hold only inserts, without `Op`; the
truth is NOT adjusted, so verify and compare report the updates and deletes that never arrive) and
`dms_no_before_image` (no `BI_` columns: an update of a key leaves the old key's row, again reported).
The delivery quirks `duplicates`, `out_of_order` and `late_redelivery` do not apply to S3 objects: each is
written once, in commit order, and a redelivered object is the same object (the input-file ledger skips it).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from cdcnorm.simulate.delivery import current_log
from cdcnorm.simulate.encoders import COMMON_KINDS, SimFormat
from cdcnorm.simulate.history import ADDED_COLUMN, EPOCH, Col, Event, TableDef
from cdcnorm.simulate.jsonx import plain

SCHEMA = "shop"
TS_COLUMN = "dms_commit_ts"
BI = "BI_"
INSERTS_ONLY, NO_BEFORE_IMAGE = "dms_inserts_only", "dms_no_before_image"


def canonical_type(col: Col) -> str:
    """The canonical type a user declares for a source column (`tables` option)."""
    return {"timestamp": "timestamp_ntz", "binary": "binary"}.get(col.base, col.type)


def vendor_type(t: TableDef, col: Col) -> str:
    """DMS's data type of a source column."""
    if col.base == "decimal":
        p, s = col.precision_scale
        return f"NUMERIC({p},{s})"
    return {"int": "INT4", "bigint": "INT8", "double": "REAL8", "boolean": "BOOLEAN", "string": "WSTRING",
            "date": "DATE", "timestamp": "DATETIME", "binary": "BLOB"}[col.base]


def _when(ts_us: int) -> dt.datetime:
    return EPOCH + dt.timedelta(microseconds=ts_us)


def commit_text(ts_us: int) -> str:
    """The timestamp column: the commit time at the source's millisecond precision, 6 digits written."""
    return _when(ts_us - ts_us % 1000).strftime("%Y-%m-%d %H:%M:%S.%f")


def csv_text(col: Col, v: Any) -> str:
    """A value as DMS writes it in CSV (NULL: the empty field)."""
    if v is None:
        return ""
    base = col.base
    if base == "decimal":
        return plain(v)
    if base == "boolean":
        return "true" if v else "false"
    if base == "double":
        return repr(v)
    if base == "timestamp":
        return v.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    if base == "date":
        return v.isoformat()
    if base == "binary":
        return v.hex().upper()
    return str(v)


def _csv_line(cells: list[str]) -> bytes:
    """RFC 4180: quoted only when needed."""
    out = []
    for c in cells:
        if any(ch in c for ch in ',"\n\r') or c != c.strip(" "):
            c = '"' + c.replace('"', '""') + '"'
        out.append(c)
    return (",".join(out) + "\n").encode("utf-8")


class _TableFiles:
    """One table's folder: its LOAD file and its CDC files, one open at a time."""

    def __init__(self, enc: DmsS3Encoder, t: TableDef):
        self.enc, self.t = enc, t
        self.folder = enc.root / SCHEMA / t.name
        self.rows: list[tuple[str | None, int, dict[str, Any], dict[str, Any] | None]] = []
        self.name: str | None = None
        self.last_name = ""
        self.version = 1
        self.period: int | None = None

    def add(self, op: str | None, ts_us: int, row: dict[str, Any], before: dict[str, Any] | None) -> None:
        log = current_log()
        period = log.period() if log is not None else None
        if period != self.period:  # time-rotated runs: a file never spans two days
            self.flush()
            self.period = period
        if self.name is None:
            name = _when(ts_us).strftime("%Y%m%d-%H%M%S") + f"{_when(ts_us).microsecond // 1000:03d}"
            while name <= self.last_name:  # names are strictly increasing: one millisecond later
                t = dt.datetime.strptime(name, "%Y%m%d-%H%M%S%f") + dt.timedelta(milliseconds=1)
                name = t.strftime("%Y%m%d-%H%M%S") + f"{t.microsecond // 1000:03d}"
            self.name = self.last_name = name
        self.rows.append((op, ts_us, row, before))
        if log is not None:  # the file's delivery time is its last row's
            log.wrote(self.path())
        if len(self.rows) >= self.enc.rotate:
            self.flush()

    def path(self) -> Path:
        return self.folder / f"{self.name}.{self.enc.ext}"

    def flush(self) -> None:
        if self.rows:
            self.enc.write_file(self.t, self.path(), self.rows, self.version, cdc=True)
        self.rows, self.name = [], None


class DmsS3Encoder:
    """Writes `OUT/dms/<csv|parquet>/shop/<table>/LOAD00000001.<ext>` and the table's CDC files."""

    def __init__(self, out: Path, defs: tuple[TableDef, ...], seed: int, quirks: frozenset[str], rotate: int,
                 fmt: str):
        self.fmt, self.vf, self.ext = fmt, f"dms-{fmt}", fmt
        self.root = out / "dms" / fmt
        self.defs, self.rotate = defs, rotate
        self.inserts_only = INSERTS_ONLY in quirks
        self.before_keys = NO_BEFORE_IMAGE not in quirks
        self.tables = {t.index: _TableFiles(self, t) for t in defs}
        self.counts: dict[str, int] = {"records": 0, "files": 0}

    def identity(self, t: TableDef) -> dict[str, Any]:
        return {"vendor": "dms", "stream": "dms", "source_db": None, "database": None, "schema": SCHEMA,
                "table": t.name}

    # -- history -> rows -----------------------------------------------------------------------------------
    def backfill(self, t: TableDef, rows: list[dict[str, Any]], ts_us: int, at_seq: int) -> None:
        path = self.root / SCHEMA / t.name / f"LOAD00000001.{self.ext}"
        self.write_file(t, path, [(None, ts_us, r, None) for r in rows], 1, cdc=False)
        log = current_log()
        if log is not None:
            log.wrote(path)

    def change(self, ev: Event) -> None:
        t = self.defs[ev.table]
        files = self.tables[t.index]
        if ev.kind == "TRUNCATE":
            return  # DMS has no truncate operation: not delivered
        if ev.kind == "DDL":
            files.flush()  # the next file has the added column
            files.version = ev.version
            return
        if ev.kind == "INSERT":
            files.add("I", ev.ts_us, ev.after, None)
        elif self.inserts_only:
            return  # CdcInsertsOnly: updates and deletes are never written
        elif ev.kind == "UPDATE":
            files.add("U", ev.ts_us, ev.after, ev.before)
        elif ev.kind == "DELETE":
            files.add("D", ev.ts_us, ev.before, None)

    def close(self) -> None:
        for files in self.tables.values():
            files.flush()

    # -- files ---------------------------------------------------------------------------------------------
    def layout(self, t: TableDef, version: int, cdc: bool) -> tuple[bool, tuple[Col, ...], tuple[str, ...]]:
        """(has Op, data columns, key columns with a before image) of a file."""
        has_op = cdc and not self.inserts_only
        keys = t.primary_key if cdc and self.before_keys and not self.inserts_only else ()
        return has_op, t.columns_at(version), keys

    def write_file(self, t: TableDef, path: Path, rows: list, version: int, cdc: bool) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        has_op, cols, keys = self.layout(t, version, cdc)
        if self.fmt == "csv":
            self._write_csv(path, rows, has_op, cols, keys)
        else:
            self._write_parquet(path, rows, has_op, cols, keys)
        self.counts["files"] += 1
        self.counts["records"] += len(rows)

    def _write_csv(self, path: Path, rows: list, has_op: bool, cols: tuple[Col, ...], keys: tuple[str, ...]) -> None:
        byname = {c.name: c for c in cols}
        header = (["Op"] if has_op else []) + [TS_COLUMN] + [c.name for c in cols] + [BI + k for k in keys]
        with open(path, "wb") as fh:
            fh.write(_csv_line(header))
            for op, ts_us, row, before in rows:
                cells = [op] if has_op else []
                cells.append(commit_text(ts_us))
                cells += [csv_text(c, row.get(c.name)) for c in cols]
                cells += [csv_text(byname[k], (before or {}).get(k)) if before is not None else "" for k in keys]
                fh.write(_csv_line(cells))

    def _write_parquet(self, path: Path, rows: list, has_op: bool, cols: tuple[Col, ...],
                       keys: tuple[str, ...]) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        byname = {c.name: c for c in cols}
        fields, arrays = [], []
        if has_op:
            fields.append(pa.field("Op", pa.string(), nullable=False))
            arrays.append([op for op, _, _, _ in rows])
        fields.append(pa.field(TS_COLUMN, pa.string(), nullable=False))
        arrays.append([commit_text(ts) for _, ts, _, _ in rows])
        for c in cols:
            fields.append(pa.field(c.name, parquet_type(c)))
            arrays.append([parquet_value(c, r.get(c.name)) for _, _, r, _ in rows])
        for k in keys:
            fields.append(pa.field(BI + k, parquet_type(byname[k])))
            arrays.append([parquet_value(byname[k], b.get(k)) if b is not None else None for _, _, _, b in rows])
        schema = pa.schema(fields)
        table = pa.table([pa.array(a, f.type) for a, f in zip(arrays, fields, strict=True)], schema=schema)
        pq.write_table(table, path, compression="NONE")


def parquet_type(col: Col) -> Any:
    """DMS's Parquet type of a source column (a decimal beyond 38 digits as a string)."""
    import pyarrow as pa

    base = col.base
    if base == "decimal":
        p, s = col.precision_scale
        return pa.decimal128(p, s) if p <= 38 else pa.string()
    return {"int": pa.int32(), "bigint": pa.int64(), "double": pa.float64(), "boolean": pa.bool_(),
            "string": pa.string(), "date": pa.date32(), "timestamp": pa.timestamp("us", tz="UTC"),
            "binary": pa.binary()}[base]


def parquet_value(col: Col, v: Any) -> Any:
    if v is not None and col.base == "decimal" and col.precision_scale[0] > 38:
        return plain(v)
    return v


# -- what the formats carry (the truth projection; docs/simulate.md states it) ----------------------------------
def csv_truth_kind(flavour: str, col: Col) -> str:
    """CSV read with the declared types: timestamps as their UTC wall clock."""
    base = col.base
    if base == "timestamp":
        return "timestamp_ntz"
    return {"decimal": "decimal", "date": "date", "binary": "bytes"}.get(base) or COMMON_KINDS[base]


def parquet_truth_kind(flavour: str, col: Col) -> str:
    """Parquet's own types: timestamps as instants."""
    base = col.base
    return {"decimal": "decimal", "date": "date", "binary": "bytes", "timestamp": "timestamp"}.get(base) \
        or COMMON_KINDS[base]


def _quirks(out: Path) -> set[str]:
    try:
        return set(json.loads((out / "manifest.json").read_text(encoding="utf-8"))["quirks"])
    except (OSError, ValueError, KeyError):
        return set()


def s3_options(out: Path, info: dict[str, Any], typed: bool = True) -> dict[str, Any]:
    """What a user passes for the simulated task's S3 files: the settings, the keys and (CSV) the types."""
    tables, keys = {}, {}
    for name, t in info["tables"].items():
        if t["primary_key"]:
            keys[f"{SCHEMA}.{name}"] = list(t["primary_key"])
        cols = {c["name"]: c["source_type"] for c in t["columns"]}
        cols.setdefault(ADDED_COLUMN.name, ADDED_COLUMN.type)
        declared = {n: canonical_type(Col(n, st)) for n, st in cols.items()}
        if not typed:  # Parquet is typed; only a decimal beyond Parquet's 38 digits is a string
            declared = {n: ct for n, ct in declared.items() if ct.startswith("decimal") and
                        Col(n, ct).precision_scale[0] > 38}
        if declared:
            tables[f"{SCHEMA}.{name}"] = declared
    quirks = _quirks(out)
    options: dict[str, Any] = {"keys": keys, "tables": tables, "timestamp_column": TS_COLUMN}
    if typed:
        options["csv_header"] = True
    if INSERTS_ONLY in quirks:
        options["cdc_inserts_only"] = True
    return options


def parquet_options(out: Path, info: dict[str, Any]) -> dict[str, Any]:
    return s3_options(out, info, typed=False)


def _kinesis():
    from cdcnorm.simulate.encoders.dms_kinesis import DmsKinesisEncoder, kinesis_truth_kind

    return DmsKinesisEncoder, kinesis_truth_kind


_KINESIS, _KINESIS_KIND = _kinesis()

FORMATS = (
    SimFormat("dms", "csv", DmsS3Encoder, csv_truth_kind, vendor_type, user_options=s3_options),
    SimFormat("dms", "parquet", DmsS3Encoder, parquet_truth_kind, vendor_type, user_options=parquet_options),
    SimFormat("dms", "kinesis", _KINESIS, _KINESIS_KIND, vendor_type),
)
"""The DMS formats the simulator writes (a truncate is not carried; the added column is)."""
