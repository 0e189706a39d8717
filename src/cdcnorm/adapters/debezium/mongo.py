"""MongoDB documents: `before` / `after` / `updatedFields` are JSON strings of MongoDB Extended JSON (canonical,
relaxed or legacy strict mode, reference §3); they become the document as a value, with `$oid`, `$numberLong`,
`$date`, `$numberDecimal`, `$binary` as typed values (string, integer, instant, Decimal, bytes).
"""

from __future__ import annotations

import base64
import datetime as dt
from decimal import Decimal, InvalidOperation
from typing import Any

import orjson

from cdcnorm.errors import DecodeError

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _date(v: Any) -> Any:
    if isinstance(v, dict) and "$numberLong" in v:
        v = int(v["$numberLong"])
    if isinstance(v, int) and not isinstance(v, bool):
        return _EPOCH + dt.timedelta(milliseconds=v)
    if isinstance(v, str):
        try:
            return dt.datetime.fromisoformat(v.replace("Z", "+00:00")).astimezone(dt.UTC)
        except ValueError:
            return v
    return v


def _special(d: dict[str, Any]) -> Any:
    """The value of a one-key (or `$binary` + `$type`) Extended JSON wrapper; the dict itself when not one."""
    k = next(iter(d))
    v = d[k]
    try:
        if k == "$oid" or k == "$symbol" or k == "$uuid":
            return str(v)
        if k in ("$numberLong", "$numberInt"):
            return int(v)
        if k == "$numberDouble":
            return float(v)
        if k == "$numberDecimal":
            return Decimal(v)
        if k == "$date":
            return _date(v)
        if k == "$binary":
            data = v.get("base64") if isinstance(v, dict) else v
            return base64.b64decode(data)
        if k == "$undefined":
            return None
    except (TypeError, ValueError, InvalidOperation, AttributeError):
        return d
    return d


def from_extended(v: Any) -> Any:
    """Extended JSON (already parsed) -> typed Python values."""
    if isinstance(v, dict):
        if v and next(iter(v)).startswith("$") and (len(v) == 1 or set(v) == {"$binary", "$type"}):
            found = _special(v)
            if found is not v:
                return found
        return {k: from_extended(x) for k, x in v.items()}
    if isinstance(v, list):
        return [from_extended(x) for x in v]
    return v


def document(text: Any, what: str) -> dict[str, Any] | None:
    """A `before` / `after` value: a JSON string of the document (or, from some converters, the object)."""
    if text is None:
        return None
    if isinstance(text, str):
        try:
            text = orjson.loads(text)
        except orjson.JSONDecodeError:
            raise DecodeError("bad_value", f"the MongoDB `{what}` is not an Extended JSON document") from None
    if not isinstance(text, dict):
        raise DecodeError("bad_value", f"the MongoDB `{what}` is not a document")
    return from_extended(text)


def key_value(text: Any) -> Any:
    """The message key's `id`: the document `_id` as Extended JSON text (`{"$oid": ...}`, `"\\"abc\\""`, `1004`)."""
    if isinstance(text, str):
        try:
            return from_extended(orjson.loads(text))
        except orjson.JSONDecodeError:
            return text
    return from_extended(text)


def update_columns(desc: Any) -> list[str] | None:
    """Changed top-level fields of an `updateDescription` {updatedFields (JSON string), removedFields}."""
    if not isinstance(desc, dict):
        return None
    fields: list[str] = []
    updated = desc.get("updatedFields")
    if isinstance(updated, str):
        try:
            updated = orjson.loads(updated)
        except orjson.JSONDecodeError:
            updated = None
    if isinstance(updated, dict):
        fields += [k.split(".", 1)[0] for k in updated]
    removed = desc.get("removedFields")
    if isinstance(removed, list):
        fields += [str(k).split(".", 1)[0] for k in removed]
    return list(dict.fromkeys(fields))
