"""JSON writing that can emit exact decimal numbers, and the tagged-JSON codec of the truth files.

Datastream JSON carries DECIMAL as a JSON *number*: writing it through a float would lose digits, so numbers
are pre-rendered (:func:`Raw`, an orjson Fragment) and spliced in verbatim.
"""

from __future__ import annotations

import base64
import datetime as dt
from decimal import Decimal
from typing import Any

import orjson

UTC = dt.UTC


def Raw(text: str) -> orjson.Fragment:  # noqa: N802 - reads like the type it stands for
    """Already-rendered JSON text (e.g. an exact decimal number) to splice in verbatim."""
    return orjson.Fragment(text)


def dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON, keys in insertion order; floats use their shortest round-trip form."""
    return orjson.dumps(obj)


def plain(d: Decimal) -> str:
    """A decimal in plain notation keeping its scale ('1.50', never '1.5' or '15E-1')."""
    return format(d, "f")


def iso_us(ts: dt.datetime) -> str:
    """ISO-8601 with exactly 6 fractional digits; aware values are rendered in UTC with a 'Z'."""
    if ts.tzinfo is not None:
        return ts.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
    return ts.isoformat(timespec="microseconds")


def _tag_datetime(v: dt.datetime) -> dict[str, str]:
    return {"$ts": iso_us(v)} if v.tzinfo is not None else {"$ts_ntz": iso_us(v)}


_TAGGERS: dict[type, Any] = {
    Decimal: lambda v: {"$decimal": plain(v)},
    dt.datetime: _tag_datetime,
    dt.date: lambda v: {"$date": v.isoformat()},
    bytes: lambda v: {"$bytes": base64.b64encode(v).decode("ascii")},
    bytearray: lambda v: {"$bytes": base64.b64encode(bytes(v)).decode("ascii")},
    dict: lambda v: {k: tag(x) for k, x in v.items()},
    list: lambda v: [tag(x) for x in v],
    tuple: lambda v: [tag(x) for x in v],
}


def tag(value: Any) -> Any:
    """Typed Python value -> tagged JSON value (exact and reversible)."""
    tagger = _TAGGERS.get(type(value))
    return value if tagger is None else tagger(value)


def untag(value: Any) -> Any:
    """Tagged JSON value -> typed Python value."""
    if isinstance(value, dict):
        if len(value) == 1:
            (k, v), = value.items()
            if k == "$decimal":
                return Decimal(v)
            if k == "$ts":
                return dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
            if k == "$ts_ntz":
                return dt.datetime.fromisoformat(v)
            if k == "$date":
                return dt.date.fromisoformat(v)
            if k == "$bytes":
                return base64.b64decode(v)
        return {k: untag(v) for k, v in value.items()}
    if isinstance(value, list):
        return [untag(v) for v in value]
    return value


def dumps_tagged(obj: Any) -> bytes:
    """One tagged-JSON line (floats keep their shortest round-trip form)."""
    return orjson.dumps(tag(obj))
