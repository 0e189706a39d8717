"""How the command line ends its process once a command has finished: without tearing the interpreter down.

Why: after a command that started Spark, a normal interpreter exit spends most of a second (more on a loaded
machine) unloading pyspark, pyarrow, numpy and deltalake module by module and closing py4j's objects one at a
time, all of it after the command's work and output are done. :func:`finish` flushes stdout and stderr, runs the
`atexit` handlers (logging's flush, pyarrow's S3 finalizer), then ends the process with `os._exit`.

Why it is safe: every result of a command is durable before the command returns. A run's lake commits are
delta-rs transactions written synchronously (the commit files are on the file system when `commit` returns), the
intent files and reports likewise, and cdcnorm keeps no buffered file open across the return. The JVM is not
affected: it exits when its stdin (a pipe from this process) closes, at a normal exit or this one alike, and
PySpark stops no SparkContext at exit on Unix either. A non-daemon thread still alive (none of cdcnorm's) would be
waited for by a normal exit, so then the normal exit is taken.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading


def finish(code: int) -> None:
    """End the process with `code` (see the module doc); falls back to `sys.exit` while a non-daemon thread runs."""
    if any(t is not threading.main_thread() and t.is_alive() and not t.daemon for t in threading.enumerate()):
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError, OSError):
            stream.flush()
    atexit._run_exitfuncs()
    os._exit(code)
