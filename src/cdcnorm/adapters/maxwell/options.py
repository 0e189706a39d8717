"""Options of the Maxwell adapter: what the producer's configuration decided and a message cannot say."""

from __future__ import annotations

from typing import Literal

from cdcnorm.adapters.base import AdapterOptions


class MaxwellOptions(AdapterOptions):
    """Options of the Maxwell adapter (`stream` names the Maxwell instance; default `maxwell`)."""

    naming_strategy: Literal["auto", "underscore", "underscore_to_camelcase"] = "auto"
    """The producer's `output_naming_strategy`: envelope keys as `server_id` (underscore) or `serverId`
    (underscore_to_camelcase); `auto` reads either spelling."""
    output_nulls: bool = False
    """The producer's `output_nulls`. Off (the safe assumption): a column absent from `data` is unknown, not
    NULL. On: every column of the row is in `data`, so `changed_columns` is exact."""
    encryption_key: str | None = None
    """The producer's `secret_key`, to decrypt `encrypt=data` / `encrypt=all` messages (needs the optional
    `cryptography` package: `pip install 'cdcnorm[maxwell]'`)."""
    keys: dict[str, list[str]] = {}
    """`db.table` (or `table`) -> primary-key columns, for messages without `primary_key_columns` or a key."""
    column_types: dict[str, dict[str, str]] = {}
    """`db.table` (or `table`) -> column -> MySQL type as Maxwell's DDL `def` names it (`datetime`, `timestamp`,
    `date`, `decimal`, `double`, `blob`, `varbinary`, `json`, ...): values are typed from it; other tables keep
    their JSON values (flagged `untyped_values`)."""
