"""Debezium encoder: Kafka records of two connectors (MySQL and PostgreSQL), as JSON with and without schemas
and as Confluent-framed Avro with the registry's schemas.

Written from docs/reference (debezium.md) and the documented event shapes, never from the decoder. Tables of
the history's `mysql` flavour are read by a MySQL connector (topic prefix `sim-mysql`, database `shop`), the
others by a PostgreSQL connector (`sim-pg`, schema `public`); a source transaction that spans both is one
Debezium transaction per connector. Each connector writes what a real one does with
`provide.transaction.metadata=true` and its default `tombstones.on.delete=true`: an initial snapshot (`op`
`r`, `snapshot` first ... last), then `c` / `u` / `d` / `t` events with a `transaction` block, BEGIN / END on
`<prefix>.transaction`, a tombstone after every delete, a primary-key change as delete + tombstone + create
linked by the `__debezium.oldkey` / `__debezium.newkey` headers, the MySQL schema-change topic (`<prefix>`),
and heartbeats on `__debezium-heartbeat.<prefix>` (the `heartbeats` quirk).

This module is the connectors' behaviour: which records they send, in which order, with which positions. The
records' Connect schemas and values come from `debezium_schemas.py`; their serialization and files from
`kafka_topics.py`.
"""

from __future__ import annotations

import json
import zlib
from collections import deque
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from cdcnorm.simulate.delivery import current_log
from cdcnorm.simulate.encoders import COMMON_KINDS, SimFormat
from cdcnorm.simulate.encoders.debezium_schemas import (
    DATABASE,
    HEARTBEAT_KEY,
    HEARTBEAT_VALUE,
    MYSQL_SERVER_ID,
    MYSQL_UUID,
    PG_SCHEMA,
    PREFIX,
    SCHEMA_CHANGE_KEY,
    SCHEMA_CHANGE_VALUE,
    TX_KEY,
    TX_VALUE,
    UNAVAILABLE,
    VERSION,
    Version,
    collection_of,
    column_value,
    connector_of,
    create_table_ddl,
    fallback,
    mysql_column,
    replica_identity_full,
    topic_of,
    vendor_type,
)
from cdcnorm.simulate.encoders.kafka_connect import json_value
from cdcnorm.simulate.encoders.kafka_topics import TopicFiles
from cdcnorm.simulate.history import Col, Event, TableDef
from cdcnorm.simulate.jsonx import dumps

DATA_PARTITIONS = 2
"""Data topics have two partitions (keyed records by key hash); control topics have one."""
HEARTBEAT_US = 20_000_000
"""heartbeats: `heartbeat.interval.ms` = 20 s of source time."""
RESTART_EVERY, RESTART_TXS, RESTART_DELAY_US = 80, 3, 5_000_000
"""connector_restart: after about every 80 data events a connector restarts at its next transaction end and
sends its last 3 transactions again, 5 s of processing time later."""
TOAST_COLUMN = {"customers": "email", "order_lines": "note", "events": "detail"}
"""toast: the column each template keeps TOASTed (an unchanged value is not in the WAL record)."""
REGISTRY_EXPORT = "schemas/debezium-avro"
"""Where the Avro format's registry schemas go (`<id>.avsc`, `subjects.json`): the `schema_registry` option."""


@dataclass
class _Rec:
    """One Kafka record before serialization: replayed as is after a connector restart."""

    topic: str
    partition: int
    key_schema: dict[str, Any] | None
    key: dict[str, Any] | None
    value_schema: dict[str, Any] | None
    value: dict[str, Any] | None
    headers: list[tuple[str, bytes]] = field(default_factory=list)
    envelope: bool = False
    """A data event: its processing times (`ts_ms` / `ts_us` / `ts_ns`) are set when it is sent."""
    ms: int = 0
    """The record's time when it is not an envelope (BEGIN / END, heartbeat, schema change)."""


@dataclass
class _Tx:
    id: str
    source_tx: int
    total: int = 0
    per_collection: dict[str, int] = field(default_factory=dict)
    last_lsn: int = 0
    records: list[_Rec] = field(default_factory=list)


class _Connector:
    """One Debezium connector's running state: its open transaction, positions and restart window."""

    def __init__(self, conn: str):
        self.conn, self.prefix = conn, PREFIX[conn]
        self.tx: _Tx | None = None
        self.gtid_no = 1000
        self.last_commit_lsn: int | None = None
        self.next_beat_us = 0
        self.last_us = 0
        self.since_restart = 0
        self.recent: deque[list[_Rec]] = deque(maxlen=RESTART_TXS)


def _processed_us(ev: Event) -> int:
    """When the connector processed a change: 0.12 .. 0.82 s after its commit (the envelope's `ts_*`)."""
    return ev.ts_us + 120_000 + (ev.seq * 7919) % 700_000


def lsn_of(seq: int) -> int:
    return (0x16 << 32) + 0x0B000000 + seq * 0x38


class DebeziumEncoder:
    """Writes `OUT/debezium/<fmt>/<topic>/partition=<p>/<topic>+<p>+<first offset>.<jsonl|avro>`.

    - json, json-noschema: `kcat -J` lines (:class:`~cdcnorm.simulate.encoders.kafka_topics.TopicFiles`).
      json: JsonConverter with schemas; json-noschema: without, the connector set to
      `decimal.handling.mode=string`.
    - avro: Avro container files of Kafka records as Spark's Kafka source reads them; keys and values are
      Confluent-framed Avro whose schemas are exported to `OUT/schemas/debezium-avro/`.
    """

    def __init__(self, out: Path, defs: tuple[TableDef, ...], seed: int, quirks: frozenset[str], rotate: int,
                 fmt: str):
        self.fmt, self.vf = fmt, f"debezium-{fmt}"
        self.out, self.root = out, out / "debezium" / fmt
        self.defs, self.seed, self.quirks, self.rotate = defs, seed, quirks, rotate
        self.string_decimals = fmt == "json-noschema"
        self.versions = {(t.index, v): Version(t, v, self.string_decimals) for t in defs for v in (1, 2)}
        self.current = {t.index: 1 for t in defs}
        self.connectors = {c: _Connector(c) for c in ("mysql", "postgresql")}
        self.snapshot_rows: list[tuple[TableDef, list[dict[str, Any]], int, int]] = []
        self.counts: dict[str, int] = {"records": 0, "files": 0, "restarts": 0, "toast": 0}
        self.topics = TopicFiles(self.root, self.vf, fmt, seed, quirks, rotate, self.counts)

    def identity(self, t: TableDef) -> dict[str, Any]:
        conn = connector_of(t)
        return {"vendor": "debezium", "stream": PREFIX[conn], "source_db": conn, "database": DATABASE,
                "schema": None if conn == "mysql" else PG_SCHEMA, "table": t.name}

    # -- snapshot ------------------------------------------------------------------------------------------
    def backfill(self, t: TableDef, rows: list[dict[str, Any]], ts_us: int, at_seq: int) -> None:
        self.snapshot_rows.append((t, rows, ts_us, at_seq))
        if t.index == len(self.defs) - 1:
            self._snapshot()

    def _snapshot(self) -> None:
        """Per connector: the MySQL CREATE schema changes, then every row as `r`, marked first ... last."""
        taken, self.snapshot_rows = self.snapshot_rows, []
        for conn in ("mysql", "postgresql"):
            mine = [(t, rows, ts, at) for t, rows, ts, at in taken if connector_of(t) == conn]
            if not mine:
                continue
            ts_us, at_seq = mine[0][2], mine[0][3]
            if conn == "mysql":
                for t, _, _, _ in mine:
                    self._schema_change(t, 1, "CREATE", create_table_ddl(t, 1), ts_us, at_seq, snapshot=True)
            total = sum(len(rows) for _, rows, _, _ in mine)
            n = 0
            for ti, (t, rows, _, _) in enumerate(mine):
                for ri, row in enumerate(rows):
                    n += 1
                    mark = "true"
                    if n == 1:
                        mark = "first"
                    elif n == total:
                        mark = "last"
                    elif ri == len(rows) - 1:
                        mark = "last_in_data_collection"
                    elif ri == 0 and ti > 0:
                        mark = "first_in_data_collection"
                    source = self._source(t, ts_us, at_seq, snapshot=mark)
                    rec = self._envelope(t, 1, "r", None, row, source, None)
                    self._send(rec, ts_us + 150_000 + n * 1_000)

    # -- changes -------------------------------------------------------------------------------------------
    def change(self, ev: Event) -> None:
        t = self.defs[ev.table]
        conn = self.connectors[connector_of(t)]
        conn.last_us = ev.ts_us
        self._heartbeat(conn, ev.ts_us)
        if ev.kind == "DDL":
            self.current[t.index] = ev.version
            if conn.conn == "mysql":  # PostgreSQL has no schema-change topic: the next event has the new schema
                ddl = ev.ddl or ""
                self._schema_change(t, ev.version, "ALTER", ddl, ev.ts_us, ev.seq)
        elif ev.kind == "TRUNCATE":
            self._data(conn, t, ev, "t", None, None, in_tx=conn.conn == "postgresql")
        elif ev.kind == "INSERT":
            self._data(conn, t, ev, "c", None, ev.after)
        elif ev.kind == "DELETE":
            self._delete(conn, t, ev, ev.before)
        elif ev.key_change:
            self._delete(conn, t, ev, ev.before, new_row=ev.after)
            self._data(conn, t, ev, "c", None, ev.after, headers=[("__debezium.oldkey", self._key_text(t, ev.before))])
        else:
            self._update(conn, t, ev)
        if ev.tx_last:
            for c in self.connectors.values():
                if c.tx is not None and c.tx.source_tx == ev.tx:
                    self._end(c, ev.ts_us)

    def _update(self, conn: _Connector, t: TableDef, ev: Event) -> None:
        before: dict[str, Any] | None = ev.before
        after = ev.after or {}
        if conn.conn == "postgresql" and not replica_identity_full(t):
            before = None
            col = TOAST_COLUMN[t.template]
            if "toast" in self.quirks and col not in (ev.changed or ()) and after.get(col) is not None:
                after = {**after, col: UNAVAILABLE}
                self.counts["toast"] += 1
        self._data(conn, t, ev, "u", before, after)

    def _delete(self, conn: _Connector, t: TableDef, ev: Event, row: dict[str, Any],
                new_row: dict[str, Any] | None = None) -> None:
        before = row
        if conn.conn == "postgresql" and not replica_identity_full(t):
            v = self.versions[(t.index, self.current[t.index])]
            before = {c.name: row[c.name] if c.name in t.primary_key else
                      (None if c.nullable else _Fallback(v.col_schemas[c.name])) for c in v.columns}
        headers = [] if new_row is None else [("__debezium.newkey", self._key_text(t, new_row))]
        self._data(conn, t, ev, "d", before, None, headers=headers)
        key = self._key(t, row)
        tomb = _Rec(topic_of(t), self._partition(t, key), self.versions[(t.index, 1)].key, key, None, None)
        self._queue(conn, tomb, _processed_us(ev) + 1)

    def _data(self, conn: _Connector, t: TableDef, ev: Event, op: str, before: dict[str, Any] | None,
              after: dict[str, Any] | None, headers: list[tuple[str, bytes]] | None = None,
              in_tx: bool = True) -> None:
        block = None
        source = self._source(t, ev.ts_us, ev.seq, tx=ev.tx if in_tx else None)
        if in_tx:
            tx = self._begin(conn, ev)
            coll = collection_of(t)
            tx.total += 1
            tx.per_collection[coll] = tx.per_collection.get(coll, 0) + 1
            tx_id = tx.id
            if conn.conn == "postgresql":
                tx.last_lsn = lsn_of(ev.seq)
                tx_id = f"{tx.id}:{tx.last_lsn}"
            block = {"id": tx_id, "total_order": tx.total, "data_collection_order": tx.per_collection[coll]}
            if conn.conn == "mysql":
                source["gtid"] = tx.id
            conn.since_restart += 1
        rec = self._envelope(t, self.current[t.index], op, before, after, source, block, headers or [])
        self._queue(conn, rec, _processed_us(ev))

    # -- transactions ----------------------------------------------------------------------------------------
    def _begin(self, conn: _Connector, ev: Event) -> _Tx:
        if conn.tx is not None and conn.tx.source_tx == ev.tx:
            return conn.tx
        if conn.tx is not None:  # never left open by the history (its transactions end with tx_last)
            self._end(conn, ev.ts_us)
        if conn.conn == "mysql":
            conn.gtid_no += 1
            tx = _Tx(f"{MYSQL_UUID}:{conn.gtid_no}", ev.tx)
            begin_id = tx.id
        else:
            tx = _Tx(str(760 + ev.tx), ev.tx)
            begin_id = f"{tx.id}:{lsn_of(ev.seq) - 0x8}"
        conn.tx = tx
        value = {"status": "BEGIN", "id": begin_id, "event_count": None, "data_collections": None,
                 "ts_ms": ev.ts_us // 1000}
        self._queue(conn, self._tx_record(conn, begin_id, value), ev.ts_us // 1000)
        return tx

    def _end(self, conn: _Connector, ts_us: int) -> None:
        tx = conn.tx
        assert tx is not None
        end_id = tx.id if conn.conn == "mysql" else f"{tx.id}:{tx.last_lsn}"
        value = {"status": "END", "id": end_id, "event_count": tx.total,
                 "data_collections": [{"data_collection": k, "event_count": n} for k, n in tx.per_collection.items()],
                 "ts_ms": ts_us // 1000}
        self._queue(conn, self._tx_record(conn, end_id, value), ts_us // 1000)
        if conn.conn == "postgresql":
            conn.last_commit_lsn = tx.last_lsn + 0x18
        conn.tx = None
        conn.recent.append(tx.records)
        if "connector_restart" in self.quirks and conn.since_restart >= RESTART_EVERY:
            self._restart(conn, ts_us)

    def _tx_record(self, conn: _Connector, tx_id: str, value: dict[str, Any]) -> _Rec:
        return _Rec(f"{conn.prefix}.transaction", 0, TX_KEY, {"id": tx_id}, TX_VALUE, value, ms=value["ts_ms"])

    def _restart(self, conn: _Connector, ts_us: int) -> None:
        """The connector restarts from an offset a few transactions back: those records again, new offsets,
        later processing times, the same source positions."""
        conn.since_restart = 0
        self.counts["restarts"] += 1
        log = current_log()
        late, log_late = (log.late_seq, log) if log is not None else (None, None)
        if log_late is not None:
            log_late.late_seq = None  # a replay is not the late copy of the event being encoded
        when = ts_us + RESTART_DELAY_US
        for records in list(conn.recent):
            for rec in records:
                when += 1_000
                self._send(rec, when)
        conn.recent.clear()
        if log_late is not None:
            log_late.late_seq = late

    # -- control topics ------------------------------------------------------------------------------------
    def _heartbeat(self, conn: _Connector, ts_us: int) -> None:
        if "heartbeats" not in self.quirks:
            return
        if conn.next_beat_us == 0:
            conn.next_beat_us = ts_us + HEARTBEAT_US
        if ts_us >= conn.next_beat_us:
            conn.next_beat_us = ts_us + HEARTBEAT_US
            rec = _Rec(f"__debezium-heartbeat.{conn.prefix}", 0, HEARTBEAT_KEY, {"serverName": conn.prefix},
                       HEARTBEAT_VALUE, {"ts_ms": ts_us // 1000}, ms=ts_us // 1000)
            self._send(rec, ts_us)

    def _schema_change(self, t: TableDef, version: int, kind: str, ddl: str, ts_us: int, seq: int,
                       snapshot: bool = False) -> None:
        columns = [mysql_column(c, i + 1) for i, c in enumerate(t.columns_at(version))]
        value = {
            "source": self._source(t, ts_us, seq, snapshot="true" if snapshot else "false"),
            "ts_ms": ts_us // 1000 + 95, "databaseName": DATABASE, "schemaName": None, "ddl": ddl,
            "tableChanges": [{"type": kind, "id": f'"{DATABASE}"."{t.name}"', "table": {
                "defaultCharsetName": "utf8mb4", "primaryKeyColumnNames": list(t.primary_key), "columns": columns,
                "comment": None}, "comment": None}],
        }
        rec = _Rec(PREFIX["mysql"], 0, SCHEMA_CHANGE_KEY, {"databaseName": DATABASE}, SCHEMA_CHANGE_VALUE, value,
                   ms=ts_us // 1000 + 95)
        self._send(rec, ts_us, barrier=True)  # the schema history is never reordered

    # -- envelopes -----------------------------------------------------------------------------------------
    def _source(self, t: TableDef, ts_us: int, seq: int, snapshot: str = "false",
                tx: int | None = None) -> dict[str, Any]:
        conn = connector_of(t)
        src: dict[str, Any] = {"version": VERSION, "connector": conn, "name": PREFIX[conn]}
        if conn == "mysql":  # binlog times are whole seconds
            ms = ts_us // 1_000_000 * 1000
            src.update(ts_ms=ms, snapshot=snapshot, db=DATABASE, sequence=None, ts_us=ms * 1000,
                       ts_ns=ms * 1_000_000, table=t.name,
                       server_id=0 if snapshot != "false" else MYSQL_SERVER_ID, gtid=None,
                       file=f"mysql-bin.{1 + seq // 50_000:06d}", pos=4 + (seq % 50_000) * 173, row=0,
                       thread=None if snapshot != "false" else 42, query=None)
            return src
        lsn = lsn_of(seq)
        last_commit = self.connectors["postgresql"].last_commit_lsn if snapshot == "false" else None
        sequence = json.dumps([None if last_commit is None else str(last_commit), str(lsn)], separators=(",", ":"))
        src.update(ts_ms=ts_us // 1000, snapshot=snapshot, db=DATABASE, sequence=sequence, ts_us=ts_us,
                   ts_ns=ts_us * 1000, schema=PG_SCHEMA, table=t.name,
                   txId=760 + (tx if tx is not None else 0), lsn=lsn, xmin=None)
        return src

    def _envelope(self, t: TableDef, version: int, op: str, before: dict[str, Any] | None,
                  after: dict[str, Any] | None, source: dict[str, Any], block: dict[str, Any] | None,
                  headers: list[tuple[str, bytes]] | None = None) -> _Rec:
        v = self.versions[(t.index, version)]
        conn = connector_of(t)
        value = {"before": self._image(conn, v, before), "after": self._image(conn, v, after), "source": source,
                 "transaction": block, "op": op, "ts_ms": None, "ts_us": None, "ts_ns": None}
        row = after if after is not None else before
        key = self._key(t, row) if row is not None and t.primary_key else None
        return _Rec(topic_of(t), self._partition(t, key), v.key if key is not None else None, key, v.envelope,
                    value, headers or [], envelope=True)

    def _image(self, conn: str, v: Version, row: dict[str, Any] | None) -> dict[str, Any] | None:
        if row is None:
            return None
        out = {}
        for c in v.columns:
            x = row.get(c.name)
            if isinstance(x, _Fallback) and c.base != "decimal":
                out[c.name] = fallback(x.schema)
                continue
            if isinstance(x, _Fallback):  # a decimal's zero keeps its scale in either decimal mode
                x = Decimal(0).scaleb(-c.precision_scale[1])
            out[c.name] = column_value(conn, c, x, self.string_decimals)
        return out

    def _key(self, t: TableDef, row: dict[str, Any]) -> dict[str, Any] | None:
        if not t.primary_key:
            return None
        conn = connector_of(t)
        return {k: column_value(conn, t.col(k), row[k], self.string_decimals) for k in t.primary_key}

    def _key_text(self, t: TableDef, row: dict[str, Any]) -> bytes:
        """A key as a header value: its JSON text (the key struct's fields)."""
        return dumps(json_value(self.versions[(t.index, 1)].key, self._key(t, row)))

    @staticmethod
    def _partition(t: TableDef, key: dict[str, Any] | None) -> int:
        if key is None:
            return 0
        return zlib.crc32(repr(sorted(key.items())).encode()) % DATA_PARTITIONS

    # -- delivery --------------------------------------------------------------------------------------------
    def _queue(self, conn: _Connector, rec: _Rec, when_us: int) -> None:
        """Send a record of the connector's open transaction window (kept for a restart's replay)."""
        if conn.tx is not None:
            conn.tx.records.append(rec)
        else:
            conn.recent.append([rec])
        self._send(rec, when_us)

    def _send(self, rec: _Rec, when_us: int, barrier: bool = False) -> None:
        """A data event gets its processing times (`ts_ms` / `ts_us` / `ts_ns`) as it is sent."""
        value = rec.value
        ms = rec.ms or when_us // 1000
        if rec.envelope and value is not None:
            value = {**value, "ts_ms": when_us // 1000, "ts_us": when_us, "ts_ns": when_us * 1000 + when_us % 997}
            ms = when_us // 1000
        self.topics.send(rec.topic, rec.partition, rec.key_schema, rec.key, rec.value_schema, value, rec.headers,
                         ms, barrier=barrier)

    def close(self) -> None:
        if self.snapshot_rows:
            self._snapshot()
        for c in self.connectors.values():
            if c.tx is not None:
                self._end(c, c.last_us)
        self.topics.close(self.out / REGISTRY_EXPORT)


class _Fallback:
    """A required column a key-only before image has no value for (filled with the schema's fallback)."""

    __slots__ = ("schema",)

    def __init__(self, s: dict[str, Any]):
        self.schema = s




# -- what the formats carry (the truth projection; docs/simulate.md states it rule by rule) -------------------
def truth_kind(flavour: str, col: Col) -> str:
    """Every Debezium format: exact decimals, dates, µs timestamps (MySQL DATETIME without a zone, PostgreSQL
    timestamptz with one), bytes; the schemaless format reaches the same values through the declared types."""
    if col.base == "timestamp":
        return "timestamp_ntz" if flavour == "mysql" else "timestamp"
    return {"decimal": "decimal", "date": "date", "binary": "bytes"}.get(col.base) or COMMON_KINDS[col.base]


_DECLARED = {"int": "int", "bigint": "bigint", "double": "double", "boolean": "boolean", "string": "string",
             "date": "date", "binary": "binary"}


def declared_type(source_db: str, source_type: str) -> str:
    """The column type a user declares for the schemaless format (Spark SQL names)."""
    if source_type.startswith("decimal"):
        return source_type
    if source_type == "timestamp":
        return "timestamp_ntz" if source_db == "mysql" else "timestamp"
    return _DECLARED[source_type]


def noschema_options(out: Path, info: dict[str, Any]) -> dict[str, Any]:
    """Without schemas a base64 or string decimal, µs or ms, bytes or text cannot be told apart: a user states
    the connector's modes and every column's type, per data collection (`db.table` / `schema.table`)."""
    types: dict[str, dict[str, str]] = {}
    for name, t in info["tables"].items():
        coll = f"{t['schema'] or t['database']}.{name}"
        types[coll] = {c["name"]: declared_type(t["source_db"], c["source_type"]) for c in t["columns"]}
    return {"decimal_handling": "string", "time_precision": "adaptive_time_microseconds",
            "binary_handling": "bytes", "column_types": types}


def avro_options(out: Path, info: dict[str, Any]) -> dict[str, Any]:
    return {"schema_registry": str(Path(out) / REGISTRY_EXPORT)}


def _vendor_type(string_decimals: bool):
    return lambda t, c: vendor_type(connector_of(t), c, string_decimals)


FORMATS = (
    SimFormat("debezium", "json", DebeziumEncoder, truth_kind, _vendor_type(False), carries_truncate=True),
    SimFormat("debezium", "json-noschema", DebeziumEncoder, truth_kind, _vendor_type(True), carries_truncate=True,
              user_options=noschema_options),
    SimFormat("debezium", "avro", DebeziumEncoder, truth_kind, _vendor_type(False), carries_truncate=True,
              extra_outputs=(REGISTRY_EXPORT,), user_options=avro_options),
)
"""The Debezium formats the simulator writes (truncates and the added column are carried)."""
