"""What a canal-json message is: recognising the flat message, its kind, and the fields identity reads
(reference §1, §2, §4).

A flat message is one JSON object with `data` (an array of row maps, or null), `type`, and normally `isDdl`,
`database`, `table`, `pkNames`, `es`, `ts`, `id`, `sql`, `mysqlType`, `sqlType`, `old` and `gtid`. The same
shape comes from TiCDC (`_tidb` with the commit ts, `TIDB_WATERMARK` events) and Huawei DRS (`INIT`,
`INIT_DDL`). DataHub's Blob JSON is `{"payload": {"op", ...}}`, never a top-level `data` array: the two sniffs
exclude each other.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from cdcnorm.errors import DecodeError

ROW_TYPES = {"INSERT": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE", "INIT": "SNAPSHOT"}
DDL_TYPES = frozenset({"CREATE", "ALTER", "ERASE", "TRUNCATE", "RENAME", "CINDEX", "DINDEX", "QUERY", "INIT_DDL"})
CONTROL_TYPES = frozenset({"GTID", "XACOMMIT", "XAROLLBACK", "MHEARTBEAT", "TRANSACTIONBEGIN", "TRANSACTIONEND"})
"""EntryProtocol event types the flat converter does not normally send: counted as filtered when they appear."""
WATERMARK = "TIDB_WATERMARK"

_SNIFF_DDL = re.compile(rb'"isDdl"\s*:\s*(?:true|false)')
_SNIFF_DATA = re.compile(rb'\{\s*"data"\s*:\s*(?:\[|null)')
_SNIFF_TYPE = re.compile(rb'"type"\s*:\s*"(?:INSERT|UPDATE|DELETE|INIT|CREATE|ALTER|ERASE|TRUNCATE|RENAME|'
                         rb'CINDEX|DINDEX|QUERY|TIDB_WATERMARK)"')
_SNIFF_MAPS = re.compile(rb'"(?:mysqlType|sqlType|pkNames)"\s*:')
_SNIFF_BLOB = re.compile(rb'"payload"\s*:\s*\{')
_UTC = dt.UTC
KCAT_FIELDS = frozenset({"topic", "partition", "offset", "payload"})


def sniff(head: bytes) -> bool:
    """A flat message: `isDdl` with `mysqlType` / `sqlType` / `pkNames`, or a message opening with a `data`
    array and a Canal `type` (the degenerate `{data, type}` of some producers); never a `payload` object."""
    window = head[:65536]
    if window.lstrip(b"\xef\xbb\xbf \t\r\n[")[:1] != b"{" or _SNIFF_BLOB.search(window):
        return False
    if _SNIFF_DDL.search(window) and _SNIFF_MAPS.search(window):
        return True
    return bool(_SNIFF_DATA.search(window[:4096]) and _SNIFF_TYPE.search(window))


def check(obj: Any) -> dict[str, Any]:
    """The message as a dict, or DecodeError saying what a flat message needs."""
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str) or "data" not in obj:
        raise DecodeError("bad_message", "not a canal-json flat message: expected an object with `data` (an array "
                                         "of rows, or null) and `type`")
    return obj


def is_ddl(msg: dict[str, Any]) -> bool:
    flag = msg.get("isDdl")
    return flag is True or (flag is None and msg["type"] in DDL_TYPES)


def ms_time(v: Any) -> dt.datetime | None:
    """An epoch-millisecond field (`es`, `ts`) as a UTC time; absent, zero or not a number: unknown."""
    if type(v) is not int or v <= 0:
        return None
    return dt.datetime(1970, 1, 1, tzinfo=_UTC) + dt.timedelta(milliseconds=v)


def int_or_none(v: Any) -> int | None:
    if type(v) is int:
        return v
    if isinstance(v, str) and v.isdigit():
        return int(v)
    return None


def tidb(msg: dict[str, Any]) -> dict[str, Any]:
    """TiCDC's `_tidb` extension (`commitTs`, `watermarkTs`), or an empty dict."""
    ext = msg.get("_tidb")
    return ext if isinstance(ext, dict) else {}


def text_or_none(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None
