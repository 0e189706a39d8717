"""Alibaba DataWorks -> DataHub encoder: Blob JSON (one per line, or concatenated) and Tuple CSV.

Written from docs/reference (datahub.md) and the vendor's documented Blob message format, never from the
decoder. Blob values use the six StreamX types (no exact decimal: DECIMAL travels as STRING; DATE and
timestamps as epoch milliseconds); an UPDATE is an UPDATE_BEFOR + UPDATE_AFTER pair sharing a sequenceId.
With the `aliyun_json` quirk the Blob lines format (`datahub-blob`) carries the traits of real DataWorks
"aliyun-json" output (reference item 13): about half of the updates are ONE `UPDATE_AFTER` message with both
images (some of those are delivered again as a separate `UPDATE_BEFOR` half), full-load records carry
`sequenceId "-1"` and `eventTime`/`checkpointTime` -1, and DOUBLE values are strings (`"1.100000"`).
Tuple topics are one table each with a fixed schema: no DDL, truncate, heartbeat or transaction markers.
"""

from __future__ import annotations

import base64
import csv
import datetime as dt
import zlib
from pathlib import Path
from typing import Any

import orjson

from cdcnorm.simulate.delivery import ConcatFile, Lane, LinesFile, Rotator, lane_rng
from cdcnorm.simulate.encoders import COMMON_KINDS, SimFormat
from cdcnorm.simulate.history import EPOCH, Col, Event, TableDef
from cdcnorm.simulate.jsonx import plain

DB_NAME, DB_TYPE, DB_VERSION, PROJECT = "shop", "MySQL", "8.0.32", "sim_project"
BLOB_TOPIC = "sim_shop_blob"
SHARDS = 2
FULL_LOAD_BASE, CDC_BASE = 1_600_000_000_000_000_000, 1_700_000_000_000_000_000
HEARTBEAT_EVERY = 97
ONE_MESSAGE_SHARE = 0.5
"""aliyun_json: share of updates delivered as one message carrying both images."""
OTHER_SHAPE_SHARE = 0.2
"""aliyun_json: share of one-message updates whose UPDATE_BEFOR half is also delivered on its own."""
FULL_LOAD_SENTINEL = "-1"
"""aliyun_json: the sequenceId (and, as a number, eventTime/checkpointTime) of a full-load record."""
TUPLE_META = ("_sequence_id_", "_operation_type_", "_excute_time_", "_source_table_", "_before_image_", "_after_image_")

_BLOB_TYPES = {"int": "LONG", "bigint": "LONG", "decimal": "STRING", "double": "DOUBLE", "boolean": "BOOLEAN",
               "string": "STRING", "date": "DATE", "timestamp": "DATE", "binary": "BYTES"}
_TUPLE_TYPES = {"int": "INTEGER", "bigint": "BIGINT", "decimal": "DECIMAL", "double": "DOUBLE", "boolean": "BOOLEAN",
                "string": "STRING", "date": "TIMESTAMP", "timestamp": "TIMESTAMP", "binary": "STRING"}


def blob_type(col: Col) -> str:
    return _BLOB_TYPES[col.base]


def tuple_type(col: Col) -> str:
    return _TUPLE_TYPES[col.base]


def _ms(v: dt.date | dt.datetime) -> int:
    if not isinstance(v, dt.datetime):
        v = dt.datetime(v.year, v.month, v.day, tzinfo=dt.UTC)
    return (v - EPOCH) // dt.timedelta(milliseconds=1)


def _us(v: dt.date | dt.datetime) -> int:
    if not isinstance(v, dt.datetime):
        v = dt.datetime(v.year, v.month, v.day, tzinfo=dt.UTC)
    return (v - EPOCH) // dt.timedelta(microseconds=1)


def blob_value(col: Col, v: Any) -> Any:
    if v is None:
        return None
    base = col.base
    if base == "decimal":
        return plain(v)
    if base in ("date", "timestamp"):
        return _ms(v)
    if base == "binary":
        return base64.b64encode(v).decode("ascii")
    return v


def _double_text(col: Col, v: Any) -> Any:
    """aliyun-json: a DOUBLE value as DataWorks' fixed six-decimal text (`"1.100000"`); others as documented.
    The history's doubles have at most six decimals, so the text reads back as the same double."""
    if col.base == "double" and v is not None:
        return f"{v:.6f}"
    return blob_value(col, v)


def tuple_value(col: Col, v: Any) -> str:
    """CSV text of a Tuple field; the empty field is NULL (the history never writes empty strings)."""
    if v is None:
        return ""
    base = col.base
    if base == "decimal":
        return plain(v)
    if base in ("date", "timestamp"):
        return str(_us(v))
    if base == "binary":
        return base64.b64encode(v).decode("ascii")
    if base == "boolean":
        return "true" if v else "false"
    if base == "double":
        return repr(v)
    return str(v)


def _shard(t: TableDef, row: dict[str, Any] | None) -> int:
    """Keyed tables shard by primary key, keyless ones by table name (the documented Blob strategy)."""
    basis = repr(t.key_of(row)) if t.primary_key and row is not None else t.name
    return zlib.crc32(basis.encode()) % SHARDS


class _Seq:
    """DataHub sequence ids: full-load rows below every CDC id; an UPDATE's two halves share one id."""

    def __init__(self) -> None:
        self.full = self.cdc = 0

    def next_full(self) -> str:
        self.full += 1
        return str(FULL_LOAD_BASE + self.full)

    def next_cdc(self) -> str:
        self.cdc += 1
        return str(CDC_BASE + self.cdc)


class DataHubBlobEncoder:
    """Writes `OUT/datahub/<blob|concat>/shard_<k>/part-N.<jsonl|json>` for one BLOB topic (the database)."""

    def __init__(self, out: Path, defs: tuple[TableDef, ...], seed: int, quirks: frozenset[str], rotate: int,
                 fmt: str):
        self.fmt, self.vf = fmt, f"datahub-{fmt}"
        self.root = out / "datahub" / fmt
        self.defs, self.seed, self.quirks, self.rotate = defs, seed, quirks, rotate
        self.seq = _Seq()
        self.versions = [1] * len(defs)
        self.lanes: dict[int, Lane] = {}
        self.rotators: dict[int, Rotator] = {}
        self.puts = 0
        self.update_no = 0
        self.counts: dict[str, int] = {"records": 0, "files": 0}
        self.aliyun = "aliyun_json" in quirks and fmt == "blob"
        self.shape_rng = lane_rng(seed, self.vf, "aliyun_json")

    def identity(self, t: TableDef) -> dict[str, Any]:
        return {"vendor": "datahub", "stream": f"{PROJECT}/{BLOB_TOPIC}", "source_db": "mysql", "database": DB_NAME,
                "schema": None, "table": t.name}

    def _source(self, t: TableDef) -> dict[str, Any]:
        return {"dbType": DB_TYPE, "dbVersion": DB_VERSION, "dbName": DB_NAME, "tableName": t.name}

    def _schema(self, t: TableDef) -> dict[str, Any]:
        cols = t.columns_at(self.versions[t.index])
        return {"dataColumn": [{"name": c.name, "type": blob_type(c)} for c in cols],
                "primaryKey": list(t.primary_key), "source": self._source(t)}

    def _image(self, t: TableDef, row: dict[str, Any]) -> dict[str, Any]:
        cols = t.columns_at(self.versions[t.index])
        if self.aliyun:
            return {"dataColumn": {c.name: _double_text(c, row.get(c.name)) for c in cols}}
        return {"dataColumn": {c.name: blob_value(c, row.get(c.name)) for c in cols}}

    def _record(self, schema: dict, op: str, seq: str | None, ms: int, *, before=None, after=None, ddl=None,
                full_load: bool = False) -> bytes:
        payload: dict[str, Any] = {"op": op}
        if seq is not None:
            payload["sequenceId"] = seq
        if before is not None:
            payload["before"] = before
        if after is not None:
            payload["after"] = after
        if ddl is not None:
            payload["ddl"] = {"text": ddl, "ddlMeta": base64.b64encode(b"\xac\xed\x00\x05t" + ddl.encode()).decode()}
        if self.aliyun:  # real output also names the checkpoint; a full-load record knows none of its times
            event = -1 if full_load else ms
            payload["timestamp"] = {"eventTime": event, "systemTime": ms + 37, "checkpointTime": event}
        else:
            payload["timestamp"] = {"eventTime": ms, "systemTime": ms + 37}
        return orjson.dumps({"schema": schema, "payload": payload, "version": "0.0.1"})

    # -- history -> records --------------------------------------------------------------------------------
    def backfill(self, t: TableDef, rows: list[dict[str, Any]], ts_us: int, at_seq: int) -> None:
        schema, ms = self._schema(t), ts_us // 1000
        for row in rows:
            seq = FULL_LOAD_SENTINEL if self.aliyun else self.seq.next_full()
            rec = self._record(schema, "INSERT", seq, ms, after=self._image(t, row), full_load=self.aliyun)
            self._put(_shard(t, row), rec, ms)

    def change(self, ev: Event) -> None:
        t, ms = self.defs[ev.table], ev.ts_us // 1000
        tx_markers = ev.tx_size > 1
        marker_schema = {"source": self._source(t)}
        if tx_markers and ev.tx_seq == 1:
            self._put(_shard(t, None), self._record(marker_schema, "TRANSACTION_BEGIN", self.seq.next_cdc(), ms), ms)
        if ev.kind in ("DDL", "TRUNCATE"):
            if ev.kind == "DDL":
                self.versions[t.index] = ev.version
            op = "ALTER" if ev.kind == "DDL" else "TRUNCATE"
            self._put(_shard(t, None), self._record(marker_schema, op, self.seq.next_cdc(), ms, ddl=ev.ddl), ms)
        else:
            self._dml(t, ev, ms)
        if tx_markers and ev.tx_last:
            self._put(_shard(t, None), self._record(marker_schema, "TRANSACTION_END", self.seq.next_cdc(), ms), ms)

    def _dml(self, t: TableDef, ev: Event, ms: int) -> None:
        schema, seq = self._schema(t), self.seq.next_cdc()
        if ev.kind == "INSERT":
            self._put(_shard(t, ev.after), self._record(schema, "INSERT", seq, ms, after=self._image(t, ev.after)), ms)
        elif ev.kind == "DELETE":
            self._put(_shard(t, ev.before), self._record(schema, "DELETE", seq, ms, before=self._image(t, ev.before)), ms)
        else:
            self.update_no += 1
            far = "far_halves" in self.quirks and (ev.key_change or self.update_no % 10 == 0)
            before = self._record(schema, "UPDATE_BEFOR", seq, ms, before=self._image(t, ev.before))
            if self.aliyun and self.shape_rng.random() < ONE_MESSAGE_SHARE:
                whole = self._record(schema, "UPDATE_AFTER", seq, ms, before=self._image(t, ev.before),
                                     after=self._image(t, ev.after))
                self._put(_shard(t, ev.after), whole, ms)
                if self.shape_rng.random() < OTHER_SHAPE_SHARE:  # the same change again, as its separate half
                    self._put(_shard(t, ev.before), before, ms, hold=self.rotate + 7 if far else 0)
                return
            self._put(_shard(t, ev.before), before, ms)
            after = self._record(schema, "UPDATE_AFTER", seq, ms, after=self._image(t, ev.after))
            self._put(_shard(t, ev.after), after, ms, hold=self.rotate + 7 if far else 0)

    def _put(self, shard: int, rec: bytes, ms: int, hold: int = 0) -> None:
        self._lane(shard).put(rec, hold=hold)
        self.puts += 1
        if "heartbeats" in self.quirks and self.puts % HEARTBEAT_EVERY == 0:
            beat = orjson.dumps({"schema": {}, "payload": {"op": "MHEARTBEAT", "timestamp": {
                "eventTime": ms + 1, "checkpointTime": ms + 1}}, "version": "0.0.1"})
            for s in range(SHARDS):
                self._lane(s).put(beat)

    # -- delivery ------------------------------------------------------------------------------------------
    def _lane(self, shard: int) -> Lane:
        lane = self.lanes.get(shard)
        if lane is None:
            rng = lane_rng(self.seed, self.vf, shard)
            lane = Lane(lambda item, redelivered, shard=shard: self._write(shard, item), rng, self.quirks,
                        dup_delay=self.rotate * 2)
            self.lanes[shard] = lane
        return lane

    def _write(self, shard: int, rec: bytes) -> None:
        rot = self.rotators.get(shard)
        if rot is None:
            rot = Rotator(self.rotate, lambda n, first, shard=shard: self._open(shard, n))
            self.rotators[shard] = rot
        rot.write(rec)
        self.counts["records"] += 1

    def _open(self, shard: int, n: int) -> Any:
        self.counts["files"] += 1
        folder = self.root / f"shard_{shard}"
        if self.fmt == "concat":
            return ConcatFile(folder / f"part-{n:05d}.json")
        return LinesFile(folder / f"part-{n:05d}.jsonl")

    def close(self) -> None:
        for lane in self.lanes.values():
            lane.close()
        for rot in self.rotators.values():
            rot.close()


class _CsvFile:
    """One Tuple export file: a header line, then one CSV row per DataHub record."""

    def __init__(self, path: Path, header: list[str]):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fh = open(path, "w", encoding="utf-8", newline="")  # noqa: SIM115
        self.csv = csv.writer(self.fh, lineterminator="\n")
        self.csv.writerow(header)

    def write(self, row: list[str]) -> None:
        self.csv.writerow(row)

    def close(self) -> None:
        self.fh.close()


class DataHubTupleEncoder:
    """Writes `OUT/datahub/tuple/<table>/shard_<k>/part-N.csv` (one TUPLE topic per table, fixed schema)."""

    def __init__(self, out: Path, defs: tuple[TableDef, ...], seed: int, quirks: frozenset[str], rotate: int,
                 fmt: str = "tuple"):
        self.vf = "datahub-tuple"
        self.root = out / "datahub" / "tuple"
        self.defs, self.seed, self.quirks, self.rotate = defs, seed, quirks, rotate
        self.seq = _Seq()
        self.lanes: dict[tuple[int, int], Lane] = {}
        self.rotators: dict[tuple[int, int], Rotator] = {}
        self.counts: dict[str, int] = {"records": 0, "files": 0}
        self.update_no = 0
        self._write_topic_schemas(out / TUPLE_SCHEMAS)

    def identity(self, t: TableDef) -> dict[str, Any]:
        return {"vendor": "datahub", "stream": f"{PROJECT}/sim_{t.name}_tuple", "source_db": "mysql",
                "database": DB_NAME, "schema": None, "table": t.name}

    def record_schema(self, t: TableDef) -> dict[str, Any]:
        """The topic's RecordSchema: source columns (as of topic creation) then the meta columns."""
        fields = [{"name": c.name, "type": tuple_type(c)} for c in t.columns_at(1)]
        fields += [{"name": m, "type": "BIGINT" if m == "_excute_time_" else "STRING"} for m in TUPLE_META]
        return {"fields": fields}

    def _write_topic_schemas(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for t in self.defs:
            (folder / f"{t.name}.json").write_bytes(orjson.dumps(self.record_schema(t), option=orjson.OPT_INDENT_2))

    def backfill(self, t: TableDef, rows: list[dict[str, Any]], ts_us: int, at_seq: int) -> None:
        for row in rows:
            self._put(t, row, [self.seq.next_full(), "I", str(ts_us // 1000), t.name, "N", "Y"])

    def change(self, ev: Event) -> None:
        if ev.kind in ("DDL", "TRUNCATE"):
            return  # fixed schema, DML only
        t, ms = self.defs[ev.table], str(ev.ts_us // 1000)
        seq = self.seq.next_cdc()
        if ev.kind == "INSERT":
            self._put(t, ev.after, [seq, "I", ms, t.name, "N", "Y"])
        elif ev.kind == "DELETE":
            self._put(t, ev.before, [seq, "D", ms, t.name, "Y", "N"])
        else:
            self.update_no += 1
            far = "far_halves" in self.quirks and (ev.key_change or self.update_no % 10 == 0)
            self._put(t, ev.before, [seq, "U", ms, t.name, "Y", "N"])
            self._put(t, ev.after, [seq, "U", ms, t.name, "N", "Y"], hold=self.rotate + 7 if far else 0)

    def _put(self, t: TableDef, row: dict[str, Any], meta: list[str], hold: int = 0) -> None:
        values = [tuple_value(c, row.get(c.name)) for c in t.columns_at(1)]
        shard = _shard(t, row) if t.primary_key else int(meta[0]) % SHARDS  # keyless: no order guarantee
        self._lane(t, shard).put(values + meta, hold=hold)

    def _lane(self, t: TableDef, shard: int) -> Lane:
        key = (t.index, shard)
        lane = self.lanes.get(key)
        if lane is None:
            rng = lane_rng(self.seed, self.vf, t.name, shard)
            lane = Lane(lambda item, redelivered, key=key: self._write(key, item), rng, self.quirks,
                        dup_delay=self.rotate * 2)
            self.lanes[key] = lane
        return lane

    def _write(self, key: tuple[int, int], row: list[str]) -> None:
        rot = self.rotators.get(key)
        if rot is None:
            t = self.defs[key[0]]
            header = [f["name"] for f in self.record_schema(t)["fields"]]
            rot = Rotator(self.rotate, lambda n, first, t=t, key=key, header=header:
                          self._open(t, key[1], n, header))
            self.rotators[key] = rot
        rot.write(row)
        self.counts["records"] += 1

    def _open(self, t: TableDef, shard: int, n: int, header: list[str]) -> _CsvFile:
        self.counts["files"] += 1
        return _CsvFile(self.root / t.name / f"shard_{shard}" / f"part-{n:05d}.csv", header)

    def close(self) -> None:
        for lane in self.lanes.values():
            lane.close()
        for rot in self.rotators.values():
            rot.close()


# -- what the formats carry (the truth projection; docs/simulate.md states it rule by rule) ------------------
def blob_kind(flavour: str, col: Col) -> str:
    """Blob JSON: no exact decimal (STRING), DATE and timestamps as epoch milliseconds."""
    return {"decimal": "str_decimal", "date": "ts_midnight", "timestamp": "timestamp_ms",
            "binary": "bytes"}.get(col.base) or COMMON_KINDS[col.base]


def tuple_kind(flavour: str, col: Col) -> str:
    """TUPLE CSV: typed fields, but an empty STRING field is '' (NULL and empty cannot be told apart)."""
    return {"decimal": "decimal", "date": "ts_midnight", "timestamp": "timestamp",
            "binary": "base64_or_empty", "string": "str_or_empty"}.get(col.base) or COMMON_KINDS[col.base]


TUPLE_SCHEMAS = "schemas/datahub-tuple"
"""Where the TUPLE encoder writes each topic's RecordSchema (what a user passes as `tuple_schemas`)."""


def tuple_options(out: Path, info: dict[str, Any]) -> dict[str, Any]:
    """TUPLE topics carry neither the source engine, the database, the key nor the column types: a user
    passes the topics' schemas, the engine, the database and the keys."""
    folder = Path(out) / TUPLE_SCHEMAS
    tables = info["tables"]
    ident = next(iter(tables.values()))
    return {"tuple_schemas": {p.stem: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.json"))},
            "source_db": ident["source_db"], "database": ident["database"],
            "primary_keys": {name: t["primary_key"] for name, t in tables.items() if t["primary_key"]}}


FORMATS = (
    SimFormat("datahub", "blob", DataHubBlobEncoder, blob_kind, lambda t, c: blob_type(c), carries_truncate=True),
    SimFormat("datahub", "concat", DataHubBlobEncoder, blob_kind, lambda t, c: blob_type(c), carries_truncate=True),
    SimFormat("datahub", "tuple", DataHubTupleEncoder, tuple_kind, lambda t, c: tuple_type(c),
              carries_added_column=False, extra_outputs=(TUPLE_SCHEMAS,), user_options=tuple_options),
)
"""The DataHub formats the simulator writes: Blob carries truncates; TUPLE topics have a fixed schema."""
