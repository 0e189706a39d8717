"""cdcnorm with executors in other JVMs: the same output as `local[*]`, through the CLI a user runs.

Why: on `local[*]` everything runs in one JVM and Python workers inherit the driver's environment, so a missing
import on an executor, a driver-only path or state that does not pickle never shows. Two setups, both slow
(`make test-slow`):

- `--master 'local-cluster[2,1,1024]'`: two worker JVMs with their own executors, started by Spark itself from
  the pip pyspark; cdcnorm is installed on the "workers" (the same interpreter and `PYTHONPATH`).
- `spark-submit` of the CLI's entry script (`cdcnorm.cli.submit_script()`) against a standalone master and
  worker started from the pyspark distribution, with cdcnorm shipped as `--py-files cdcnorm.zip` to executors
  whose interpreter has cdcnorm's dependencies but not cdcnorm itself.

Each simulates one quirk-on history for one format of every vendor, normalizes and applies it, and checks the
canonical rows (golden-digest form), the run reports and the applied tables against the same commands run on
`local[*]`, and the applied tables against the simulator's ground truth.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

import cdcnorm
from cdcnorm.simulate import VENDOR_FORMATS, Manifest
from cdcnorm.simulate.verify import applied_rows, check_format, options_for, token
from cdcnorm.state import TableId
from golden_digest import lake_digest
from lake_reports import run_reports

pytestmark = pytest.mark.slow

LOCAL = "local[2]"
LOCAL_CLUSTER = "local-cluster[2,1,1024]"
FORMATS = ("datastream-avro", "replicate-json", "datahub-blob")
"""One format of each vendor; Avro and gzip-free JSON lines cover both decoder families on the executors."""
HISTORY = {"tables": 2, "rows": 20, "changes": 200, "seed": 11}
SRC = str(Path(cdcnorm.__file__).resolve().parents[1])
SPARK_HOME = str(Path(__import__("pyspark").__file__).resolve().parent)
TIMEOUT = 900


def user_env(**extra: str) -> dict[str, str]:
    """The environment of a user who installed cdcnorm (here: this checkout first on PYTHONPATH)."""
    path = os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path, "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("COLUMNS", None)
    return {**env, **extra}


def run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=env)
    assert res.returncode == 0, f"{' '.join(cmd[:6])} ... exited {res.returncode}\n{res.stdout}\n{res.stderr}"
    return res


def cdcnorm_cli(*args: str) -> subprocess.CompletedProcess:
    return run([sys.executable, "-m", "cdcnorm", *args], user_env())


def normalize_args(manifest: Manifest, vf: str, lake: Path) -> list[str]:
    """`normalize` arguments a user of that format passes (the e2e stream name and the format's options)."""
    options = options_for(vf, manifest)
    args = [str(manifest.input_dir(vf)), "--lake", str(lake), "--vendor", VENDOR_FORMATS[vf][0],
            "--stream", options.pop("stream")]
    for key, value in options.items():
        args += ["--option", f"{key}={json.dumps(value)}"]
    return args


def cli_flow(manifest: Manifest, lake: Path, master: str) -> None:
    for vf in FORMATS:
        cdcnorm_cli("normalize", *normalize_args(manifest, vf, lake), "--master", master)
    cdcnorm_cli("apply", "--lake", str(lake), "--master", master)


def reports(lake: Path) -> dict[str, dict]:
    found = run_reports(lake)
    assert len(found) == len(FORMATS)
    return {r["vendor"]: r for r in found}


def applied_tables(spark, lake: Path) -> dict[TableId, object]:
    """The current-state Delta tables a run wrote, read back from `LAKE/current/` (their live files) through
    its index."""
    from cdcnorm.state.index import read_index
    from cdcnorm.state.target import read_current

    tids = [TableId(e["vendor"], e["stream"], e["database"], e["schema"], e["table"])
            for e in read_index(spark, str(lake))]
    return {tid: read_current(spark, str(lake), tid) for tid in tids}


def table_tokens(df) -> list:
    return sorted(repr(sorted((k, token(v)) for k, v in row.items())) for row in applied_rows(df, set()))


def assert_same_as_local(spark, root: Path, lake: Path, local_lake: Path, manifest: Manifest) -> None:
    assert lake_digest(spark, str(lake), str(root), reports(lake)) == \
        lake_digest(spark, str(local_lake), str(root), reports(local_lake))
    got, want = applied_tables(spark, lake), applied_tables(spark, local_lake)
    assert set(got) == set(want) and len(got) >= len(FORMATS) * HISTORY["tables"]
    for tid in want:
        assert got[tid].schema == want[tid].schema, tid
        assert table_tokens(got[tid]) == table_tokens(want[tid]), tid
    assert {vf: check_format(got, manifest, vf) for vf in FORMATS} == {vf: [] for vf in FORMATS}


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """The simulated history (through the CLI) and its normalize -> apply on `local[*]`, the reference."""
    root = tmp_path_factory.mktemp("cluster")
    vendors = [a for vf in FORMATS for a in ("--vendor", vf)]
    cdcnorm_cli("simulate", "--out", str(root / "sim"), *vendors,
                *[a for k, v in HISTORY.items() for a in (f"--{k}", str(v))])
    manifest = Manifest.load(root / "sim")
    cli_flow(manifest, root / "local-lake", LOCAL)
    for r in reports(root / "local-lake").values():
        assert r["reconciled"] and r["outcomes"]["duplicate"] > 0 and r["rows_written"] > 0
    return {"root": root, "manifest": manifest, "local_lake": root / "local-lake"}


def test_local_cluster_executors_produce_what_local_produces(spark, history):
    lake = history["root"] / "local-cluster-lake"
    t0 = time.perf_counter()
    cli_flow(history["manifest"], lake, LOCAL_CLUSTER)
    print(f"normalize x{len(FORMATS)} + apply on {LOCAL_CLUSTER}: {time.perf_counter() - t0:.0f} s")
    assert_same_as_local(spark, history["root"], lake, history["local_lake"], history["manifest"])


# -- spark-submit against a standalone master and worker -------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what: str, ready, proc: subprocess.Popen, log: Path, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{what} did not start:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.5)


def stop_group(proc: subprocess.Popen) -> None:
    """End a JVM and everything it started (a worker's executors): its whole process group, not just its pid."""
    for sig, grace in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            proc.poll()  # reap the JVM itself, so a zombie does not count as running
            if not group_alive(proc.pid):
                return
            time.sleep(0.5)


def group_alive(pgid: int) -> bool:
    """Whether any live (not zombie) process is left in a process group."""
    out = subprocess.run(["ps", "-eo", "pgid=,stat="], capture_output=True, text=True).stdout
    return any(g == str(pgid) and not st.startswith("Z") for g, st in (line.split()[:2] for line in out.splitlines()))


@pytest.fixture()
def standalone(tmp_path):
    """A standalone master and one small worker on 127.0.0.1 and free ports, stopped even when a test fails."""
    env = {**os.environ, "SPARK_HOME": SPARK_HOME, "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("PYTHONPATH", None)  # the worker's executors must get cdcnorm from --py-files, not from here
    spark_class = os.path.join(SPARK_HOME, "bin", "spark-class")
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen] = []

    def start(name: str, args: list[str]) -> tuple[subprocess.Popen, Path]:
        log = tmp_path / f"{name}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen([spark_class, *args], stdout=out, stderr=subprocess.STDOUT, env=env,
                                    start_new_session=True)
        procs.append(proc)
        return proc, log

    try:
        master, mlog = start("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                        "--port", str(port), "--webui-port", str(free_port())])
        wait_for("master", lambda: "Starting Spark master" in mlog.read_text(errors="replace")
                 and "I have been elected leader" in mlog.read_text(errors="replace"), master, mlog)
        worker, wlog = start("worker", ["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                                        "--cores", "2", "--memory", "1g", "--webui-port", str(free_port()),
                                        "--work-dir", str(tmp_path / "work")])
        wait_for("worker", lambda: "Successfully registered with master" in wlog.read_text(errors="replace"),
                 worker, wlog)
        yield {"url": url, "tmp": tmp_path}
    finally:
        for proc in reversed(procs):
            stop_group(proc)
        leaked = [p.pid for p in procs if group_alive(p.pid)]
        assert leaked == [], f"JVM process groups still running: {leaked}"


def deps_only_python(tmp_path: Path) -> str:
    """An interpreter with cdcnorm's dependencies but not cdcnorm: a bare venv that sees this venv's packages.

    A `.pth` line adds a folder to `sys.path` without running that folder's own `.pth` files, so the editable
    install's `.pth` (which points at the source tree) is not applied.
    """
    import site

    env = tmp_path / "deps-env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, timeout=120)
    python = env / "bin" / "python"
    target = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                            capture_output=True, text=True, check=True).stdout.strip()
    Path(target, "cdcnorm-deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    probe = subprocess.run([str(python), "-c", "import orjson, fastavro, pyarrow; import cdcnorm"],
                           capture_output=True, text=True, env={k: v for k, v in os.environ.items()
                                                                if k != "PYTHONPATH"})
    assert "No module named 'cdcnorm'" in probe.stderr, probe.stderr
    return str(python)


def zip_package(dest: Path) -> Path:
    """`cdcnorm.zip` for `--py-files`: the package as imported here (sources only)."""
    pkg = Path(cdcnorm.__file__).resolve().parent
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(pkg.rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts:
                z.write(f, Path("cdcnorm") / f.relative_to(pkg))
    return dest


def test_spark_submit_to_a_standalone_cluster_produces_what_local_produces(spark, history, standalone):
    from cdcnorm.cli import submit_script

    tmp, manifest = standalone["tmp"], history["manifest"]
    lake = history["root"] / "standalone-lake"
    submit = [os.path.join(SPARK_HOME, "bin", "spark-submit"), "--master", standalone["url"],
              "--py-files", str(zip_package(tmp / "cdcnorm.zip")),
              "--conf", f"spark.pyspark.python={deps_only_python(tmp)}",
              "--conf", f"spark.pyspark.driver.python={sys.executable}",
              "--conf", "spark.executor.memory=512m", "--conf", "spark.driver.host=127.0.0.1",
              submit_script()]
    env = user_env(SPARK_HOME=SPARK_HOME)
    env.pop("PYSPARK_PYTHON")
    t0 = time.perf_counter()
    for vf in FORMATS:
        run([*submit, "normalize", *normalize_args(manifest, vf, lake)], env)
    run([*submit, "apply", "--lake", str(lake)], env)
    print(f"spark-submit of normalize x{len(FORMATS)} + apply: {time.perf_counter() - t0:.0f} s")
    assert_same_as_local(spark, history["root"], lake, history["local_lake"], manifest)
    apps = list((tmp / "work").iterdir())
    assert len(apps) == len(FORMATS) + 1  # every command ran its executors on the worker
