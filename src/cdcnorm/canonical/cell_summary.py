"""Per-column summaries of untyped values, folded from whole Arrow batches of classified cells.

Why: the JVM decode path classifies each JSON value in Spark (`json_cells.cells`: name, kind, whole, scale per
value) and hands the cells over as Arrow; observing them one by one through `TypeObserver` would cost a Python
call per value again. :class:`CellSummaries` folds a batch with a few Arrow/numpy kernels (one group-by over
group, column and kind) and merges only the per-batch aggregates into its state, so a batch of 10 k rows of 10
values costs milliseconds. Rows the Python decoder handles join the same state through
:meth:`CellSummaries.add_python`.

The result is exactly what `TypeObserver` and `ColumnSummary.vendor_type` give for the same rows observed in
row order, per group: columns in order of first appearance (by the row's order number, then the value's place
in the row), kinds united, the largest digit count and scale. One quirk of `TypeObserver.observe` is kept: once a
column holds text and another kind (and no `json`), it stops classifying str values, so a date text seen after
that point adds no `date`. That makes the kinds depend on the order of the values; the state therefore keeps the
first and last time each kind was seen and replays the rule over those times (:func:`_replayed_kinds`), which
also makes the batches' order free: a group may span batches, which may come in any order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdcnorm.canonical.inferred import ColumnSummary, _text_kind

STRING_KINDS = frozenset(("text", "date", "timestamp", "timestamp_ntz"))
"""Kinds a str value can have: the ones `TypeObserver.observe` stops adding to a mixed text column."""

Time = tuple[int, int]
"""When a value was seen: (the row's order number, the value's place in its row)."""


class _Column:
    __slots__ = ("first", "kinds", "digits", "scale")

    def __init__(self, first: Time) -> None:
        self.first = first
        self.kinds: dict[tuple[str, bool], list[Time]] = {}
        """(kind, from a str value) -> [first, last] time seen"""
        self.digits = self.scale = 0

    def saw(self, kind: str, from_str: bool, first: Time, last: Time) -> None:
        seen = self.kinds.get((kind, from_str))
        if seen is None:
            self.kinds[(kind, from_str)] = [first, last]
        else:
            seen[0], seen[1] = min(seen[0], first), max(seen[1], last)


class _Group:
    __slots__ = ("value", "columns")

    def __init__(self, value: Any) -> None:
        self.value = value
        self.columns: dict[str, _Column] = {}

    def column(self, name: str, first: Time) -> _Column:
        col = self.columns.get(name)
        if col is None:
            col = self.columns[name] = _Column(first)
        elif first < col.first:
            col.first = first
        return col


class CellSummaries:
    """Column summaries per group (e.g. a file's table version), from cell batches and Python row images.

    `naive` is the kind of a date-time text without a zone in :meth:`add_python` (the cells are classified
    already). A group is an opaque key: a scalar or a struct of one row (a dict in Python); the same group
    given to :meth:`add_python` is the Python value of that Arrow value.
    """

    def __init__(self, naive: str = "timestamp") -> None:
        self.naive = naive
        self._groups: dict[Any, _Group] = {}

    # -- input ---------------------------------------------------------------------------------------------
    def add_cells(self, group: pa.Array | pa.ChunkedArray, order: pa.Array | pa.ChunkedArray,
                  cells: pa.Array | pa.ChunkedArray) -> None:
        """Observe a batch: per row its group, its order number (int, unique within the group) and its cells
        (`list<struct<name, kind, whole, scale>>`; a null list observes nothing)."""
        group, order, cells = (_array(a) for a in (group, order, cells))
        lengths = np.asarray(pc.list_value_length(cells).fill_null(0), dtype=np.int64)
        count = int(lengths.sum())
        if count == 0:
            return
        flat = pc.list_flatten(cells)
        parents = np.asarray(pc.list_parent_indices(cells), dtype=np.int64)
        place = np.arange(count, dtype=np.int64) - (np.cumsum(lengths) - lengths)[parents]
        row_order = np.asarray(order.cast(pa.int64()), dtype=np.int64)
        cell_order = row_order[parents]
        by_time = _time_sorted(row_order[lengths > 0], cell_order, place)
        rank = np.empty(count, dtype=np.int64)
        rank[by_time] = np.arange(count, dtype=np.int64)
        row_group, firsts = _group_codes(group)
        table = pa.table({"g": row_group[parents], "name": flat.field("name"), "kind": flat.field("kind"),
                          "rank": rank, "whole": flat.field("whole"), "scale": flat.field("scale")})
        folded = table.group_by(["g", "name", "kind"], use_threads=False).aggregate(
            [("rank", "min"), ("rank", "max"), ("whole", "max"), ("scale", "max")])
        values = group.take(pa.array(firsts)).to_pylist()
        keys = [_hashable(v) for v in values]
        for g, name, kind, first_rank, last_rank, whole, scale in zip(*(folded.column(c).to_pylist() for c in (
                "g", "name", "kind", "rank_min", "rank_max", "whole_max", "scale_max")), strict=True):
            first = (int(cell_order[by_time[first_rank]]), int(place[by_time[first_rank]]))
            col = self._group(keys[g], values[g]).column(name, first)
            if kind is None:
                continue
            last = (int(cell_order[by_time[last_rank]]), int(place[by_time[last_rank]]))
            col.saw(kind, kind in STRING_KINDS, first, last)
            if whole is not None and whole > col.digits:
                col.digits = whole
            if scale is not None and scale > col.scale:
                col.scale = scale

    def add_python(self, group: Any, order: int, image: dict[str, Any] | None) -> None:
        """Observe one row image's values as `loads_exact` gives them (as `TypeObserver.observe` would)."""
        if not image:
            return
        g = self._group(_hashable(group), group)
        for place, (name, value) in enumerate(image.items()):
            time = (order, place)
            col = g.column(name, time)
            if value is None:
                continue
            if type(value) is str:
                col.saw(_text_kind(value, self.naive), True, time, time)
                continue
            summary = ColumnSummary()
            summary.add(value, self.naive)
            for kind in summary.kinds:
                col.saw(kind, False, time, time)
            digits = len(str(abs(summary.lo))) if summary.ints else summary.digits
            col.digits, col.scale = max(col.digits, digits), max(col.scale, summary.scale)

    # -- output --------------------------------------------------------------------------------------------
    def groups(self) -> list[Any]:
        """The groups seen, in the order they were first seen."""
        return [g.value for g in self._groups.values()]

    def summaries(self, group: Any) -> dict[str, ColumnSummary]:
        """The group's columns in order of first appearance, each as a `ColumnSummary` whose `vendor_type()`
        is the observed one (its `lo`/`hi` are not the values' range: the digit count stands for them)."""
        g = self._groups.get(_hashable(group))
        if g is None:
            return {}
        out = {}
        for name, col in sorted(g.columns.items(), key=lambda item: item[1].first):
            summary = out[name] = ColumnSummary()
            summary.kinds = _replayed_kinds(col.kinds)
            summary.digits, summary.scale = col.digits, col.scale
        return out

    def vendor_types(self, group: Any) -> list[tuple[str, str]]:
        """(column name, `vendor_type`) of the group's columns, in order of first appearance."""
        return [(name, s.vendor_type()) for name, s in self.summaries(group).items()]

    def __iter__(self) -> Iterator[tuple[Any, list[tuple[str, str]]]]:
        for g in list(self._groups.values()):
            yield g.value, self.vendor_types(g.value)

    def pop(self, group: Any) -> None:
        """Forget a group (after its schema version is written)."""
        self._groups.pop(_hashable(group), None)

    def clear(self) -> None:
        self._groups.clear()

    def _group(self, key: Any, value: Any) -> _Group:
        g = self._groups.get(key)
        if g is None:
            g = self._groups[key] = _Group(value)
        return g


def _replayed_kinds(kinds: dict[tuple[str, bool], list[Time]]) -> set[str]:
    """The kinds `TypeObserver.observe` ends with, from each kind's first and last time.

    It skips a str value while the column's kinds hold `text` and another kind but no `json`; that condition,
    once true, holds until a `json` value arrives, and never again after it. So the kinds' first times in order
    decide everything before the first `json`, and after it every kind seen again (last time) is added.
    """
    out: set[str] = set()
    events = sorted((seen[0], kind, from_str) for (kind, from_str), seen in kinds.items())
    json_time = None
    for time, kind, from_str in events:
        if kind == "json":
            json_time = time
            out.add(kind)
            break
        if from_str and "text" in out and len(out) > 1:
            continue
        out.add(kind)
    if json_time is not None:
        out.update(kind for (kind, _), seen in kinds.items() if seen[1] > json_time)
    return out


def _array(a: pa.Array | pa.ChunkedArray) -> pa.Array:
    return a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a


def _time_sorted(row_order: np.ndarray, cell_order: np.ndarray, place: np.ndarray) -> np.ndarray:
    """Cell indexes in time order; the cells' own order when the rows come in increasing order (the usual)."""
    if len(row_order) < 2 or bool(np.all(row_order[1:] > row_order[:-1])):
        return np.arange(len(cell_order), dtype=np.int64)
    return np.lexsort((place, cell_order))


def _group_codes(group: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A dense code per row for equal group values, and the first row of each code.

    Arrow groups by no struct key, so a struct is split into its leaves (and its own validity); each leaf is
    dictionary-encoded, and the leaves' codes are combined pairwise, re-densified at each step."""
    code = np.zeros(len(group), dtype=np.int64)
    for leaf in _leaves(group):
        part = _leaf_codes(leaf)
        code = np.unique(code * (int(part.max()) + 1) + part, return_inverse=True)[1].astype(np.int64)
    _, firsts, code = np.unique(code, return_index=True, return_inverse=True)
    return code.astype(np.int64), firsts.astype(np.int64)


def _leaves(a: pa.Array) -> Iterator[pa.Array]:
    if pa.types.is_struct(a.type):
        yield a.is_valid()
        for child in a.flatten():
            yield from _leaves(child)
    else:
        yield a


def _leaf_codes(leaf: pa.Array) -> np.ndarray:
    """Dense codes of one leaf's values (null its own code)."""
    try:
        indices = pc.dictionary_encode(leaf).indices
    except pa.ArrowNotImplementedError:  # a type without a hash kernel: by Python value
        seen: dict[Any, int] = {}
        return np.array([seen.setdefault(_hashable(v), len(seen)) for v in leaf.to_pylist()], dtype=np.int64)
    return np.asarray(indices.fill_null(-1), dtype=np.int64) + 1


def _hashable(value: Any) -> Any:
    """A group's Python value as a dict key (a struct row is a dict, a list value a list)."""
    if isinstance(value, dict):
        return tuple((k, _hashable(v)) for k, v in value.items())
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value

