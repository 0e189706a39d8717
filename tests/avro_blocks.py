"""Avro container files rewritten with small blocks, so a test can damage one block and expect the others."""

from __future__ import annotations

import io

import fastavro
import fastavro.write


def write_in_blocks(schema: dict, recs: list[dict], per_block: int) -> tuple[bytes, list[int]]:
    """`recs` as an Avro container file of `per_block` records per block: its bytes and each block's offset."""
    buf = io.BytesIO()
    writer = fastavro.write.Writer(buf, fastavro.parse_schema(schema), sync_interval=1 << 30)
    for i, r in enumerate(recs):
        writer.write(r)
        if (i + 1) % per_block == 0:
            writer.flush()
    writer.flush()
    data = buf.getvalue()
    header = io.BytesIO(data)
    fastavro.reader(header)  # reads the header, which ends with the sync marker
    sync = data[header.tell() - 16: header.tell()]
    starts, i = [], header.tell()
    while i < len(data):
        starts.append(i)
        i = data.index(sync, i) + 16
    return data, starts
