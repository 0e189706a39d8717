"""The Python workers of cdcnorm's local session import the installed pyspark, not Spark's zip of it
(cdcnorm.runtime.worker_python): same code, compiled once instead of at every worker start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from cdcnorm.runtime.worker_python import launcher_text, spark_zips, worker_python

pytestmark = pytest.mark.skipif(os.name != "posix" or not spark_zips(), reason="pip's pyspark on POSIX only")


def test_the_launcher_drops_exactly_sparks_zips(tmp_path):
    launcher = worker_python(sys.executable)
    assert launcher != sys.executable and os.access(launcher, os.X_OK)
    assert Path(launcher).read_text() == launcher_text(sys.executable, spark_zips())
    pyspark_zip, py4j_zip = spark_zips()[:2]
    other_zip = str(tmp_path / "python" / "lib" / "pyspark.zip")  # another Spark's zip is kept
    given = os.pathsep.join([pyspark_zip, "/a b/x", py4j_zip, other_zip, "/y"])
    out = subprocess.run([launcher, "-c", "import os, sys; print(os.environ['PYTHONPATH']); print(sys.executable)"],
                         env={**os.environ, "PYTHONPATH": given}, capture_output=True, text=True, check=True)
    path, exe = out.stdout.splitlines()
    assert path == os.pathsep.join(["/a b/x", other_zip, "/y"])
    assert exe == sys.executable


def test_turned_off_or_another_interpreter(monkeypatch):
    monkeypatch.setenv("CDCNORM_WORKER_LAUNCHER", "0")
    assert worker_python(sys.executable) == sys.executable


def test_python_workers_import_the_installed_pyspark(spark):
    assert spark.sparkContext.pythonExec == worker_python(sys.executable)
    # the JVM's own Python processes too: Spark 4 looks up static data sources with PYSPARK_DRIVER_PYTHON
    assert spark._jvm.java.lang.System.getenv("PYSPARK_DRIVER_PYTHON") == worker_python(sys.executable)

    def where(batches):
        import pyspark

        for _ in batches:
            yield pa.RecordBatch.from_pydict({"file": [pyspark.__file__]})

    got = spark.range(1).mapInArrow(where, "file string").collect()[0]["file"]
    import pyspark

    assert got == pyspark.__file__ and ".zip" not in got
