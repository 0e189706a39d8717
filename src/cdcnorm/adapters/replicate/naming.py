"""Where a Replicate message belongs: its stream, schema and table, and the database a source engine calls a schema,
from the message, its metadata, or the topic / Event Hub that carried it.

Stream identity (`docs/adapters/replicate.md`, "Stream identity"): the `stream` option; else the Kafka topic or
Event Hub that carried the message (a Kafka-shaped DataFrame's `topic`, a Kafka Connect storage sink's
`topics/<topic>/partition=<p>/<topic>+<p>+<startOffset>.<ext>` naming, an Event Hubs Capture path); else the
Replicate task (`lineage.task` of the table's metadata message); else `replicate`. Never a data file's own
name: a topic split over many files is one stream, and a redelivery in another file keeps its event id.
`stream_naming="file"` reproduces the file-stem names of cdcnorm 0.1 lakes.
"""

from __future__ import annotations

import datetime as dt
import functools
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
    """Where a message came from: topic / Event Hub (names table, stream), the file-stem stream of the legacy
    naming (else None), capture time."""

    topic: str | None
    file_stream: str | None = None
    capture_ts: dt.datetime | None = None


def split_name(name: str) -> tuple[str | None, str]:
    schema, _, table = name.rpartition(".")
    return schema or None, table


@functools.lru_cache(maxsize=4096)
def is_control(table: str | None, topic: str | None) -> bool:
    """A Replicate control table (`attrep_...`) by its table or topic name (remembered per pair: every
    message asks)."""
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
    """(Event Hub, partition) from the default Capture name format
    `{Namespace}/{EventHub}/{PartitionId}/{Year}/{Month}/{Day}/{Hour}/{Minute}/{Second}` (`archiveNameFormat`,
    https://learn.microsoft.com/en-us/javascript/api/@azure/arm-eventhub-profile-2020-09-01-hybrid/destination).
    The format may order its (all mandatory) parts freely; a custom order is not guessed: the task name (or
    the `stream` option) names the stream then."""
    m = _CAPTURE_PATH.search(path.replace("\\", "/"))
    return (m[1], m[2]) if m else (None, None)


_CONNECT_FILE = re.compile(r"^(?P<topic>[^/+]+)\+(?P<partition>\d+)\+\d+(?:\.[^/]*)?$")
_CONNECT_FOLDER = re.compile(r"(?:^|/)(?P<topic>[^/=]+)/partition=(?P<partition>\d+)(?:/|$)")


def connect_location(path: str) -> tuple[str | None, str | None]:
    """(topic, partition) from a Kafka Connect storage sink's object name (Confluent S3 / GCS / Azure Blob /
    HDFS sinks, default partitioner): `topics/<topic>/partition=<p>/<topic>+<p>+<startOffset>.<ext>`
    (https://aiven.io/docs/products/kafka/kafka-connect/reference/s3-sink-additional-parameters-confluent).
    The file name decides; else a `<topic>/partition=<p>/` folder. Offsets are not derived: a file's records
    need not have consecutive offsets."""
    norm = path.replace("\\", "/")
    m = _CONNECT_FILE.match(PurePath(norm).name)
    if m:
        return m["topic"], m["partition"]
    m = _CONNECT_FOLDER.search(norm.rsplit("/", 1)[0] if "/" in norm else "")
    return (m["topic"], m["partition"]) if m else (None, None)


def delivery_location(path: str | None) -> tuple[str | None, str | None]:
    """(topic or Event Hub, partition) a file's path says carried its messages, else (None, None)."""
    if not path:
        return None, None
    hub, partition = capture_location(path)
    return (hub, partition) if hub else connect_location(path)


def topic_of(meta: MessageMeta, legacy: bool = False) -> str | None:
    """The topic of a raw message; on a quarantine retry only the origin uri is left: the topic itself for
    messages read from Kafka, or the file path (a Capture or Kafka Connect path still names its topic).
    `legacy`: only Capture paths name a topic (the file-stem naming of cdcnorm 0.1)."""
    if meta.topic:
        return meta.topic
    uri = meta.uri or ""
    topic, _ = capture_location(uri) if legacy else delivery_location(uri)
    if topic:
        return topic
    return uri if uri and "/" not in uri and ":" not in uri and stem(uri) == uri else None
