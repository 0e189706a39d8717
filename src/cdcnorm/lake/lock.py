"""The lake's writer lock, for the commands that still write outside Delta: `apply` (the Parquet current-state
tables under `LAKE/current/`) and `quarantine retry` (its read-retry-resolve cycle).

`normalize`, cut-overs and scenarios commit through the Delta commit protocol (cdcnorm.lake.commit) and take
no lock. A locked command holds `LAKE/_lock.json`, created atomically (the create fails when the file exists),
holding run id, command, host, pid and start time.

A second writer is refused with one line naming the holder. A lock whose process is gone on this host is
taken over (and the run report says so, under `lock_taken_over`); a lock held from another host can only be
broken explicitly (delete `LAKE/_lock.json`; `writer_lock(..., break_lock=True)` in Python) since this host cannot see that process.

Limits: on local and POSIX shared file systems and on HDFS the create is atomic. On object stores it is as
atomic as the store's "create if absent": GCS (generation preconditions) and ABFS honour it; S3 through S3A
checks then writes unless conditional writes are enabled (`fs.s3a.create.conditional.enabled`, Hadoop 3.4.2+),
so two writers starting within the same instant may both pass there — run one writer per lake on S3.
Threads of one process share the lock (it is re-entrant per process, so nested writers such as `quarantine
retry` -> `normalize` work).
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import secrets
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson

from cdcnorm.errors import LakeError
from cdcnorm.runtime.fs import HadoopFS

LOCK = "_lock.json"
_HELD: dict[str, dict[str, Any]] = {}  # lake path -> {"depth": n, "info": lock contents, "taken_over": ...}
log = logging.getLogger("cdcnorm")


class LakeBusy(LakeError):
    """Another writer holds the lake's lock."""


def holds_lock(lake_path: str) -> bool:
    """True while this process holds the writer lock of `lake_path`."""
    return lake_path.rstrip("/") in _HELD


def taken_over(lake_path: str) -> dict[str, Any] | None:
    """The stale lock this process took over for `lake_path` (its contents), if it did."""
    held = _HELD.get(lake_path.rstrip("/"))
    return held["taken_over"] if held else None


@contextmanager
def writer_lock(fs: HadoopFS, lake_path: str, command: str, run_id: str | None = None,
                break_lock: bool = False) -> Iterator[dict[str, Any]]:
    """Hold the writer lock of `lake_path` for the block (re-entrant within a process); yields its contents."""
    key = lake_path.rstrip("/")
    if key in _HELD:
        _HELD[key]["depth"] += 1
        try:
            yield _HELD[key]["info"]
        finally:
            _HELD[key]["depth"] -= 1
        return
    info = {"run_id": run_id, "command": command, "host": socket.gethostname(), "pid": os.getpid(),
            "started_at": dt.datetime.now(dt.UTC).isoformat(), "token": secrets.token_hex(8)}
    path = f"{key}/{LOCK}"
    previous = _acquire(fs, path, info, break_lock)
    _HELD[key] = {"depth": 1, "info": info, "taken_over": previous}
    try:
        yield info
    finally:
        del _HELD[key]
        _release(fs, path, info)


def _acquire(fs: HadoopFS, path: str, info: dict[str, Any], break_lock: bool) -> dict[str, Any] | None:
    """Create the lock file; take over a stale one (returned) or refuse with LakeBusy."""
    body = orjson.dumps(info, option=orjson.OPT_INDENT_2).decode()
    lake = path.rsplit("/", 1)[0]
    for _ in range(5):
        if fs.create_exclusive(path, body):
            return None
        text = fs.read_text_or_none(path)
        if text is None:  # released between our create and our read: try again
            continue
        holder = _parse(text)
        if break_lock or _stale(holder):
            why = "broken on request" if break_lock else "its process is gone"
            if _remove_if_unchanged(fs, path, text):
                log.warning("cdcnorm: took over the lock of %s held by %s (%s)", lake, _describe(holder), why)
                if fs.create_exclusive(path, body):
                    return {**(holder or {"unreadable": text[:200]}), "reason": why}
            continue
        raise LakeBusy(
            f"Lake {lake} is being written by another writer: {_describe(holder)}. Wait for it to finish; if that "
            f"process is gone, delete {path}."
        )
    raise LakeBusy(f"Could not take the writer lock {path}: other writers keep taking it; try again.")


def _release(fs: HadoopFS, path: str, info: dict[str, Any]) -> None:
    """Delete the lock only when it is still ours (it may have been broken on request)."""
    holder = _parse(fs.read_text_or_none(path) or "")
    if holder and holder.get("token") == info["token"]:
        fs.delete(path)


def _parse(text: str) -> dict[str, Any] | None:
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return doc if isinstance(doc, dict) else None


def _stale(holder: dict[str, Any] | None) -> bool:
    """A lock from this host whose pid no longer runs. Unreadable locks and other hosts' locks are not stale."""
    if not holder or holder.get("host") != socket.gethostname() or not isinstance(holder.get("pid"), int):
        return False
    try:
        os.kill(holder["pid"], 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # the pid exists under another user
        return False
    return False


def _remove_if_unchanged(fs: HadoopFS, path: str, seen: str) -> bool:
    """Move the lock aside and delete it, unless another writer replaced it meanwhile (then put theirs back)."""
    aside = f"{path}.stale-{secrets.token_hex(4)}"
    if not fs.try_rename(path, aside):
        return False
    moved = fs.read_text_or_none(aside)
    if moved != seen:  # we moved a fresh lock another writer had just created: give it back
        fs.create_exclusive(path, moved or "")
        fs.delete(aside)
        return False
    fs.delete(aside)
    return True


def _describe(holder: dict[str, Any] | None) -> str:
    if not holder:
        return "an unreadable lock file (a writer may be creating it)"
    return (f"run {holder.get('run_id') or '?'} ({holder.get('command')}) on host {holder.get('host')}, "
            f"pid {holder.get('pid')}, since {holder.get('started_at')}")
