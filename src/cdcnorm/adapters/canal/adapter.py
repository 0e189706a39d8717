"""canal-json flat messages -> canonical change rows.

Inputs: Kafka-shaped DataFrames (one flat message per `value`) through :meth:`CanalAdapter.decode_message`,
and files of flat messages (JSON lines, concatenated or pretty-printed objects, an array; gzip undone), or of
`kcat -J` lines whose `payload` is the message. What a message becomes: a DML / INIT message one row per
element of `data` (`changes.py`); a DDL message a DDL or TRUNCATE row and a TiCDC watermark a HEARTBEAT row
(`control.py`); the protocol's transaction / heartbeat events a counted filter; anything else is quarantined
with the reason. Each distinct `mysqlType` map also gives the table's schema version.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any, ClassVar

import orjson

from cdcnorm import containers
from cdcnorm.adapters.base import Adapter, AdapterOptions, MessageMeta
from cdcnorm.adapters.canal import control, envelope
from cdcnorm.adapters.canal.changes import Context, Place, row_changes
from cdcnorm.adapters.canal.options import CanalOptions
from cdcnorm.adapters.canal.rows import RowType
from cdcnorm.adapters.canal.spec import SPEC
from cdcnorm.canonical.emit import BatchBuilder
from cdcnorm.canonical.record import Change, SchemaVersion
from cdcnorm.errors import DecodeError

VENDOR = SPEC.name
FMT_JSON = SPEC.formats[0]
CONTROL_RULE = "canal_protocol_event"


class CanalAdapter(Adapter):
    """Alibaba Canal canal-json flat messages (and TiCDC / Huawei DRS canal-json) -> canonical change rows."""

    name: ClassVar[str] = VENDOR
    formats: ClassVar[tuple[str, ...]] = SPEC.formats
    flags: ClassVar[tuple[str, ...]] = SPEC.flags
    Options: ClassVar[type[AdapterOptions]] = CanalOptions

    def __init__(self, options: dict[str, Any] | AdapterOptions | None = None):
        super().__init__(options)
        o = self.options
        self._ctx = Context(FMT_JSON, self.stream_name(None, VENDOR), o.source_db, o.time_zone,
                            o.batch_id_identity, o.database, o.table)
        self._versions_sent: set[tuple] = set()

    @classmethod
    def sniff(cls, path: str | None, head: bytes) -> bool:
        return envelope.sniff(head)

    # -- files -----------------------------------------------------------------------------------------------
    def read_file(self, path: str, fh: IO[bytes], out: BatchBuilder) -> Iterator[None]:
        out.set_context(VENDOR, FMT_JSON)
        src = containers.open_source(fh)
        kind = containers.container_of(src)
        if kind == "empty":
            return
        if kind != "json":
            out.begin_record(path, 0, raw=src.read(containers.RAW_CAP))
            out.quarantine("unknown_format", f"{path}: not canal-json: expected JSON flat messages (one per line, "
                                             "concatenated or in an array) or kcat -J lines")
            yield
            return
        reader = containers.JsonRecords(src, orjson.loads)

        def origin(item: containers.Record | containers.Damage) -> dict[str, Any]:
            index = reader.line_of(item) if reader.lines_mode else item.index
            doc = item.value if isinstance(item, containers.Record) else None
            if _is_kcat(doc):
                return {"index": index, "partition": str(doc.get("partition")), "offset": str(doc.get("offset")),
                        "raw": item.raw}
            return {"index": index, "raw": item.raw}

        def decode(rec: containers.Record) -> None:
            doc = rec.value
            if _is_kcat(doc):
                payload = doc.get("payload")
                if payload is None:
                    raise DecodeError("empty_message", "a kcat -J line without a payload (a tombstone)")
                try:
                    msg = orjson.loads(payload) if isinstance(payload, str) else payload
                except orjson.JSONDecodeError as exc:
                    raise DecodeError("bad_json", f"the payload of a kcat -J line is not JSON ({exc})") from None
                place = Place(f"{doc.get('topic')}/{doc.get('partition')}", envelope.int_or_none(doc.get("offset"))
                              or 0)
            else:
                msg, place = doc, Place(path, rec.index)
            self._message(msg, place, out)

        yield from containers.each_record(path, reader, out, decode, origin)

    # -- raw messages ----------------------------------------------------------------------------------------
    def decode_message(self, value: bytes | None, meta: MessageMeta, out: BatchBuilder) -> None:
        out.set_context(VENDOR, FMT_JSON)
        if value is None or not value.strip():
            out.quarantine("empty_message", "a message without a value: canal-json sends none")
            return
        try:
            msg = orjson.loads(value)
        except orjson.JSONDecodeError as exc:
            out.quarantine("bad_json", f"a canal-json message is one JSON object ({exc}); a binary value is the "
                                       "protobuf Message of `canal.mq.flatMessage=false`, which is not read")
            return
        offset = envelope.int_or_none(meta.offset)
        try:
            self._message(msg, Place(f"{meta.topic}/{meta.partition}", offset or 0), out)
        except DecodeError as exc:
            out.quarantine(exc.error_class, exc.message)

    # -- one message -----------------------------------------------------------------------------------------
    def _message(self, obj: Any, place: Place, out: BatchBuilder) -> None:
        """One flat message; a failure that is not a DecodeError is quarantined as a cdcnorm bug."""
        try:
            self._decode(envelope.check(obj), place, out)
        except DecodeError:
            raise
        except Exception as exc:
            raise DecodeError("decode_failed", f"unexpected {type(exc).__name__}: {exc}; this is a cdcnorm bug — "
                                               "report it with the raw message") from None

    def _decode(self, msg: dict[str, Any], place: Place, out: BatchBuilder) -> None:
        vtype = msg["type"]
        if envelope.is_ddl(msg):
            out.change(control.ddl_change(msg, self._ctx, place))
        elif vtype in envelope.ROW_TYPES:
            changes, rt = row_changes(msg, self._ctx, place)
            for c in changes:
                out.change(c)
            if rt.version is not None:
                self._send_version(changes[0], rt, out)
        elif vtype == envelope.WATERMARK:
            out.change(control.watermark(msg, self._ctx, place))
        elif vtype in envelope.CONTROL_TYPES:
            out.filtered(CONTROL_RULE)
        else:
            raise DecodeError("unknown_op", f"type {vtype[:30]!r} is not a canal-json event type (INSERT, UPDATE, "
                                            "DELETE, INIT, a DDL type, TIDB_WATERMARK)")

    def _send_version(self, change: Change, rt: RowType, out: BatchBuilder) -> None:
        """The table's schema version as `mysqlType` names it, once per version and table."""
        sent = (change.database, change.table, rt.version)
        if sent in self._versions_sent:
            return
        self._versions_sent.add(sent)
        out.schema(SchemaVersion(vendor=VENDOR, stream=change.stream, schema_version=rt.version, columns=rt.columns,
                                 source_db=change.source_db, database=change.database, table=change.table,
                                 first_seen=change.source_ts or change.capture_ts))


def _is_kcat(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.keys() >= envelope.KCAT_FIELDS and "data" not in doc
