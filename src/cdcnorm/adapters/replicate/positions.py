"""Ordering and identity of Replicate changes: `sort_parts` and `id_parts` from `changeSequence` (a total order
of CDC changes per task), and from the metadata timestamps that order DDL rows.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from cdcnorm.canonical.memo import Memo
from cdcnorm.canonical.record import image_hash
from cdcnorm.errors import DecodeError


def instant(text: Any) -> dt.datetime | None:
    """Replicate header/lineage timestamps: UTC without a zone suffix (`2023-03-21T21:34:19.511`).

    Remembered per text: the messages of one transaction share their header timestamp."""
    return _INSTANTS[text] if type(text) is str else _instant(text)


def _instant(text: Any) -> dt.datetime | None:
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        t = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return t.replace(tzinfo=dt.UTC) if t.tzinfo is None else t.astimezone(dt.UTC)


_INSTANTS = Memo(_instant)


def lineage_seq(text: Any) -> int:
    """A metadata timestamp as a changeSequence (`YYYYMMDDHHmmSShh` + 19 zero digits), to order DDL rows."""
    t = instant(text)
    if t is None:
        return 0
    return int(t.strftime("%Y%m%d%H%M%S") + f"{t.microsecond // 10000:02d}") * 10**19


def ddl_positions(entry: dict[str, Any]) -> tuple[tuple, tuple]:
    """(sort_parts, id_parts) of the DDL row a new table version (MD message) makes:
    `(1, lineage timestamp as a changeSequence prefix, -1)` and `("DDL", tableVersion, schemaId)`."""
    return (1, lineage_seq(entry.get("timestamp")), -1), ("DDL", entry.get("table_version"), entry.get("schema_id"))


def data_positions(
    headers: dict[str, Any], op: str, vendor_op: str, image: dict[str, Any] | None, pks: list[str]
) -> tuple[tuple, tuple, int | None]:
    """(sort_parts, id_parts, tx_seq) of a data message.

    `changeSequence` (35 digits: `YYYYMMDDHHmmSShh` + a 19-digit counter, monotonic per task) is compared as a
    number. sort_parts: CDC `(1, int(changeSequence), transactionEventCounter or 0)`; REFRESH
    `(0, int(changeSequence) or 0, row hash)`. id_parts: `(int(changeSequence), operation)`; REFRESH without a
    changeSequence `("REFRESH", key values, row hash)` (the emitter adds vendor, stream and the table).
    """
    cs = _sequence(headers.get("changeSequence"), op)
    tx_seq = _opt_int(headers.get("transactionEventCounter"))
    if cs is not None:
        return (0 if op == "SNAPSHOT" else 1, cs, tx_seq or 0), (cs, vendor_op), tx_seq
    row_hash = image_hash(image)
    return (0, 0, row_hash), (vendor_op, tuple((image or {}).get(k) for k in pks), row_hash.hex()), tx_seq


def _sequence(value: Any, op: str) -> int | None:
    text = "" if value is None else str(value).strip()
    if not text:
        if op != "SNAPSHOT":
            raise DecodeError(
                "missing_change_sequence",
                f"a {op} message without headers.changeSequence cannot be "
                "ordered or identified; check the message format",
            )
        return None
    if not text.isdigit():
        raise DecodeError(
            "bad_change_sequence", f"headers.changeSequence {text[:40]!r} is not a decimal number"
        )
    return int(text)


def _opt_int(v: Any) -> int | None:
    if isinstance(v, bool) or v is None:
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None
