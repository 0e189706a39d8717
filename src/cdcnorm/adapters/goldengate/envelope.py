"""Which GoldenGate record a JSON object is, and the Kafka handler's transaction mode (reference §1, §5).

Operation-modeled (`format=json`): `table`, `op_type`, `op_ts`, `current_ts`, `pos`, optional `primary_keys`
and `tokens`, then `before` / `after`. Row-modeled (`format=json_row`): the same metadata with the columns of
one image beside it (insert and update: the after image; delete: the before image; truncate: none).
A message of the Kafka handler in `mode=tx` holds a whole transaction: its operations' JSON objects back to
back in one value (with a null key).
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from cdcnorm.adapters.goldengate.changes import Op
from cdcnorm.containers import loads_exact
from cdcnorm.errors import DecodeError

META = frozenset(("table", "op_type", "op_ts", "current_ts", "pos", "primary_keys", "tokens"))
"""The formatters' metadata fields; in a row-modeled record every other field is a column."""
_DECODER = json.JSONDecoder(parse_float=Decimal)
_SPACE = b" \t\r\n"


def values_of(value: bytes) -> list[Any]:
    """The JSON values of one message: one, or several back to back (Kafka handler `mode=tx`)."""
    try:
        return [loads_exact(value)]
    except Exception:  # noqa: BLE001 - not one JSON value: several back to back, or not JSON (said below)
        pass
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError("bad_json", f"a GoldenGate message is UTF-8 JSON ({exc})") from None
    found, i, n = [], 0, len(text)
    while True:
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i >= n:
            break
        try:
            obj, i = _DECODER.raw_decode(text, i)
        except json.JSONDecodeError as exc:
            raise DecodeError("bad_json", f"a GoldenGate message is JSON objects back to back ({exc.msg} at "
                                          f"character {exc.pos})") from None
        found.append(obj)
    if not found:
        raise DecodeError("bad_json", "an empty GoldenGate message")
    return found


def op_of(obj: Any, model: str) -> tuple[Op, str]:
    """The operation a JSON object describes and its model (`op` / `row`); DecodeError when it is none."""
    if not isinstance(obj, dict) or "op_type" not in obj or "table" not in obj:
        raise DecodeError("bad_event", "not a GoldenGate record: expected an object with `table`, `op_type`, "
                                       "`op_ts` and `pos` (JSON formatter, op- or row-modeled)")
    table = obj["table"]
    if not isinstance(table, str) or not table:
        raise DecodeError("missing_table", "a GoldenGate record whose `table` is not a name")
    pks = obj.get("primary_keys")
    tokens = obj.get("tokens")
    op = Op(table=table, op_type=obj["op_type"], op_ts=obj.get("op_ts"), current_ts=obj.get("current_ts"),
            pos=obj.get("pos"), primary_keys=pks if isinstance(pks, list) and pks else None,
            tokens=tokens if isinstance(tokens, dict) else None)
    if model == "op" or (model == "auto" and ("before" in obj or "after" in obj)):
        op.before = _image(obj.get("before"), "before")
        op.after = _image(obj.get("after"), "after")
        return op, "op"
    columns = {k: v for k, v in obj.items() if k not in META}
    op.after, op.row = columns, True
    return op, "row"


def _image(v: Any, what: str) -> dict[str, Any] | None:
    if v is None:
        return None
    if not isinstance(v, dict):
        raise DecodeError("bad_event", f"`{what}` is neither an object nor null")
    return v
