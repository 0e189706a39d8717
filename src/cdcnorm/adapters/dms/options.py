"""Options of the DMS adapter: the task settings and table definitions a DMS output cannot state itself."""

from __future__ import annotations

from typing import Literal

from cdcnorm.adapters.base import AdapterOptions


class DmsOptions(AdapterOptions):
    """Options of the DMS adapter (`stream` overrides the stream name, default `dms`).

    S3 files carry no envelope: one file cannot tell which task settings wrote it, so they are declared here
    (names follow the DMS `S3Settings`, in snake case).
    """

    table: str | None = None
    """`schema.table` of files that do not sit in DMS's `<schema>/<table>/` folders."""
    tables: dict[str, dict[str, str]] = {}
    """`schema.table` (or `table`) -> {column: canonical type} in the source's column order (the data columns,
    without `Op` or the timestamp column): names for headerless CSV, types for CSV text and message values.
    Types: `string` (default), `int`, `bigint`, `smallint`, `double`, `float`, `boolean`, `decimal(p,s)`,
    `date`, `timestamp` (UTC), `timestamp_ntz`, `binary`, `json`."""
    keys: dict[str, list[str]] = {}
    """`schema.table` (or `table`) -> primary-key columns (DMS S3 files name none; messages' `create-table`
    control records do)."""
    source_db: str | None = None
    """The source engine (`mysql`, `postgresql`, `oracle`, `sqlserver`, ...): for MySQL the folder names a
    database, not a schema."""
    csv_header: bool | None = None
    """`AddColumnName`: every CSV file starts with a header row of column names (None: a CDC file whose first
    row starts with `Op` has one; a full-load file has none)."""
    csv_delimiter: str = ","
    """`CsvDelimiter`."""
    csv_null_value: str | None = None
    """`CsvNullValue`: the text DMS writes for NULL; with it an empty field is an empty string."""
    empty_field: Literal["null", "empty_string"] = "null"
    """Without `csv_null_value`, what an empty CSV field is (DMS writes NULL and '' alike as an empty field)."""
    include_op_for_full_load: bool = False
    """`IncludeOpForFullLoad`: full-load rows start with an `Op` column (`I`)."""
    cdc_inserts_only: bool = False
    """`CdcInsertsOnly`: CDC files hold inserts only (no `Op` column unless `include_op_for_full_load`)."""
    cdc_inserts_and_updates: bool = False
    """`CdcInsertsAndUpdates`: CDC files hold inserts and updates, never deletes."""
    timestamp_column: str | None = None
    """`TimestampColumnName`: the extra column of commit time (CDC) / transfer time (full load)."""
    before_image_prefix: str = "BI_"
    """Prefix of before-image columns inside a row (the `add-before-image-columns` table-mapping rule)."""
    before_image_field: str = "before-image"
    """`BeforeImageSettings.FieldName` of stream messages."""
    learn_tables: bool = True
    """Read every `create-table` control record of the input (and the table versions earlier runs stored)
    before decoding, so each message knows its table's key and types wherever its record sits."""
    table_defs: list[dict] = []
    """Table definitions from `create-table` records (`{schema, table, columns, keys}`): filled by the first
    pass; may also be given."""
    no_hex_prefix: bool = False
    """`NoHexPrefix`: binary values are hex without the `0x` prefix."""
