"""Values a connector did not send: the `unavailable.value.placeholder` that stands for an unchanged TOASTed
(PostgreSQL) or LOB (Oracle, SQL Server) column, recognized in each form a column type gives it.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable
from typing import Any

from cdcnorm.adapters.debezium.fields import Field

TOAST = "__debezium_unavailable_value"
"""The connector's default `unavailable.value.placeholder` (unchanged TOASTed / LOB values)."""


def unavailable_checker(placeholder: str = TOAST) -> Callable[[Any, Field | None], bool]:
    """The test for a connector's `unavailable.value.placeholder`: its text (string columns), its UTF-8 bytes
    (bytea: Base64 in JSON, raw in Avro) and a one-element array of it. A `hex:` placeholder names bytes
    (e.g. `hex:deadbeef`); string columns then carry those bytes as text (Oracle) or the default placeholder
    (SQL Server), so both count."""
    hexed = placeholder.startswith("hex:")
    raw = bytes.fromhex(placeholder[4:]) if hexed else placeholder.encode()
    text = raw.decode("utf-8", "replace") if hexed else placeholder
    b64 = binascii.b2a_base64(raw, newline=False).decode()
    texts = frozenset((text, b64, TOAST) if hexed else (text, b64))

    def check(value: Any, field: Field | None = None) -> bool:
        t = type(value)
        if t is str:
            if field is not None and field.type == "string":
                return value == text or hexed and value == TOAST
            return value in texts
        if t is bytes:
            return value == raw
        if t is list:
            return len(value) == 1 and (value[0] in texts if type(value[0]) is str else value[0] == raw)
        return False

    return check


is_unavailable = unavailable_checker()
"""is_unavailable(value, field=None): the default placeholder (`__debezium_unavailable_value`) in any form."""
