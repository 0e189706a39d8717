"""Options of the Canal adapter: what a flat message cannot say about itself."""

from __future__ import annotations

from pydantic import field_validator

from cdcnorm.adapters.base import AdapterOptions


class CanalOptions(AdapterOptions):
    """Options of the Canal adapter (`stream` names the Canal instance / topic; default `canal`)."""

    time_zone: str = "UTC"
    """The zone Canal rendered TIMESTAMP columns in (the Canal server's zone): their wall-clock text is read in
    it and stored as UTC. DATETIME columns stay zone-less."""
    source_db: str = "mysql"
    """The source engine (`mysql`, `mariadb`, `polardb`); a message with TiCDC's `_tidb` block is `tidb`."""
    batch_id_identity: bool = False
    """Count the batch `id` into the event id: two identical changes in one second without a `gtid` are then two
    events. Only for pipelines whose redeliveries repeat the message as it was (a Kafka consumer re-reading
    it): Canal itself renumbers a batch it sends again after a rollback or restart."""
    database: str | None = None
    """The database of messages that do not name one (degenerate producers)."""
    table: str | None = None
    """The table of messages that do not name one (degenerate producers send only `data` and `type`)."""

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, v: str) -> str:
        from zoneinfo import ZoneInfo

        if v.upper() != "UTC":
            ZoneInfo(v)  # an unknown zone fails here, with its name
        return v
