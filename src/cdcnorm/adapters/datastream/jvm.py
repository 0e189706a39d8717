"""Datastream JSON events decoded by Spark: the canonical columns of one JSON line as Spark expressions.

Why: the Python decode costs about 35 us a record in CPython; Spark parses the line (`try_parse_json`) and the
recipes of :func:`cdcnorm.adapters.datastream.events.to_change` become expressions over it. The Python decoder stays
the reference: a line these expressions cannot hold exactly is marked `_fallback` and decoded by it in the same run
(cdcnorm.ingest.jvm_decode). What the expressions take: MySQL, PostgreSQL and Oracle events of the documented shape
(string envelope fields, Datastream's own time form, a flat payload, integer positions). Everything else (other
source engines, epoch-millisecond or zone-less times, nested payload values, key columns that are not exact payload
members, BigQuery rows, damaged JSON) falls back; each test below names the Python rule it mirrors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from cdcnorm.adapters.datastream.payload import payload_hash
from cdcnorm.adapters.datastream.spec import SPEC
from cdcnorm.canonical import json_cells, json_tokens, tuple_codec, tuple_expr
from cdcnorm.canonical.emit import KIND_CHANGE, KIND_LINE, LINE
from cdcnorm.canonical.emit import Bookkeeping as B
from cdcnorm.canonical.json_members import JsonMembers

if TYPE_CHECKING:
    from cdcnorm.adapters.base import LineObservation
    from cdcnorm.canonical.emit import BatchBuilder

FMT_JSON = SPEC.formats[0]
FAST_SOURCES = ("mysql", "postgresql", "oracle")
_DS_TIME = r"^(19[7-9][0-9]|[2-9][0-9]{3})-[0-9]{2}-[0-9]{2}T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?Z$"
"""Datastream's own time form (`2024-03-31T16:23:07.938Z`) from 1970 on, which `types.parse_ts` reads as UTC."""
_PAYLOAD = r'"payload"\s*+:\s*+(\{(?:[^{}"\[\]]++|"(?:[^"\\]++|\\.)*+")*+\})'
"""The payload member when its value is a flat object (no object or array inside it outside its strings)."""
_READ_METHOD = r"^[A-Za-z0-9_]+(-[A-Za-z0-9_]*)*$"
_CHANGE_TYPE = r"^[A-Za-z-]*$"
_RS_ID = r"^(0x)?[0-9a-fA-F]{1,15}(\.[0-9a-fA-F]{1,15})*$"
_LSN = r"^([0-7][0-9A-Fa-f]{7}|[0-9A-Fa-f]{1,7})/[0-9A-Fa-f]{1,8}$"
_BIN_SUFFIX = r"([0-9]{1,18})\s*$"
_OPS = {"INSERT": "INSERT", "CREATE": "INSERT", "READ": "INSERT", "UPDATE": "UPDATE", "UPDATE-INSERT": "UPDATE",
        "DELETE": "DELETE", "UPDATE-DELETE": "DELETE"}
PAIR_SEP = "\x1f"
_SM = "$.source_metadata"


class _Line(JsonMembers):
    """The members of a Datastream line, read as `source_metadata`'s accessors read them (`events`)."""

    def text(self, path: str, numbers: bool = False) -> Column:
        """`source_metadata.text()`: a string as itself, absent/null/"" as NULL (with `numbers`, an integer as
        its digits, as `str(int)` gives them); any other JSON type falls back."""
        t = self.typ(path)
        allowed = ["STRING", "VOID", *(["BIGINT"] if numbers else [])]
        self.checks.append(t.isNull() | t.isin(*allowed))
        return F.nullif(self.get(path, "string"), F.lit(""))

    def require_text(self, *paths: str) -> None:
        """Only the type test of `text` (a string, null or absent), for members read raw."""
        for path in paths:
            self.text(path)

    def integer(self, path: str) -> Column:
        """`source_metadata.integer()` of an integer member (absent/null: NULL; other types fall back)."""
        t = self.typ(path)
        self.checks.append(t.isNull() | t.isin("BIGINT", "VOID"))
        return self.get(path, "bigint")

    def is_true(self, path: str) -> Column:
        """`sm.get(name) is True`: the JSON value true, nothing else."""
        return F.coalesce((self.typ(path) == "BOOLEAN") & self.get(path, "boolean"), F.lit(False))

    def time(self, path: str) -> Column:
        """`types.parse_ts` of Datastream's own form; absent, null and "" are NULL; other forms fall back."""
        t = self.typ(path)
        s = self.get(path, "string")
        value = F.when((t == "STRING") & s.rlike(_DS_TIME), s.try_cast("timestamp"))
        self.checks.append(t.isNull() | (t == "VOID") | ((t == "STRING") & (s == "")) | value.isNotNull())
        return value


def lines_to_columns(df: DataFrame, stream_option: str | None, explain: bool = False) -> DataFrame:
    """For each `line` row (`_line`: the bytes of one JSON line) the canonical columns, or `_fallback`.

    Also, for the finisher (cdcnorm.ingest.jvm_decode): `_id_bytes` (the tuple bytes the event id hashes, before
    the payload hash when `_hash_text` is set), `_sort_bytes` (the sort key before its event id), `_cells` (the
    payload's values observed for the file's schema version)."""
    is_line = F.col(B.KIND) == KIND_LINE
    text = F.col(LINE).cast("string")
    df = (df.withColumn("_valid", is_line & F.try_parse_json(text).isNotNull())
          .withColumn("_payload_text", F.when(F.col("_valid"), F.regexp_extract(text, _PAYLOAD, 1))))
    df = df.withColumn("_tokens", F.when(F.col("_payload_text") != "", json_cells.flat_tokens(F.col("_payload_text"), max_digits=None)))
    ln = _Line(text, F.col("_valid"))
    ln.checks += [F.is_valid_utf8(text), F.col("_tokens").isNotNull(), F.regexp_count(text, F.lit(r'"payload"\s*:')) == 1,
                  ln.is_object("$.payload"), ln.is_struct(_SM), ~ln.given(f"{_SM}.collection"),
                  F.coalesce(ln.get("$.kind", "string"), F.lit("")) != "storage#object"]

    rm = ln.get("$.read_method", "string")
    ln.checks += [ln.typ("$.read_method") == "STRING", rm.rlike(_READ_METHOD)]
    prefix = F.split(F.lower(rm), "-", 2)[0]
    source_db = ln.keep("source_db", F.when(prefix == "postgres", F.lit("postgresql")).otherwise(prefix))
    ln.checks.append(source_db.isin(*FAST_SOURCES))
    source_ts = ln.keep("source_ts", ln.time("$.source_timestamp"))
    capture_ts = ln.time("$.read_timestamp")

    has_ct = ln.given(f"{_SM}.change_type")
    ct_type = F.when(has_ct, ln.typ(f"{_SM}.change_type")).otherwise(ln.typ(f"{_SM}.mod_type"))
    ct_raw = F.when(has_ct, ln.get(f"{_SM}.change_type", "string")).otherwise(
        ln.get(f"{_SM}.mod_type", "string"))
    ln.checks += [ct_type.isNull() | ct_type.isin("STRING", "VOID"), F.coalesce(ct_raw, F.lit("")).rlike(_CHANGE_TYPE)]
    ct = ln.keep("ct", F.upper(F.coalesce(ct_raw, F.lit(""))))
    rm_low = F.lower(rm)
    backfill = ln.keep("backfill", rm_low.contains("backfill") | rm_low.contains("dump") | (ct == "READ")
                       | ln.is_true(f"{_SM}.snapshot"))
    is_deleted = ln.is_true(f"{_SM}.is_deleted")
    deletes = ct.isin("DELETE", "UPDATE-DELETE")
    op = ln.keep("op", F.when(deletes, F.lit("DELETE")).when(backfill, F.lit("SNAPSHOT"))
          .when(ct == "", F.when(is_deleted, F.lit("DELETE")).otherwise(F.lit("INSERT")))
          .otherwise(F.create_map(*[F.lit(x) for kv in _OPS.items() for x in kv])[ct]))
    ln.checks.append(op.isNotNull())  # an unknown change type: the Python decoder quarantines it (unknown_op)
    flags = (F.when((ct == "") & ~deletes & ~backfill & is_deleted, F.array(F.lit("delete_by_is_deleted")))
             .when(ct == "UPDATE-DELETE", F.array(F.lit("key_change"))).otherwise(F.array().cast("array<string>")))

    # identity (source_metadata.ident): MySQL has no schema level, PostgreSQL no database
    database = ln.keep("database", F.when(source_db != "postgresql", ln.text(f"{_SM}.database")))
    schema_ = ln.keep("schema", F.when(source_db != "mysql", ln.text(f"{_SM}.schema")))
    table = ln.keep("table", F.coalesce(ln.text(f"{_SM}.table"), ln.text("$.object")))
    stream = F.lit(stream_option) if stream_option else ln.keep("stream", F.coalesce(ln.text("$.stream_name"),
                                                                                     F.lit(SPEC.name)))

    # primary keys (source_metadata.primary_keys): the first of three members that is given
    pk_paths = [f"{_SM}.primary_keys", f"{_SM}.replication_index", f"{_SM}.primary_key"]
    pk_type = F.coalesce(*[F.when(ln.given(p), ln.typ(p)) for p in pk_paths])
    pk_values = F.coalesce(*[F.when(ln.given(p), F.when(ln.typ(p) == "STRING",
                                                        F.array(ln.get(p, "string")))
                                    .otherwise(ln.get(p, "array<string>"))) for p in pk_paths])
    ln.checks.append(pk_type.isNull() | pk_type.isin("STRING", "ARRAY<STRING>", "ARRAY<VOID>"))

    pks = ln.keep("pks", pk_values)
    members = F.map_from_entries(F.transform(F.col("_tokens"), lambda t: F.struct(t["key"], t["token"])))
    key_tokens = ln.keep("key_tokens", F.transform(pks, lambda k: F.element_at(members, k)))
    ln.checks += [pks.isNull() | (F.size(F.array_distinct(pks)) == F.size(pks)),
                  pks.isNull() | F.forall(key_tokens, lambda t: t.isNotNull() & json_tokens.scalar_encodable(t))]
    has_key = pks.isNotNull() & (F.size(pks) > 0)
    key_values = ln.keep("key_values", json_tokens.nested_tuple(F.when(has_key, key_tokens)))

    parts, log_position = _position(ln, source_db)
    parts = ln.keep("parts", parts)
    position = ln.keep("position", F.when(~backfill, log_position))  # a backfill row: no log position (to_change)
    rank = F.when(ct == "UPDATE-DELETE", F.lit(0)).otherwise(F.lit(1))
    row_id = ln.text(f"{_SM}.row_id")
    head = F.concat(*[tuple_expr.element("str", c) for c in (F.lit(SPEC.name), stream, database, schema_, table)])
    ct_el = tuple_expr.element("str", ct)
    where = F.when(position.isNotNull(), tuple_expr.element("str", position)).otherwise(
        tuple_expr.element("ts", source_ts))
    id_bytes = F.when(backfill, F.concat(head, ct_el, key_values, tuple_expr.element("str", row_id))).otherwise(
        F.concat(head, ct_el, where, key_values))
    sort_bytes = F.when(backfill, F.concat(tuple_expr.element("int", F.lit(0)), tuple_expr.element("ts", source_ts),
                                           key_values)).otherwise(
        F.concat(tuple_expr.element("int", F.lit(1)), parts, tuple_expr.element("ts", source_ts),
                 tuple_expr.element("int", rank)))

    keys = F.transform(F.col("_tokens"), lambda t: t["key"])
    schema_version = F.coalesce(ln.text("$.schema_key"), F.concat(
        F.lit("json-"), F.substring(F.sha1(F.array_join(keys, PAIR_SEP).cast("binary")), 1, 16)))
    tx_id = F.when(ln.given(f"{_SM}.tx_id"), ln.text(f"{_SM}.tx_id", numbers=True)).otherwise(
        ln.text(f"{_SM}.server_transaction_id", numbers=True))
    pair_role = F.when(position.isNotNull(), F.when(ct == "UPDATE-DELETE", F.lit("delete"))
                       .when(ct == "UPDATE-INSERT", F.lit("insert")))
    pair = F.when(pair_role.isNotNull(), F.concat_ws(PAIR_SEP, stream, F.coalesce(database, F.lit("")),
                                                     F.coalesce(schema_, F.lit("")), F.coalesce(table, F.lit("")),
                                                     position))
    image_text, widened = json_tokens.variant_text(F.col("_tokens"))
    widened = ln.keep("widened", widened)
    image = F.col("_image")
    exact = ln.exact()
    df = ln.with_values(df)
    if explain:  # which exactness test each line failed (tests and diagnosis)
        df = df.withColumn("_checks", F.array(*[F.coalesce(c, F.lit(False)) for c in ln.checks]))
    df = df.withColumn("_fallback", is_line & ~(F.col("_valid") & exact))
    fast = is_line & ~F.col("_fallback")
    # the payload as `from_json` read it is the image (the same VARIANT bytes as `parse_json` of its text), unless a
    # number in it is beyond decimal(38): then the image is the text with those numbers as strings
    df = df.withColumn("_image", F.when(fast, F.when(widened, F.parse_json(image_text))
                                        .otherwise(ln.member("$.payload"))))
    cols = {
        "vendor": F.lit(SPEC.name), "format": F.lit(FMT_JSON), "stream": stream, "source_db": source_db,
        "database": database, "schema": schema_, "table": table, "op": op, "vendor_op": F.when(ln.given(
            f"{_SM}.change_type") | ln.given(f"{_SM}.mod_type"), ct_raw),
        "flags": F.when(widened, F.array_union(flags, F.array(F.lit("decimal_as_string")))).otherwise(flags),
        "primary_keys": pks, "key": F.when(has_key, F.parse_json(json_tokens.object_text(pks, key_tokens))),
        "key_bytes": F.when(has_key, json_tokens.top_level(key_tokens)),
        "before": F.when(op == "DELETE", image), "after": F.when(op != "DELETE", image),
        "missing_columns": F.array().cast("array<string>"), "schema_version": schema_version,
        "source_ts": source_ts, "capture_ts": capture_ts, "tx_id": tx_id, "position": position,
        B.PAIR: pair, B.PAIR_ROLE: pair_role,
        "_id_bytes": id_bytes, "_sort_bytes": sort_bytes, "_hash_text": F.when(backfill | ~has_key,
                                                                              F.col("_payload_text")),
        "_cells": json_cells.cells(F.col("_tokens"), "timestamp"),
    }
    df = df.withColumns({name: F.when(fast, expr).otherwise(F.col(name)) if name in df.columns else F.when(fast, expr)
                         for name, expr in cols.items()})  # one projection: each one more is analysed anew
    df = df.withColumn(B.KIND, F.when(fast, F.lit(KIND_CHANGE)).otherwise(F.col(B.KIND)))  # last: `fast` reads it
    return df.drop("_valid", "_payload_text", "_tokens", "_image", *ln.columns())


def _position(ln: _Line, source_db: Column) -> tuple[Column, Column]:
    """(encoded position parts, readable position) of `source_metadata.position` for the three engines."""
    # MySQL: (binlog file number, position), `file:pos`
    file_given = ln.given(f"{_SM}.log_file")
    ln.require_text(f"{_SM}.log_file", f"{_SM}.binlog_file")
    file_raw = ln.keep("file", F.when(file_given, ln.get(f"{_SM}.log_file", "string")).otherwise(
        ln.get(f"{_SM}.binlog_file", "string")))
    pos = ln.keep("file_pos", F.when(ln.given(f"{_SM}.log_position"), ln.integer(f"{_SM}.log_position")).otherwise(
        ln.integer(f"{_SM}.binlog_position")))
    # printable ASCII, so Python's Unicode \d and \s in `_BIN_SUFFIX` mean what Java's do; at most 18 end digits
    ln.checks.append((source_db != "mysql") | (F.coalesce(file_raw, F.lit("")).rlike(r"^[\x20-\x7E]*$")
                                               & ~F.coalesce(file_raw, F.lit("")).rlike(r"[0-9]{19}\s*$")))
    number = F.nullif(F.regexp_extract(F.coalesce(file_raw, F.lit("")), _BIN_SUFFIX, 1), F.lit("")).cast("bigint")
    mysql_empty = (F.coalesce(file_raw, F.lit("")) == "") & (F.coalesce(pos, F.lit(0)) == 0)
    mysql_parts = F.when(mysql_empty, F.concat(tuple_expr.none(), tuple_expr.none())).otherwise(
        F.concat(tuple_expr.element("int", number), tuple_expr.element("int", pos)))
    mysql_text = F.when(~mysql_empty, F.concat(F.coalesce(file_raw, F.lit("None")), F.lit(":"),
                                               F.coalesce(pos.cast("string"), F.lit("None"))))

    # Oracle: (scn, rs_id hex parts, ssn), `scn=..,rs_id=..,ssn=..`
    scn, ssn = ln.integer(f"{_SM}.scn"), ln.integer(f"{_SM}.ssn")
    rs = ln.keep("rs_id", F.trim(F.coalesce(ln.text(f"{_SM}.rs_id"), F.lit(""))))  # `.strip()`: real rs_ids are space-padded
    ln.checks.append((source_db != "oracle") | (rs == "") | rs.rlike(_RS_ID))
    rs_parts = F.transform(F.split(F.regexp_replace(rs, r"^0x", ""), r"\."),
                           lambda p: F.conv(p, 16, 10).cast("bigint"))
    rs_tuple = tuple_expr.nested(F.when(rs == "", F.lit(bytearray())).otherwise(F.aggregate(
        F.transform(rs_parts, lambda n: tuple_expr.element("int", n, True)), F.lit(bytearray()),
        lambda acc, b: F.concat(acc, b))))
    oracle_empty = scn.isNull() & (rs == "")
    oracle_parts = F.concat(tuple_expr.element("int", scn), rs_tuple, tuple_expr.element("int", ssn))
    oracle_text = F.when(~oracle_empty, F.concat(
        F.lit("scn="), F.coalesce(scn.cast("string"), F.lit("None")), F.lit(",rs_id="), rs,
        F.lit(",ssn="), F.coalesce(ssn.cast("string"), F.lit("None"))))

    # PostgreSQL: (lsn as one number,), the lsn text
    lsn = ln.keep("lsn", F.trim(F.coalesce(ln.text(f"{_SM}.lsn"), F.lit(""))))
    ln.checks.append((source_db != "postgresql") | (lsn == "") | ~lsn.contains("/") | lsn.rlike(_LSN))
    hi, lo = F.split(lsn, "/", 2)[0], F.split(lsn, "/", 2)[1]
    lsn_value = F.when(lsn.rlike(_LSN), F.conv(hi, 16, 10).cast("bigint") * F.lit(1 << 32)
                       + F.conv(lo, 16, 10).cast("bigint"))
    pg_parts = tuple_expr.element("int", lsn_value)
    pg_text = F.nullif(lsn, F.lit(""))
    # beyond the spaces `trim` removes, Python's `.strip()` also removes other (Unicode) blanks: those fall back
    ln.checks.append((source_db != "oracle") | ~rs.rlike(r"(?U)^\s|\s$"))
    ln.checks.append((source_db != "postgresql") | ~lsn.rlike(r"(?U)^\s|\s$"))
    parts = (F.when(source_db == "mysql", mysql_parts).when(source_db == "oracle", oracle_parts)
             .otherwise(pg_parts))
    text = F.when(source_db == "mysql", mysql_text).when(source_db == "oracle", oracle_text).otherwise(pg_text)
    return parts, text


class DatastreamJvm:
    """The adapter's `JvmDecode`: Datastream JSON lines by Spark expressions (`lines_to_columns`)."""

    def __init__(self, adapter: Any):  # the DatastreamAdapter (its module imports this one)
        self.adapter = adapter

    def columns(self, lines: DataFrame) -> DataFrame:
        return lines_to_columns(lines, self.adapter.options.stream)

    def id_tail(self, hash_text: str) -> bytes:
        """The payload hash ending a backfill row's (or a keyless table's) id parts (`events.to_change`)."""
        from cdcnorm.containers import loads_exact

        return tuple_codec.encode((payload_hash(loads_exact(hash_text)),))

    def fallback(self, path: str, raw: bytes, offset: int, line_number: int,
                 out: BatchBuilder) -> list[LineObservation]:
        return self.adapter.decode_line(path, raw, offset, line_number, out)
