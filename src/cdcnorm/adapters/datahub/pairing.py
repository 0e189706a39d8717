"""Pairing UPDATE halves: what each half carries at decode time (pair id, column digests) and the Spark step
that joins them over the whole input (halves may be far apart, in different files).

Until :func:`pair_updates` runs, an UPDATE half carries `_pair` (the pair's event id), `_pair_role` and, in
`changed_columns`, one `<16 hex digest><column>` entry per column: Spark compares those strings, never the
VARIANT images. A one-message UPDATE (DataWorks' aliyun-json shape: one `UPDATE_AFTER` carrying `before` and
`after`) is decoded as both halves with roles `before/whole` and `after/whole`; pairing prefers them over
separately delivered halves of the same change, so the row does not depend on which shape arrived first.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import orjson
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from cdcnorm.adapters.datahub.vocabulary import VENDOR
from cdcnorm.canonical import tuple_codec
from cdcnorm.canonical.emit import KIND_CHANGE, decoded_schema, event_id_of
from cdcnorm.canonical.emit import Bookkeeping as B
from cdcnorm.canonical.memo import Memo

DIGEST_HEX = 16
"""Length of the value digest that prefixes each entry of an UPDATE half's column digests."""


def value_digest(value: Any) -> str:
    """Short stable digest of a typed value, to compare update halves' columns in Spark (equal values,
    equal digests: Decimal 1.5 and 1.50 compare equal, as in SQL).

    Digests are remembered for the values whose key below determines their encoding: the two halves of an
    UPDATE repeat every unchanged value. Equal str, int, bool and None values encode alike (one memo per type:
    True == 1); a Decimal is keyed by its text (1.5 and 1.50 are two keys), a datetime only in UTC (equal
    datetimes of one zone with a fold can be different instants). Floats are not cached (-0.0 == 0.0).
    """
    t = type(value)
    memo = _MEMOS.get(t)
    if memo is None or (t is dt.datetime and value.tzinfo is not dt.UTC):
        return _digest(value)
    return memo[str(value) if t is Decimal else value]


def _digest(value: Any) -> str:
    try:
        data = tuple_codec.encode((value,))
    except (TypeError, ValueError, OverflowError):
        data = b"j" + orjson.dumps(value, default=str, option=orjson.OPT_SORT_KEYS)
    return hashlib.blake2b(data, digest_size=DIGEST_HEX // 2).hexdigest()


_MEMOS: dict[type, Memo] = {**{t: Memo(_digest, 8192) for t in (str, int, bool, type(None), dt.datetime)},
                            Decimal: Memo(lambda text: _digest(Decimal(text)), 8192)}
"""Digests by value, one memo per exact type (a plain subscript: an `lru_cache` call cost as much as a short
digest); a Decimal's is keyed by its text."""
_PLAIN_MEMOS = {t: _MEMOS[t] for t in (str, int, bool, type(None))}
"""The memos keyed by the value itself, which `column_digests` reads inline."""


def column_digests(image: Mapping[str, Any]) -> list[str]:
    """`<digest><column name>` per column, in image order: what an UPDATE half carries for pairing.

    The memo of str, int, bool and None values is read here directly (most values of a half; the other
    half of the UPDATE repeats every unchanged one): a call per value was a tenth of a DataHub record."""
    out = []
    memos = _PLAIN_MEMOS
    for k, v in image.items():
        memo = memos.get(type(v))
        out.append((memo[v] if memo is not None else value_digest(v)) + k)
    return out


WHOLE = "/whole"
"""Pair-role suffix of the halves cut from a one-message UPDATE (a message carrying both images)."""


def role_of(image: str, whole: bool = False) -> str:
    """The pair role of a half holding `image` (`before` / `after`), marked when cut from a one-message UPDATE."""
    return image + WHOLE if whole else image


def pair_id(stream: str, database: str | None, schema: str | None, table: str | None, seq: Any) -> str:
    """Event id of a paired UPDATE: what both halves compute, so pairing needs no hashing in Spark.

    Remembered for the last few thousand pairs: the second half, usually next to the first, reuses it (keyed
    with the sequence's type too: 1, 1.0 and True are equal keys but encode apart)."""
    try:
        return _PAIR_IDS[(stream, database, schema, table, type(seq), seq)]
    except TypeError:  # an unhashable part: not remembered
        return _pair_id((stream, database, schema, table, type(seq), seq))


def _pair_id(key: tuple) -> str:
    stream, database, schema, table, _, seq = key
    return event_id_of(VENDOR, stream, (database, schema, table), (seq, "UPDATE"))


_PAIR_IDS = Memo(_pair_id, 8192)


# -- pairing (Spark) ---------------------------------------------------------------------------------------

_NAMES = [f.name for f in decoded_schema().fields]


def _empty() -> Column:
    return F.array().cast("array<string>")


def _changed(b: Column, a: Column) -> Column:
    """Columns present in both images whose value digests differ, in the after image's column order."""
    bd, ad = b["changed_columns"], a["changed_columns"]
    bnames = F.transform(bd, lambda x: F.substring(x, DIGEST_HEX + 1, 1 << 20))
    keep = F.filter(
        ad,
        lambda x: (
            F.array_contains(bnames, F.substring(x, DIGEST_HEX + 1, 1 << 20)) & ~F.array_contains(bd, x)
        ),
    )
    return F.transform(keep, lambda x: F.substring(x, DIGEST_HEX + 1, 1 << 20))


def _counts(n: Column) -> dict[str, Column]:
    """Conservation: a row standing for n half records keeps `_records` 1 and moves the rest to `_merged`."""
    return {B.RECORDS: F.least(n, F.lit(1)).cast("int"), B.MERGED: (n - F.least(n, F.lit(1))).cast("int")}


def _row(src: Column, **over: Column) -> Column:
    """A decoded-schema struct taking each column from `src` unless overridden."""
    bookkeeping = {
        B.PAIR: None,
        B.PAIR_ROLE: None,
        B.RULE: None,
        B.MESSAGE: None,
        B.RAW: None,
        B.SCHEMA: None,
    }
    cols = []
    for name in _NAMES:
        if name in over:
            cols.append(over[name].alias(name))
        elif name in bookkeeping:
            cols.append(F.lit(None).cast(decoded_schema()[name].dataType).alias(name))
        else:
            cols.append(src[name].alias(name))
    return F.struct(*cols)


def pair_updates(df: DataFrame) -> DataFrame:
    """Combine UPDATE halves (rows with `_pair`) into canonical UPDATE rows, in Spark, over the whole input.

    Per pair id: the before half's image becomes `before`, the after half's `after`, `changed_columns` are the
    columns whose value digests differ. Halves with different keys follow the key-change rule (DELETE of
    the old key with the before half's id/sort key + INSERT of the new key with the after half's, ids
    re-derived from the pair id, both flagged key_change). A half without partner stays an UPDATE with the
    other image null, its own event id, flag orphan_before/orphan_after. Redelivered halves fold into the
    same row; `_records` + `_merged` totals are conserved. Among several copies of one half, the one cut from a
    one-message UPDATE wins, then the lowest sort key, then the first origin, so the result is deterministic.
    """
    is_half = (F.col(B.KIND) == KIND_CHANGE) & F.col(B.PAIR).isNotNull()
    rest = df.filter(~is_half)
    halves = df.filter(is_half)
    role = F.substring_index(F.col(B.PAIR_ROLE), "/", 1)
    preference = F.struct(
        F.when(F.col(B.PAIR_ROLE).endswith(WHOLE), 0).otherwise(1).alias("whole_first"),
        F.col("sort_key").alias("sort_key"),
        F.col("origin").alias("origin"),
    )
    row = F.struct(*[F.col(n) for n in _NAMES])
    n = F.col(B.RECORDS) + F.col(B.MERGED)
    g = halves.groupBy(B.PAIR).agg(
        F.min_by(row, F.when(role == "before", preference)).alias("b"),
        F.min_by(row, F.when(role == "after", preference)).alias("a"),
        F.sum(F.when(role == "before", n).otherwise(0)).alias("nb"),
        F.sum(F.when(role == "after", n).otherwise(0)).alias("na"),
    )
    b, a, pair, nb, na = F.col("b"), F.col("a"), F.col(B.PAIR), F.col("nb"), F.col("na")
    both = b.isNotNull() & a.isNotNull()
    key_change = both & (b["key_bytes"] != a["key_bytes"])
    rows = (
        F.when(
            key_change,
            F.array(_key_change_delete(b, pair, _counts(nb)), _key_change_insert(b, a, pair, _counts(na))),
        )
        .when(both, F.array(_paired(b, a, pair, _counts(nb + na))))
        .when(b.isNotNull(), F.array(_orphan(b, "orphan_before", _counts(nb))))
        .otherwise(F.array(_orphan(a, "orphan_after", _counts(na))))
    )
    paired = g.select(F.explode(rows).alias("r")).select("r.*")
    return rest.unionByName(paired)


def _paired(b: Column, a: Column, pair: Column, counts: dict[str, Column]) -> Column:
    vendor_op = F.when(b["vendor_op"] == a["vendor_op"], a["vendor_op"]).otherwise(
        F.concat_ws("+", b["vendor_op"], a["vendor_op"])
    )
    missing = F.when(b["missing_columns"].isNull() | a["missing_columns"].isNull(), F.lit(None)).otherwise(
        F.array_union(a["missing_columns"], b["missing_columns"])
    )
    return _row(
        a,
        op=F.lit("UPDATE"),
        vendor_op=vendor_op,
        before=b["before"],
        after=a["after"],
        flags=F.array_distinct(F.concat(F.coalesce(b["flags"], _empty()), F.coalesce(a["flags"], _empty()))),
        changed_columns=_changed(b, a),
        missing_columns=missing,
        sort_key=b["sort_key"],
        event_id=pair,
        position=F.coalesce(b["position"], a["position"]),
        origin=b["origin"],
        **counts,
    )


def _with_flag(h: Column, flag: str) -> Column:
    """A half's flags plus `flag` (once)."""
    return F.array_distinct(F.concat(F.coalesce(h["flags"], _empty()), F.array(F.lit(flag))))


def _orphan(h: Column, flag: str, counts: dict[str, Column]) -> Column:
    """A lone half; it keeps its pair id, so a half redelivered after its pair was emitted is recognised as a
    duplicate of that pair (cdcnorm.ingest.pairing.mark_emitted_pairs)."""
    return _row(h, flags=_with_flag(h, flag), changed_columns=F.lit(None).cast("array<string>"), _pair=h[B.PAIR],
                **counts)


def paired_ids(pair: Column) -> Column:
    """Every event id the rows of one pair can have (paired UPDATE, key change DELETE and INSERT)."""
    return F.array(pair, _key_change_id(pair, "key_change_delete"), _key_change_id(pair, "key_change_insert"))


def _key_change_id(pair: Column, which: str) -> Column:
    return F.substring(F.sha2(F.concat(pair, F.lit("|" + which)), 256), 1, 32)


def _key_change_delete(b: Column, pair: Column, counts: dict[str, Column]) -> Column:
    return _row(
        b,
        op=F.lit("DELETE"),
        flags=_with_flag(b, "key_change"),
        after=F.lit(None).cast("variant"),
        changed_columns=F.lit(None).cast("array<string>"),
        event_id=_key_change_id(pair, "key_change_delete"),
        **counts,
    )


def _key_change_insert(b: Column, a: Column, pair: Column, counts: dict[str, Column]) -> Column:
    return _row(
        a,
        op=F.lit("INSERT"),
        flags=_with_flag(a, "key_change"),
        before=F.lit(None).cast("variant"),
        changed_columns=_changed(b, a),
        event_id=_key_change_id(pair, "key_change_insert"),
        **counts,
    )
