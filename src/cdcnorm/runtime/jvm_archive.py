"""A class-data-sharing (AppCDS) archive of Spark's classes for the command line's short-lived JVM.

Why: a cold `cdcnorm normalize` of a small file spends much of its wall time loading and verifying some ten
thousand classes from Spark's jars, at JVM start and again the first time each operator, the streaming engine or
the Parquet writer runs. The JVM can map classes it loaded once from an archive instead (JDK 13+ dynamic archives,
`-XX:ArchiveClassesAtExit` / `-XX:SharedArchiveFile`): measured in docs/benchmarks.md ("Spark jobs per run").

How: the first small command-line run on a machine (for a given Java, Spark and jar set: :func:`archive_key`) asks
its JVM to write the archive when it exits (`<key>.<pid>.tmp`; the JVM writes it after the command has returned,
as it exits with the Python process). A later run promotes a finished temporary file to `<key>.jsa` (an atomic
rename) and maps it. The JVM writes an archive's header last, so a dump cut short (a kill) has no magic number and
is never promoted; the JVM itself checks an archive against its class path, jars and options, and ignores one that
does not match (the run is then only slower). Nothing of the lake depends on it.

`CDCNORM_JVM_ARCHIVE=off` turns it off; `CDCNORM_JVM_ARCHIVE_DIR` moves it (default
`$XDG_CACHE_HOME/cdcnorm/jvm`, else `~/.cache/cdcnorm/jvm`). An archive takes about 170 MB.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import shutil
import time

from cdcnorm.runtime.user_cache import user_cache_dir

DYNAMIC_MAGIC = bytes.fromhex("a8ab0bf0")
"""The first bytes of a finished JDK dynamic archive (0xf00baba8, little-endian), written last by the JVM."""
STALE_SECONDS = 600
"""A temporary archive older than this without its magic is a dump that died: removed."""
QUIET_JVM_LOG = "-Xlog:disable -Xlog:all=warning:stderr"
"""The JVM's own warnings (an archive that does not match, say) on stderr, which the command line sends to its
log file, instead of the JVM's default of stdout, which is the command's output."""


def archive_dir() -> str:
    return os.environ.get("CDCNORM_JVM_ARCHIVE_DIR") or user_cache_dir("jvm")


def enabled() -> bool:
    return os.environ.get("CDCNORM_JVM_ARCHIVE", "on").strip().lower() not in ("off", "0", "false", "no", "")


def archive_key() -> str:
    """What an archive is valid for: the Java binary, and Spark's jars (names, sizes, times)."""
    import pyspark

    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else shutil.which("java")
    spark_home = os.environ.get("SPARK_HOME") or os.path.dirname(pyspark.__file__)
    h = hashlib.sha256()
    for path in [os.path.realpath(java or "java"), *sorted(glob.glob(os.path.join(spark_home, "jars", "*.jar")))]:
        with contextlib.suppress(OSError):
            st = os.stat(path)
            h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return f"spark-{pyspark.__version__}-{h.hexdigest()[:16]}"


def _finished(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == DYNAMIC_MAGIC
    except OSError:
        return False


def jvm_options() -> str:
    """JVM options for the command line's small run: map the archive, or write it at exit when there is none yet
    (and none is being written). Empty when turned off or the cache folder cannot be written."""
    if not enabled():
        return ""
    folder = archive_dir()
    try:
        os.makedirs(folder, exist_ok=True)
        key = archive_key()
        final = os.path.join(folder, f"{key}.jsa")
        in_progress = False
        for tmp in glob.glob(os.path.join(folder, f"{key}.*.tmp")):
            if _finished(tmp):
                os.replace(tmp, final)  # atomic: concurrent runs promote one finished dump or another, both whole
            elif time.time() - os.stat(tmp).st_mtime > STALE_SECONDS:
                os.remove(tmp)
            else:
                in_progress = True
        if os.path.exists(final):
            return f"-XX:SharedArchiveFile={final} {QUIET_JVM_LOG}"
        if in_progress or not os.access(folder, os.W_OK):
            return ""
        return f"-XX:ArchiveClassesAtExit={os.path.join(folder, f'{key}.{os.getpid()}.tmp')} {QUIET_JVM_LOG}"
    except OSError:
        return ""
