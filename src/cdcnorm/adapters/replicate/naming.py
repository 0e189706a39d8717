"""Where a Replicate message belongs: its stream, schema and table, and the database a source engine calls a schema,
from the message, its topic / Event Hub, or its file name.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import PurePath

from cdcnorm.adapters.base import MessageMeta
from cdcnorm.adapters.replicate.spec import SPEC

VENDOR = SPEC.name
CONTROL_PREFIX = "attrep_"
MYSQL_FAMILY = frozenset({"mysql", "mariadb", "aurora-mysql", "tidb"})


@dataclass(frozen=True, slots=True)
class Context:
    """Where a message came from: topic / Event Hub (names table, stream), fallback stream, capture time."""

    topic: str | None
    fallback: str
    capture_ts: dt.datetime | None = None


def split_name(name: str) -> tuple[str | None, str]:
    schema, _, table = name.rpartition(".")
    return schema or None, table


def is_control(table: str | None, topic: str | None) -> bool:
    return any(n and n.casefold().startswith(CONTROL_PREFIX) for n in (table, topic))


def place(source_db: str | None, schema: str | None) -> tuple[str | None, str | None]:
    """(database, schema): a MySQL-family source's Replicate "schema" is its database."""
    if (source_db or "").lower() in MYSQL_FAMILY:
        return schema, None
    return None, schema


_FILE_SUFFIXES = (".gz", ".json", ".jsonl", ".ndjson", ".txt", ".avro", ".bin", ".msg")


def stem(path: str | None) -> str:
    """A file name without container suffixes (`orders.jsonl.gz` -> `orders`); dotted topics stay whole."""
    if not path:
        return VENDOR
    name = PurePath(path).name
    while name.lower().endswith(_FILE_SUFFIXES):
        name = name.rsplit(".", 1)[0]
    return name or VENDOR


_CAPTURE_PATH = re.compile(r"(?:^|/)([^/]+)/([^/]+)/\d{4}/\d{1,2}/\d{1,2}/\d{1,2}/\d{1,2}/\d{1,2}\.avro$")


def capture_location(path: str) -> tuple[str | None, str | None]:
    """(Event Hub, partition) from the default Capture path `{ns}/{hub}/{partition}/{Y}/{M}/{D}/{h}/...`."""
    m = _CAPTURE_PATH.search(path.replace("\\", "/"))
    return (m[1], m[2]) if m else (None, None)


def topic_of(meta: MessageMeta) -> str | None:
    """The topic of a raw message; on a quarantine retry only the origin uri is left: the topic itself for
    messages read from Kafka, or the file path (an Event Hubs Capture path still names its hub)."""
    if meta.topic:
        return meta.topic
    uri = meta.uri or ""
    hub, _ = capture_location(uri)
    if hub:
        return hub
    return uri if uri and "/" not in uri and ":" not in uri and stem(uri) == uri else None
