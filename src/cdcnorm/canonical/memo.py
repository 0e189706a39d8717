"""A bounded memo for the decode kernel's per-record lookups: values that repeat across records (a header time,
a binlog file name, the pair id both halves of an UPDATE compute) are computed once.

Why a dict subclass: a hit is a plain subscript, `memo[key]`, with no Python call (an `lru_cache` call cost as much
as some of the values it saved); a miss computes the value in `__missing__`. Bounded by forgetting everything once
`limit` keys are held: cheaper than keeping an order, and these keys come in runs.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any


class Memo(dict):
    """`memo[key]`: `compute(key)`, remembered (at most `limit` keys; then all are forgotten)."""

    __slots__ = ("compute", "limit")

    def __init__(self, compute: Callable[[Any], Any], limit: int = 4096):
        super().__init__()
        self.compute = compute
        self.limit = limit

    def __missing__(self, key: Hashable) -> Any:
        if len(self) >= self.limit:
            self.clear()
        value = self[key] = self.compute(key)
        return value
