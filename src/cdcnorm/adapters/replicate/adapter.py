"""Qlik Replicate (Attunity) messages from Kafka / Azure Event Hubs targets.

Shapes (reference `replicate.md` §1): the JSON envelope `{"magic":"atMSG","type":"MD"|"DT",...}`, bare
JSON data messages `{data, beforeData, headers}`, the Avro `MessageEnvelope` (bytes start with `atMSG`)
whose `message` is Avro of the metadata or the data record, and the Confluent wire format (`0x00` + 4-byte
schema id + Avro `DataRecord`) with schemas from a local folder/file (`schema_registry`). Containers: JSON
and JSON-lines files, Event Hubs Capture Avro files (`EventData.Body` is the message), Avro container files
of `MessageEnvelope` records (a Kafka-to-storage sink's Avro output), single raw-message
files (`.bin`), and Kafka-shaped DataFrames through :meth:`ReplicateAdapter.decode_message`.

Metadata (MD) messages fill a :class:`~cdcnorm.adapters.replicate.catalog.Catalog`; data (DT) messages are
decoded with the entry their `messageSchemaId` names, else (JSON only) with the newest version of their
table whose columns are exactly the message's fields, else from the data alone (flag `no_schema`). An Avro
DT whose schema is unknown is quarantined as `schema_not_found` and can be re-processed once the MD is known
(the pipeline's first pass collects MD entries before decoding and :meth:`ReplicateAdapter.prepare` takes
them; the `catalog_entries` option passes them in by hand).

Ordering and identity (`sort_parts`, `id_parts` from `changeSequence`) are in
:mod:`~cdcnorm.adapters.replicate.positions`; the package's other modules each do one step of decoding.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from typing import IO, Any, ClassVar, Literal

from cdcnorm import containers
from cdcnorm.adapters.base import Adapter, AdapterOptions, FirstPass, MessageMeta
from cdcnorm.adapters.replicate.catalog import (
    Catalog,
    entry_from_data_schema,
    entry_from_schema_row,
    load_registry,
    merge_entries,
)
from cdcnorm.adapters.replicate.changes import (
    DataMessage,
    data_changes,
    ddl_change,
    schema_version,
    sections,
)
from cdcnorm.adapters.replicate.envelope import (
    FMT_JSON,
    FMT_REGISTRY,
    MAGIC,
    Envelope,
    extract_metadata,
    json_envelope,
    md_entry,
    parse_envelope,
    read_datum,
)
from cdcnorm.adapters.replicate.files import metadata_in_file, read_container, read_json
from cdcnorm.adapters.replicate.naming import (
    VENDOR,
    Context,
    capture_location,
    delivery_location,
    is_control,
    split_name,
    stem,
    topic_of,
)
from cdcnorm.adapters.replicate.spec import SPEC
from cdcnorm.canonical.emit import BatchBuilder
from cdcnorm.canonical.record import Change
from cdcnorm.errors import DecodeError

METADATA_RULE = "replicate_metadata"


class ReplicateOptions(AdapterOptions):
    """Options of the Replicate adapter."""

    catalog_entries: list[dict[str, Any]] = []
    """MD catalog entries known before decoding (from the pipeline's first pass and from earlier runs)."""
    topic_tables: dict[str, str] = {}
    """Topic / Event Hub name -> `schema.table` or `table`, for DTs whose metadata is unknown."""
    default_table: str | None = None
    """`schema.table` or `table` for DTs whose table nothing else names (e.g. a JSON dump of one topic)."""
    table_field: str | None = None
    """A data column that carries the table name (added by a Replicate transformation, e.g. `tableName`)."""
    source_db: str | None = None
    """Source engine (`mysql`, `oracle`, `sqlserver`, ...): Replicate messages do not say. For the MySQL
    family the Replicate `schema` goes into `database`."""
    schema_registry: str | None = None
    """Local folder or file of Confluent Schema Registry schemas by id (for the `0x00` wire format)."""
    stream_naming: Literal["delivery", "file"] = "delivery"
    """`delivery`: the stream is the topic / Event Hub, else the Replicate task, else `replicate` (never a file
    name). `file`: cdcnorm 0.1's rule (topic / Event Hub, else the file-name stem), only to keep appending to a
    lake written by it; re-normalizing into a fresh lake is the better fix (docs/adapters/replicate.md)."""
    prescan: bool = True
    """Learn MD messages before decoding: a first Spark pass over the whole input (`prepare`) and, for files
    decoded without it, a scan of each file first. Turn it off when `catalog_entries` is already complete."""


class ReplicateAdapter(Adapter):
    """Qlik Replicate Kafka / Event Hubs messages -> canonical change rows."""

    name: ClassVar[str] = VENDOR
    formats: ClassVar[tuple[str, ...]] = SPEC.formats
    flags: ClassVar[tuple[str, ...]] = SPEC.flags
    Options: ClassVar[type[AdapterOptions]] = ReplicateOptions

    def __init__(self, options: dict[str, Any] | AdapterOptions | None = None):
        super().__init__(options)
        self.catalog = Catalog(self.options.catalog_entries)
        self._registry = load_registry(self.options.schema_registry) if self.options.schema_registry else {}
        self._registry_schemas_sent: set[tuple[str, str]] = set()

    @property
    def catalog_entries(self) -> list[dict[str, Any]]:
        """The catalog as serialisable entries (options' entries plus MD messages seen so far)."""
        return self.catalog.entries()

    # -- the first pass: MD messages of the whole input and the lake's stored versions, before decoding ------
    uses_stored_schemas: ClassVar[bool] = True

    def needs_first_pass(self) -> bool:
        return self.options.prescan

    def first_pass_file(self, path: str, fh: IO[bytes]) -> list[dict[str, Any]]:
        return self.metadata_from_file(path, fh)

    def first_pass_message(self, value: bytes | None) -> list[dict[str, Any]]:
        return extract_metadata(value)

    def prepare(self, first: FirstPass) -> ReplicateAdapter:
        """Learn every MD message of the input (and the lake's stored versions) before decoding.

        Decoding runs in parallel partitions, so a DT may be decoded in another task than its MD. The returned
        adapter carries the merged catalog to the executors (per-file prescans are then not needed for files).
        """
        stored = [e for e in map(entry_from_schema_row, first.stored_schemas) if e is not None]
        found = merge_entries(stored, list(self.options.catalog_entries), first.items)
        update: dict[str, Any] = {"catalog_entries": found}
        if first.kind == "files":
            update["prescan"] = False
        return type(self)(self.options.model_copy(update=update))

    def add_catalog_entries(self, entries: list[dict[str, Any]]) -> None:
        """Teach the adapter more table versions (e.g. MD entries from a first pass)."""
        for e in entries:
            self.catalog.add(e)

    # -- detection -------------------------------------------------------------------------------------------
    @classmethod
    def sniff(cls, path: str | None, head: bytes) -> bool:
        if head[:5] == MAGIC or (
            head[:4] == b"Obj\x01" and (b"EventData" in head[:4096] or b"MessageEnvelope" in head[:4096])
        ):
            return True
        text = head[:8192]
        return b'"atMSG"' in text or (b'"changeSequence"' in text and b'"operation"' in text)

    # -- files -----------------------------------------------------------------------------------------------
    def read_file(self, path: str, fh: IO[bytes], out: BatchBuilder) -> Iterator[None]:
        """Decode one file (streamed): JSON / JSON lines, an Avro container file, or one raw message (`.bin`)."""
        out.set_context(VENDOR, FMT_JSON)
        if self.options.prescan:  # learn the file's MD messages first: a DT may precede its MD
            fh = containers.rewindable(fh)
            self.add_catalog_entries(self.metadata_from_file(path, fh))
            fh.seek(0)
        src = containers.open_source(fh)
        head = src.peek(8)
        if head[:4] == containers.AVRO_MAGIC:
            yield from read_container(path, src, out, self._decode_value, self._file_context(path))
        elif head[:5] == MAGIC or head[:1] == b"\x00":
            raw = src.read()
            out.begin_record(path, 0, raw=raw)
            self._decode_value(raw, self._file_context(path), out)
            yield
        elif containers.container_of(src) != "empty":
            yield from read_json(path, src, out, self._decode_doc, self._file_context(path))

    def metadata_from_file(self, path: str, fh: IO[bytes]) -> list[dict[str, Any]]:
        """MD catalog entries in one file (the pipeline's first pass over file inputs), streamed."""
        return metadata_in_file(fh)

    # -- raw messages --------------------------------------------------------------------------------------
    def decode_message(self, value: bytes | None, meta: MessageMeta, out: BatchBuilder) -> None:
        ts = meta.timestamp
        if ts is not None and ts.tzinfo is None:
            ts = ts.replace(tzinfo=dt.UTC)
        legacy = self.options.stream_naming == "file"
        self._decode_value(value, Context(topic_of(meta, legacy), stem(meta.uri) if legacy else None, ts), out)

    def _file_context(self, path: str) -> Context:
        """What a file's path says about its messages: the topic / Event Hub that carried them (see naming)."""
        if self.options.stream_naming == "file":
            return Context(capture_location(path)[0], stem(path))
        return Context(delivery_location(path)[0])

    def _stream(self, ctx: Context, entry: dict[str, Any] | None) -> str:
        """The stream of a message (rule in :mod:`~cdcnorm.adapters.replicate.naming`)."""
        task = (entry or {}).get("task") if self.options.stream_naming == "delivery" else None
        return self.stream_name(ctx.topic or task or ctx.file_stream, VENDOR)

    def _decode_value(self, value: bytes | None, ctx: Context, out: BatchBuilder,
                      envelope: Envelope | None = None) -> None:
        """`envelope`: the message's envelope when a container already decoded it (not parsed again)."""
        out.set_context(VENDOR, FMT_JSON)
        self._guarded((lambda: envelope) if envelope is not None else (lambda: parse_envelope(value)), ctx, out)

    def _decode_doc(self, doc: Any, ctx: Context, out: BatchBuilder) -> None:
        out.set_context(VENDOR, FMT_JSON)
        self._guarded(lambda: json_envelope(doc), ctx, out)

    def _guarded(self, envelope: Callable[[], Envelope], ctx: Context, out: BatchBuilder) -> None:
        """Decode one message; any failure quarantines it (nothing raises out of the adapter)."""
        try:
            env = envelope()
            out.set_context(VENDOR, env.fmt)
            if env.kind == "MD":
                self._metadata(env, ctx, out)
            else:
                for change in self._data(env, ctx, out):
                    out.change(change)
        except DecodeError as exc:
            out.quarantine(exc.error_class, exc.message)
        except Exception as exc:
            out.quarantine(
                "decode_failed",
                f"unexpected {type(exc).__name__}: {exc}; this is a cdcnorm bug — "
                "report it with the raw message",
            )

    # -- metadata --------------------------------------------------------------------------------------------
    def _metadata(self, env: Envelope, ctx: Context, out: BatchBuilder) -> None:
        entry = md_entry(env)
        previous = self.catalog.previous(entry)
        self.catalog.add(entry)
        if is_control(entry["table"], ctx.topic):
            out.metadata(METADATA_RULE)
            return
        stream = self._stream(ctx, entry)
        if previous is not None:
            out.change(ddl_change(entry, previous, env.fmt, stream, self.options.source_db, ctx.capture_ts))
        else:
            out.metadata(METADATA_RULE)
        out.schema(schema_version(entry, stream, entry.get("schema"), entry["table"], self.options.source_db))

    # -- data ------------------------------------------------------------------------------------------------
    def _entry_for(self, env: Envelope) -> dict[str, Any] | None:
        if env.fmt != FMT_REGISTRY:
            return self.catalog.get(env.schema_id)
        key = f"registry:{env.schema_id}"
        entry = self.catalog.get(key)
        if entry is None and int(env.schema_id) in self._registry:
            entry = entry_from_data_schema(key, self._registry[int(env.schema_id)])
            self.catalog.add(entry)
        return entry

    def _table_of(
        self, entry: dict[str, Any] | None, data: dict[str, Any], ctx: Context
    ) -> tuple[str | None, str | None]:
        if entry is not None and entry.get("table"):
            return entry.get("schema"), entry["table"]
        field = self.options.table_field
        if field and isinstance(data.get(field), str) and data[field]:
            return split_name(data[field])
        if ctx.topic and ctx.topic in self.options.topic_tables:
            return split_name(self.options.topic_tables[ctx.topic])
        if ctx.topic:
            return None, ctx.topic
        if self.options.default_table:
            return split_name(self.options.default_table)
        return None, None

    def _data(self, env: Envelope, ctx: Context, out: BatchBuilder) -> list[Change]:
        entry = self._entry_for(env)
        if env.fmt == FMT_JSON:
            record = env.payload
        else:
            if entry is None:
                where = (
                    "registry schema" if env.fmt == FMT_REGISTRY else "metadata message (MD) with schemaId"
                )
                raise DecodeError(
                    "schema_not_found",
                    f"no {where} {env.schema_id} is known, and an Avro data "
                    "message cannot be read without it; ingest the MD / registry schema, then run "
                    "`cdcnorm quarantine retry`",
                )
            record = read_datum(
                env.payload,
                self.catalog.parsed_data_schema(entry),
                self.catalog.parsed_schema_text(entry),
                f"the data message of schema {env.schema_id}",
            )
        data, before, headers = sections(record)
        image = data if data is not None else before
        if image is None:
            raise DecodeError("bad_message", "the data message has neither `data` nor `beforeData`")
        schema, table = self._table_of(entry, image, ctx)
        if entry is None:
            entry = self.catalog.match(schema, table, list(image))
            if entry is not None:
                schema, table = entry.get("schema"), entry["table"]
        stream = self._stream(ctx, entry)
        if (
            entry is not None
            and entry.get("origin") == "registry"
            and (entry["schema_id"], stream) not in self._registry_schemas_sent
        ):
            self._registry_schemas_sent.add((entry["schema_id"], stream))
            out.schema(schema_version(entry, stream, schema, table, self.options.source_db))
        message = DataMessage(env, entry, data, before, headers, image, schema, table, stream, ctx)
        return data_changes(message, self.options.source_db)
