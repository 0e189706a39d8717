"""What an adapter is: a mostly declarative decoder from one vendor's records to canonical rows.

A complete adapter, runnable as it stands (the test suite executes exactly this block). "Acme" writes one JSON
object per line, `{"op": "i"|"u"|"d", "table": ..., "seq": n, "key": [...], "row": {...}}`:

```python
import orjson

from cdcnorm import containers
from cdcnorm.adapters import register
from cdcnorm.adapters.base import Adapter
from cdcnorm.canonical.record import Change
from cdcnorm.errors import DecodeError

OPS = {"i": "INSERT", "u": "UPDATE", "d": "DELETE"}


class AcmeAdapter(Adapter):
    # Acme CDC: JSON lines of {op, table, seq, key, row}
    name = "acme"
    formats = ("acme.jsonl",)
    flags = ()  # the canonical.schema.FLAGS this adapter emits itself

    @classmethod
    def sniff(cls, path, head):
        return head.startswith(b'{"op"') and b'"seq"' in head[:256]

    def read_file(self, path, fh, out):
        # The container tier delimits records (gzip, broken lines, BOM, ...); the adapter decodes one at a time.
        out.set_context(self.name, self.formats[0])
        records = containers.JsonRecords(containers.open_source(fh), orjson.loads)
        yield from containers.each_record(path, records, out, lambda rec: self.decode(rec.value, out))

    def decode_message(self, value, meta, out):
        try:
            obj = orjson.loads(value)
        except orjson.JSONDecodeError as exc:
            raise DecodeError("bad_json", f"an Acme message is one JSON object ({exc})") from None
        self.decode(obj, out)

    def decode(self, rec, out):
        # One error idiom: raise DecodeError(error_class, message); the record loop quarantines the record.
        try:
            op, seq = OPS[rec["op"]], int(rec["seq"])
        except (KeyError, TypeError, ValueError):
            raise DecodeError("bad_event", "not an Acme change: expected {op: i|u|d, table, seq, key, row}") from None
        row = rec.get("row")
        out.change(Change(
            vendor=self.name, format=self.formats[0], stream=self.stream_name(None, "acme"),
            op=op, table=rec.get("table"), primary_keys=rec.get("key"),
            before=row if op == "DELETE" else None, after=None if op == "DELETE" else row,
            sort_parts=(1, seq), id_parts=(seq,), position=str(seq),
        ))


register("acme", AcmeAdapter)
```

After this, `cdcnorm.normalize(["acme/"], "acme", spark=spark)` decodes Acme files and a raw-message
DataFrame (`value` = one line) alike, and `normalize` without a vendor recognises the files by `sniff`.

How the pieces fit: an adapter decodes one input record at a time in pure Python (orjson / fastavro) inside
`mapInArrow` on the executors, writing outcomes into a :class:`~cdcnorm.canonical.emit.BatchBuilder`: one
`begin_record` per input record (the container tier's `containers.each_record` does that for files), then
`change(...)`, `metadata()` or `filtered(rule)`. A record that cannot be decoded raises
`DecodeError(error_class, message)` (an error class from `canonical.schema.ERROR_CLASSES`) and the record loop
quarantines it with its raw bytes; a record without an outcome is quarantined too, never lost. `sort_parts` order rows within a table; `id_parts` are the stable fields the event id
is hashed from (never a file name or offset), so a redelivered change keeps its id. Steps that need several
records (pairing update halves, linking a key-change pair) are Spark operations in :meth:`Adapter.post_process`,
which must keep the `_records` + `_merged` totals (:class:`~cdcnorm.canonical.emit.Bookkeeping`). What an adapter
needs from the whole input before decoding (Replicate's metadata messages) it asks for with
:meth:`Adapter.first_pass_file` / :meth:`Adapter.first_pass_message`; the pipeline runs that pass and hands
the results, plus the lake's stored schemas, to :meth:`Adapter.prepare`.

A vendor shipped in cdcnorm or in its own package: one package with a `VendorSpec` (formats, flags, compare
rules; see :mod:`cdcnorm.adapters.spec`), one registry line in `cdcnorm/adapters/__init__.py` or an entry point
in the group `cdcnorm.adapters`, an `Options` pydantic model when it takes options, `samples/<vendor>/`, a test
module inheriting :class:`cdcnorm.testing.AdapterContract`, a docs page and a simulator encoder
(docs/architecture.md has the checklist).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, ConfigDict
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from cdcnorm.canonical.emit import BatchBuilder


class AdapterOptions(BaseModel):
    """Options every adapter accepts; adapters extend this model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    stream: str | None = None
    """Override the `stream` column (the vendor-side pipeline name)."""
    decode_path: Literal["python", "jvm"] = "python"
    """`python`: every record the Python decoder (the reference); `jvm`: JSON lines the adapter can decode with Spark
    expressions take that path (`Adapter.jvm_decode`), the rest the Python decoder in the same run. `python` is the
    default while the Spark path costs more than it saves (docs/benchmarks.md)."""


@dataclass(frozen=True, slots=True)
class LineObservation:
    """What the Python decoder observed of a JSON line the Spark expressions handed back: per table version (its
    identity), the version's first change in the line and the row images whose values type the version."""

    ident: tuple
    """(stream, database, schema, table, schema_version)"""
    source_db: str | None
    primary_keys: list[str] | None
    source_ts: dt.datetime | None
    images: list[dict[str, Any]]
    """the row images the version's changes in the line hold, in the order the decoder observed them"""


class JvmDecode(Protocol):
    """An adapter's decode of JSON lines by Spark expressions (cdcnorm.ingest.jvm_decode runs it).

    `columns` turns rows of kind `line` (`_line`: one line's bytes) into change rows, or marks them `_fallback`;
    it also gives `_id_bytes` / `_sort_bytes` (the event id's tuple bytes and the sort key before its event id),
    `_hash_text` (a JSON object whose hash ends the id bytes, see `id_tail`) and `_cells` (the values observed for the
    file's schema version, cdcnorm.canonical.json_cells). `fallback` decodes one such line with the Python decoder
    into `out`, returning what it observed for the schema versions instead of emitting them."""

    def columns(self, lines: DataFrame) -> DataFrame: ...

    def id_tail(self, hash_text: str) -> bytes: ...

    def fallback(self, path: str, raw: bytes, offset: int, line_number: int,
                 out: BatchBuilder) -> list[LineObservation]: ...


@dataclass(frozen=True)
class FirstPass:
    """What the pipeline's first pass hands to :meth:`Adapter.prepare`."""

    kind: str
    """`files` or `messages`: the kind of input being normalized."""
    items: list[Any] = field(default_factory=list)
    """The distinct items `first_pass_file` / `first_pass_message` returned, over the whole input."""
    stored_schemas: list[dict[str, Any]] = field(default_factory=list)
    """The lake's stored schema versions of this vendor (`LAKE/schemas` rows as dicts), when
    `uses_stored_schemas` is set and the run writes a lake."""


@dataclass(frozen=True, slots=True)
class MessageMeta:
    """Kafka-source-shaped metadata of one raw message."""

    key: bytes | None = None
    topic: str | None = None
    partition: str | None = None
    offset: str | None = None
    timestamp: dt.datetime | None = None
    headers: list[tuple[str, bytes | None]] | None = None
    uri: str | None = None


class Adapter:
    """Base class of vendor adapters (see the module docstring for how to write one)."""

    name: ClassVar[str] = ""
    formats: ClassVar[tuple[str, ...]] = ()
    flags: ClassVar[tuple[str, ...]] = ()
    """The `canonical.schema.FLAGS` this adapter emits itself (a packaged vendor takes them from its spec)."""
    Options: ClassVar[type[AdapterOptions]] = AdapterOptions
    ignored_suffixes: ClassVar[tuple[str, ...]] = (".md", ".rst", ".py", ".avsc", ".crc")
    """Documentation, code and schema files kept next to the data: not read, counted as skipped objects.
    Every other file is decoded, and what is not this vendor's output is quarantined, never silently dropped."""

    def __init__(self, options: dict[str, Any] | AdapterOptions | None = None):
        if isinstance(options, AdapterOptions):
            self.options = options
        else:
            self.options = self.Options(**(options or {}))

    def accepts_file(self, path: str) -> bool:
        """Whether a listed file is data to decode (not documentation or code next to it)."""
        return not path.rsplit("/", 1)[-1].lower().endswith(self.ignored_suffixes)

    # -- detection -----------------------------------------------------------------------------------------
    @classmethod
    def sniff(cls, path: str | None, head: bytes) -> bool:
        """True when a file (its path and first bytes) or a message looks like this vendor's output."""
        return False

    # -- decoding (runs on executors) ----------------------------------------------------------------------
    def read_file(self, path: str, fh: IO[bytes], out: BatchBuilder) -> Iterator[None]:
        """Decode one file, streaming; yield after each record so the caller can flush batches."""
        raise NotImplementedError(f"the {self.name} adapter does not read files")

    def decode_message(self, value: bytes | None, meta: MessageMeta, out: BatchBuilder) -> None:
        """Decode one raw message (the `value` of a Kafka-shaped row); `begin_record` was already called."""
        raise NotImplementedError(f"the {self.name} adapter does not decode raw messages")

    def end_messages(self, out: BatchBuilder) -> None:
        """The last messages of a partition were decoded: emit what was gathered over them (schema versions
        summarising untyped values); no outcome of a record."""

    def jvm_decode(self) -> JvmDecode | None:
        """A Spark-expression decode of this adapter's JSON-lines files (cdcnorm.ingest.jvm_decode), or None: every
        record takes the Python decoder, which stays the reference either way."""
        return None

    # -- a first pass (before decoding): what the adapter wants from the whole input ------------------------
    uses_stored_schemas: ClassVar[bool] = False
    """Hand `prepare` the schema versions earlier runs stored in the lake for this vendor."""

    def needs_first_pass(self) -> bool:
        """Whether the pipeline should run :meth:`first_pass_file` / :meth:`first_pass_message` over the input."""
        return False

    def first_pass_file(self, path: str, fh: IO[bytes]) -> Iterable[Any]:
        """Small JSON-serialisable items this adapter wants from one input file (runs on executors)."""
        return ()

    def first_pass_message(self, value: bytes | None) -> Iterable[Any]:
        """Small JSON-serialisable items this adapter wants from one raw message (runs on executors)."""
        return ()

    def prepare(self, first: FirstPass) -> Adapter:
        """Take what the first pass found before decoding; return the adapter to decode with (default: this one).

        The pipeline runs the Spark job and reads the lake; an adapter never does (it gets the results here).
        """
        return self

    # -- multi-record steps (Spark, on the driver's plan) -----------------------------------------------
    def post_process(self, changes: DataFrame) -> DataFrame:
        """Spark steps that need several records; must conserve `_records` + `_merged` totals."""
        return changes

    waiting_roles: ClassVar[tuple[str, ...]] = ()
    """Pair roles (`_pair_role`, before any `/`) of halves that, alone, wait for their partner across runs
    (cdcnorm.ingest.pairing); empty: the adapter's halves never wait."""

    def emitted_half_pair(self) -> Column | None:
        """For a row of the lake's `changes` table (canonical columns), the pair id (`_pair`) it holds when it is a
        half of a role that never waits (not in `waiting_roles`), else null; None: the adapter has no such role.

        Such a half is emitted by the run that brings it, alone or not, and leaves no state entry. A half of a
        waiting role arriving after it therefore has no partner left to wait for: the pairing releases it at once
        (cdcnorm.ingest.pairing), as a run without a wait does, instead of holding it until its stream's events
        are a wait newer (on a quiet stream, never)."""
        return None

    def paired_event_ids(self, pair: Column) -> Column:
        """Event ids the rows made from one pair of halves (`_pair`) can have, when they differ from the halves'
        own ids: such rows replace (`supersedes`) an orphan half emitted earlier (cdcnorm.ingest.pairing)."""
        return F.array().cast("array<string>")

    def stream_name(self, found: str | None, fallback: str) -> str:
        """The stream column: the option override, else what the record says, else a fallback."""
        return self.options.stream or found or fallback
