"""Ordering and identity of Debezium events per connector (reference §4, §5): a typed sort key from the
connector's position, the position fields a redelivery keeps, a readable position, and the times.

Never part of an identity: the envelope `ts_ms` (the connector's processing time, rebuilt on redelivery), the
Kafka partition or offset, or a file name. Flink CDC output writes `file ""`, `pos 0`, `ts_ms 0`: unknown.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import orjson

from cdcnorm.adapters.numbers import lenient_int

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True, slots=True)
class Position:
    """Where an event sits in its connector's log.

    `sort`: numbers compared element-wise (source change order); `ident`: the fields a redelivery keeps
    (None when the event has no usable position); `text`: readable form for the `position` column.
    """

    sort: tuple
    ident: tuple | None
    text: str | None


UNKNOWN = Position((), None, None)




def _hex(v: Any) -> int | None:
    """A SQL Server LSN `0000002b:00000557:0003` (or an Oracle hex part) as one number."""
    if not isinstance(v, str) or not v.strip():
        return None
    try:
        return int(v.strip().replace(":", "").removeprefix("0x"), 16)
    except ValueError:
        return None


def mysql(src: dict[str, Any]) -> Position:
    """Binlog (file number, pos, row); GTID joins the identity. `file ""` / `pos 0`: unknown (Flink CDC)."""
    file, pos, row = src.get("file") or "", lenient_int(src.get("pos")), lenient_int(src.get("row")) or 0
    if not file or not pos:
        return UNKNOWN
    number = lenient_int(file.rsplit(".", 1)[-1])
    gtid = src.get("gtid") or None
    text = f"{file}:{pos}:{row}" + (f" gtid={gtid}" if gtid else "")
    return Position((number if number is not None else 0, pos, row), (file, pos, row, gtid), text)


def postgresql(src: dict[str, Any]) -> Position:
    """`sequence` `["<lastCommitLsn>","<lsn>"]` compared element-wise as numbers, else `lsn`."""
    seq = src.get("sequence")
    lsn = lenient_int(src.get("lsn"))
    if isinstance(seq, str) and seq.startswith("["):
        try:
            parts = orjson.loads(seq)
        except orjson.JSONDecodeError:
            parts = None
        if isinstance(parts, list) and parts:
            nums = tuple(lenient_int(p) or 0 for p in parts)
            if any(nums):
                return Position(nums, ("seq", *nums), seq)
    if lsn:
        return Position((0, lsn), ("lsn", lsn, lenient_int(src.get("txId"))), str(lsn))
    return UNKNOWN


def sqlserver(src: dict[str, Any]) -> Position:
    """(`commit_lsn`, `change_lsn`, `event_serial_no`) as hex numbers; the serial breaks ties."""
    commit, change = src.get("commit_lsn"), src.get("change_lsn")
    serial = lenient_int(src.get("event_serial_no")) or 0
    c, ch = _hex(commit), _hex(change)
    if c is None and ch is None:
        return UNKNOWN
    return Position((c or 0, ch or 0, serial), (commit, change, serial), f"{commit}/{change}")


def _rs_id(v: Any) -> tuple[int, int, int]:
    """Oracle `rs_id` ` 0x00000c.0000ad8d.0010 ` as three numbers (0 when absent)."""
    parts = [_hex(p) for p in str(v or "").strip().split(".")] if v else []
    parts = [p or 0 for p in parts][:3]
    return tuple(parts + [0] * (3 - len(parts)))  # type: ignore[return-value]


def oracle(src: dict[str, Any]) -> Position:
    """(`commit_scn`, `scn`, `rs_id`, `ssn`) as big integers."""
    scn, commit = lenient_int(src.get("scn")), lenient_int(src.get("commit_scn"))
    if not scn and not commit:
        return UNKNOWN
    ssn = lenient_int(src.get("ssn")) or 0
    rs = src.get("rs_id")
    text = f"scn={scn}" + (f" commit_scn={commit}" if commit else "") + (f" rs_id={str(rs).strip()}" if rs else "") \
        + f" ssn={ssn}"
    ident = (scn, commit, str(rs).strip() if rs else None, ssn, lenient_int(src.get("redo_thread")))
    return Position((commit or scn or 0, scn or 0, *_rs_id(rs), ssn), ident, text)


def mongodb(src: dict[str, Any]) -> Position:
    """The oplog timestamp (`ts_ms` / 1000 seconds, `ord`)."""
    ts, order = lenient_int(src.get("ts_ms")), lenient_int(src.get("ord"))
    if not ts:
        return UNKNOWN
    return Position((ts // 1000, order or 0), (ts // 1000, order), f"{ts // 1000}:{order}")


_SKIP = frozenset({"version", "connector", "name", "ts_ms", "ts_us", "ts_ns", "snapshot", "db", "schema", "table",
                   "sequence", "collection", "query", "thread"})


def generic(src: dict[str, Any]) -> Position:
    """Other connectors (Db2, Informix, Vitess, ...): the source fields that are neither names nor times."""
    fields = tuple((k, src[k] if isinstance(src[k], str | int) else str(src[k]))
                   for k in sorted(src) if k not in _SKIP and src[k] not in (None, "", 0))
    if not fields:
        return UNKNOWN
    return Position((), fields, ",".join(f"{k}={v}" for k, v in fields))


BY_CONNECTOR = {"mysql": mysql, "mariadb": mysql, "postgresql": postgresql, "sqlserver": sqlserver,
                "oracle": oracle, "mongodb": mongodb}


def position(connector: str, src: dict[str, Any]) -> Position:
    """The position of an event's `source` block."""
    return BY_CONNECTOR.get(connector, generic)(src)


def source_time(src: dict[str, Any]) -> dt.datetime | None:
    """When the change happened at the source: `ts_ns` / `ts_us` (microseconds kept) else `ts_ms` (0.x MySQL:
    `ts_sec`); 0, negative and out-of-range times are unknown."""
    for name, micros_per in (("ts_us", 1), ("ts_ns", -1000), ("ts_ms", 1000), ("ts_sec", 1_000_000)):
        v = lenient_int(src.get(name))
        if v and v > 0:
            try:
                return _EPOCH + dt.timedelta(microseconds=v // -micros_per if micros_per < 0 else v * micros_per)
            except OverflowError:
                return None
    return None


_CONNECTOR_FIELDS = (("file", "mysql"), ("change_lsn", "sqlserver"), ("scn", "oracle"), ("lsn", "postgresql"),
                     ("ord", "mongodb"))


def connector_of(src: dict[str, Any]) -> str | None:
    """`source.connector`; 0.x events have none: the connector whose position fields the block holds."""
    name = src.get("connector")
    if isinstance(name, str) and name:
        return name.lower()
    for field, connector in _CONNECTOR_FIELDS:
        if field in src:
            return connector
    return None


def capture_time(payload: dict[str, Any]) -> dt.datetime | None:
    """When the connector processed the event (envelope `ts_us` / `ts_ms`); 0 is unknown."""
    return source_time({"ts_us": payload.get("ts_us"), "ts_ms": payload.get("ts_ms")})


def tx_of(payload: dict[str, Any], connector: str) -> tuple[str | None, int | None]:
    """(transaction id, order in it) from the `transaction` block; PostgreSQL `txId:LSN` groups by the txId."""
    tx = payload.get("transaction")
    if not isinstance(tx, dict) or tx.get("id") in (None, ""):
        return None, None
    tx_id = str(tx["id"])
    if connector == "postgresql":
        tx_id = tx_id.split(":", 1)[0]
    return tx_id, lenient_int(tx.get("total_order"))
