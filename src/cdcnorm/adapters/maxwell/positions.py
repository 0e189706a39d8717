"""Order, identity and transaction fields of Maxwell rows (reference §4, §5).

Identity, by what the message carries (docs/canonical.md, "Vendors without a per-row position"):

* `position` (`output_binlog_position`): (`server_id`, binlog file, offset) plus the row's place in its
  transaction: `xoffset`, or `commit` for the last row; without `xoffset` the rows one multi-row binlog event
  wrote share the position, so the row itself (op, key, images) joins the id;
* else `gtid` (`output_gtid_position`): the transaction's GTID plus the same within-transaction part;
* else (the default configuration: only `xid` and `ts` in seconds): (`server_id`, `xid`, `ts`) plus `xoffset`
  when written, else the row itself. `xid` repeats after a server restart: the binlog second `ts` (which a
  redelivery keeps) tells the two apart. Two identical changes of one row in one transaction within one
  second, without `xoffset`, share an id (the second counts as a duplicate).
* without `xid` (`output_commit_info=false`): the row itself and `ts`, flagged `unknown_position`.

Order: the binlog position when there is one; else `ts`, then the delivery order (the Kafka partition and
offset, or the file and the record's index in it: Maxwell writes in binlog order), then `xoffset`.
Never in an identity: a Kafka offset or partition, a file name, `push_ts`, or a bootstrap row's `ts` (the
wall-clock time of the bootstrap).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from cdcnorm.adapters.numbers import lenient_int

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
LAST = 1 << 62
"""The within-transaction order of the `commit: true` row, which carries no `xoffset`."""


@dataclass(frozen=True, slots=True)
class Where:
    """Order and identity of one row: `sort` after the snapshot/log element, `ident` the stable fields
    (`needs_row`: the row itself must join them), `text` for the `position` column."""

    sort: tuple
    ident: tuple
    text: str | None
    needs_row: bool
    unknown: bool = False




def seconds(v: Any) -> dt.datetime | None:
    """A row's `ts` (seconds); 0 and negative are unknown."""
    n = lenient_int(v)
    if not n or n < 0:
        return None
    try:
        return _EPOCH + dt.timedelta(seconds=n)
    except OverflowError:
        return None


def millis(v: Any) -> dt.datetime | None:
    """A DDL event's `ts` or `push_ts` (milliseconds); 0 and negative are unknown."""
    n = lenient_int(v)
    if not n or n < 0:
        return None
    try:
        return _EPOCH + dt.timedelta(milliseconds=n)
    except OverflowError:
        return None


def binlog(position: Any) -> tuple[str, int, int] | None:
    """`master.000006:800911` -> (file, file number, offset); None when absent or not that shape."""
    if not isinstance(position, str) or ":" not in position:
        return None
    file, _, off = position.rpartition(":")
    offset = lenient_int(off)
    number = lenient_int(file.rsplit(".", 1)[-1])
    if not file or offset is None:
        return None
    return file, number if number is not None else 0, offset


def gtid_seq(gtid: Any) -> int:
    """The transaction number of a GTID `uuid:N` (0 when unreadable)."""
    return lenient_int(str(gtid).rsplit(":", 1)[-1]) or 0 if gtid else 0


def where(msg: dict[str, Any], delivery: tuple) -> Where:
    """Order and identity of a row event (`insert`, `update`, `delete`)."""
    xid, xoffset, commit = msg.get("xid"), lenient_int(msg.get("xoffset")), msg.get("commit") is True
    in_tx = xoffset if xoffset is not None else (LAST if commit else None)
    part = ("x", xoffset) if xoffset is not None else ("commit",) if commit else ()
    server = msg.get("server_id")
    ts = lenient_int(msg.get("ts"))
    pos = binlog(msg.get("position"))
    gtid = msg.get("gtid") or None
    if pos is not None:
        file, number, offset = pos
        text = f"{file}:{offset}" + (f" gtid={gtid}" if gtid else "")
        return Where((number, offset, in_tx or 0, *delivery), ("pos", server, file, offset, xid, *part),
                     text, needs_row=not part)
    if gtid:
        return Where((ts or 0, gtid_seq(gtid), *delivery, in_tx or 0), ("gtid", gtid, *part),
                     f"gtid={gtid}", needs_row=not part)
    if xid is not None:
        return Where((ts or 0, *delivery, in_tx or 0), ("xid", server, xid, ts, *part), None, needs_row=not part)
    return Where((ts or 0, *delivery), ("row", server, ts), None, needs_row=True, unknown=True)


def tx_fields(msg: dict[str, Any]) -> tuple[str | None, int | None, bool | None]:
    """(`tx_id`, `tx_seq`, `tx_last`): the xid (with the server id when given: xids repeat across servers), the
    `xoffset`, and `commit`. With commit info on, a row without `commit: true` is not its transaction's last."""
    xid = msg.get("xid")
    if xid is None:
        return None, None, None
    server = msg.get("server_id")
    tx_id = f"{server}:{xid}" if server is not None else str(xid)
    xoffset = lenient_int(msg.get("xoffset"))
    commit = msg.get("commit") is True
    return tx_id, xoffset, commit
