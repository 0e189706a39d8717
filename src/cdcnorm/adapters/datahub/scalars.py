"""Scalar functions the Blob and TUPLE codecs share, so neither imports the other."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
"""The Unix epoch (UTC), origin of DataHub's millisecond (Blob DATE) and microsecond (TUPLE TIMESTAMP) times."""

_NEGATIVE_INT = re.compile(r"-\d+")


def text_or_none(value: Any) -> str | None:
    """A value as trimmed text; None when absent or blank."""
    if value is None:
        return None
    s = str(value).strip()
    return s or None


def is_unset(value: Any) -> bool:
    """A vendor sentinel for "unknown" in an envelope time or a sequence id: a negative integer.

    DataWorks full-load (snapshot) records carry `sequenceId: "-1"`, `eventTime: -1` and `checkpointTime: -1`
    (reference item 13). Only the record's own bookkeeping fields are read this way, never column values: a
    DATE column of 1969-12-31T23:59:59.999 is data. `0` is not a sentinel: no DataWorks page documents it
    as "unset".
    """
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return value < 0
    return isinstance(value, str) and _NEGATIVE_INT.fullmatch(value.strip()) is not None
