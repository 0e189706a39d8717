"""Debezium change events -> canonical change rows.

Inputs: Kafka-shaped DataFrames (key, value, topic, partition, offset, headers) through
:meth:`DebeziumAdapter.decode_message`, and the dump shapes of :mod:`~cdcnorm.adapters.debezium.files`.
Values: JSON with schemas (`{"schema", "payload"}`), JSON without (`{"payload"}`, `{"schema": null, ...}` or
the envelope alone), Avro from a sink's container files, and the Confluent wire format (`0x00` + schema id)
with schemas from a local registry export (`schema_registry`).

What a message becomes: data events (c, u, d, r, t) canonical rows (`changes.py`); tombstones and logical
decoding messages (`m`) counted filters; heartbeats, transaction BEGIN / END and schema changes their rows
(`control.py`); notifications a counted filter. A flattened `ExtractNewRecordState` row is refused.
"""

from __future__ import annotations

from typing import IO, Any, ClassVar

import orjson
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from cdcnorm import containers
from cdcnorm.adapters.base import Adapter, AdapterOptions, MessageMeta
from cdcnorm.adapters.debezium import control
from cdcnorm.adapters.debezium.changes import Event, data_change, table_of
from cdcnorm.adapters.debezium.columns import (
    RowType,
    avro_row_type,
    connect_row_type,
    declared_columns,
    declared_version,
    untyped_row_type,
)
from cdcnorm.adapters.debezium.envelope import HEARTBEAT_TOPIC, Message, classify, parse_json
from cdcnorm.adapters.debezium.files import (
    Line,
    is_side_file,
    kcat_headers,
    kcat_value,
    read_avro,
    read_json,
    sink_keys,
)
from cdcnorm.adapters.debezium.keys import Key, option_keys, parse_key, per_table
from cdcnorm.adapters.debezium.options import DebeziumOptions
from cdcnorm.adapters.debezium.positions import connector_of
from cdcnorm.adapters.debezium.spec import SPEC
from cdcnorm.adapters.debezium.unavailable import unavailable_checker
from cdcnorm.adapters.debezium.values import Modes
from cdcnorm.adapters.replicate.catalog import load_registry, parse_avro_schema
from cdcnorm.adapters.replicate.envelope import read_datum
from cdcnorm.adapters.replicate.naming import connect_location
from cdcnorm.canonical.emit import BatchBuilder
from cdcnorm.canonical.emit import Bookkeeping as B
from cdcnorm.canonical.record import SchemaColumn, SchemaVersion
from cdcnorm.errors import DecodeError

VENDOR = SPEC.name
FMT_JSON, FMT_AVRO, FMT_REGISTRY = SPEC.formats
TOMBSTONE_RULE = "debezium_tombstone"
MESSAGE_RULE = "debezium_logical_message"
NOTIFICATION_RULE = "debezium_notification"


class DebeziumAdapter(Adapter):
    """Debezium change events (Kafka Connect, Debezium Server, Debezium Engine) -> canonical change rows."""

    name: ClassVar[str] = VENDOR
    formats: ClassVar[tuple[str, ...]] = SPEC.formats
    flags: ClassVar[tuple[str, ...]] = SPEC.flags
    Options: ClassVar[type[AdapterOptions]] = DebeziumOptions

    def __init__(self, options: dict[str, Any] | AdapterOptions | None = None):
        super().__init__(options)
        o = self.options
        self.modes = Modes(decimal_handling=o.decimal_handling, time_precision=o.time_precision,
                           binary_handling=o.binary_handling, decimal_format=o.decimal_format)
        self._unavailable = unavailable_checker(o.unavailable_placeholder)
        self._registry = load_registry(o.schema_registry) if o.schema_registry else {}
        self._parsed: dict[int, tuple[Any, Any]] = {}
        """registry schema id -> (fastavro's parsed schema, the schema as JSON)"""
        self._versions_sent: set[tuple] = set()

    # -- detection -------------------------------------------------------------------------------------------
    @classmethod
    def sniff(cls, path: str | None, head: bytes) -> bool:
        text = head[:16384]
        if text[:4] == containers.AVRO_MAGIC:
            return b"io.debezium" in text or (b'"source"' in text and b'"connector"' in text and b'"op"' in text)
        return (b'"connector"' in text and b'"source"' in text and b'"op"' in text) or b'"io.debezium.' in text

    # -- files -----------------------------------------------------------------------------------------------
    def accepts_file(self, path: str) -> bool:
        """Data files, but not a sink's key / header files (read with their value file)."""
        return super().accepts_file(path) and not is_side_file(path)

    def read_file(self, path: str, fh: IO[bytes], out: BatchBuilder):
        out.set_context(VENDOR, FMT_JSON)
        topic, partition = connect_location(path)
        keys = sink_keys(path) if topic else None
        src = containers.open_source(fh)
        kind = containers.container_of(src)
        if kind == "avro":
            out.set_context(VENDOR, FMT_AVRO)
            yield from read_avro(path, src, out, lambda rec, schema, key, i: self._avro_record(
                rec, schema, key, _nth(keys, i), topic, out), partition, lambda rec: self._kafka_record(rec, topic, out))
        elif kind == "json":
            yield from read_json(path, src, out, lambda line, i: self._line(line, _nth(keys, i), topic, out),
                                 partition)
        elif kind == "empty":
            return
        elif src.peek(1)[:1] == b"\x00":
            raw = src.read()
            out.begin_record(path, 0, partition=partition, raw=raw)
            self._guarded(lambda: self._value(raw, None, topic, None, out), out)
            yield
        else:
            out.begin_record(path, 0, partition=partition, raw=src.read(containers.RAW_CAP))
            out.quarantine("unknown_format", f"{path}: not a Debezium dump: supported are JSON lines of message "
                                             "values, kcat -J lines, Kafka Connect sink JSON / Avro files and "
                                             "Confluent-framed Avro messages")
            yield

    def _line(self, line: Line, key: Any, topic: str | None, out: BatchBuilder) -> None:
        if line.kcat is not None:
            doc = line.kcat
            key = doc.get("key")
            self._guarded(lambda: self._value(kcat_value(doc), key.encode() if isinstance(key, str) else key,
                                              doc.get("topic") or topic, kcat_headers(doc.get("headers")), out), out)
            return
        out.set_context(VENDOR, FMT_JSON)
        self._guarded(lambda: self._emit(self._message(line.payload, line.schema, line.schema_key, topic), FMT_JSON,
                                         key, topic, None, out), out)

    def _kafka_record(self, rec: dict[str, Any], topic: str | None, out: BatchBuilder) -> None:
        """A Kafka record of an Avro dump (Spark's Kafka source shape): its value is one raw message."""
        headers = [(h.get("key"), h.get("value")) for h in rec.get("headers") or () if isinstance(h, dict)]
        self._guarded(lambda: self._value(rec.get("value"), rec.get("key"), rec.get("topic") or topic, headers, out),
                      out)

    def _avro_record(self, rec: Any, schema: Any, skey: bytes, key: Any, topic: str | None,
                     out: BatchBuilder) -> None:
        out.set_context(VENDOR, FMT_AVRO)
        msg = Message(classify(rec, {"name": (schema or {}).get("name")}, topic), rec, avro=(schema, skey))
        self._guarded(lambda: self._emit(msg, FMT_AVRO, key, topic, None, out), out)

    # -- raw messages ----------------------------------------------------------------------------------------
    def decode_message(self, value: bytes | None, meta: MessageMeta, out: BatchBuilder) -> None:
        out.set_context(VENDOR, FMT_JSON)
        self._guarded(lambda: self._value(value, meta.key, meta.topic, meta.headers, out), out)

    def _guarded(self, step, out: BatchBuilder) -> None:
        """Decode one message; any failure quarantines it (nothing raises out of the adapter)."""
        try:
            step()
        except DecodeError as exc:
            out.quarantine(exc.error_class, exc.message)
        except Exception as exc:
            out.quarantine("decode_failed", f"unexpected {type(exc).__name__}: {exc}; this is a cdcnorm bug — "
                                            "report it with the raw message")

    def _value(self, value: bytes | None, key: Any, topic: str | None, headers: Any, out: BatchBuilder) -> None:
        if value is None or not value.strip():
            out.filtered(TOMBSTONE_RULE)
            return
        if value[:1] == b"\x00":
            out.set_context(VENDOR, FMT_REGISTRY)
            rec, schema, skey = self._registry_datum(value, "message value")
            msg = Message(classify(rec, {"name": (schema or {}).get("name")}, topic), rec, avro=(schema, skey))
            self._emit(msg, FMT_REGISTRY, key, topic, headers, out)
            return
        payload, schema, skey, _ = parse_json(value)
        self._emit(self._message(payload, schema, skey, topic), FMT_JSON, key, topic, headers, out)

    @staticmethod
    def _message(payload: Any, schema: Any, skey: bytes | None, topic: str | None) -> Message:
        return Message(classify(payload, schema, topic), payload, schema, skey)

    def _registry_datum(self, value: bytes, what: str) -> tuple[Any, Any, bytes]:
        if len(value) < 5:
            raise DecodeError("truncated_avro", f"a Schema Registry {what} shorter than its 5-byte header")
        sid = int.from_bytes(value[1:5], "big")
        text = self._registry.get(sid)
        if text is None:
            raise DecodeError("schema_not_found", f"the registry schema {sid} of this {what} is unknown; add it to "
                                                  "the `schema_registry` folder, then `cdcnorm quarantine retry`")
        found = self._parsed.get(sid)
        if found is None:
            doc = orjson.loads(text) if isinstance(text, str) else text
            found = self._parsed[sid] = (parse_avro_schema(text, f"registry schema {sid}"), doc)
        rec = read_datum(value[5:], found[0], text, f"the Avro {what} of schema {sid}")
        return rec, found[1], f"registry:{sid}".encode()

    # -- a key change without its headers: a delete and a create at one position --------------------------------
    def post_process(self, changes: DataFrame) -> DataFrame:
        """A DELETE and an INSERT of one table at one log position are the two halves of a primary-key change
        (Debezium emits an update of the key that way): both are flagged `key_change`. With the
        `__debezium.newkey` / `oldkey` headers the decoder flagged them already."""
        if not self.options.link_key_changes:
            return changes
        pairs = (changes.where(F.col(B.PAIR).isNotNull()).groupBy(F.col(B.PAIR).alias("_kc_pair"))
                 .agg((F.size(F.collect_set(B.PAIR_ROLE)) > 1).alias("_kc_both")))
        joined = changes.join(pairs, F.col(B.PAIR) == F.col("_kc_pair"), "left")
        both = F.coalesce(F.col("_kc_both"), F.lit(False))
        flags = F.coalesce(F.col("flags"), F.array().cast("array<string>"))
        return (joined.withColumn("flags", F.when(both, F.array_union(flags, F.array(F.lit("key_change"))))
                                  .otherwise(F.col("flags")))
                .drop("_kc_pair", "_kc_both"))

    # -- one message -----------------------------------------------------------------------------------------
    def _emit(self, msg: Message, fmt: str, key: Any, topic: str | None, headers: Any, out: BatchBuilder) -> None:
        kind, p = msg.kind, msg.payload
        if kind == "tombstone":
            out.filtered(TOMBSTONE_RULE)
        elif kind == "notification":
            out.filtered(NOTIFICATION_RULE)
        elif kind == "heartbeat":
            out.change(control.heartbeat(p, fmt, self._heartbeat_stream(key, topic)))
        elif kind == "transaction":
            out.change(control.transaction(p, fmt, self._topic_stream(topic, ".transaction")))
        elif kind == "schema_change":
            src = p.get("source") if isinstance(p.get("source"), dict) else {}
            changes, versions = control.schema_change(p, fmt, self.stream_name(src.get("name"), VENDOR))
            for v in versions:
                out.schema(v)
            for c in changes:
                out.change(c)
        elif p.get("op") == "m":
            out.filtered(MESSAGE_RULE)
        else:
            self._data(msg, fmt, key, headers, out)

    def _heartbeat_stream(self, key: Any, topic: str | None) -> str:
        parsed = parse_key(key, self.modes) if key is not None and key[:1] != b"\x00" else None
        name = parsed.payload.get("serverName") if parsed else None
        if not name and topic and topic.startswith(HEARTBEAT_TOPIC):
            name = topic[len(HEARTBEAT_TOPIC):].lstrip(".-") or None
        return self.stream_name(name, VENDOR)

    def _topic_stream(self, topic: str | None, suffix: str) -> str:
        name = topic[: -len(suffix)] if topic and topic.endswith(suffix) else None
        return self.stream_name(name, VENDOR)

    def _key(self, key: Any) -> Key | None:
        if key is None:
            return None
        if isinstance(key, dict):  # a record of a sink's Avro key file
            return Key(key)
        if isinstance(key, bytes | bytearray) and key[:1] == b"\x00":
            rec, schema, skey = self._registry_datum(bytes(key), "message key")
            if not isinstance(rec, dict):
                return None
            return Key(rec, avro_row_type(schema, skey, self.modes, image=False))
        return parse_key(key, self.modes)

    def _row_type(self, msg: Message, names: tuple) -> RowType:
        rt = None
        if msg.avro is not None:
            rt = avro_row_type(msg.avro[0], msg.avro[1], self.modes)
        elif msg.schema is not None:
            rt = connect_row_type(msg.schema, msg.schema_key, self.modes)
        if rt is not None:
            return rt
        return untyped_row_type(per_table(self.options.column_types, names), self.modes)

    def _data(self, msg: Message, fmt: str, key: Any, headers: Any, out: BatchBuilder) -> None:
        p = msg.payload
        src = p["source"]
        connector = connector_of(src) or ""
        names = table_of(connector, src)
        row = self._row_type(msg, names)
        header_names = frozenset(h[0] for h in headers or () if h and h[0]) if headers else frozenset()
        ev = Event(p, fmt, self.stream_name(src.get("name"), VENDOR), row, self._key(key), header_names,
                   option_keys(self.options.keys, names), self._unavailable, self.options.link_key_changes)
        change = data_change(ev)
        out.change(change)
        if row.typed and row.columns:
            self._send_version(change, row.version, row.columns, out)
        elif not row.typed and row.decoders:
            image = change.after if change.after is not None else change.before
            if image:
                declared = declared_columns(list(image) + (change.missing_columns or []), row)
                self._send_version(change, declared_version(declared), declared, out)

    def _send_version(self, change, version: str, cols: list[tuple[str, str | None, str | None, bool | None]],
                      out: BatchBuilder) -> None:
        """The table's schema version, once per version and stream: the value schema's columns, or the columns
        a user declared for schemaless rows (`first_seen`: the first row's source time)."""
        sent = (change.stream, change.database, change.schema, change.table, version)
        if sent in self._versions_sent:
            return
        self._versions_sent.add(sent)
        pks = change.primary_keys or []
        columns = [SchemaColumn(name=n, vendor_type=vt, canonical_type=ct, ordinal=i + 1,
                                pk_position=pks.index(n) + 1 if n in pks else None, nullable=nullable)
                   for i, (n, vt, ct, nullable) in enumerate(cols)]
        out.schema(SchemaVersion(vendor=VENDOR, stream=change.stream, schema_version=version, columns=columns,
                                 source_db=change.source_db, database=change.database, schema=change.schema,
                                 table=change.table, first_seen=change.source_ts or change.capture_ts))





def _nth(items: list[Any] | None, i: int) -> Any:
    """The i-th key of a sink's key file (None without one, or past its end)."""
    return items[i] if items is not None and 0 <= i < len(items) else None
