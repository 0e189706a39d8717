"""The container tier: each reader on its own, and the same damage treated the same by every vendor.

The cross-vendor tests build damaged files from `samples/` (a cut gzip stream, a corrupt gzip stream, a broken
object in concatenated JSON, a corrupt or cut Avro block, a damaged Parquet row group) and decode them with
each vendor's `read_file`: the error class and the recovery (which records still decode) must be the same.
"""

from __future__ import annotations

import gzip
import io
import json
import zlib
from decimal import Decimal
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from avro_blocks import write_in_blocks
from cdcnorm.adapters.datahub.adapter import DataHubAdapter
from cdcnorm.adapters.datastream.adapter import DatastreamAdapter
from cdcnorm.adapters.replicate.adapter import ReplicateAdapter
from cdcnorm.canonical.emit import BatchBuilder
from cdcnorm.containers import (
    CONTAINER_ERRORS,
    AvroFile,
    AvroHeaderError,
    Damage,
    JsonRecords,
    ParquetRows,
    Record,
    Source,
    csv_records,
)
from cdcnorm.containers.parquet import _byte_range
from decoded import rows_of

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
DS_JSONL = next((SAMPLES / "datastream" / "public_transfers").rglob("*cdc*.jsonl"))
DS_AVRO = next((SAMPLES / "datastream" / "shop_payments").rglob("*backfill*.avro"))
DH_JSONL = SAMPLES / "datahub" / "blob" / "documented.jsonl"
RP_JSONL = SAMPLES / "replicate" / "json" / "orders_wide.jsonl"
RP_CAPTURE = next((SAMPLES / "replicate" / "eventhubs" / "replicate-ns" / "orders-avro").rglob("*.avro"))

ADAPTERS = {"datastream": DatastreamAdapter, "datahub": DataHubAdapter, "replicate": ReplicateAdapter}
JSON_LINES = {"datastream": DS_JSONL, "datahub": DH_JSONL, "replicate": RP_JSONL}


def read(vendor: str, data: bytes, name: str) -> list[dict]:
    """Decode bytes as a file with the vendor's read_file, as the pipeline would; the decoded rows."""
    adapter = ADAPTERS[vendor]({})
    out = BatchBuilder()
    out.set_context(vendor, adapter.formats[0])
    for _ in adapter.read_file(f"/in/{name}", io.BytesIO(data), out):
        pass
    out.end_record()
    return rows_of(out.flush())


def records(rows: list[dict]) -> list[dict]:
    """One row per input record (the row that counts it)."""
    return [r for r in rows if r["_records"]]


def damage(rows: list[dict]) -> list[tuple[str, int]]:
    """(error class, origin index) of the container-damage rows."""
    return [(r["_rule"], r["origin"]["index"]) for r in rows if r["_kind"] == "quarantine"
            and r["_rule"] in CONTAINER_ERRORS]


def lines_of(path: Path, copies: int) -> list[bytes]:
    lines = [line for line in path.read_bytes().splitlines() if line.strip()]
    return lines * copies


# -- the same damage, every vendor ------------------------------------------------------------------------------
@pytest.mark.parametrize("vendor", sorted(JSON_LINES))
def test_truncated_gzip_same_class_and_recovery_for_every_vendor(vendor):
    lines = lines_of(JSON_LINES[vendor], 200)
    data = b"\n".join(lines) + b"\n"
    packed = gzip.compress(data, mtime=0)
    cut = packed[: len(packed) * 2 // 3]
    inflated = zlib.decompressobj(31).decompress(cut)
    complete = inflated.count(b"\n")
    assert 0 < complete < len(lines)
    rows = read(vendor, cut, "part.jsonl.gz")
    assert damage(rows) == [("truncated_gzip", complete)]
    assert len(records(rows)) == complete + 1  # every complete line, then the cut tail as one record
    whole = read(vendor, packed, "part.jsonl.gz")
    assert damage(whole) == [] and len(records(whole)) == len(lines)
    assert [r["event_id"] for r in records(rows)[:complete]] == [r["event_id"] for r in records(whole)[:complete]]
    (q,) = [r for r in rows if r["_rule"] == "truncated_gzip"]
    assert inflated[inflated.rindex(b"\n") + 1:] == q["_raw"] and "re-copy the file" in q["_message"]


@pytest.mark.parametrize("vendor", sorted(JSON_LINES))
def test_corrupt_gzip_same_class_for_every_vendor(vendor):
    data = b"\n".join(lines_of(JSON_LINES[vendor], 50)) + b"\n"
    packed = bytearray(gzip.compress(data, mtime=0))
    packed[-6] ^= 0xFF  # the trailer's CRC no longer matches: all data inflates, the check fails
    rows = read(vendor, bytes(packed), "part.jsonl.gz")
    assert [c for c, _ in damage(rows)] == ["corrupt_gzip"]


def _pretty_concat(lines: list[bytes], broken: int) -> tuple[bytes, bytes]:
    objs = [json.dumps(json.loads(line), indent=2).encode() for line in lines]
    bad = objs[broken][: len(objs[broken]) // 2]
    objs[broken] = bad
    return b"\n".join(objs) + b"\n", bad


@pytest.mark.parametrize("vendor", sorted(JSON_LINES))
def test_broken_object_in_concatenated_json_same_for_every_vendor(vendor):
    lines = lines_of(JSON_LINES[vendor], 5)[:5]
    data, bad = _pretty_concat(lines, broken=2)
    rows = read(vendor, data, "part.json")
    assert damage(rows) == [("bad_json", 2)]
    assert len(records(rows)) == 5  # two before, the broken one, two after
    (q,) = [r for r in rows if r["_rule"] == "bad_json"]
    assert q["_raw"].rstrip() == bad.rstrip()
    good = read(vendor, _pretty_concat(lines, broken=0)[0].split(b"\n", 1)[0] + b"\n" + data, "x.json")
    assert len(records(good)) == 6


@pytest.mark.parametrize("vendor", sorted(JSON_LINES))
def test_broken_line_same_for_every_vendor(vendor):
    lines = lines_of(JSON_LINES[vendor], 4)[:4]
    lines[1] = lines[1][: len(lines[1]) // 2]
    rows = read(vendor, b"\r\n".join(lines) + b"\r\n", "part.jsonl")
    assert damage(rows) == [("bad_json", 1)]
    (q,) = [r for r in rows if r["_rule"] == "bad_json"]
    assert q["_raw"] == lines[1] and len(records(rows)) == 4


def _many_blocks(path: Path, per_block: int = 3, copies: int = 4) -> tuple[bytes, list[int], int]:
    """The sample rewritten with small blocks; the block start offsets and the record count."""
    with path.open("rb") as fh:
        reader = fastavro.reader(fh)
        schema, recs = reader.writer_schema, list(reader)
    recs = (recs * copies)[: max(len(recs) * copies, per_block * 4)]
    while len(recs) < per_block * 4:
        recs += recs
    data, starts = write_in_blocks(schema, recs, per_block)
    return data, starts, len(recs)


AVRO = {"datastream": DS_AVRO, "replicate": RP_CAPTURE}


@pytest.mark.parametrize("vendor", sorted(AVRO))
def test_corrupt_avro_block_same_class_and_recovery_for_every_vendor(vendor):
    data, starts, total = _many_blocks(AVRO[vendor])
    assert len(starts) >= 4
    damaged = bytearray(data)
    assert damaged[starts[1]] == 6  # block 1 holds 3 records (zigzag 6) ...
    damaged[starts[1]] = 4  # ... and now claims 2: its bytes no longer add up
    rows = read(vendor, bytes(damaged), "part.avro")
    assert [c for c, _ in damage(rows)] == ["corrupt_avro"]
    whole = read(vendor, data, "part.avro")
    assert damage(whole) == [] and len(records(whole)) == total
    # block 1 is lost (3 records), blocks 0, 2, 3, ... are decoded: the same changes as the intact file
    assert len(records(rows)) == total - 3 + 1
    lost = {r["origin"]["index"] for r in records(whole)[3:6]}
    assert [r["event_id"] for r in records(whole) if r["origin"]["index"] not in lost] == [
        r["event_id"] for r in records(rows) if r["_kind"] != "quarantine" or r["_rule"] not in CONTAINER_ERRORS]
    (q,) = [r for r in rows if r["_rule"] == "corrupt_avro"]
    assert q["_raw"] == bytes(damaged[starts[1]:starts[2]])


@pytest.mark.parametrize("vendor", sorted(AVRO))
def test_truncated_avro_same_class_for_every_vendor(vendor):
    data, starts, total = _many_blocks(AVRO[vendor])
    rows = read(vendor, data[: starts[-1] + 3], "part.avro")
    assert [c for c, _ in damage(rows)] == ["truncated_avro"]
    assert len([r for r in records(rows) if r["_rule"] not in CONTAINER_ERRORS]) == total - (total % 3 or 3)
    header_cut = read(vendor, data[:30], "part.avro")
    assert [c for c, _ in damage(header_cut)] == ["truncated_avro"]


def _bigquery_rows() -> list[dict]:
    path = SAMPLES / "datastream" / "bigquery" / "shop.prices" / "000000000000.json"
    return [json.loads(line) for line in path.read_text().splitlines()] * 3


def _tuple_rows() -> list[dict]:
    return [{"id": i, "_sequence_id_": str(10 + i), "_operation_type_": "I", "_execute_time_": 1000 + i,
             "_source_table_": "items", "_before_image_": "N", "_after_image_": "Y"} for i in range(6)]


PARQUET = {"datastream": _bigquery_rows, "datahub": _tuple_rows}


def _damaged_parquet(rows: list[dict]) -> tuple[bytes, bytes]:
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf, row_group_size=2, compression="NONE", use_dictionary=False)
    data = buf.getvalue()
    start, end = _byte_range(pq.ParquetFile(io.BytesIO(data)).metadata, 1)
    return data, data[:start] + b"\xff" * (end - start) + data[end:]


@pytest.mark.parametrize("vendor", sorted(PARQUET))
def test_damaged_parquet_row_group_same_for_every_vendor(vendor):
    data, damaged = _damaged_parquet(PARQUET[vendor]())
    rows = read(vendor, damaged, "part.parquet")
    assert damage(rows) == [("corrupt_parquet", 2)]
    assert len(records(rows)) == 6 - 2 + 1
    assert [c for c, _ in damage(read(vendor, b"PAR1 not really", "x.parquet"))] == ["corrupt_parquet"]


# -- the readers on their own ----------------------------------------------------------------------------------
def items(data: bytes, **kw) -> list[Record | Damage]:
    return list(JsonRecords(Source(io.BytesIO(data)), **kw))


def test_json_lines_bom_crlf_blank_lines_and_exact_decimals():
    data = b'\xef\xbb\xbf{"a": 1.10}\r\n\r\n{"a": 123456789012345678901234567890}\r\n[1, 2]\r\n'
    reader = JsonRecords(Source(io.BytesIO(data)))
    got = [(r.index, r.offset, r.value, reader.line_of(r)) for r in reader]
    assert got == [(0, 3, {"a": Decimal("1.10")}, 0),
                   (1, data.index(b'{"a": 123'), {"a": 123456789012345678901234567890}, 2),
                   (2, data.index(b"[1, 2]"), [1, 2], 3)]
    assert reader.lines_mode and not reader.array


def test_json_lines_with_several_objects_on_a_line_and_a_broken_line():
    data = b'{"a":1}\n{"a":2}{"a":3}\n{"a":\n{"a":4}\n'
    got = items(data)
    assert [r.value for r in got if isinstance(r, Record)] == [{"a": 1}, {"a": 2}, {"a": 3}, {"a": 4}]
    (bad,) = [r for r in got if isinstance(r, Damage)]
    assert (bad.error_class, bad.raw, bad.index) == ("bad_json", b'{"a":', 3)


def test_json_array_and_concatenated_objects_resynchronise():
    arr = b'[{"id": 1}, {"id": 2, "x": [}, {"id": 3}]'
    got = items(arr)
    assert [type(r).__name__ for r in got] == ["Record", "Damage", "Record"]
    assert got[2].value == {"id": 3}
    concat = b'{\n "id": 1\n}\n{\n "id": \n{\n "id": 3\n}\n'
    got = items(concat)
    assert [r.value for r in got if isinstance(r, Record)] == [{"id": 1}, {"id": 3}]
    assert [r.error_class for r in got if isinstance(r, Damage)] == ["bad_json"]


@pytest.mark.parametrize("depth", [5000, 1000, 1020])
def test_json_depth_limit_is_a_named_error_never_a_recursion_error(depth):
    """5000: beyond every parser; 1000 to 1023: within orjson's limit but beyond Python's recursion in the check
    for floats that follows it."""
    deep = b'{"a":' + b"[" * depth + b"]" * depth + b"}"
    for data in (deep + b"\n" + b'{"ok": 1}\n', b'{"ok": 1}' + deep + b'{"ok": 2}'):
        got = items(data)
        assert "json_too_deep" in [r.error_class for r in got if isinstance(r, Damage)]
        assert {"ok": 1} in [r.value for r in got if isinstance(r, Record)]


def test_json_record_beyond_the_size_limit_is_bounded():
    data = b'{"a": "' + b"x" * 5000 + b'"}\n{"a": 1}\n'
    got = items(data, max_record_bytes=1000, chunk_size=64)
    assert got[0].error_class == "json_too_large" and len(got[0].raw) <= 1000 + 64
    assert [r.value for r in got if isinstance(r, Record)] == [{"a": 1}]


def test_gzip_multi_member_and_cut_inside_a_member():
    data = gzip.compress(b'{"a":1}\n') + gzip.compress(b'{"a":2}\n')
    assert [r.value for r in items(data)] == [{"a": 1}, {"a": 2}]
    big = gzip.compress(b"".join(b'{"a":%d}\n' % i for i in range(20000)))
    got = items(big[:-100])
    assert all(isinstance(r, Record) for r in got[:-1]) and got[-1].error_class == "truncated_gzip"
    assert [r.value["a"] for r in got[:-1]] == list(range(len(got) - 1))
    garbage = gzip.compress(b'{"a":1}\n') + b"garbage!"
    assert [getattr(r, "error_class", None) for r in items(garbage)] == [None, "corrupt_gzip"]


def _avro(n: int, per_block: int) -> tuple[bytes, bytes]:
    schema = {"type": "record", "name": "r", "fields": [{"name": "id", "type": "long"}]}
    buf = io.BytesIO()
    writer = fastavro.write.Writer(buf, fastavro.parse_schema(schema), sync_interval=1 << 30)
    for i in range(n):
        writer.write({"id": i})
        if (i + 1) % per_block == 0:
            writer.flush()
    writer.flush()
    f = AvroFile(Source(io.BytesIO(buf.getvalue())))
    f.read_header()
    return buf.getvalue(), f.sync


def test_avro_reader_resyncs_after_a_corrupt_block_and_keeps_the_raw_bytes():
    data, sync = _avro(30, 10)
    first = data.index(sync) + 16  # the header ends with the marker too
    second = data.index(sync, first) + 16
    third = data.index(sync, second) + 16
    damaged = data[:second] + b"\x02\x7f" + data[second + 2:]  # block 1 claims 1 record in 63 bytes
    f = AvroFile(Source(io.BytesIO(damaged)))
    f.read_header()
    got = list(f.records())
    assert [r.value["id"] for r in got if isinstance(r, Record)] == list(range(10)) + list(range(20, 30))
    (d,) = [r for r in got if isinstance(r, Damage)]
    assert d.error_class == "corrupt_avro" and d.offset == second and d.index == 10
    assert damaged[second:third].endswith(d.raw)
    assert [r.index for r in got if isinstance(r, Record)][10] == 11


def test_avro_records_carry_their_datum_bytes_and_header_damage_is_one_error():
    data, _ = _avro(3, 10)
    f = AvroFile(Source(io.BytesIO(data)))
    f.read_header()
    assert [r.raw for r in f.records()] == [b"\x00", b"\x02", b"\x04"]
    bad = AvroFile(Source(io.BytesIO(b"Obj\x01\x04xx")))
    with pytest.raises(AvroHeaderError) as exc:
        bad.read_header()
    d = bad.header_damage(exc.value)
    assert (d.error_class, d.raw) == ("truncated_avro", b"Obj\x01\x04xx")


def test_parquet_rows_stream_by_row_group_and_survive_a_damaged_one():
    rows = [{"id": i, "s": "x" * 10} for i in range(6)]
    data, damaged = _damaged_parquet(rows)
    reader = ParquetRows(Source(io.BytesIO(damaged)))
    got = list(reader)
    assert [(r.offset, r.value["id"]) for r in got if isinstance(r, Record)] == [
        ("0:0", 0), ("0:1", 1), ("2:0", 4), ("2:1", 5)]
    (d,) = [r for r in got if isinstance(r, Damage)]
    assert d.error_class == "corrupt_parquet" and set(d.raw) == {0xFF} and reader.schema_arrow.names == ["id", "s"]
    gz = list(ParquetRows(Source(io.BytesIO(gzip.compress(data)))))  # not seekable: spooled, same rows
    assert [r.value["id"] for r in gz] == list(range(6))


def test_csv_records_quoted_newlines_bom_and_a_cut_gzip_stream():
    data = b'\xef\xbb\xbfa,b\r\n1,"x\r\ny"\r\n\r\n2,z\r\n'
    got = list(csv_records(Source(io.BytesIO(data))))
    assert [(r.index, r.offset, r.value) for r in got] == [
        (0, "line 1", ["a", "b"]), (1, "line 3", ["1", "x\r\ny"]), (2, "line 5", ["2", "z"])]
    packed = gzip.compress(b"".join(b"%d,row\n" % i for i in range(50000)))
    got = list(csv_records(Source(io.BytesIO(packed[: len(packed) // 2]))))
    assert got[-1].error_class == "truncated_gzip"
    assert [int(r.value[0]) for r in got[:-1]] == list(range(len(got) - 1))


def test_every_error_class_has_a_meaning_and_is_documented():
    doc = (Path(__file__).resolve().parents[1] / "docs" / "canonical.md").read_text(encoding="utf-8")
    for name, meaning in CONTAINER_ERRORS.items():
        assert meaning and f"| `{name}` |" in doc


def test_a_number_beyond_any_decimal_exponent_is_bad_json_and_the_next_line_decodes():
    got = items(b'{"a": 1e99999999999999999999}\n{"ok": 1}\n')
    assert [r.error_class for r in got if isinstance(r, Damage)] == ["bad_json"]
    assert [r.value for r in got if isinstance(r, Record)] == [{"ok": 1}]
