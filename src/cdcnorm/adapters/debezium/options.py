"""Options of the Debezium adapter: what a message cannot say about itself."""

from __future__ import annotations

from typing import Literal

from cdcnorm.adapters.base import AdapterOptions


class DebeziumOptions(AdapterOptions):
    """Options of the Debezium adapter (`stream` overrides the logical server name)."""

    schema_registry: str | None = None
    """Local folder or file of Confluent Schema Registry schemas by id (for the `0x00` wire format)."""
    keys: dict[str, list[str]] = {}
    """`db.table` / `db.schema.table` / `table` -> primary-key columns, for inputs without message keys."""
    column_types: dict[str, dict[str, str]] = {}
    """Without schemas: `db.table` (or `table`) -> column -> canonical type (`decimal(10,2)`, `timestamp_ntz`,
    `date`, `binary`, ...) to decode values the JSON alone cannot type; other columns keep their JSON value."""
    decimal_handling: Literal["precise", "double", "string"] = "precise"
    """The connector's `decimal.handling.mode` (what a schemaless decimal column holds)."""
    time_precision: Literal["adaptive", "adaptive_time_microseconds", "connect", "isostring"] = "adaptive"
    """The connector's `time.precision.mode`."""
    binary_handling: Literal["bytes", "base64", "base64-url-safe", "hex"] = "bytes"
    """The connector's `binary.handling.mode`."""
    decimal_format: Literal["base64", "numeric"] = "base64"
    """JsonConverter's `decimal.format`: `numeric` writes Decimal fields as JSON numbers."""
    unavailable_placeholder: str = "__debezium_unavailable_value"
    """The connector's `unavailable.value.placeholder` (unchanged TOASTed / LOB values; `hex:` for bytes)."""
    link_key_changes: bool = True
    """Link a delete and a create of one table at one log position as a primary-key change when no
    `__debezium.oldkey` / `newkey` headers say so (one grouping over the run's inserts and deletes); off for
    inputs that always carry the headers."""
