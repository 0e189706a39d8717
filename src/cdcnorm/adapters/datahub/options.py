"""What the caller tells the adapter: its options, and the stream/table hints of a path's folder layout."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, field_validator

from cdcnorm.adapters.base import AdapterOptions
from cdcnorm.adapters.datahub import tuple_topic as tup

_PATH_KEYS = {
    "project": "project",
    "topic": "topic",
    "table": "table",
    "database": "database",
    "db": "database",
    "schema": "schema",
}


class DataHubOptions(AdapterOptions):
    """Options of the DataHub adapter (everything is optional)."""

    input_format: Literal["auto", "json", "csv", "parquet"] = "auto"
    """File container: JSON objects (lines, array or back to back), TUPLE CSV, or TUPLE Parquet."""
    project: str | None = None
    """DataHub project, for the stream name (else a `project=<name>` folder)."""
    topic: str | None = None
    """DataHub topic, for the stream name (else the message's topic or a `topic=<name>` folder)."""
    source_db: str | None = None
    """TUPLE: source engine (mysql, oracle, postgresql, sqlserver); TUPLE rows do not say."""
    database: str | None = None
    """TUPLE: source database name (else a `database=<name>` folder)."""
    db_schema: str | None = None
    """TUPLE: source schema name (else a `schema=<name>` folder); ignored for MySQL-family sources."""
    table: str | None = None
    """TUPLE: table name for rows without `_source_table_` (else a `table=<name>` folder)."""
    primary_keys: list[str] | dict[str, list[str]] | None = None
    """TUPLE: primary-key columns (TUPLE topics do not carry them); a dict gives them by table or topic name,
    like `tuple_schemas`, for runs over several topics."""
    tuple_schema: Any = None
    """TUPLE: the topic's RecordSchema (JSON text, GetTopic response, list of {name, type} or "name:TYPE")."""
    tuple_schemas: dict[str, Any] | None = None
    """TUPLE: RecordSchemas by table or topic name, for runs over several topics."""
    csv_header: Literal["auto", "yes", "no"] = "auto"
    """TUPLE CSV: does the first line name the fields (auto: when it names DataWorks meta columns)."""
    max_object_bytes: int = Field(16 << 20, ge=1024)
    """Largest JSON object accepted; a longer one is quarantined as broken (bounds memory)."""

    @field_validator("tuple_schema")
    @classmethod
    def _one_schema(cls, v: Any) -> Any:
        return None if v is None else tup.parse_tuple_schema(v)

    @field_validator("tuple_schemas")
    @classmethod
    def _many_schemas(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if v is None else {k: tup.parse_tuple_schema(s) for k, s in v.items()}


@dataclass(frozen=True, slots=True)
class Where:
    """Where a record came from: stream and table hints from options, folder layout or message meta."""

    uri: str | None = None
    project: str | None = None
    topic: str | None = None
    table: str | None = None
    database: str | None = None
    schema: str | None = None
    capture_ts: dt.datetime | None = None


def path_hints(path: str | None) -> dict[str, str]:
    """Hive-style folder hints in a path: project=, topic=, table=, database= (or db=), schema=."""
    hints: dict[str, str] = {}
    for seg in re.split(r"[/\\]", path or ""):
        key, sep, value = seg.partition("=")
        if sep and value and key.lower() in _PATH_KEYS:
            hints[_PATH_KEYS[key.lower()]] = value
    return hints


