"""Flat JSON objects tokenized by Spark expressions (`json_cells`) and their cells folded into column summaries
(`cell_summary`): exactly what `loads_exact` + `TypeObserver` give for the same texts, row by row and per group.

The property tests collect a few hundred examples from a hypothesis strategy, read them all in one Spark job (a
job per example would cost a second each) and compare every one with the Python reference; a failure names the
text. The hand-written cases pin the actual values.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from cdcnorm.canonical.cell_summary import CellSummaries
from cdcnorm.canonical.inferred import ColumnSummary, TypeObserver, _text_kind
from cdcnorm.canonical.json_cells import cells, flat_tokens, text_kind
from cdcnorm.containers import loads_exact

NAIVE = ("timestamp", "timestamp_ntz")


def examples(strategy: st.SearchStrategy, count: int) -> list:
    """`count` examples drawn from `strategy` (generation only: the checks run on all of them at once)."""
    out: list = []

    @settings(max_examples=count, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(example) -> None:
        out.append(example)

    collect()
    return out


# -- generated texts ------------------------------------------------------------------------------------------
WS = st.text(alphabet=" \t\n\r", max_size=2)
UNICODE = st.characters(blacklist_categories=("Cs",))
INT_EDGES = [0, 1, -1, 9, 10, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1,
             2**64, 2**64 - 1, 10**37, 10**38 - 1, -(10**38 - 1)]


def _two(lo: int, hi: int) -> st.SearchStrategy[str]:
    return st.integers(lo, hi).map(lambda v: f"{v:02d}")


@st.composite
def date_like(draw) -> str:
    """Near-valid ISO dates and date-times: out-of-range fields, other separators and zones, one char changed."""
    year = draw(st.sampled_from(["0000", "0001", "1600", "1900", "2000", "2023", "2024", "2100", "0400", "9999"])
                | st.integers(0, 9999).map(lambda v: f"{v:04d}"))
    month_day = draw(st.sampled_from(["02-29", "02-28", "02-30", "04-31", "12-31", "06-30"])
                     | st.tuples(_two(0, 13) | _two(0, 99), _two(0, 32) | _two(28, 31)).map("-".join))
    text = f"{year}-{month_day}"
    if draw(st.booleans()):
        sep = draw(st.sampled_from("T T t_"))
        hms = ":".join(draw(_two(0, 25) if i == 0 else _two(0, 61)) for i in range(3))
        frac = draw(st.sampled_from(["", "", ".", ".1", ".123456", ".1234567", ",5"])
                    | st.text("0123456789", min_size=1, max_size=8).map(lambda d: "." + d))
        zone = draw(st.sampled_from(["", "", "Z", "z", "+0530", "+05", "+05:30:00"])
                    | st.tuples(st.sampled_from("+-"), _two(0, 25), _two(0, 99)).map(lambda t: f"{t[0]}{t[1]}:{t[2]}"))
        text += f"{sep}{hms}{frac}{zone}"
    if draw(st.integers(0, 4)) == 0:  # one character changed, dropped or added
        i = draw(st.integers(0, len(text)))
        c = draw(st.sampled_from("0123456789-:T Z+\n٣") | UNICODE)
        text = draw(st.sampled_from([text[:i] + c + text[i + 1:], text[:i] + text[i + 1:], text[:i] + c + text[i:]]))
    return text


@st.composite
def date_time(draw) -> str:
    """A real date or date-time in the forms Datastream writes (and some it does not)."""
    moment = draw(st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31, 23, 59, 59)))
    if draw(st.booleans()):
        return moment.date().isoformat()
    text = moment.isoformat(sep=draw(st.sampled_from("T ")), timespec=draw(st.sampled_from(
        ["seconds", "milliseconds", "microseconds", "minutes"])))
    return text + draw(st.sampled_from(["", "Z", "+00:00", "-05:30", "+23:59", "+14:00"]))


def _decimal_text(sign: bool, whole: str, fraction: str) -> str:
    return ("-" if sign else "") + (whole.lstrip("0") or "0") + "." + fraction


DECIMALS = st.builds(_decimal_text, st.booleans(), st.text("0123456789", max_size=18),
                     st.text("0123456789", min_size=1, max_size=19) | st.sampled_from(["0", "00", "000", "50", "10"]))
STRINGS = st.text(UNICODE, max_size=12) | date_like() | date_time() | st.sampled_from(["", "x", "\\", '"', "\u2028", "é😀"])
VALUES = st.one_of(STRINGS, st.integers(-1000, 1000), st.sampled_from(INT_EDGES),
                   st.integers(-(10**38 - 1), 10**38 - 1), DECIMALS.map(lambda t: ("number", t)),
                   st.booleans(), st.none())


def _string_token(s: str, style: int, rnd: random.Random) -> str:
    """`s` as a JSON string token: raw, ASCII-escaped, or each character escaped at random."""
    if style == 0:
        return json.dumps(s, ensure_ascii=False)
    if style == 1:
        return json.dumps(s)
    out = []
    for ch in s:
        if ch in '"\\' or ord(ch) < 0x20 or rnd.random() < 0.4:
            esc = json.dumps(ch)[1:-1]
            out.append(rnd.choice([esc, "".join(f"\\u{u:04x}" for u in _utf16(ch))]) if esc.startswith("\\")
                       or ord(ch) > 0xFFFF else f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _utf16(ch: str) -> list[int]:
    b = ch.encode("utf-16-be")
    return [int.from_bytes(b[i:i + 2], "big") for i in range(0, len(b), 2)]


def _value_token(value, style: int, rnd: random.Random) -> str:
    if isinstance(value, tuple):
        return value[1]
    if isinstance(value, str):
        return _string_token(value, style, rnd)
    return json.dumps(value)


KEYS = st.sampled_from(["id", "a", "b", "name", "créé"]) | st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters='"\\',
                  min_codepoint=0x20), max_size=6)


@st.composite
def flat_object(draw) -> str:
    """A flat object text: distinct keys written without escapes, any values, random spacing and escaping."""
    keys = draw(st.lists(KEYS, max_size=7, unique=True))
    rnd = random.Random(draw(st.integers(0, 2**32)))
    members = [f"{draw(WS)}{json.dumps(k, ensure_ascii=False)}{draw(WS)}:{draw(WS)}"
               f"{_value_token(draw(VALUES), draw(st.integers(0, 2)), rnd)}{draw(WS)}" for k in keys]
    return f"{draw(WS)}{{{','.join(members) or draw(WS)}}}{draw(WS)}"


NESTED_VALUES = st.one_of(st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
                          st.lists(st.integers(), max_size=2))


HISTORIES = st.tuples(
    st.lists(st.tuples(st.integers(0, 2), flat_object(), st.integers(0, 5).map(lambda v: v == 0)),
             min_size=1, max_size=12),
    st.dictionaries(st.integers(0, 11), st.tuples(st.integers(0, 2), NESTED_VALUES), max_size=2))
"""One file's rows: (group, text, observed through `add_python` instead of the cells), and a few images with a
nested value after some rows (`json`, which only the Python decoder gives)."""


# -- reference ------------------------------------------------------------------------------------------------
def expected_cell(name: str, value, naive: str) -> tuple:
    """(name, kind, whole, scale) of one value as `ColumnSummary.add` sees it."""
    if value is None:
        return (name, None, None, None)
    if isinstance(value, str):
        return (name, _text_kind(value, naive), None, None)
    summary = ColumnSummary()
    summary.add(value, naive)
    (kind,) = summary.kinds
    if isinstance(value, bool):
        return (name, kind, None, None)
    if isinstance(value, int):
        return (name, kind, len(str(abs(value))), 0)
    _sign, digits, exp = value.as_tuple()
    scale = -exp if exp < 0 else 0
    return (name, kind, len(digits) - scale if scale else len(digits) + exp, scale)


def observed(rows_in_order, naive: str) -> dict:
    """The reference: `TypeObserver` over each group's images in row order -> [(name, vendor_type)] per group."""
    observer = TypeObserver(naive)
    for group, image in rows_in_order:
        observer.observe(group, image)
    return {g: [(n, s.vendor_type()) for n, s in observer.summaries(g).items()] for g in observer.tables}


@pytest.fixture(scope="module")
def expressions(spark):
    """The expressions, built once (a few hundred calls into the JVM each): `tokens` of column `text`, `cells`
    of column `tokens` per naive kind, `kinds` of column `s`."""
    return {"tokens": flat_tokens("text"), **{naive: cells("tokens", naive) for naive in NAIVE},
            "kinds": [text_kind(F.col("s"), naive).alias(naive) for naive in NAIVE]}


def _tokens_and_cells(df, expressions, naive: str):
    return df.select("*", expressions["tokens"].alias("tokens")).select("*", expressions[naive].alias("cells"))


# -- Spark against the reference --------------------------------------------------------------------------------
def test_cells_and_summaries_match_type_observer(spark, expressions):
    """Row by row: the tokens are the object's members and values, each cell the value's kind, digits and scale.
    Per group: the fold of the cells (in shuffled slices), of some rows as Python images and of the nested images
    gives `TypeObserver`'s summaries of the rows in order. Row i has order number 2i, a nested image after it
    2i+1; history e has the groups `e/0` .. `e/2`, and reads its date-times without a zone as NAIVE[e % 2]."""
    histories = examples(HISTORIES, 60)
    flat = [(e, i, g, text, by_python) for e, (rows_, _) in enumerate(histories)
            for i, (g, text, by_python) in enumerate(rows_)]
    df = spark.createDataFrame([(n, {"uri": f"{e}/{g}", "version": g % 2}, 2 * i, text)
                                for n, (e, i, g, text, _) in enumerate(flat)],
                               "n int, g struct<uri:string,version:bigint>, ord bigint, text string")
    table = (df.select("*", expressions["tokens"].alias("tokens"))
             .select("*", *[expressions[naive].alias(naive) for naive in NAIVE]).toArrow().sort_by("n"))
    images = [loads_exact(text) for _, _, _, text, _ in flat]
    tokens = table.column("tokens").to_pylist()
    for naive in NAIVE:
        for (_, _, _, text, _), image, tokens_, cells_ in zip(flat, images, tokens, table.column(naive).to_pylist(),
                                                             strict=True):
            assert tokens_ is not None, text
            assert [t["key"] for t in tokens_] == list(image), text
            assert [loads_exact(t["token"]) for t in tokens_] == list(image.values()), text
            assert [tuple(c.values()) for c in cells_] == [expected_cell(k, v, naive) for k, v in image.items()], text

    rnd = random.Random(len(flat))
    for parity, naive in enumerate(NAIVE):
        reference = []
        summaries = CellSummaries(naive)
        mine = [e % 2 == parity and not by_python for e, _, _, _, by_python in flat]
        cell_rows = table.select(["g", "ord", naive]).filter(pa.array(mine))
        cuts = sorted(rnd.sample(range(1, cell_rows.num_rows), min(6, max(cell_rows.num_rows - 1, 0))))
        parts = [cell_rows.slice(a, b - a) for a, b in zip([0, *cuts], [*cuts, cell_rows.num_rows], strict=True)]
        rnd.shuffle(parts)
        for part in parts:
            summaries.add_cells(part.column("g"), part.column("ord"), part.column(naive))
        for n, (e, i, g, _, by_python) in enumerate(flat):
            if e % 2 != parity:
                continue
            group = {"uri": f"{e}/{g}", "version": g % 2}
            reference.append(((group["uri"], group["version"]), images[n]))
            if by_python:
                summaries.add_python(group, 2 * i, images[n])
            nested = histories[e][1]
            if i in nested:
                ng, value = nested[i]
                group = {"uri": f"{e}/{ng}", "version": ng % 2}
                reference.append(((group["uri"], group["version"]), {"nested": value}))
                summaries.add_python(group, 2 * i + 1, {"nested": value})
        got = {(g["uri"], g["version"]): summaries.vendor_types(g) for g in summaries.groups()}
        assert got == {g: cols for g, cols in observed(reference, naive).items() if cols}


def test_text_kind_matches_reference(spark, expressions):
    """Date-like texts near the valid forms (fields out of range, leap days, other separators, zones, fractions,
    one character changed) get the kind `inferred._text_kind` gives them, for both meanings of a naive time."""
    texts = examples(date_like() | STRINGS, 800)
    df = spark.createDataFrame([(i, s) for i, s in enumerate(texts)], "i int, s string")
    got = df.select("i", *expressions["kinds"]).orderBy("i").collect()
    for s, row in zip(texts, got, strict=True):
        assert (row["timestamp"], row["timestamp_ntz"]) == (_text_kind(s, "timestamp"),
                                                              _text_kind(s, "timestamp_ntz")), repr(s)


ROUTED_AWAY = [
    '{"a": {"b": 1}}', '{"a": [1, 2]}', '{"a": []}', '{"a": 1e5}', '{"a": 1E-2}', '{"a": 1.5e3}',
    '{"a": 1234567890123456789012345678901234567890}', '{"a": 0.123456789012345678901234567890123456789}',
    '{"a": NaN}', '{"a": Infinity}', '{"a": -Infinity}', '{"a": 1, "a": 2}', '{"a": 1, "b": 2, "a": null}',
    '{"a\\u0062": 1}', '{"a\\"b": 1}', '{"\\n": 1}', '{"a": 01}', '{"a": -01.5}', '{"a": 1.}', '{"a": .5}',
    '{"a": +1}', '{"a": -}', '{"a": "x\\q"}', '{"a": "\t"}', '{"a": "\u0001"}', "{'a': 1}", '{a: 1}',
    '{"a": 1,}', '{,"a": 1}', '{"a" 1}', '{"a": 1 "b": 2}', '{"a": 1', '"a": 1}', '{"a": 1}}', '{"a": 1} x',
    '{"a": 1}\f', '\ufeff{"a": 1}', '[{"a": 1}]', '[]', '1', '"x"', 'null', '', ' ', '{', '}', '{"a": tru}',
    '{"a": True}', '{"a": "x"', '{"a": "\\ud800\\"}', '{"a": 1}\u00a0', '\u2028{"a": 1}', '{"a":\u00a01}',
    '{"a": 1, "b"\u0000}', '{"a": 1\u0000}', '\u0000{}', '{"a": "\u0000"}',
]
"""Texts the tokenizer must not answer: valid JSON it does not hold exactly, and invalid JSON."""


def test_routed_away_texts_give_null(spark, expressions):
    df = spark.createDataFrame([(i, t) for i, t in enumerate(ROUTED_AWAY)], "i int, text string")
    got = _tokens_and_cells(df, expressions, "timestamp").orderBy("i").collect()
    assert [(r["text"], r["tokens"], r["cells"]) for r in got] == [(t, None, None) for t in ROUTED_AWAY]
    for text in ROUTED_AWAY:  # each is either refused by the reference or not a flat object it holds exactly
        assert not _holds_exactly(text) or "\\" in text, text


WIDE_DECIMALS = st.builds(_decimal_text, st.booleans(), st.text("0123456789", max_size=80),
                          st.text("0123456789", min_size=1, max_size=80))


def test_wide_numbers_without_a_digit_limit(spark):
    """`max_digits=None`: numbers of any length are read as the reference reads them (integers up to 3,998
    digits; a longer one, which `loads_exact` may read as a Decimal, gives NULL); the default limit refuses
    them."""
    wide = [10**38, -(10**38), 10**3997, -(10**3998 - 1), 10**3998, -(10**3998)]
    numbers = [*map(str, wide), "0." + "0" * 100 + "1", "-" + "9" * 90 + "." + "0" * 60,
               *map(str, examples(st.integers(-(10**120), 10**120), 100)), *examples(WIDE_DECIMALS, 100)]
    texts = [f'{{"n": {n}, "s": "x"}}' for n in numbers]
    df = spark.createDataFrame([(i, t) for i, t in enumerate(texts)], "i int, text string")
    got = (df.select("i", flat_tokens("text", max_digits=None).alias("tokens"), flat_tokens("text").alias("limited"))
           .select("i", "tokens", "limited", cells("tokens").alias("cells")).orderBy("i").collect())
    for n, text, row in zip(numbers, texts, got, strict=True):
        digits = sum(c.isdigit() for c in n)
        if "." not in n and digits > 3998:
            assert row["tokens"] is None, n
            continue
        assert [tuple(c) for c in row["cells"]] == [expected_cell(k, v, "timestamp")
                                                     for k, v in loads_exact(text).items()], n
        assert (row["limited"] is None) == (digits > 38), n
    with pytest.raises(ValueError):
        flat_tokens("text", max_digits=0)


def test_invalid_utf8_gives_null(spark, expressions):
    """Bytes that are not UTF-8 (a text column cast from binary keeps them) give NULL: the reference refuses
    them, or (an encoded surrogate, which it reads with `surrogatepass`) the Python decoder takes the record."""
    texts = [b'{"a": "\xff"}', b'{"\xc3": 1}', b'{"a": "\xed\xa0\x80"}', b'{"a": "\xc3\xa9"}']
    df = spark.createDataFrame([(i, t) for i, t in enumerate(texts)], "i int, b binary")
    got = df.select("i", F.col("b").cast("string").alias("text")).select(
        "i", expressions["tokens"].alias("tokens")).orderBy("i").collect()
    assert [r["tokens"] and [tuple(t) for t in r["tokens"]] for r in got] == [None, None, None, [("a", '"é"')]]
    for text in texts[:2]:
        with pytest.raises(ValueError):
            loads_exact(text)


def _holds_exactly(text: str) -> bool:
    """Whether `loads_exact` reads the text as one flat object of distinct keys whose numbers have no exponent
    and at most 38 digits (whether a key was written with an escape is not seen here)."""
    try:
        if not isinstance(loads_exact(text), dict):
            return False
    except (ValueError, ArithmeticError):  # an exponent beyond Decimal's range raises InvalidOperation
        return False
    top = json.loads(text, object_pairs_hook=lambda pairs: ("object", pairs), parse_constant=lambda s: ("bad", s),
                     parse_float=lambda s: ("number", s), parse_int=lambda s: ("number", s))
    keys = [k for k, _ in top[1]]
    if len(set(keys)) != len(keys):
        return False
    for _, value in top[1]:
        if isinstance(value, list | dict) or (isinstance(value, tuple) and value[0] != "number"):
            return False
        if isinstance(value, tuple) and ("e" in value[1].lower() or sum(c.isdigit() for c in value[1]) > 38):
            return False
    return True


BREAKERS = st.sampled_from(["[", "]", "{", "}", ",", ":", '"', "\\", "e", "E5", ".", "-", "0", " ", "\t", "\x00",
                            "\x1f", "NaN", "true", "'", "\ufeff", "/", "\\u00", "\\x", "\\u0041", "\u00a0",
                            "1e400", "9" * 40, '"a":1,'])


@st.composite
def mutated(draw) -> str:
    text = draw(flat_object())
    i = draw(st.integers(0, len(text)))
    c = draw(BREAKERS)
    return draw(st.sampled_from([text[:i] + c + text[i:], text[:i] + c + text[i + 1:], text[:i] + text[i + 1:]]))


def test_tokens_exactly_when_the_reference_holds_the_text(spark, expressions):
    """Valid flat objects with one character inserted, replaced or dropped: tokens exactly when the reference
    reads a flat object the tokenizer holds (a text with a backslash may hold an escaped key: NULL allowed),
    and then the reference's keys and values."""
    texts = examples(mutated(), 400)
    df = spark.createDataFrame([(i, t) for i, t in enumerate(texts)], "i int, text string")
    got = df.select("i", expressions["tokens"].alias("tokens")).orderBy("i").collect()
    for text, row in zip(texts, got, strict=True):
        holds = _holds_exactly(text)
        if row["tokens"] is not None:
            assert holds, repr(text)
            image = loads_exact(text)
            assert [(t["key"], loads_exact(t["token"])) for t in row["tokens"]] == list(image.items()), repr(text)
        elif "\\" not in text:
            assert not holds, repr(text)


@pytest.mark.parametrize("generated_code", [False, True])
def test_hand_written_cells(spark, expressions, request, generated_code):
    """Actual values, with Spark's interpreter (the tests' default) and with its generated code."""
    if generated_code:
        request.getfixturevalue("codegen")
    texts = [
        '{"id": 5, "name": "x", "balance": 12.50, "created": "2024-01-01T10:00:00"}',
        ' {\n\t"z": 0.000 ,"n":-0.05,"w" :100.00, "m": -0.0, "i":-0, "j": 10.5 } ',
        '{"a": 2147483647, "b": 2147483648, "c": -2147483649, "d": 9223372036854775807, "e": -9223372036854775809,'
        ' "f": 12345678901234567890123456789012345678}',
        '{"d": "2024\\u002d02-29", "e": "2023-02-29", "f": "2024-01-01T10:00:00+05:99",'
        ' "g": "2024-01-01T10:00:00+23:60", "h": "2024-01-01 23:59:59.123456Z", "i": "2024-01-01T24:00:00",'
        ' "j": "0000-01-01", "k": "2024-01-01T10:00:00.1234567", "l": "2024-01-01\\n", "m": "\\"q\\""}',
        '{"t": true, "f": false, "n": null, "": "", "é😀": "x", "a b": 1}',
        "{}",
        '{"}": 1 }',
    ]
    df = spark.createDataFrame([(i, t) for i, t in enumerate(texts)], "i int, text string")
    rows_ = _tokens_and_cells(df, expressions, "timestamp_ntz").orderBy("i").collect()
    got = [[tuple(c) for c in r["cells"]] for r in rows_]
    assert [(t["key"], t["token"]) for t in rows_[0]["tokens"]] == [
        ("id", "5"), ("name", '"x"'), ("balance", "12.50"), ("created", '"2024-01-01T10:00:00"')]
    assert got[0] == [("id", "int", 1, 0), ("name", "text", None, None), ("balance", "decimal", 2, 2),
                      ("created", "timestamp_ntz", None, None)]
    assert got[1] == [("z", "decimal", -2, 3), ("n", "decimal", -1, 2), ("w", "decimal", 3, 2),
                      ("m", "decimal", 0, 1), ("i", "int", 1, 0), ("j", "decimal", 2, 1)]
    assert got[2] == [("a", "int", 10, 0), ("b", "bigint", 10, 0), ("c", "bigint", 10, 0), ("d", "bigint", 19, 0),
                      ("e", "integer", 19, 0), ("f", "integer", 38, 0)]
    assert [c[1] for c in got[3]] == ["date", "text", "timestamp", "text", "timestamp", "text", "text", "text",
                                      "text", "text"]
    assert got[4] == [("t", "boolean", None, None), ("f", "boolean", None, None), ("n", None, None, None),
                      ("", "text", None, None), ("é😀", "text", None, None), ("a b", "int", 1, 0)]
    assert rows_[5]["tokens"] == [] and got[5] == []
    assert [(t["key"], t["token"]) for t in rows_[6]["tokens"]] == [("}", "1")]  # a name like what follows
    for text, cells_ in zip(texts, got, strict=True):  # and the reference agrees
        assert cells_ == [expected_cell(k, v, "timestamp_ntz") for k, v in loads_exact(text).items()]


CALENDAR = {
    "2024-02-29": "date", "2000-02-29": "date", "0400-02-29": "date", "1600-02-29": "date", "2023-02-29": "text",
    "1900-02-29": "text", "2100-02-29": "text", "2024-02-30": "text", "2024-04-31": "text", "2024-04-30": "date",
    "2024-12-31": "date", "2024-13-01": "text", "2024-00-10": "text", "2024-01-00": "text", "0000-01-01": "text",
    "0001-01-01": "date", "9999-12-31": "date", "2024-1-01": "text", "2024/01/01": "text", "20240101": "text",
    "2024-01-01T00:00:00": "naive", "2024-01-01T23:59:59.999999": "naive", "2024-01-01 10:00:00": "naive",
    "2024-01-01T24:00:00": "text", "2024-01-01T10:60:00": "text", "2024-01-01T10:00:60": "text",
    "2024-01-01T10:00": "text", "2024-01-01T10:00:00.": "text", "2024-01-01T10:00:00.1234567": "text",
    "2024-01-01T10:00:00,5": "text", "2024-01-01t10:00:00": "text", "2024-01-01T10:00:00Z": "timestamp",
    "2024-01-01T10:00:00z": "text", "2024-01-01T10:00:00.5+05:30": "timestamp", "2024-01-01T10:00:00-00:00":
    "timestamp", "2024-01-01T10:00:00+23:59": "timestamp", "2024-01-01T10:00:00+23:60": "text",
    "2024-01-01T10:00:00+05:99": "timestamp", "2024-01-01T10:00:00+24:00": "text", "2024-01-01T10:00:00+0530":
    "text", "2024-01-01T10:00:00+05": "text", "2024-01-01T10:00:00+05:30:00": "text", "2023-02-29T10:00:00": "text",
    "2024-02-29 10:00:00Z": "timestamp", "2024-01-01\n": "text", "2024-01-01T10:00:00\n": "text",
    "٢٠٢٤-01-01": "text", "2024-01-01T10:00:00.١": "text", " 2024-01-01": "text",
}
"""Calendar and shape edges of `inferred._text_kind` (`naive` stands for the naive kind)."""


def test_calendar_edges(spark, expressions):
    texts = list(CALENDAR)
    df = spark.createDataFrame([(i, s) for i, s in enumerate([*texts, None])], "i int, s string")
    got = df.select("i", *expressions["kinds"]).orderBy("i").collect()
    assert tuple(got.pop()[1:]) == ("text", "text")  # NULL (an escape Spark's reader refused): text
    for s, row in zip(texts, got, strict=True):
        for naive in NAIVE:
            expect = naive if CALENDAR[s] == "naive" else CALENDAR[s]
            assert (row[naive], _text_kind(s, naive)) == (expect, expect), repr(s)


# -- the fold alone (no Spark) ----------------------------------------------------------------------------------
PY_VALUES = st.one_of(STRINGS, st.integers(-(10**20), 10**20), st.sampled_from(INT_EDGES),
                      DECIMALS.map(Decimal), st.sampled_from([Decimal("NaN"), Decimal("1E+3"), 1.5, b"x"]),
                      st.booleans(), st.none(), NESTED_VALUES)


@settings(max_examples=300, deadline=None, database=None)
@given(images=st.lists(st.tuples(st.integers(0, 1), st.dictionaries(st.sampled_from("abcd"), PY_VALUES,
                                                                      max_size=4)), max_size=30),
       naive=st.sampled_from(NAIVE), seed=st.integers(0, 2**32))
def test_python_images_in_any_order_match_type_observer(images, naive, seed):
    """Observed in shuffled order with their order numbers, the images give `TypeObserver`'s summaries of the
    images in order (the kinds a mixed text column stops taking depend on that order)."""
    expect = observed([(g, image) for g, image in images], naive)
    summaries = CellSummaries(naive)
    shuffled = list(enumerate(images))
    random.Random(seed).shuffle(shuffled)
    for i, (g, image) in shuffled:
        summaries.add_python(g, i, image)
    assert {g: summaries.vendor_types(g) for g in summaries.groups()} == {g: c for g, c in expect.items() if c}


CELL = pa.struct([("name", pa.string()), ("kind", pa.string()), ("whole", pa.int32()), ("scale", pa.int32())])


def cell_lists(rows_: list, list_type=None) -> pa.Array:
    """Cells as Spark hands them over: one list per row (None: a row the tokenizer routed away)."""
    value = [None if r is None else [dict(zip(CELL.names, c, strict=True)) for c in r] for r in rows_]
    return pa.array(value, list_type or pa.list_(CELL))


ONE, TEXT, DATE = ("a", "int", 1, 0), ("a", "text", None, None), ("a", "date", None, None)


@pytest.mark.parametrize(("order", "expect"), [
    ([ONE, TEXT, DATE], "json:int,text;digits=1;scale=0"),   # mixed text column: the date text is not classified
    ([DATE, TEXT, ONE], "json:date,int,text;digits=1;scale=0"),
    ([TEXT, DATE, ONE], "json:date,int,text;digits=1;scale=0"),
])
def test_fold_keeps_the_observers_order_of_values(order, expect):
    """The kinds of a column depend on its values' order (see the module): batches in any order, one result."""
    values = {ONE: 1, TEXT: "x", DATE: "2024-01-01"}
    observer = TypeObserver()
    for c in order:
        observer.observe("g", {"a": values[c]})
    assert observer.summaries("g")["a"].vendor_type() == expect
    summaries = CellSummaries()
    for i in reversed(range(len(order))):
        summaries.add_cells(pa.array(["g"]), pa.array([i]), cell_lists([[order[i]]]))
    assert summaries.vendor_types("g") == [("a", expect)]


def test_fold_after_a_nested_value_takes_every_kind_again():
    """Once a column has seen an object (`json`, Python rows only), every text is classified again."""
    summaries, observer = CellSummaries(), TypeObserver()
    images = [{"a": 1}, {"a": "x"}, {"a": "2024-01-01"}, {"a": {"k": 1}}, {"a": "2024-01-02T00:00:00Z"}]
    for image in images:
        observer.observe("g", image)
    summaries.add_cells(pa.array(["g"] * 3), pa.array([0, 1, 2]), cell_lists([[ONE], [TEXT], [DATE]]))
    summaries.add_python("g", 3, images[3])
    summaries.add_cells(pa.array(["g"]), pa.array([4]), cell_lists([[("a", "timestamp", None, None)]]))
    expect = observer.summaries("g")["a"].vendor_type()
    assert expect == "json:int,json,text,timestamp;digits=1;scale=0"
    assert summaries.vendor_types("g") == [("a", expect)]


def test_fold_groups_struct_keys_in_chunks_and_skips_routed_rows():
    """Struct group keys (one file's table versions), chunked arrays, large list and string types, routed-away
    (null) rows and empty objects; columns in order of first appearance, numbers' digits and scales."""
    group_type = pa.struct([("uri", pa.large_string()), ("version", pa.int64())])
    groups = [{"uri": "f", "version": 1}, {"uri": "f", "version": 2}]
    rows_ = [(0, [("b", "decimal", -1, 3), ("a", "bigint", 12, 0)]), (1, [("z", None, None, None)]), (0, None),
             (0, []), (1, [("z", "boolean", None, None), ("y", "text", None, None)]),
             (0, [("c", None, None, None), ("a", "int", 1, 0), ("b", "decimal", 4, 1)])]
    large = pa.large_list(pa.struct([("name", pa.large_string()), ("kind", pa.large_string()),
                                     ("whole", pa.int32()), ("scale", pa.int32())]))
    cells_ = pa.chunked_array([cell_lists([c for _, c in rows_[:3]], large), cell_lists([c for _, c in rows_[3:]], large)])
    group = pa.chunked_array([pa.array([groups[g] for g, _ in rows_[:2]], group_type),
                              pa.array([groups[g] for g, _ in rows_[2:]], group_type)])
    summaries = CellSummaries()
    summaries.add_cells(group, pa.array(range(10, 16)), cells_)
    assert summaries.groups() == groups
    assert summaries.vendor_types(groups[0]) == [("b", "json:decimal;digits=4;scale=3"),
                                                 ("a", "json:bigint,int;digits=12;scale=0"), ("c", "json:")]
    assert summaries.vendor_types(groups[1]) == [("z", "json:boolean"), ("y", "json:text")]
    assert list(summaries) == [(g, summaries.vendor_types(g)) for g in groups]
    summaries.pop(groups[0])
    assert summaries.groups() == [groups[1]] and summaries.vendor_types(groups[0]) == []


def test_fold_groups_by_any_arrow_value():
    """A group of a type Arrow cannot hash (a list) is grouped by its Python value."""
    group = pa.array([["f", "1"], ["f", "2"], ["f", "1"]], pa.list_(pa.string()))
    summaries = CellSummaries()
    summaries.add_cells(group, pa.array([0, 1, 2]), cell_lists([[ONE], [TEXT], [DATE]]))
    assert summaries.groups() == [["f", "1"], ["f", "2"]]
    assert summaries.vendor_types(["f", "1"]) == [("a", "json:date,int;digits=1;scale=0")]
    assert summaries.vendor_types(["f", "2"]) == [("a", "json:text")]


def test_variant_text_widens_exactly_the_numbers_the_emitter_turns_to_strings(spark):
    """`json_tokens.variant_text` flags and quotes a number exactly when `emit._variant_safe` turns the value
    `loads_exact` reads into a string: at the edges of 38 digits and scale 38, with a sign, a point and leading
    zeros (only tokens longer than 38 characters are read, so the edges are where that shortcut could err)."""
    from cdcnorm.canonical.emit import _variant_safe
    from cdcnorm.canonical.json_tokens import variant_text

    numbers = []
    for digits in (37, 38, 39, 40):
        for sign in ("", "-"):
            whole = "9" * digits
            numbers += [sign + whole, sign + whole[:-1] + "." + whole[-1], sign + "0." + whole, sign + whole[:20] + "." +
                        whole[20:], sign + "0." + "0" * (38 - digits % 3) + "1" * (digits % 3 + 1)]
    numbers += ["0." + "0" * 37 + "1", "0." + "0" * 38 + "1", "1" + "0" * 37, "1" + "0" * 38, "-0.0"]
    texts = [f'{{"n": {n}, "s": "x"}}' for n in numbers]
    df = spark.createDataFrame([(i, t) for i, t in enumerate(texts)], "i int, text string")
    got = (df.select("i", flat_tokens("text", max_digits=None).alias("tokens"))
           .select("i", *[c.alias(a) for c, a in zip(variant_text(F.col("tokens")), ("image", "widened"), strict=True)])
           .orderBy("i").collect())
    for n, text, row in zip(numbers, texts, got, strict=True):
        flags: list[str] = []
        expected = _variant_safe(loads_exact(text), flags)
        assert row["widened"] == bool(flags), n
        assert json.loads(row["image"])["n"] == (expected["n"] if flags else json.loads(text)["n"]), n
