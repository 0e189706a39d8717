"""A corpus of damaged input files per vendor and container, built at test time, each with its exact outcome.

Why a module of its own: tests/test_damaged_corpus.py checks the corpus twice - file by file through each
adapter's `read_file` (fast, no Spark) and through one `normalize` per vendor into a lake (slow) - from the same
declarations. Every :class:`Case` says how many canonical rows its file yields (and which keys), how many
records are quarantined by which error class, and how many are metadata; the records the file holds are their
sum. Files are built from small hand-made records and from the project's own samples; nothing is committed.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

from avro_blocks import write_in_blocks

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
BOM = b"\xef\xbb\xbf"
DEEP = b'{"a":' * 10_000 + b"1" + b"}" * 10_000
ODD_NAMES = ("a/b", "..", "quo\"te's", "nul\x00byte", "L" * 300, "表_ünï")


@dataclass
class Case:
    """One damaged file and its exact outcome."""

    name: str
    data: bytes
    rows: int
    quarantined: dict[str, int] = field(default_factory=dict)
    metadata: int = 0
    keys: list | None = None  # the good records' key values, in file order (None: not checked)
    raws: list[bytes] | None = None  # the quarantined records' exact raw bytes, in file order (None: non-empty)
    repeats: bool = False  # the good records repeat one another (same event ids): some rows are duplicates

    @property
    def records(self) -> int:
        return self.rows + sum(self.quarantined.values()) + self.metadata


def _lines(objs: list, sep: bytes = b"\n") -> bytes:
    return sep.join(json.dumps(o, ensure_ascii=False).encode() if not isinstance(o, bytes) else o for o in objs) + sep


def _members(lines: list[bytes]) -> tuple[bytes, list[int]]:
    """One gzip member per line (as a rotating writer flushes): the bytes and each member's start."""
    out, starts = b"", []
    for line in lines:
        starts.append(len(out))
        out += gzip.compress(line + b"\n", mtime=0)
    return out, starts


def _complete_lines(cut: bytes) -> int:
    return zlib.decompressobj(31).decompress(cut).count(b"\n")


def _json_cases(prefix: str, good, bad_record: bytes, wrong_vendor: bytes, wrong_class: str,
                numbers: list[tuple[dict, str | None]], unknown_op: bytes, unknown_class: str,
                key=lambda i: i) -> list[Case]:
    """The JSON and gzip damage every vendor's JSON files can suffer, from `good(i)` records (bytes)."""
    g = [good(i) for i in range(1, 21)]
    cases = [
        Case(f"{prefix}bom_crlf.jsonl", BOM + b"\r\n".join(g[:3]) + b"\r\n", 3, keys=[key(i) for i in (1, 2, 3)]),
        Case(f"{prefix}broken_middle.jsonl", b"\n".join([good(21), good(22), bad_record, good(23), good(24)]) + b"\n",
             4, {"bad_json": 1}, keys=[key(i) for i in (21, 22, 23, 24)], raws=[bad_record]),
        Case(f"{prefix}truncated_last.jsonl", b"\n".join([g[4], g[5], g[6][: len(g[6]) // 2]]), 2, {"bad_json": 1},
             keys=[key(5), key(6)], raws=[g[6][: len(g[6]) // 2]]),
        Case(f"{prefix}non_utf8.jsonl", b"\n".join([g[7], g[8].replace(b'"', b'"\xff\xfe', 1), g[9]]) + b"\n", 2,
             {"bad_encoding": 1}, keys=[key(8), key(10)], raws=[g[8].replace(b'"', b'"\xff\xfe', 1)]),
        Case(f"{prefix}deep.jsonl", b"\n".join([g[10], DEEP, g[11]]) + b"\n", 2, {"json_too_deep": 1},
             keys=[key(11), key(12)], raws=[DEEP]),
        Case(f"{prefix}wrong_vendor.jsonl", b"\n".join([wrong_vendor, g[12]]) + b"\n", 1, {wrong_class: 1},
             keys=[key(13)], raws=[wrong_vendor]),
        Case(f"{prefix}unknown_op.jsonl", b"\n".join([g[13], unknown_op]) + b"\n", 1, {unknown_class: 1},
             keys=[key(14)], raws=[unknown_op]),
        Case(f"{prefix}whitespace.jsonl", b" \n\t\r\n  \n", 0),
        Case(f"{prefix}empty.jsonl", b"", 0),  # a zero-byte object: skipped when listing (skipped_objects)
    ]
    pretty = [json.dumps(json.loads(r), indent=2).encode() for r in g[14:18]]
    broken = pretty[1][: len(pretty[1]) // 2]
    cases.append(Case(f"{prefix}concatenated.json", b"\n".join([pretty[0], broken, pretty[2], pretty[3]]), 3,
                      {"bad_json": 1}, keys=[key(15), key(17), key(18)], raws=[broken + b"\n"]))
    arr_broken = g[19][:-5]
    cases.append(Case(f"{prefix}array.json", b"[" + b",\n".join([g[18], arr_broken, good(25)]) + b"]", 2,
                      {"bad_json": 1}, keys=[key(19), key(25)]))
    # numbers: each record's value must be kept exactly (or the record quarantined with the named class)
    num_lines, num_rows, num_q, num_keys = [], 0, {}, []
    for i, (record, klass) in enumerate(numbers):
        num_lines.append(record)
        if klass:
            num_q[klass] = num_q.get(klass, 0) + 1
        else:
            num_rows += 1
            num_keys.append(key(100 + i))
    cases.append(Case(f"{prefix}numbers.jsonl", b"\n".join(num_lines) + b"\n", num_rows, num_q, keys=num_keys))
    big = good(200, big=True)
    cases.append(Case(f"{prefix}five_mb_line.jsonl", b"\n".join([good(26), big, good(27)]) + b"\n", 3,
                      keys=[key(26), key(200), key(27)]))
    # gzip: cut at several points of one deflate stream, a cut inside a member header, a corrupt member
    for base, share in ((300, 1 / 3), (350, 1 / 2), (400, 2 / 3)):  # each file its own records (no duplicates)
        packed = gzip.compress(b"\n".join(good(base + i) for i in range(40)) + b"\n", mtime=0)
        cut = packed[: int(len(packed) * share)]
        n = _complete_lines(cut)
        cases.append(Case(f"{prefix}cut_{base}.jsonl.gz", cut, n, {"truncated_gzip": 1},
                          keys=[key(base + i) for i in range(n)]))
    cases.append(Case(f"{prefix}cut_header.jsonl.gz", packed[:6], 0, {"truncated_gzip": 1}, raws=[packed[:6]]))
    multi, starts = _members([good(450 + i) for i in range(5)])
    cases.append(Case(f"{prefix}cut_at_member.jsonl.gz", multi[: starts[3] + 4], 3, {"truncated_gzip": 1},
                      keys=[key(450 + i) for i in range(3)], raws=[multi[starts[3]: starts[3] + 4]]))
    multi, starts = _members([good(460 + i) for i in range(5)])
    corrupt = bytearray(multi)
    corrupt[starts[2]] = 0x00  # member 3's magic is gone: what follows member 2 is not gzip
    cases.append(Case(f"{prefix}corrupt_member.jsonl.gz", bytes(corrupt), 2, {"corrupt_gzip": 1},
                      keys=[key(460), key(461)], raws=[bytes(corrupt[starts[2]:])]))
    return cases


# -- Datastream ---------------------------------------------------------------------------------------------------
def ds_event(i: int, table: str = "transfers", op: str = "INSERT", big: bool = False, amount=None) -> bytes:
    doc = {
        "uuid": f"00000000-0000-4000-8000-{i:012d}", "read_timestamp": "2025-01-21T10:12:46.698000Z",
        "source_timestamp": "2025-01-21T10:12:31.393000Z", "object": "public_transfers",
        "read_method": "postgresql-cdc", "stream_name": "projects/1/locations/us-central1/streams/damaged",
        "schema_key": "k1", "sort_keys": [1737454351393 + i, f"BD/A{i:07d}"],
        "source_metadata": {"schema": "public", "table": table, "is_deleted": op == "DELETE", "change_type": op,
                            "tx_id": i, "lsn": f"BD/A{i:07d}", "primary_keys": ["id"]},
        "payload": {"id": i, "amount": "1.50", "note": "x" * (5 << 20) if big else "n"},
    }
    text = json.dumps(doc, ensure_ascii=False)
    if amount is not None:
        text = text.replace('"amount": "1.50"', f'"amount": {amount}')
    return text.encode()


def datastream_cases() -> list[Case]:
    dh = json.loads((SAMPLES / "datahub" / "blob" / "documented.jsonl").read_text().splitlines()[0])
    numbers = [(ds_event(100, amount="1e400"), None), (ds_event(101, amount="9" * 5000), None),
               (ds_event(102, amount="0." + "1234567890" * 6), None), (ds_event(103, amount="NaN"), None),
               (ds_event(104, amount="-Infinity"), None)]
    cases = _json_cases("", ds_event, b'{"uuid": "broken", "payload": {"id": 1', json.dumps(dh).encode(), "bad_event",
                        numbers, ds_event(999, op="MERGE"), "unknown_op")
    cases.append(Case("odd_names.jsonl", b"\n".join(ds_event(500 + i, table=t) for i, t in enumerate(ODD_NAMES)) + b"\n",
                      len(ODD_NAMES), keys=[500 + i for i in range(len(ODD_NAMES))]))
    cases.append(Case("exports/not_datastream.csv", b"id,name\n1,a\n", 0, {"unknown_format": 1}, raws=[b"id,name\n1,a\n"]))
    cases += _avro_cases(next((SAMPLES / "datastream" / "shop_payments").rglob("*backfill*.avro")), "", "corrupt_avro")
    cases += _parquet_cases("bq/", _bigquery_rows(), repeats=True)
    return cases


def _bigquery_rows() -> list[dict]:
    path = SAMPLES / "datastream" / "bigquery" / "shop.prices" / "000000000000.json"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return (rows * 6)[:6]


# -- DataHub ------------------------------------------------------------------------------------------------------
def dh_record(i: int, op: str = "INSERT", table: str = "t_items", big: bool = False, amount=None) -> bytes:
    doc = {
        "schema": {"dataColumn": [{"name": "id", "type": "LONG"}, {"name": "amount", "type": "DECIMAL"},
                                  {"name": "note", "type": "STRING"}],
                   "source": {"dbName": "shop", "dbType": "MySQL", "tableName": table}, "primaryKey": ["id"]},
        "payload": {"op": op, "after": {"dataColumn": {"id": i, "amount": "1.50", "note": "x" * (5 << 20) if big else "n"}},
                    "sequenceId": str(1605339516000000000 + i),
                    "timestamp": {"eventTime": 1605339932000 + i, "systemTime": 1605339932736, "checkpointTime": 1605339932000}},
        "version": "0.0.1",
    }
    text = json.dumps(doc, ensure_ascii=False)
    if amount is not None:
        text = text.replace('"amount": "1.50"', f'"amount": {amount}')
    return text.encode()


def datahub_cases() -> list[Case]:
    ds = ds_event(1)
    numbers = [(dh_record(100, amount="1e400"), None), (dh_record(101, amount="9" * 5000), None),
               (dh_record(102, amount="0." + "1234567890" * 6), None)]
    cases = _json_cases("blob/", dh_record, b'{"schema": {"dataColumn": [', ds, "unknown_op",
                        numbers, dh_record(999, op="MERGE"), "unknown_op")
    cases.append(Case("blob/odd_names.jsonl",
                      b"\n".join(dh_record(500 + i, table=t) for i, t in enumerate(ODD_NAMES)) + b"\n",
                      len(ODD_NAMES), keys=[500 + i for i in range(len(ODD_NAMES))]))
    beat = json.loads(dh_record(600))
    beat["payload"] = {"op": "MHEARTBEAT", "sequenceId": "1605339516000000600",
                       "timestamp": {"eventTime": 1605339932600, "systemTime": 1605339932736, "checkpointTime": 1}}
    cases.append(Case("blob/heartbeat.jsonl", _lines([beat]) + dh_record(601) + b"\n", 2, keys=[None, 601]))
    head = b"id,_sequence_id_,_operation_type_,_execute_time_,_source_table_,_before_image_,_after_image_\n"
    rows = [f"{i},{100 + i},I,{1000 + i},items,N,Y\n".encode() for i in range(1, 5)]
    bad = b"5,15,I,1005,items,N,Y,extra,fields\n"
    cases.append(Case("tuple/broken_row.csv", head + rows[0] + rows[1] + bad + rows[2] + rows[3], 4,
                      {"bad_csv": 1}, raws=[head + bad]))  # raw repeats the header: it decodes on its own
    cases += _parquet_cases("tuple/", _tuple_rows())
    return cases


def _tuple_rows() -> list[dict]:
    return [{"id": i, "_sequence_id_": str(10 + i), "_operation_type_": "I", "_execute_time_": 1000 + i,
             "_source_table_": "items", "_before_image_": "N", "_after_image_": "Y"} for i in range(6)]


# -- Replicate ----------------------------------------------------------------------------------------------------
_MD = json.loads((SAMPLES / "replicate" / "json" / "customers_dt_before_md.jsonl").read_text().splitlines()[2])


def rp_md(table: str = "CUSTOMERS", sid: str = "6CDFEEB0CBFCF8ED15079395EF8F8CBD") -> bytes:
    md = json.loads(json.dumps(_MD))
    md["messageSchemaId"] = sid
    md["message"]["schemaId"] = sid
    md["message"]["lineage"]["table"] = table
    return json.dumps(md, ensure_ascii=False).encode()


def rp_dt(i: int, op: str = "INSERT", sid: str = "6CDFEEB0CBFCF8ED15079395EF8F8CBD", big: bool = False,
          amount=None) -> bytes:
    doc = {"magic": "atMSG", "type": "DT", "headers": None, "messageSchemaId": sid, "messageSchema": None,
           "message": {"data": {"CUST_ID": i, "NAME": "x" * (5 << 20) if big else "n", "BALANCE": "1.50"},
                       "beforeData": None,
                       "headers": {"operation": op, "changeSequence": f"2024050111000000000000000{i:010d}",
                                   "timestamp": "2024-05-01T11:00:00.000", "streamPosition": "", "transactionId": f"T{i}",
                                   "changeMask": "07", "columnMask": "07", "transactionEventCounter": 1,
                                   "transactionLastEvent": True}}}
    text = json.dumps(doc, ensure_ascii=False)
    if amount is not None:
        text = text.replace('"BALANCE": "1.50"', f'"BALANCE": {amount}')
    return text.encode()


def replicate_cases() -> list[Case]:
    md = rp_md()
    numbers = [(rp_dt(100, amount="1e400"), None), (rp_dt(101, amount="9" * 5000), None),
               (rp_dt(102, amount="0." + "1234567890" * 6), None)]
    base = _json_cases("json/", rp_dt, b'{"magic": "atMSG", "type": "DT", "message": {"data": {"CUST_ID": 7',
                       dh_record(1), "unknown_format", numbers, rp_dt(999, op="MERGE"), "unknown_op")
    cases = []
    for c in base:  # every Replicate JSON file opens with the table's metadata message (one more record)
        if c.name.endswith((".gz", ".json")) or not c.data.strip():
            cases.append(c)
            continue
        bom = c.data.startswith(BOM)
        body = c.data[3:] if bom else c.data
        sep = b"\r\n" if b"\r\n" in body[:200] or bom else b"\n"
        cases.append(Case(c.name, (BOM if bom else b"") + md + sep + body, c.rows, c.quarantined, 1, c.keys, c.raws))
    # gzip, concatenated and array files find their table's metadata message in a file of its own
    cases.append(Case("json/metadata.jsonl", md + b"\n", 0, metadata=1))
    mds = [rp_md(t, f"{i:032X}") for i, t in enumerate(ODD_NAMES, start=1)]
    dts = [rp_dt(500 + i, sid=f"{i:032X}") for i in range(1, len(ODD_NAMES) + 1)]
    cases.append(Case("json/odd_names.jsonl", b"\n".join(mds + dts) + b"\n", len(ODD_NAMES), metadata=len(ODD_NAMES),
                      keys=[501 + i for i in range(len(ODD_NAMES))]))
    capture = next((SAMPLES / "replicate" / "eventhubs" / "replicate-ns" / "orders-avro").rglob("*.avro"))
    cases += _avro_cases(capture, "capture/", "corrupt_avro")
    return cases


# -- Avro and Parquet ---------------------------------------------------------------------------------------------
def _many_blocks(path: Path, per_block: int = 3, blocks: int = 4) -> tuple[bytes, list[int], int, list[dict], dict]:
    """The sample's records rewritten into `blocks` blocks of `per_block`: bytes, block starts, count."""
    with path.open("rb") as fh:
        reader = fastavro.reader(fh)
        schema, recs = reader.writer_schema, list(reader)
    recs = (recs * (per_block * blocks))[: per_block * blocks]
    data, starts = write_in_blocks(schema, recs, per_block)
    return data, starts, len(recs), recs, schema


def _is_metadata(rec: dict) -> bool:
    """A Replicate metadata message in an Event Hubs Capture record (Datastream Avro has none)."""
    return isinstance(rec.get("Body"), bytes) and rec["Body"].startswith(b"atMSG\x04MD")


def md_kept(recs: list[dict], lost_from: int, lost_to: int) -> int:
    """Metadata records outside the lost block."""
    return sum(_is_metadata(r) for i, r in enumerate(recs) if not lost_from <= i < lost_to)


def _avro_cases(path: Path, prefix: str, corrupt_class: str) -> list[Case]:
    data, starts, total, recs, _ = _many_blocks(path)
    md_cut = sum(map(_is_metadata, recs[:-3]))
    damaged = bytearray(data)
    damaged[starts[1]] = 4  # block 1 claims 2 records, holds 3: its bytes no longer add up
    cut = data[: starts[-1] + 3]
    header = bytearray(data)
    at = header.index(b'"type"')
    header[at: at + 6] = b'"tXpe"'
    return [
        Case(f"{prefix}corrupt_block.avro", bytes(damaged), total - 3 - md_kept(recs, 3, 6), {corrupt_class: 1},
             md_kept(recs, 3, 6), raws=[bytes(damaged[starts[1]: starts[2]])], repeats=True),
        Case(f"{prefix}cut.avro", cut, total - 3 - md_cut, {"truncated_avro": 1}, md_cut,
             raws=[data[starts[-1]: starts[-1] + 3]], repeats=True),
        Case(f"{prefix}bad_header.avro", bytes(header), 0, {"corrupt_avro": 1}),
    ]


def _parquet_cases(prefix: str, rows: list[dict], repeats: bool = False) -> list[Case]:
    from cdcnorm.containers.parquet import _byte_range

    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf, row_group_size=2, compression="NONE", use_dictionary=False)
    data = buf.getvalue()
    start, end = _byte_range(pq.ParquetFile(io.BytesIO(data)).metadata, 1)
    group = data[:start] + b"\xff" * (end - start) + data[end:]
    footer = data[:-12] + b"\xff" * 8 + data[-4:]
    return [
        Case(f"{prefix}bad_row_group.parquet", group, len(rows) - 2, {"corrupt_parquet": 1}, repeats=repeats),
        Case(f"{prefix}bad_footer.parquet", footer, 0, {"corrupt_parquet": 1}, raws=[footer]),
    ]


OPTIONS = {"datahub": {"tuple_schemas": {"items": [
    "id:BIGINT", "_sequence_id_:STRING", "_operation_type_:STRING", "_execute_time_:BIGINT", "_source_table_:STRING",
    "_before_image_:STRING", "_after_image_:STRING"]}}}
"""The adapter options a vendor's corpus is read with (TUPLE CSV carries no types: the topic schema)."""

CASES = {"datastream": datastream_cases, "datahub": datahub_cases, "replicate": replicate_cases}


def build(vendor: str, root: Path) -> dict[str, Case]:
    """Write the vendor's corpus under `root`; {absolute path: case}."""
    out = {}
    for case in CASES[vendor]():
        p = root / case.name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(case.data)
        out[os.path.abspath(p)] = case
    return out
