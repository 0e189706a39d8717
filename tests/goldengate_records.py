"""The simulator's GoldenGate output read with plain `json` and the reference's rules (no cdcnorm adapter):
records in `pos` order, deduplicated by (table, pos, op_type), partial images merged into the previous row."""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import fastavro

META = {"table", "op_type", "op_ts", "current_ts", "pos", "primary_keys", "tokens"}


def lines(out: Path, fmt: str) -> list[dict]:
    """Every record of a format; Avro op records as their JSON form (a column whose `_isMissing` is true is
    absent from its image)."""
    found = []
    if fmt == "avro_op":
        for path in sorted((out / "goldengate" / fmt).rglob("*.avro")):
            with open(path, "rb") as fh:
                found += [{**r, "before": _present(r["before"]), "after": _present(r["after"])}
                          for r in fastavro.reader(fh)]
        return found
    for path in sorted((out / "goldengate" / fmt).rglob("*.jsonl")):
        found += [json.loads(ln, parse_float=Decimal) for ln in path.read_text(encoding="utf-8").splitlines()]
    return found


def _present(image: dict | None) -> dict | None:
    if image is None:
        return None
    return {k: v for k, v in image.items() if not k.endswith("_isMissing") and not image.get(f"{k}_isMissing")}


def pos_key(pos: str) -> tuple[int, int]:
    """The reference's reading: the last ten characters are the RBA, the rest the trail sequence ('-1')."""
    return int(pos[:-10].lstrip("0") or "0"), int(pos[-10:])


def typed(kind: str, v):
    if v is None:
        return None
    if kind == "timestamp_ntz":
        return dt.datetime.strptime(v[:26], "%Y-%m-%d %H:%M:%S.%f")
    if kind == "date":
        return dt.date.fromisoformat(v[:10])
    if kind == "bytes":
        return v if isinstance(v, bytes) else base64.b64decode(v)
    if kind == "bool":
        return bool(v)
    if kind == "float":
        return float(v)
    return v


def replay(info: dict, fmt: str, recs: list[dict]) -> dict[str, list[dict]]:
    """Final state per table: records deduplicated by (table, pos, op_type), applied in pos order (a row
    formatter's delete-insert at one pos: the delete first), partial images merged."""
    by_table: dict[str, dict[str, dict]] = defaultdict(dict)
    for r in recs:
        by_table[r["table"].split(".", 1)[1]][(r["pos"], r["op_type"])] = r
    state = {}
    for name, t in info.items():
        kinds = {c["name"]: c["truth_kind"] for c in t["columns"]}
        pks = t["primary_key"]
        rows: dict = {}
        keyless: list = []
        for at in sorted(by_table[name], key=lambda p: (pos_key(p[0]), p[1] != "D")):
            r = by_table[name][at]
            if fmt != "json_row":
                before, after = r.get("before") or None, r.get("after")
            else:
                image = {k: v for k, v in r.items() if k not in META}
                before, after = (image, None) if r["op_type"] == "D" else (None, image)
            op = r["op_type"]
            if op == "T":
                rows.clear()
                continue
            if not pks:
                keyless.append(after)
                continue
            if op == "D":
                rows.pop(tuple(before[k] for k in pks), None)
                continue
            if before is not None and tuple(before[k] for k in pks) != tuple(after[k] for k in pks):
                rows.pop(tuple(before[k] for k in pks), None)  # a key change
            key = tuple(after[k] for k in pks)
            rows[key] = {**rows.get(key, {}), **after} if op == "U" else dict(after)
        out = keyless if not pks else [rows[k] for k in sorted(rows)]
        state[name] = [{c: typed(kinds[c], row.get(c)) for c in kinds} for row in out]
    return state
