"""The interpreter a local session's Python workers start with: the driver's, importing its installed pyspark.

Spark puts its zipped copy of pyspark (`$SPARK_HOME/python/lib/pyspark.zip`, and py4j's zip) first on every
Python worker's PYTHONPATH. Python never caches bytecode for modules imported from a zip, so each Python process
Spark starts compiles pyspark from source: the streaming source's planner (one per query: every follow query and
every batch `normalize` starts one for the paths source) spends about 1.1 CPU s starting, against 0.35 s importing
the installed copy, once per Python process Spark starts.

With pip's pyspark the zip *is* the installed package (SPARK_HOME is the package's folder), so a worker loses
nothing by importing the installed copy. :func:`worker_python` returns a small `/bin/sh` launcher that removes
exactly those two zips from PYTHONPATH and runs the driver's interpreter; anything else (another SPARK_HOME,
another interpreter, Windows, `CDCNORM_WORKER_LAUNCHER=0`) keeps the plain interpreter.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shlex
import stat
import sys
import tempfile

from cdcnorm.runtime.user_cache import user_cache_dir

_SCRIPT = """#!/bin/sh
# cdcnorm (cdcnorm.runtime.worker_python): run Spark's Python workers with the installed pyspark, not Spark's zip of it
# (a zip's modules are compiled from source at every start).
set -f
kept=
IFS=:
for p in $PYTHONPATH; do
  case "$p" in
    {zips}) ;;
    *) kept="${{kept:+$kept:}}$p" ;;
  esac
done
unset IFS
PYTHONPATH=$kept
export PYTHONPATH
exec {python} "$@"
"""


def spark_zips() -> list[str]:
    """Spark's zipped pyspark and py4j, when they are copies of the pyspark this interpreter imports (pip's
    pyspark: SPARK_HOME is the package folder); else none."""
    import pyspark
    from pyspark.find_spark_home import _find_spark_home

    package = os.path.realpath(os.path.dirname(pyspark.__file__))
    try:
        home = _find_spark_home()  # what pyspark starts the JVM with, so what Spark puts on the workers' path
    except SystemExit:  # no SPARK_HOME found: pyspark cannot start a JVM either
        return []
    if os.path.realpath(home) != package:
        return []
    zips = []
    for root in dict.fromkeys((home, package)):  # the path as Spark spells it, and resolved
        lib = os.path.join(root, "python", "lib")
        found = [os.path.join(lib, "pyspark.zip"), *sorted(glob.glob(os.path.join(lib, "py4j-*-src.zip")))]
        if not os.path.isfile(found[0]) or len(found) != 2:
            return []
        zips += found
    return zips


def launcher_text(python: str, zips: list[str]) -> str:
    return _SCRIPT.format(zips="|".join(shlex.quote(z) for z in zips), python=shlex.quote(python))


def worker_python(python: str = sys.executable) -> str:
    """The executable to give Spark as the Python workers' interpreter (PYSPARK_PYTHON) for `python`: a launcher
    that drops Spark's duplicate zips from PYTHONPATH when that is safe (see the module doc), else `python`."""
    if os.name != "posix" or os.environ.get("CDCNORM_WORKER_LAUNCHER", "1") == "0":
        return python
    zips = spark_zips()
    if not zips:
        return python
    text = launcher_text(python, zips)
    folder = _private_folder()
    if folder is None:
        return python
    path = os.path.join(folder, f"python-{hashlib.sha256(text.encode()).hexdigest()[:16]}.sh")
    if not os.path.isfile(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        try:
            with open(tmp, "w") as fh:
                fh.write(text)
            os.chmod(tmp, 0o700)
            os.replace(tmp, path)  # atomic: a concurrent session sees the whole script or none
        except OSError:
            return python
    return path


def _private_folder() -> str | None:
    """A folder only this user can write (the launcher is executed): the user's cache, else a private temp
    folder; None when neither is safe."""
    candidates = [user_cache_dir(),
                  os.path.join(tempfile.gettempdir(), f"cdcnorm-{os.getuid()}")]
    for folder in candidates:
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            st = os.stat(folder)
        except OSError:
            continue
        if st.st_uid == os.getuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return folder
    return None
