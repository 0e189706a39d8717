"""A cold command line's fixed costs: the JVM's class archive (cdcnorm.runtime.jvm_archive), the process exit without the
interpreter's teardown (cdcnorm.cli.exit), and a JVM that does not hold the command's piped stdout."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from cdcnorm.runtime import jvm_archive
from cdcnorm.runtime.jvm_archive import DYNAMIC_MAGIC, STALE_SECONDS, jvm_options
from conftest import ROOT


def run_python(code: str, *args: str, timeout: float, **env: str) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter that imports cdcnorm from this tree (`env`: more environment)."""
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src"), **env})


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CDCNORM_JVM_ARCHIVE_DIR", str(tmp_path))
    monkeypatch.delenv("CDCNORM_JVM_ARCHIVE", raising=False)
    monkeypatch.setattr(jvm_archive, "archive_key", lambda: "k")
    return tmp_path


def test_first_run_writes_the_archive_at_exit_later_runs_map_it(cache):
    first = jvm_options()
    assert f"-XX:ArchiveClassesAtExit={cache / f'k.{os.getpid()}.tmp'}" in first
    assert "-Xlog:all=warning:stderr" in first  # never the command's stdout
    (cache / "k.123.tmp").write_bytes(DYNAMIC_MAGIC + b"\0" * 60)  # a finished dump: header written last
    assert f"-XX:SharedArchiveFile={cache / 'k.jsa'}" in jvm_options()
    assert sorted(p.name for p in cache.iterdir()) == ["k.jsa"]


def test_a_dump_under_way_is_waited_for_a_dead_one_removed(cache):
    (cache / "k.7.tmp").write_bytes(b"\0" * 64)  # no magic yet: still being written
    assert jvm_options() == ""
    old = time.time() - STALE_SECONDS - 1
    os.utime(cache / "k.7.tmp", (old, old))  # never finished (the JVM was killed mid-dump)
    assert "-XX:ArchiveClassesAtExit=" in jvm_options()
    assert not (cache / "k.7.tmp").exists()


def test_archive_can_be_turned_off(cache, monkeypatch):
    monkeypatch.setenv("CDCNORM_JVM_ARCHIVE", "off")
    assert jvm_options() == ""


@pytest.mark.skipif(shutil.which("java") is None, reason="needs java")
def test_the_jdk_writes_and_maps_what_we_promote(cache):
    """A real JDK dump starts with DYNAMIC_MAGIC, and the JVM maps the promoted archive (-Xshare:on fails if not)."""
    subprocess.run(["java", *jvm_options().split(), "-version"], check=True, capture_output=True, timeout=120)
    assert (cache / f"k.{os.getpid()}.tmp").read_bytes()[:4] == DYNAMIC_MAGIC
    options = jvm_options()
    assert "-XX:SharedArchiveFile=" in options
    res = subprocess.run(["java", *options.split(), "-Xshare:on", "-version"], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr


EXIT_SCRIPT = """
import atexit, sys, threading
from cdcnorm.cli.exit import finish
atexit.register(lambda: print("atexit ran", flush=True))
if sys.argv[1] == "thread":
    t = threading.Thread(target=lambda: (__import__("time").sleep(0.5), print("thread done")))
    t.start()
print("unflushed", end="")
finish(3)
"""


@pytest.mark.parametrize("case", ["plain", "thread"])
def test_fast_exit_keeps_the_exit_code_output_and_atexit(case):
    res = run_python(EXIT_SCRIPT, case, timeout=60)
    assert res.returncode == 3
    assert res.stdout.startswith("unflushed") and "atexit ran" in res.stdout
    assert ("thread done" in res.stdout) == (case == "thread")  # a live non-daemon thread is waited for


PIPE_SCRIPT = """
import subprocess, sys
from cdcnorm.runtime.session import jvm_output_to_log
with jvm_output_to_log():
    child = subprocess.Popen(["sh", "-c", "echo child-out; echo child-err >&2; exec sleep 60"])
print(child.pid, flush=True)
"""


def test_a_process_started_for_the_jvm_does_not_hold_a_piped_stdout(tmp_path):
    """The reader of a pipe sees its end when the command exits, not when the JVM (here: a child) does; the
    child's output goes to the log."""
    log = tmp_path / "spark.log"
    t0 = time.monotonic()
    res = run_python(PIPE_SCRIPT, timeout=120, CDCNORM_SPARK_LOG=str(log))
    elapsed = time.monotonic() - t0
    child = int(res.stdout)
    try:
        assert elapsed < 50, "the pipe stayed open until the child exited"
        assert res.stderr == ""
        for _ in range(100):
            if "child-err" in log.read_text():
                break
            time.sleep(0.1)
        assert "child-out" in log.read_text() and "child-err" in log.read_text()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


def test_the_paths_source_imports_no_package_metadata():
    """Spark starts Python processes of their own for the paths source (its planner, the streaming source runner):
    importing it must not look cdcnorm's version or the installed plug-ins up (importlib.metadata)."""
    code = ("import sys, cdcnorm.streaming.paths_source, cdcnorm.adapters; "
            "print('importlib.metadata' in sys.modules, 'cdcnorm._version' in sys.modules)")
    res = run_python(code, timeout=120)
    assert res.returncode == 0 and res.stdout.split() == ["False", "False"], res.stdout + res.stderr


def test_the_run_modules_load_while_the_jvm_starts():
    """`normalize` imports its run's modules in a thread while the JVM starts; done when the block ends, and a
    failing import is left to the caller's own import."""
    from cdcnorm.cli.normalize import importing_meanwhile

    sys.modules.pop("json.tool", None)
    with importing_meanwhile("json.tool"):
        pass
    assert "json.tool" in sys.modules
    with importing_meanwhile("cdcnorm.no_such_module"):
        pass


WARM_SCRIPT = """
import os, sys
import pyarrow as pa
from cdcnorm.runtime.session import get_spark
from cdcnorm.ingest.sources import warm_workers

def seen(batches):
    import sys
    for _ in batches:
        yield pa.RecordBatch.from_pylist([{"m": "cdcnorm.adapters.datahub.adapter" in sys.modules}])

spark = get_spark("local[1]")
warm_workers(spark, ("cdcnorm.adapters.datahub.adapter",))
print(spark.range(1, numPartitions=1).mapInArrow(seen, "m boolean").collect()[0]["m"])
os._exit(0)
"""


@pytest.mark.slow  # a cold process of its own
def test_the_warmed_python_worker_is_the_next_tasks_with_its_imports_done():
    """`warm_workers` (the command line runs it while its query starts) leaves a worker with the decode's modules
    imported, which the next Python task reuses (a module the run alone has no other reason to import in its
    workers: datahub's adapter). In a fresh process, as the command line is: a long-lived session holds several
    idle workers and hands out the oldest first, so the shared test session cannot show which one is reused."""
    res = run_python(WARM_SCRIPT, timeout=180)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split()[-1] == "True", res.stdout + res.stderr[-2000:]
