"""`pos` and the time fields of a GoldenGate record (reference §3, §4).

`pos` is the trail file sequence number and the RBA (the offset in that trail file) written side by side. It
is kept as the opaque string the record holds (the `position` column, and the event id), and read for order
only. Forms seen in real output, all read the same way - the last ten characters are the RBA, what precedes
them the sequence number, leading zeros dropped:

| form | example | (sequence, RBA) |
|---|---|---|
| 20 digits (10 + 10) | `00000000050078524159` | (5, 78524159) |
| dashed (sequence `-1` zero-padded to ten) | `00000000-10000009626` | (-1, 9626) |
| longer digit strings | `00000000000000000000143` | (0, 143) |

So one order holds within and across the forms: by sequence, then RBA; a dashed `-1` sequence sorts before
every trail sequence. A `pos` that is none of these sorts after every readable one, by its text. The order is
meaningful within one trail lineage (one Replicat): the `stream` option names it.

`op_ts` (fixed on replay) is the source time; `current_ts` (when the formatter ran, new on every replay) is
the capture time and never enters order or identity.
"""

from __future__ import annotations

import datetime as dt
import re
from functools import lru_cache
from zoneinfo import ZoneInfo

from cdcnorm.errors import UsageError

RBA_DIGITS = 10
_SEQ = re.compile(r"^0*(-?\d*)$")
_TS = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[ T:](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$")
_UTC = dt.UTC


def pos_order(pos: str) -> tuple[int, int, int, str]:
    """(readable 0 / not 1, sequence, RBA, text): the sort parts of a `pos`, comparable across its forms."""
    text = pos.strip()
    if len(text) > RBA_DIGITS and text[-RBA_DIGITS:].isdigit():
        m = _SEQ.match(text[:-RBA_DIGITS])
        if m is not None and m[1] not in ("-", ""):
            return (0, int(m[1]), int(text[-RBA_DIGITS:]), text)
        if m is not None and m[1] == "":  # all zeros
            return (0, 0, int(text[-RBA_DIGITS:]), text)
    return (1, 0, 0, text)


@lru_cache(maxsize=64)
def zone(name: str) -> dt.tzinfo:
    """A zone by name (`UTC` or an IANA name); unknown names are a usage error."""
    if name.upper() == "UTC":
        return _UTC
    try:
        return ZoneInfo(name)
    except (KeyError, ValueError) as exc:
        raise UsageError(f"unknown time zone {name!r} ({exc})") from None


def parse_local(text: str) -> tuple[dt.datetime, bool] | None:
    """A GoldenGate date-time text (`YYYY-MM-DD HH:MM:SS[.f]`, `T` or `:` between date and time, up to nine
    fraction digits) as a naive datetime, and whether it is exact (no digits beyond microseconds); None when
    the text is not one."""
    m = _TS.match(text)
    if m is None:
        return None
    frac = m[7] or ""
    micros = int((frac + "000000")[:6])
    exact = not frac[6:].strip("0")
    try:
        value = dt.datetime(int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]), int(m[6]), micros)
    except ValueError:
        return None
    return value, exact


def instant(text: object, tz: dt.tzinfo) -> dt.datetime | None:
    """`op_ts` / `current_ts` read in a zone, as UTC; None when absent or unreadable."""
    if not isinstance(text, str):
        return None
    found = parse_local(text.strip())
    if found is None:
        return None
    return found[0].replace(tzinfo=tz).astimezone(_UTC)
