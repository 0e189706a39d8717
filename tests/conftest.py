"""Shared fixtures: one Spark session for the whole suite, paths resolved from this file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def benchmark_module(name: str):
    """`benchmarks/<name>.py` imported as a module (tests drive the benches' own workloads and functions); its
    folder goes on `sys.path` for the benches' shared imports."""
    import importlib.util
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
SAMPLES = ROOT / "samples"
CORPUS = ROOT.parent / "shared" / "corpus"

# The CLI output tests expect a pipe with no COLUMNS / LINES (cdcnorm.cli.output reads COLUMNS once, when its
# consoles are made). GNU readline, once some process imports it, exports COLUMNS=80 LINES=24 at the C level to
# every child it starts: pytest-xdist's workers (`make test`) started with them and wrapped the CLI's output.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)

# The command line's JVM class archive (cdcnorm.runtime.jvm_archive) of the tests' CLI subprocesses: shared by the suite's
# workers and runs, never the user's own cache.
os.environ.setdefault("CDCNORM_JVM_ARCHIVE_DIR", os.path.join(tempfile.gettempdir(), "cdcnorm-tests-jvm-archive"))

SHARED_SESSION_FIXTURES = {"test_e2e": "e2e", "test_golden": "e2e", "test_inferred_types": "e2e",
                           "test_compare": "typed_history", "test_cutover": "typed_history"}
"""Modules that read one session fixture (`e2e`, `typed_history`): one xdist work unit, so it is built once."""
HEAVY_FIRST = ("test_follow_state", "e2e", "test_lake_crash", "typed_history", "test_e2e_incremental",
               "test_follow_feed", "test_follow", "test_cli", "test_apply_incremental", "test_debezium", "test_apply")
"""Work units with the longest serial time, started first so that no worker picks one up at the end (longest
processing time first); the rest keep their collection order. Measured under `-n 2` (seconds of test time
at load 13): follow_state 606, e2e 594, lake_crash 267, typed_history 250, e2e_incremental 239, follow_feed 237,
follow 224, cli 112, apply_incremental 94, apply 65; debezium about 45 at load 2."""


def _unit(module: str) -> str:
    return SHARED_SESSION_FIXTURES.get(module, module)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`make test` runs `-n 2 --dist loadfile`: each test module is one work unit (its module fixtures are built
    once), except that the modules sharing a session fixture are one unit together."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SharedFixtureScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return _unit(Path(path).stem) if path.startswith("tests/") else path

    config.option.loadscopereorder = False  # the units go in collection order: heavy first, see below
    return SharedFixtureScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    """On an xdist worker, put the :data:`HEAVY_FIRST` units first (every worker sorts alike, as xdist needs)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return

    def rank(item) -> int:
        unit = _unit(item.path.stem)
        return HEAVY_FIRST.index(unit) if unit in HEAVY_FIRST else len(HEAVY_FIRST)

    items.sort(key=rank)  # stable: each unit keeps its tests' order


TEST_JVM_OPTIONS = ""
"""Extra JVM options of the test session (`CDCNORM_TEST_JVM_OPTIONS` overrides): none by default. The quick C1 JIT
and the serial collector (`-XX:TieredStopAtLevel=1 -XX:+UseSerialGC`, as the command line's small runs) save a
third of the CPU of a young JVM's first minutes but cost more once it is warm; an xdist worker of `make test`
lives ten minutes, so they are not the default (measured in docs/testing.md, "JVM options"). A short run of one
or two modules while iterating is quicker with them."""


def session_interprets() -> bool:
    """Whether the test session evaluates expressions with Spark's interpreter (the default of `make test`).

    Why: the fast suite's inputs are all small, which is what `cdcnorm.runtime.small_runs` plans interpreted in
    production (normalize and apply already switch to it per run); the rest (reads, compare, cut-over, the tests'
    own oracles) compiled new Java source per query: 7 % of the suite's wall time in a back-to-back pair of runs
    (docs/testing.md, "The test session evaluates interpreted").
    `CDCNORM_TEST_CODEGEN=1` keeps Spark's code generation, as `make test-slow` does for its large variants;
    the `codegen` fixture turns it on for the tests that compare both paths."""
    return os.environ.get("CDCNORM_TEST_CODEGEN", "0") != "1"


@pytest.fixture()
def codegen(spark):
    """Spark's code generation on for one test (whatever the session's setting), restored afterwards."""
    keys = {"spark.sql.codegen.wholeStage": "true", "spark.sql.codegen.factoryMode": "FALLBACK"}
    saved = {k: spark.conf.get(k, None) for k in keys}
    for k, v in keys.items():
        spark.conf.set(k, v)
    yield spark
    for k, v in saved.items():
        if v is None:
            spark.conf.unset(k)
        else:
            spark.conf.set(k, v)


@pytest.fixture(scope="session")
def spark():
    from cdcnorm.runtime.session import get_spark
    from cdcnorm.runtime.small_runs import INTERPRETED

    # Python workers must be able to import test-defined adapters (pickled by reference to this folder).
    tests_dir = str(Path(__file__).resolve().parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (tests_dir, os.environ.get("PYTHONPATH")) if p)

    conf = {"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "2"}
    if session_interprets():
        conf.update(INTERPRETED)
    jvm_options = os.environ.get("CDCNORM_TEST_JVM_OPTIONS", TEST_JVM_OPTIONS).strip()
    if jvm_options:
        conf["spark.driver.extraJavaOptions"] = jvm_options
    session = get_spark("local[2]", conf=conf)
    yield session
    session.stop()


@pytest.fixture()
def lake_path(tmp_path):
    return str(tmp_path / "lake")


SMALL_HISTORY = {"tables": 3, "rows": 30, "changes": 300, "seed": 7}
"""Big enough that every quirk fires in every format (duplicates, overlap, split halves, DT before MD)."""
E2E_ROTATE = 60
"""Records per simulated file: every topic / shard / folder is split over several files, redeliveries land in others."""
E2E_NATURAL = ("replicate-json", "replicate-avro", "replicate-capture")
"""Formats the e2e lake takes without a `stream` option: their streams come from the topic / task / Event Hub."""


E2E_FORMATS = ("datastream-json", "replicate-json", "datahub-blob", "debezium-json", "dms-csv", "goldengate-json",
               "canal-json", "maxwell-json")
"""The fast suite's e2e lake: one format per vendor (`e2e`); `make test-slow` checks every format (`e2e_all`)."""


def e2e_lake(spark, root: Path, formats: tuple[str, ...]) -> dict:
    """One quirk-on simulated history in `formats`, normalized into one lake and applied."""
    from pyspark.sql import functions as F

    import cdcnorm
    from cdcnorm.simulate.verify import build_lake

    run = build_lake(spark, root / "sim", root / "lake", formats=formats,
                     natural=[vf for vf in E2E_NATURAL if vf in formats], rotate=E2E_ROTATE, **SMALL_HISTORY)
    agg = cdcnorm.read_changes(spark, str(root / "lake")).groupBy("stream").agg(
        F.count(F.lit(1)).alias("rows"), F.countDistinct("event_id").alias("ids"))
    run["stream_stats"] = {r["stream"]: {"rows": r["rows"], "ids": r["ids"]} for r in agg.collect()}
    run["lake"], run["root"], run["formats"] = str(root / "lake"), str(root / "sim"), formats
    return run


@pytest.fixture(scope="session")
def e2e(spark, tmp_path_factory):
    """The simulated history in one format per vendor (:data:`E2E_FORMATS`), in one lake, applied (shared)."""
    return e2e_lake(spark, tmp_path_factory.mktemp("e2e"), E2E_FORMATS)


@pytest.fixture(scope="session")
def e2e_all(spark, tmp_path_factory):
    """The same history in every vendor format, in one lake, applied (the slow tests' oracle and golden digest)."""
    from cdcnorm.simulate import VENDOR_FORMATS

    return e2e_lake(spark, tmp_path_factory.mktemp("e2e-all"), tuple(VENDOR_FORMATS))


def e2e_for(request, vf: str) -> dict:
    """The e2e lake that holds vendor format `vf`: the fast one-per-vendor lake, else the every-format one."""
    return request.getfixturevalue("e2e" if vf in E2E_FORMATS else "e2e_all")


def every_format_param() -> list:
    """Every vendor format as a test parameter; those outside :data:`E2E_FORMATS` run in `make test-slow`."""
    from cdcnorm.simulate import VENDOR_FORMATS

    return [vf if vf in E2E_FORMATS else pytest.param(vf, marks=pytest.mark.slow) for vf in VENDOR_FORMATS]


@pytest.fixture(scope="session")
def typed_history(spark, tmp_path_factory):
    """The typed history lake of test_compare (`write_history`): what every compare and cut-over scenario is
    built from. Only read (a scenario writes its own lake), so test_compare and test_cutover share one."""
    from test_compare import write_history

    return write_history(spark, tmp_path_factory.mktemp("hist"))
