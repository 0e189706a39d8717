"""Scalar helpers the Blob and TUPLE codecs share, so neither imports the other."""

from __future__ import annotations

import datetime as dt
from typing import Any

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
"""The Unix epoch (UTC), origin of DataHub's millisecond (Blob DATE) and microsecond (TUPLE TIMESTAMP) times."""


def text_or_none(value: Any) -> str | None:
    """A value as trimmed text; None when absent or blank."""
    if value is None:
        return None
    s = str(value).strip()
    return s or None
