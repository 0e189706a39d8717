"""GoldenGate for Big Data / DAA output -> canonical change rows.

Inputs: files (JSON lines or concatenated / pretty-printed JSON objects of the JSON formatter, op- or
row-modeled; Avro container files of the Avro op formatter) and Kafka-shaped DataFrames through
:meth:`GoldenGateAdapter.decode_message` (a JSON value, several back to back for the Kafka handler's
`mode=tx`, or an Avro datum read with the `avro_schemas` folder).
"""

from __future__ import annotations

from typing import IO, Any, ClassVar

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from cdcnorm import containers
from cdcnorm.adapters.base import Adapter, AdapterOptions, MessageMeta
from cdcnorm.adapters.goldengate import avro, envelope, versions
from cdcnorm.adapters.goldengate.changes import Context, Op, Tx, changes_of, per_table
from cdcnorm.adapters.goldengate.options import GoldenGateOptions
from cdcnorm.adapters.goldengate.positions import zone
from cdcnorm.adapters.goldengate.spec import SPEC
from cdcnorm.adapters.goldengate.values import TableTypes
from cdcnorm.canonical.emit import BatchBuilder
from cdcnorm.canonical.emit import Bookkeeping as B
from cdcnorm.canonical.record import Change
from cdcnorm.errors import DecodeError

VENDOR = SPEC.name
FMT_JSON, FMT_ROW, FMT_AVRO = SPEC.formats
_FMT = {"op": FMT_JSON, "row": FMT_ROW}


class GoldenGateAdapter(Adapter):
    """Oracle GoldenGate for Big Data / DAA (JSON op- and row-modeled, Avro op) -> canonical change rows."""

    name: ClassVar[str] = VENDOR
    formats: ClassVar[tuple[str, ...]] = SPEC.formats
    flags: ClassVar[tuple[str, ...]] = SPEC.flags
    Options: ClassVar[type[AdapterOptions]] = GoldenGateOptions

    def __init__(self, options: dict[str, Any] | AdapterOptions | None = None):
        super().__init__(options)
        o = self.options
        tz = zone(o.time_zone)
        ops = {o.insert_op_key: "INSERT", o.update_op_key: "UPDATE", o.delete_op_key: "DELETE",
               o.truncate_op_key: "TRUNCATE"}
        types = {t: TableTypes(cols, tz, o.binary_encoding) for t, cols in o.column_types.items()}
        self.ctx = {fmt: Context(fmt, self.stream_name(None, VENDOR), ops, tz, zone(o.current_ts_zone or o.time_zone),
                                 dict(o.keys), types, o.tx_token, o.source_db) for fmt in SPEC.formats}
        self._schemas: avro.SchemaStore | None = None
        self._sent = versions.Sent()
        self._declared = {t: versions.declared(types[t].declared) for t in types}

    # -- detection -------------------------------------------------------------------------------------------
    @classmethod
    def sniff(cls, path: str | None, head: bytes) -> bool:
        text = head[:16384]
        if text[:4] == containers.AVRO_MAGIC:
            return b'"op_type"' in text and b'"pos"' in text or b"oracle.goldengate" in text
        return b'"op_type"' in text and b'"op_ts"' in text and b'"pos"' in text and b'"table"' in text

    # -- files -----------------------------------------------------------------------------------------------
    def read_file(self, path: str, fh: IO[bytes], out: BatchBuilder):
        out.set_context(VENDOR, FMT_JSON)
        src = containers.open_source(fh)
        kind = containers.container_of(src)
        if kind == "avro":
            yield from self._read_avro(path, src, out)
        elif kind == "json":
            records = containers.JsonRecords(src)
            yield from containers.each_record(path, records, out, lambda rec: self._guarded(
                lambda: self._emit(self._json(rec.value, None), out), out))
        elif kind == "empty":
            return
        else:
            out.begin_record(path, 0, raw=src.read(containers.RAW_CAP))
            out.quarantine("unknown_format", f"{path}: not GoldenGate output: supported are the JSON formatter's "
                                             "records (op- or row-modeled) and Avro op container files")
            yield

    def _read_avro(self, path: str, src: containers.Source, out: BatchBuilder):
        out.set_context(VENDOR, FMT_AVRO)
        file = containers.AvroFile(src)
        try:
            file.read_header()
        except containers.AvroHeaderError as exc:
            out.begin_record(path, 0, raw=None)
            damage = file.header_damage(exc)
            out.quarantine(damage.error_class, f"{path}: {damage.message}", raw=damage.raw)
            yield
            return
        if not avro.is_op_schema(file.writer_schema):
            out.begin_record(path, 0, raw=bytes(file.header_bytes))
            out.quarantine("unsupported_format", f"{path}: an Avro file whose schema is not the GoldenGate Avro op "
                                                 "formatter's (avro_row output is not read)")
            yield
            return
        found = versions.avro(file.writer_schema)
        yield from containers.each_record(path, file.records(), out, lambda rec: self._guarded(
            lambda: self._emit(self._ops(avro.op_of(rec.value), FMT_AVRO, None), out, found), out))

    # -- raw messages ----------------------------------------------------------------------------------------
    def decode_message(self, value: bytes | None, meta: MessageMeta, out: BatchBuilder) -> None:
        out.set_context(VENDOR, FMT_JSON)
        if value is None or not value.strip():
            out.quarantine("empty_message", "a GoldenGate message without a value")
            return
        self._guarded(lambda: self._message(value, meta, out), out)

    def _message(self, value: bytes, meta: MessageMeta, out: BatchBuilder) -> None:
        if value.lstrip()[:1] in (b"{", b"["):
            objs = envelope.values_of(value)
            if len(objs) == 1:
                self._emit(self._json(objs[0], None), out)
                return
            # Kafka handler mode=tx: one source transaction, its operations in order; the first one's `pos`
            # names the transaction (stable on redelivery). Every operation decodes, or the message is refused.
            first = objs[0].get("pos") if isinstance(objs[0], dict) else None
            tx_id = f"pos:{first}" if isinstance(first, str) and first else None
            found = []
            for i, obj in enumerate(objs):
                found += self._json(obj, Tx(tx_id, i + 1, i == len(objs) - 1) if tx_id else None)
            self._emit(found, out)
            return
        if self._schemas is None:
            self._schemas = avro.SchemaStore(self.options.avro_schemas)
        rec, schema = self._schemas.read(value, meta.topic)
        self._emit(self._ops(avro.op_of(rec), FMT_AVRO, None), out, versions.avro(schema))

    # -- a row formatter's key update: a delete and an insert at one pos ----------------------------------------
    def post_process(self, changes: DataFrame) -> DataFrame:
        """A row-modeled DELETE and INSERT of one table at one `pos` are the two halves of a primary-key update
        (`pkUpdateHandling=delete-insert`): both are flagged `key_change`. Op-modeled key changes are split and
        flagged by the decoder."""
        if not self.options.link_key_changes:
            return changes
        pairs = (changes.where(F.col(B.PAIR).isNotNull()).groupBy(F.col(B.PAIR).alias("_kc_pair"))
                 .agg((F.size(F.collect_set(B.PAIR_ROLE)) > 1).alias("_kc_both")))
        joined = changes.join(pairs, F.col(B.PAIR) == F.col("_kc_pair"), "left")
        both = F.coalesce(F.col("_kc_both"), F.lit(False))
        flags = F.coalesce(F.col("flags"), F.array().cast("array<string>"))
        return (joined.withColumn("flags", F.when(both, F.array_union(flags, F.array(F.lit("key_change"))))
                                  .otherwise(F.col("flags")))
                .drop("_kc_pair", "_kc_both"))

    # -- one operation ---------------------------------------------------------------------------------------
    def _json(self, obj: Any, tx: Tx | None) -> list[Change]:
        op, model = envelope.op_of(obj, self.options.model)
        return self._ops(op, _FMT[model], tx)

    def _ops(self, op: Op, fmt: str, tx: Tx | None) -> list[Change]:
        return changes_of(op, self.ctx[fmt], tx)

    def _emit(self, changes: list[Change], out: BatchBuilder, schema: tuple | None = None) -> None:
        """The rows, then the table's schema version when it is known (Avro's schema, else declared types)."""
        for change in changes:
            out.set_context(VENDOR, change.format)
            out.change(change)
        if not changes or changes[0].op == "TRUNCATE" and schema is None:
            return
        first = changes[0]
        declared = None
        if self._declared:
            name = ".".join(p for p in (first.database, first.schema, first.table) if p)
            declared = per_table(self._declared, name, first.schema, first.table or "")
        if schema is None:
            schema = declared
        elif declared is not None:  # an Avro column written as text, declared (dates): the declared type
            types = {n: ct for n, _, ct in declared[1]}
            cols = [(n, vt, types.get(n, ct)) for n, vt, ct in schema[1]]
            schema = (versions.merged_id(schema[0], cols), cols)
        if schema is not None:
            sv = self._sent.version(first, *schema)
            if sv is not None:
                out.schema(sv)

    @staticmethod
    def _guarded(step, out: BatchBuilder) -> None:
        """Decode one record; any failure quarantines it (nothing raises out of the adapter)."""
        try:
            step()
        except DecodeError:
            raise
        except Exception as exc:
            raise DecodeError("decode_failed", f"unexpected {type(exc).__name__}: {exc}; this is a cdcnorm bug - "
                                               "report it with the raw record") from None
