"""Ground truth: the final state of every table, projected through what each vendor format can carry.

The projection answers "what would `cdcnorm apply` hold after a faithful decoder of this vendor format read
everything?". It is written as a table of value *kinds* per (vendor format, Datastream flavour, source type)
so `docs/simulate.md` can state it rule by rule (each vendor's rules sit beside its encoder, in
`simulate/encoders/<vendor>.py`), plus two content rules: formats that cannot express a
truncate keep the rows the truncate removed, and formats that cannot carry the added column drop it.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

from cdcnorm.simulate.formats import FORMATS
from cdcnorm.simulate.history import ADDED_COLUMN, EPOCH, Col, Event, History, TableDef
from cdcnorm.simulate.jsonx import UTC, dumps, dumps_tagged, iso_us, plain, tag, untag

VENDOR_FORMATS: dict[str, tuple[str, str]] = {name: (f.vendor, f.folder) for name, f in FORMATS.items()}
"""Every vendor format the simulator writes: name -> (vendor, input folder under OUT/<vendor>/)."""

CARRIES_TRUNCATE = frozenset(name for name, f in FORMATS.items() if f.carries_truncate)
CARRIES_ADDED_COLUMN = frozenset(name for name, f in FORMATS.items() if f.carries_added_column)


def truth_kind(vf: str, flavour: str, col: Col) -> str:
    """The kind of value a faithful decoder of `vf` yields for a source column (its encoder module says)."""
    return FORMATS[vf].truth_kind(flavour, col)


def _midnight(d: dt.date) -> dt.datetime:
    return dt.datetime(d.year, d.month, d.day, tzinfo=UTC)


_CONVERT: dict[str, Any] = {
    "int": lambda v: v, "float": lambda v: v, "str": lambda v: v, "bool": lambda v: v, "decimal": lambda v: v,
    "date": lambda v: v, "timestamp": lambda v: v, "bytes": lambda v: v,
    "int_bool": int,
    "str_decimal": plain,
    "decimal_repr": lambda v: Decimal(repr(v)),
    "ts_midnight": _midnight,
    "timestamp_ms": lambda v: v.replace(microsecond=v.microsecond // 1000 * 1000),
    "timestamp_ntz": lambda v: v.astimezone(UTC).replace(tzinfo=None),
    "str_date": lambda v: v.isoformat(),
    "str_ts_midnight": lambda v: iso_us(_midnight(v)),
    "str_ts": iso_us,
    "str_hex": lambda v: v.hex(),
    "str_base64": lambda v: base64.b64encode(v).decode("ascii"),
    "str_or_empty": lambda v: v,
    "base64_or_empty": lambda v: base64.b64encode(v).decode("ascii"),
}
_NULL_AS = {"str_or_empty": "", "base64_or_empty": ""}
"""Kinds whose NULL arrives as a value: a Tuple CSV's empty STRING field is '' (the DataHub SDK's rule)."""


def project_value(kind: str, value: Any) -> Any:
    """Apply one projection kind to a source value (NULL stays NULL unless the kind delivers it as a value)."""
    return _NULL_AS.get(kind) if value is None else _CONVERT[kind](value)


def final_columns(vf: str, t: TableDef) -> tuple[Col, ...]:
    """The table's columns after the run, as `vf` delivers them."""
    return t.columns if vf in CARRIES_ADDED_COLUMN else t.columns_at(1)


def project_row(vf: str, t: TableDef, row: dict[str, Any]) -> dict[str, Any]:
    """A source row as `vf`'s final state holds it: every final column, absent ones as NULL."""
    return {c.name: project_value(truth_kind(vf, t.flavour, c), row.get(c.name)) for c in final_columns(vf, t)}


def event_record(t: TableDef, ev: Event) -> dict[str, Any]:
    """The vendor-independent record of one source event, for `OUT/truth/changes.jsonl`."""
    key = None
    if t.primary_key and (ev.before or ev.after):
        key = {k: (ev.before or ev.after)[k] for k in t.primary_key}
    rec: dict[str, Any] = {
        "seq": ev.seq, "op": ev.kind, "table": t.name, "ts": EPOCH + dt.timedelta(microseconds=ev.ts_us),
        "tx": ev.tx or None, "tx_seq": ev.tx_seq or None,
        "tx_last": ev.tx_last if ev.tx else None, "key": key, "before": ev.before, "after": ev.after,
        "changed_columns": list(ev.changed) if ev.changed is not None else None,
        "key_change": ev.key_change, "schema_version": ev.version, "ddl": ev.ddl,
    }
    return rec


class TruthBuilder:
    """Replay the history, keep the final state (bounded by the live rows), write every projection."""

    def __init__(self, out: Path, history: History, vfs: list[str], write_changes: bool = True):
        self.out, self.defs, self.vfs = out / "truth", history.defs, vfs
        self.out.mkdir(parents=True, exist_ok=True)
        self.state: list[dict[tuple, dict[str, Any]]] = [{} for _ in self.defs]
        self.removed_by_truncate: list[dict[tuple, dict[str, Any]]] = [{} for _ in self.defs]
        self.keyless = {t.index: open(self._keyless_path(t), "wb") for t in self.defs if t.insert_only}  # noqa: SIM115
        self.changes = open(self.out / "changes.jsonl", "wb") if write_changes else None  # noqa: SIM115
        self.versions = open(self.out / "versions.jsonl", "wb")  # noqa: SIM115
        self.open: list[dict[tuple, dict[str, Any]]] = [{} for _ in self.defs]

    def _keyless_path(self, t: TableDef) -> Path:
        return self.out / f".source_{t.name}.jsonl"

    def event(self, ev: Event) -> None:
        t = self.defs[ev.table]
        if self.changes is not None:
            self.changes.write(dumps_tagged(event_record(t, ev)) + b"\n")
        if t.insert_only:
            if ev.after is not None:
                self.keyless[t.index].write(dumps_tagged(ev.after) + b"\n")
                self._version(t, ev, ev.after, None)
            return
        state = self.state[t.index]
        if ev.kind == "TRUNCATE":
            self.removed_by_truncate[t.index].update(state)
            for key in list(state):
                self._close(t, key, ev, "TRUNCATE")
            state.clear()
        elif ev.kind == "DDL":
            for row in state.values():
                row.setdefault(ADDED_COLUMN.name, None)
        else:
            moved = ev.before is not None and ev.after is not None and t.key_of(ev.before) != t.key_of(ev.after)
            if ev.before is not None:
                state.pop(t.key_of(ev.before), None)
                if ev.after is None or moved:  # a delete, or the old key of a key change
                    self._close(t, t.key_of(ev.before), ev, "DELETE")
            if ev.after is not None:
                key = t.key_of(ev.after)
                state[key] = dict(ev.after)
                self._close(t, key, ev, "UPDATE")
                self._version(t, ev, ev.after, key, "INSERT" if moved else None)

    # -- versions (SCD type 2 ground truth): one per change of a key, closed by the next change of the key --
    def _version(self, t: TableDef, ev: Event, row: dict[str, Any], key: tuple | None, op: str | None = None) -> None:
        v = {"table": t.name, "key": list(key) if key is not None else None, "seq_from": ev.seq,
             "ts_from": EPOCH + dt.timedelta(microseconds=ev.ts_us), "opened_by": op or ev.kind, "row": dict(row),
             "seq_to": None, "ts_to": None, "closed_by": None}
        if key is None:
            self.versions.write(dumps_tagged(v) + b"\n")
        else:
            self.open[t.index][key] = v

    def _close(self, t: TableDef, key: tuple, ev: Event, how: str) -> None:
        v = self.open[t.index].pop(key, None)
        if v is not None:
            v.update(seq_to=ev.seq, ts_to=EPOCH + dt.timedelta(microseconds=ev.ts_us), closed_by=how)
            self.versions.write(dumps_tagged(v) + b"\n")

    def finish(self) -> None:
        for t in self.defs:
            for v in self.open[t.index].values():
                self.versions.write(dumps_tagged(v) + b"\n")
        self.versions.close()
        if self.changes is not None:
            self.changes.close()
        for fh in self.keyless.values():
            fh.close()
        for vf in self.vfs:
            folder = self.out / vf
            folder.mkdir(parents=True, exist_ok=True)
            for t in self.defs:
                with open(folder / f"{t.name}.jsonl", "wb") as fh:
                    for row in self._final_rows(vf, t):
                        fh.write(dumps_tagged(project_row(vf, t, row)) + b"\n")
        for t in self.defs:
            if t.insert_only:
                self._keyless_path(t).unlink()

    def _final_rows(self, vf: str, t: TableDef) -> Iterator[dict[str, Any]]:
        if t.insert_only:
            with open(self._keyless_path(t), "rb") as fh:
                for line in fh:
                    yield untag(json.loads(line))
            return
        rows = dict(self.state[t.index])
        if vf not in CARRIES_TRUNCATE:
            rows.update(self.removed_by_truncate[t.index])  # keys are never reused: no overlap
        for key in sorted(rows):
            yield rows[key]


def load_truth(out: str | Path, vendor_format: str) -> dict[str, list[dict[str, Any]]]:
    """The final state per table for one vendor format, with exact Python values rebuilt from tagged JSON."""
    folder = Path(out) / "truth" / vendor_format
    if not folder.is_dir():
        raise FileNotFoundError(f"no truth for {vendor_format!r} under {folder}; was it simulated?")
    result: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(folder.glob("*.jsonl")):
        with open(path, "rb") as fh:
            result[path.stem] = [untag(json.loads(line, parse_float=float)) for line in fh if line.strip()]
    return result


def load_versions(out: str | Path) -> Iterator[dict[str, Any]]:
    """Every version of every source row (`OUT/truth/versions.jsonl`): `table`, `key` (None for the keyless
    table), `seq_from` / `ts_from`, `seq_to` / `ts_to` (None while current), `opened_by` (SNAPSHOT, INSERT,
    UPDATE; INSERT for the new key of a key change), `closed_by` (UPDATE, DELETE, TRUNCATE, None) and `row`
    (source values, before any vendor projection)."""
    with open(Path(out) / "truth" / "versions.jsonl", "rb") as fh:
        for line in fh:
            yield untag(json.loads(line))


def load_changes(out: str | Path) -> Iterator[dict[str, Any]]:
    """Stream the ordered source change list (`OUT/truth/changes.jsonl`) with typed values."""
    with open(Path(out) / "truth" / "changes.jsonl", "rb") as fh:
        for line in fh:
            yield untag(json.loads(line))


__all__ = ["VENDOR_FORMATS", "dumps", "load_changes", "load_versions", "load_truth", "project_row", "tag", "truth_kind"]
