"""DataWorks rows in DataHub TUPLE topics: meta columns, the ten DataHub field types, CSV and Parquet rows.

A TUPLE topic holds one source table; DataWorks adds meta columns (`_sequence_id_`, `_operation_type_` I/U/D,
`_execute_time_` (also spelt `_excute_time_`), `_source_table_`, `_before_image_`/`_after_image_` Y/N; an
older layout had `_log_file_name_offset_` instead of `_sequence_id_`). An UPDATE is two rows sharing the
sequence id, one per image. This module turns one row into a :class:`TupleEvent`; the adapter builds the
canonical change from it, so Blob and Tuple changes share one id/order/pairing recipe.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import IO, Any

import orjson

from cdcnorm.adapters.datahub.scalars import EPOCH, is_unset
from cdcnorm.adapters.datahub.scalars import text_or_none as _text
from cdcnorm.containers import Damage, Source, as_source, csv_records
from cdcnorm.errors import DecodeError

SEQ_COLUMNS = ("_sequence_id_", "_log_file_name_offset_")
TIME_COLUMNS = ("_execute_time_", "_excute_time_")
OP_COLUMN = "_operation_type_"
TABLE_COLUMN = "_source_table_"
BEFORE_COLUMN = "_before_image_"
AFTER_COLUMN = "_after_image_"
META_COLUMNS = frozenset({*SEQ_COLUMNS, *TIME_COLUMNS, OP_COLUMN, TABLE_COLUMN, BEFORE_COLUMN, AFTER_COLUMN})

TUPLE_TYPES: dict[str, str] = {
    "TINYINT": "tinyint",
    "SMALLINT": "smallint",
    "INTEGER": "int",
    "BIGINT": "bigint",
    "FLOAT": "float",
    "DOUBLE": "double",
    "DECIMAL": "decimal",
    "STRING": "string",
    "BOOLEAN": "boolean",
    "TIMESTAMP": "timestamp",
}
"""DataHub TUPLE field type -> canonical type name (TIMESTAMP values are microseconds since the epoch)."""

_INT_RANGES = {
    "TINYINT": (-(2**7), 2**7 - 1),
    "SMALLINT": (-(2**15), 2**15 - 1),
    "INTEGER": (-(2**31), 2**31 - 1),
    "BIGINT": (-(2**63), 2**63 - 1),
}
_TRUE = frozenset({"true", "t", "y", "yes", "1"})
_FALSE = frozenset({"false", "f", "n", "no", "0"})
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True, slots=True)
class TupleField:
    """One field of a TUPLE topic's RecordSchema."""

    name: str
    type: str


def parse_tuple_schema(spec: Any) -> tuple[TupleField, ...]:
    """Read a topic schema given as an option.

    Accepted: the RecordSchema JSON text DataHub shows (`{"fields":[{"name","type"}]}`), a whole GetTopic
    response (with `RecordSchema`), a list of `{"name","type"}` objects, or a list of `"name:TYPE"` strings.
    """
    if isinstance(spec, bytes | str):
        text = spec.strip()
        if text.startswith(("{", "[")):
            spec = orjson.loads(text)
        else:
            spec = [p.strip() for p in text.split(",") if p.strip()]
    if isinstance(spec, Mapping):
        if "RecordSchema" in spec:
            return parse_tuple_schema(spec["RecordSchema"])
        spec = spec.get("fields")
    if not isinstance(spec, list) or not spec:
        raise ValueError(
            'expected a RecordSchema ({"fields": [{"name": ..., "type": ...}]}) or a list of fields'
        )
    return tuple(_field(f) for f in spec)


def _field(f: Any) -> TupleField:
    if isinstance(f, Mapping) and "name" in f:
        return TupleField(str(f["name"]), str(f.get("type") or "STRING").upper())
    if isinstance(f, str) and ":" in f:
        name, typ = f.rsplit(":", 1)
        return TupleField(name.strip(), typ.strip().upper())
    if isinstance(f, list | tuple) and len(f) == 2:
        return TupleField(str(f[0]), str(f[1]).upper())
    raise ValueError(f'cannot read field {f!r}: give {{"name": ..., "type": ...}} or "name:TYPE"')


@dataclass(slots=True)
class TupleEvent:
    """One decoded TUPLE row: its meta columns and the typed image of the source columns."""

    seq: int | tuple | str | None
    """None for the full-load sentinel (`-1`)"""
    seq_raw: str
    op_letter: str
    role: str
    source_ts: dt.datetime | None
    table: str | None
    image: dict[str, Any]
    missing: list[str] | None
    flags: list[str] = field(default_factory=list)


def micros_to_datetime(v: int) -> dt.datetime:
    """DataHub TIMESTAMP (µs since the epoch) -> aware UTC datetime."""
    return EPOCH + dt.timedelta(microseconds=v)


def _bad(column: str, value: Any, what: str) -> DecodeError:
    return DecodeError(
        "bad_value", f"column {column!r}: {value!r} is not {what}; fix the value or the topic schema"
    )


_PLAIN_INT = re.compile(r"-?[0-9]{1,20}")


def _int(value: Any, vtype: str, column: str) -> int:
    try:
        if isinstance(value, bool):
            raise ValueError
        if isinstance(value, int):
            v = value
        elif isinstance(value, str) and _PLAIN_INT.fullmatch(value):
            v = int(value)  # what Decimal(value) would give, without the Decimal
        else:
            d = Decimal(value.strip()) if isinstance(value, str) else Decimal(value)
            if d != d.to_integral_value():
                raise ValueError
            v = int(d)
    except (ValueError, InvalidOperation, TypeError, OverflowError):
        raise _bad(column, value, f"an integer ({vtype})") from None
    lo, hi = _INT_RANGES.get(vtype, (None, None))
    if lo is not None and not lo <= v <= hi:
        raise _bad(column, value, f"within the {vtype} range")
    return v


def _bool(value: Any, column: str) -> bool:
    if isinstance(value, bool):
        return value
    s = str(value).strip().lower()
    if s in _TRUE:
        return True
    if s in _FALSE:
        return False
    raise _bad(column, value, "a boolean")


def _timestamp(value: Any, column: str) -> dt.datetime:
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    try:
        return micros_to_datetime(_int(value, "BIGINT", column))
    except OverflowError:
        raise _bad(column, value, "a timestamp in microseconds since the epoch") from None


def _decimal(value: Any, column: str) -> Decimal:
    try:
        if isinstance(value, float):
            return Decimal(repr(value))
        return value if isinstance(value, Decimal) else Decimal(str(value).strip())
    except InvalidOperation:
        raise _bad(column, value, "a decimal") from None


def _float(value: Any, column: str) -> float:
    try:
        if isinstance(value, bool):
            raise ValueError
        return float(value)
    except (TypeError, ValueError):
        raise _bad(column, value, "a number") from None


def convert(value: Any, vtype: str | None, column: str) -> Any:
    """A TUPLE value (CSV text, JSON value or Parquet value) as the typed Python value of its field type.

    The empty string is NULL for every type but STRING, as in the DataHub SDK.
    """
    if value is None or vtype is None:
        return value
    if vtype == "STRING":
        return value if isinstance(value, str) else str(value)
    if isinstance(value, str) and value == "":
        return None
    if vtype in _INT_RANGES:
        return _int(value, vtype, column)
    if vtype in ("FLOAT", "DOUBLE"):
        return _float(value, column)
    if vtype == "DECIMAL":
        return _decimal(value, column)
    if vtype == "BOOLEAN":
        return _bool(value, column)
    if vtype == "TIMESTAMP":
        return _timestamp(value, column)
    return value


def _sequence(row: Mapping[str, Any]) -> tuple[int | tuple | str | None, str]:
    """(comparable sequence, raw text): `_sequence_id_` as an integer; the legacy binlog-file-offset as
    the tuple of its numbers (file number, offset), so both compare numerically; None for the full-load
    sentinel `-1`."""
    for name in SEQ_COLUMNS:
        raw = _text(row.get(name))
        if raw is None:
            continue
        if is_unset(raw):
            return None, raw
        if raw.isdigit():
            return int(raw), raw
        nums = tuple(int(d) for d in _DIGITS.findall(raw))
        return (nums if nums else raw), raw
    raise DecodeError(
        "missing_field",
        "TUPLE row without _sequence_id_ (or legacy _log_file_name_offset_): "
        "cannot order or pair it; check that the export kept the DataWorks meta columns",
    )


def execute_time(value: Any, vtype: str | None) -> dt.datetime | None:
    """`_execute_time_`: a TIMESTAMP field is µs; a number is read by magnitude (s, ms, µs or ns); the
    full-load sentinel `-1` (any negative number) is unknown, never a 1969 time."""
    if value is None or value == "" or is_unset(value):
        return None
    if isinstance(value, dt.datetime) or vtype == "TIMESTAMP":
        return _timestamp(value, "_execute_time_")
    n = _int(value, "BIGINT", "_execute_time_")
    for limit, scale in ((10**11, 1_000_000), (10**14, 1_000), (10**17, 1)):
        if abs(n) < limit:
            return micros_to_datetime(n * scale)
    return micros_to_datetime(n // 1000)


def _flag(value: Any) -> bool | None:
    s = _text(value)
    if s is None:
        return None
    s = s.lower()
    if s in _TRUE:
        return True
    if s in _FALSE:
        return False
    raise DecodeError("bad_image_flags", f"image flag {value!r} is not Y or N")


def _role(op: str, before: bool | None, after: bool | None) -> str:
    """Which image a row holds, from `_operation_type_` and the Y/N flags (checked for consistency)."""
    expected = {"I": (False, True), "D": (True, False)}.get(op)
    if expected is not None:
        if (before, after) not in (expected, (None, None)):
            raise DecodeError(
                "bad_image_flags",
                f"_operation_type_ {op} with _before_image_={before} and "
                f"_after_image_={after}: expected {expected}; the row is inconsistent",
            )
        return "after" if op == "I" else "before"
    if (before, after) == (True, False):
        return "before"
    if (before, after) == (False, True):
        return "after"
    raise DecodeError(
        "bad_image_flags",
        f"UPDATE row with _before_image_={before} and _after_image_={after}: "
        "exactly one image flag must be Y to tell the before half from the after half",
    )


def decode_row(
    row: Mapping[str, Any], types: Mapping[str, str] | None, fields: Sequence[str] | None
) -> TupleEvent:
    """One TUPLE row -> TupleEvent; raises DecodeError (quarantine) on a bad row.

    `types` maps field name -> DataHub type (None: the values are used as they come, e.g. Parquet or JSON);
    `fields` are the source columns the topic has, to tell missing columns apart.
    """
    op = (_text(row.get(OP_COLUMN)) or "").upper()
    if op not in ("I", "U", "D"):
        raise DecodeError(
            "unknown_op", f"unknown _operation_type_ {row.get(OP_COLUMN)!r} (expected I, U or D)"
        )
    role = _role(op, _flag(row.get(BEFORE_COLUMN)), _flag(row.get(AFTER_COLUMN)))
    seq, seq_raw = _sequence(row)
    time_col = next((c for c in TIME_COLUMNS if c in row), None)
    source_ts = execute_time(row.get(time_col), (types or {}).get(time_col)) if time_col else None
    image = {k: convert(v, (types or {}).get(k), k) for k, v in row.items() if k not in META_COLUMNS}
    missing = [f for f in fields if f not in image] if fields is not None else None
    return TupleEvent(seq, seq_raw, op, role, source_ts, _text(row.get(TABLE_COLUMN)), image, missing)


# -- CSV ---------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class CsvRow:
    """One CSV record: its values by field name, or why it could not be read."""

    line: int
    raw: bytes | Callable[[], bytes]
    """the record as CSV (with the file's header line); for a good record a function giving it, called only
    if the record is quarantined later"""
    values: dict[str, str] | None = None
    error: DecodeError | None = None


def _raw_line(cells: list[str]) -> bytes:
    """One record as a CSV line (one writer and buffer reused: a new pair per row cost more than the row)."""
    _LINE_BUF.seek(0)
    _LINE_BUF.truncate()
    _LINE_WRITER.writerow(cells)
    return _LINE_BUF.getvalue().encode("utf-8", "surrogateescape")


_LINE_BUF = io.StringIO()
_LINE_WRITER = csv.writer(_LINE_BUF, lineterminator="\n")
_HEADER_LINES: dict[tuple[str, ...], bytes] = {}
_SURROGATE = re.compile("[\udc80-\udcff]")
"""What `surrogateescape` made of a byte that is not UTF-8."""


def _header_line(header: list[str]) -> bytes:
    """The file's header line as CSV, encoded once per header (every row's raw form repeats it)."""
    key = tuple(header)
    line = _HEADER_LINES.get(key)
    if line is None:
        if len(_HEADER_LINES) >= 256:
            _HEADER_LINES.clear()
        line = _HEADER_LINES[key] = _raw_line(header)
    return line


class _RawLine:
    """A good record's raw form, written only when asked (a quarantine after decoding): writing every row's
    CSV line back was a tenth of a TUPLE row's cost."""

    __slots__ = ("_cells", "_header")

    def __init__(self, header: list[str] | None, cells: list[str]):
        self._header, self._cells = header, cells

    def __call__(self) -> bytes:
        return (_header_line(self._header) if self._header else b"") + _raw_line(self._cells)


def is_header(cells: Sequence[str]) -> bool:
    """A first line naming DataWorks meta columns is a header (OSS exports may have none)."""
    return any(c.strip() in META_COLUMNS for c in cells)


def iter_csv(fh: IO[bytes] | Source, names: Sequence[str] | None, header: str) -> Iterator[CsvRow]:
    """TUPLE records of a CSV export (split by :func:`cdcnorm.containers.csv_records`, streamed).

    Field names come from a header line (header="auto" detects one by the meta column names, "yes" forces
    it) or from `names` (the topic schema). Undecodable bytes and wrong field counts are per-row errors.
    """
    cols = list(names) if names is not None else None
    header_cells: list[str] | None = None
    first = True
    for item in csv_records(as_source(fh)):
        line = int(str(item.offset).removeprefix("line "))
        if isinstance(item, Damage):
            yield CsvRow(line, item.raw or b"", error=DecodeError(item.error_class, item.message))
            continue
        cells = item.value
        if first and (header == "yes" or (header == "auto" and is_header(cells))):
            first, header_cells = False, cells
            cols = [c.strip() for c in cells]
            continue
        first = False
        yield _csv_row(line, cells, cols, header_cells)


def _csv_row(line: int, cells: list[str], cols: list[str] | None, header: list[str] | None) -> CsvRow:
    """One record; its raw form repeats the file's header line so that it decodes again on its own (a
    surrogate is what `surrogateescape` made of a byte that is not UTF-8: in one joined string as in a cell)."""
    if cols is not None and len(cells) == len(cols) and not _SURROGATE.search("".join(cells)):
        return CsvRow(line, _RawLine(header, cells), values=dict(zip(cols, cells, strict=True)))
    raw = (_header_line(header) if header else b"") + _raw_line(cells)
    if any(_SURROGATE.search(c) for c in cells):
        return CsvRow(line, raw, error=DecodeError("bad_encoding", "CSV record is not valid UTF-8"))
    if cols is None:
        return CsvRow(
            line,
            raw,
            error=DecodeError(
                "missing_schema",
                "TUPLE CSV without a header line and no topic schema: the field names are "
                "unknown. Pass the topic's RecordSchema as option tuple_schema (or tuple_schemas by "
                "table/topic).",
            ),
        )
    return CsvRow(  # the field count differs (every other case is a good record, above)
        line,
        raw,
        error=DecodeError(
            "bad_csv", f"CSV record has {len(cells)} fields but the schema/header has {len(cols)}"
        ),
    )
