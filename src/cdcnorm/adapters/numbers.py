"""Lenient reading of position numbers that vendors write as JSON numbers or as their text."""

from __future__ import annotations

from typing import Any


def lenient_int(v: Any) -> int | None:
    """An int from a number or its text (surrounding spaces allowed); None when absent, a boolean or not a number."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    try:
        return int(str(v).strip())
    except (TypeError, ValueError):
        return None
