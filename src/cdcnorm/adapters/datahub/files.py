"""How DataHub input is told apart: sniffing, the file container, Blob vs TUPLE records, Parquet row types."""

from __future__ import annotations

import re
from typing import Any

from cdcnorm import containers
from cdcnorm.adapters.datahub import tuple_topic as tup
from cdcnorm.adapters.datahub.vocabulary import FMT_BLOB, FMT_TUPLE

_PARQUET_TYPES = (
    ("int8", "TINYINT"),
    ("int16", "SMALLINT"),
    ("int32", "INTEGER"),
    ("int64", "BIGINT"),
    ("uint", "BIGINT"),
    ("float", "FLOAT"),
    ("halffloat", "FLOAT"),
    ("double", "DOUBLE"),
    ("decimal", "DECIMAL"),
    ("string", "STRING"),
    ("large_string", "STRING"),
    ("bool", "BOOLEAN"),
    ("timestamp", "TIMESTAMP"),
)
_SNIFF_BLOB = re.compile(rb'"payload"\s*:\s*\{')
_SNIFF_OP = re.compile(rb'"op"\s*:\s*"')
_SNIFF_TUPLE = re.compile(rb'"_operation_type_"\s*:')
_DEBEZIUM_SOURCE = re.compile(rb'"source"\s*:\s*\{[^{}]*"connector"\s*:')
"""A Debezium envelope's `source` block: `{"schema", "payload": {"op", ...}}` is Debezium's shape too."""


def sniff_head(head: bytes) -> bool:
    """Blob JSON (`"payload"` with `"op"`), TUPLE JSON or CSV naming `_operation_type_`."""
    window = head[:65536]
    start = window.lstrip(b"\xef\xbb\xbf \t\r\n[")
    if start.startswith(b"{"):
        blob = _SNIFF_BLOB.search(window) and _SNIFF_OP.search(window) and not _DEBEZIUM_SOURCE.search(window)
        return bool(blob or _SNIFF_TUPLE.search(window))
    first_line = window.split(b"\n", 1)[0]
    return b"_operation_type_" in first_line and b"," in first_line


def container_of(path: str, src: containers.Source, input_format: str) -> str:
    """`parquet`, `csv` or `json`: the `input_format` option, else magic bytes, file suffix and first byte."""
    if input_format != "auto":
        return input_format
    head = src.peek(4096)
    name = path.lower().removesuffix(".gz")
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(containers.PARQUET_MAGIC) or name.endswith(".parquet"):
        return "parquet"
    if name.endswith((".json", ".jsonl", ".ndjson")):
        return "json"
    if name.endswith(".csv") or (stripped and stripped[:1] not in (b"{", b"[")):
        return "csv"
    return "json"


def looks_like_record(value: Any) -> bool:
    """A Blob message (payload with op) or a TUPLE row (with _operation_type_): used to resynchronise."""
    if not isinstance(value, dict):
        return False
    payload = value.get("payload")
    return (isinstance(payload, dict) and "op" in payload) or tup.OP_COLUMN in value


def looks_like_csv(value: bytes) -> bool:
    """Text that is not JSON and has a comma: a TUPLE CSV record (JSON and binary go the JSON way)."""
    head = value.lstrip(b"\xef\xbb\xbf \t\r\n")
    if head[:1] in (b"{", b"[") or b"," not in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def format_of(value: Any) -> str:
    """The format of a decoded JSON object: a TUPLE row names `_operation_type_`, anything else is Blob."""
    return FMT_TUPLE if isinstance(value, dict) and tup.OP_COLUMN in value else FMT_BLOB


def parquet_fields(schema: Any) -> tuple[tup.TupleField, ...]:
    """TUPLE fields of a Parquet file's Arrow schema (types DataHub has no name for stay `ARROW:<type>`)."""
    fields = []
    for f in schema:
        t = str(f.type)
        vtype = next((v for prefix, v in _PARQUET_TYPES if t.startswith(prefix)), "ARROW:" + t)
        fields.append(tup.TupleField(f.name, vtype))
    return tuple(fields)

