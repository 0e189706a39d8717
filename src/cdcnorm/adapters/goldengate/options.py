"""Options of the GoldenGate adapter: what a GoldenGate record cannot say about itself."""

from __future__ import annotations

from typing import Literal

from cdcnorm.adapters.base import AdapterOptions


class GoldenGateOptions(AdapterOptions):
    """Options of the GoldenGate adapter (`stream` names the Replicat / handler lineage; default `goldengate`)."""

    insert_op_key: str = "I"
    """The formatter's `insertOpKey`."""
    update_op_key: str = "U"
    """The formatter's `updateOpKey`."""
    delete_op_key: str = "D"
    """The formatter's `deleteOpKey`."""
    truncate_op_key: str = "T"
    """The formatter's `truncateOpKey`."""
    time_zone: str = "UTC"
    """The zone `op_ts` (and columns declared `timestamp`) are written in (an IANA name or `UTC`)."""
    current_ts_zone: str | None = None
    """The zone of `current_ts` (the GoldenGate host's); default: `time_zone`."""
    keys: dict[str, list[str]] = {}
    """`SCHEMA.TABLE` (or `TABLE`) -> primary-key columns, when records carry no `primary_keys`."""
    column_types: dict[str, dict[str, str]] = {}
    """`SCHEMA.TABLE` (or `TABLE`) -> column -> canonical type (`decimal(10,2)`, `timestamp_ntz`, `date`,
    `binary`, ...): JSON values are read as that type, and the declared columns are the table's columns (a
    compressed image lists the others in `missing_columns`)."""
    binary_encoding: Literal["base64", "hex"] = "base64"
    """How the JSON formatter wrote binary columns (for columns declared `binary`)."""
    model: Literal["auto", "op", "row"] = "auto"
    """JSON formatter: `op` (`format=json`), `row` (`format=json_row`) or `auto` (op when `before` / `after`
    is present)."""
    tx_token: str | None = None
    """The `tokens` entry that holds the source transaction id (a `TOKENS` clause), if any."""
    avro_schemas: str | None = None
    """Folder of the Avro formatter's `.avsc` files (`generateSchema`), for Avro messages outside container
    files: plain table schemas, and with `wrapMessageInGenericAvroMessage` the payload's schema by fingerprint."""
    link_key_changes: bool = True
    """Link a row-modeled delete and insert of one table at one `pos` (`pkUpdateHandling=delete-insert`) as
    a primary-key change (one grouping over the run's row-modeled deletes and inserts)."""
    source_db: str | None = None
    """The source database product (`oracle`, `mysql`, ...); GoldenGate records do not say."""
