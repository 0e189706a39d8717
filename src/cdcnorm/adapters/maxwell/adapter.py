"""Maxwell's daemon output -> canonical change rows.

Inputs: files of JSON lines (a Kafka sink, `maxwell --producer=file`, `stdout`) and Kafka-shaped DataFrames of
raw messages (`decode_message`; the key `{"database", "table", "pk.<col>": ...}` names the primary key).

What a message becomes: `insert` / `update` / `delete` canonical rows; `bootstrap-insert` a SNAPSHOT row
(`bootstrap-start` / `bootstrap-complete` are counted as metadata: they carry no row); `database-*` and
`table-*` DDL rows with the table's schema version from `def`. An encrypted message is decrypted with the
`encryption_key` option, else refused with the reason.
"""

from __future__ import annotations

from typing import IO, Any, ClassVar

import orjson

from cdcnorm import containers
from cdcnorm.adapters.base import Adapter, AdapterOptions, MessageMeta
from cdcnorm.adapters.maxwell import envelope
from cdcnorm.adapters.maxwell.options import MaxwellOptions
from cdcnorm.adapters.maxwell.rows import Table, data_change
from cdcnorm.adapters.maxwell.schema_events import ddl_change
from cdcnorm.adapters.maxwell.spec import SPEC
from cdcnorm.adapters.maxwell.values import row_decoders
from cdcnorm.canonical.emit import BatchBuilder
from cdcnorm.canonical.record import split_key_change
from cdcnorm.errors import DecodeError

VENDOR = SPEC.name
(FMT_JSON,) = SPEC.formats
MARKER_KIND = "maxwell_bootstrap_marker"


class MaxwellAdapter(Adapter):
    """Maxwell's daemon JSON (rows, bootstrap, DDL; plain or encrypted) -> canonical change rows."""

    name: ClassVar[str] = VENDOR
    formats: ClassVar[tuple[str, ...]] = SPEC.formats
    flags: ClassVar[tuple[str, ...]] = SPEC.flags
    Options: ClassVar[type[AdapterOptions]] = MaxwellOptions

    def __init__(self, options: dict[str, Any] | AdapterOptions | None = None):
        super().__init__(options)
        o = self.options
        self._stream = self.stream_name(None, VENDOR)
        self._tables: dict[tuple[str | None, str | None], Table] = {}
        self._versions_sent: set[tuple] = set()
        self._keys = {k.lower(): list(v) for k, v in o.keys.items()}
        self._types = {k.lower(): dict(v) for k, v in o.column_types.items()}

    @classmethod
    def sniff(cls, path: str | None, head: bytes) -> bool:
        return envelope.sniff(head)

    # -- files and messages ----------------------------------------------------------------------------------
    def read_file(self, path: str, fh: IO[bytes], out: BatchBuilder):
        out.set_context(VENDOR, FMT_JSON)
        records = containers.JsonRecords(containers.open_source(fh), containers.loads_exact)
        yield from containers.each_record(path, records, out,
                                          lambda rec: self._decode(rec.value, (path, rec.index), None, out))

    def decode_message(self, value: bytes | None, meta: MessageMeta, out: BatchBuilder) -> None:
        out.set_context(VENDOR, FMT_JSON)
        if value is None or not value.strip():
            out.quarantine("empty_message", "a Maxwell message without a value")
            return
        lane = f"{meta.topic or ''}/{meta.partition or ''}"
        offset = int(meta.offset) if meta.offset is not None and str(meta.offset).isdigit() else 0
        try:
            self._decode(value, (lane, offset), meta.key, out)
        except DecodeError as exc:
            out.quarantine(exc.error_class, exc.message)

    def _decode(self, value: Any, delivery: tuple, key: bytes | None, out: BatchBuilder) -> None:
        """Decode one message; an unexpected failure is this record's quarantine, never the task's."""
        try:
            self._message(value, delivery, key, out)
        except DecodeError:
            raise
        except Exception as exc:
            raise DecodeError("decode_failed", f"unexpected {type(exc).__name__}: {exc}; this is a cdcnorm bug — "
                                               "report it with the raw message") from None

    def _message(self, value: Any, delivery: tuple, key: bytes | None, out: BatchBuilder) -> None:
        try:
            msg = envelope.parse(value, self.options.encryption_key, self.options.naming_strategy)
        except (ValueError, orjson.JSONDecodeError) as exc:
            raise DecodeError("bad_json", f"a Maxwell message is one JSON object ({exc})") from None
        kind = envelope.kind_of(msg)
        if kind == "marker":
            out.metadata(MARKER_KIND)
        elif kind == "ddl":
            change, version = ddl_change(msg, FMT_JSON, self._stream, delivery)
            if version is not None:
                self._send(version, out)
            out.change(change)
        else:
            table = self._table(msg.get("database"), msg.get("table"))
            change = data_change(msg, FMT_JSON, self._stream, table, delivery, _key_columns(key),
                                 self.options.output_nulls)
            for row in split_key_change(change):  # an update of the key: delete the old, insert the new
                out.change(row)

    def _table(self, database: Any, table: Any) -> Table:
        """Keys and declared types of a table from the options (`db.table`, else `table`), cached."""
        found = self._tables.get((database, table))
        if found is None:
            names = [f"{database}.{table}".lower(), str(table).lower()]
            keys = next((self._keys[n] for n in names if n in self._keys), None)
            types = next((self._types[n] for n in names if n in self._types), None)
            found = self._tables[(database, table)] = Table(keys, row_decoders(types) if types else None,
                                                            list(types) if types else None)
        return found

    def _send(self, version, out: BatchBuilder) -> None:
        sent = (version.stream, version.database, version.table, version.schema_version)
        if sent not in self._versions_sent:
            self._versions_sent.add(sent)
            out.schema(version)


def _key_columns(key: bytes | None) -> list[str] | None:
    """Primary-key columns named by a Kafka key: `{"database", "table", "pk.<col>": v}` (kafka_key_format=hash)
    or `["db", "table", [{"<col>": v}, ...]]` (array)."""
    if not key:
        return None
    try:
        doc = orjson.loads(key)
    except orjson.JSONDecodeError:
        return None
    if isinstance(doc, dict):
        cols = [k[3:] for k in doc if isinstance(k, str) and k.startswith("pk.")]
        return cols or None
    if isinstance(doc, list) and len(doc) == 3 and isinstance(doc[2], list):
        cols = [next(iter(d)) for d in doc[2] if isinstance(d, dict) and len(d) == 1]
        return cols or None
    return None

