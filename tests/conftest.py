"""Shared fixtures: one Spark session for the whole suite, paths resolved from this file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
CORPUS = ROOT.parent / "shared" / "corpus"


@pytest.fixture(scope="session")
def spark():
    from cdcnorm.session import get_spark

    # Python workers must be able to import test-defined adapters (pickled by reference to this folder).
    tests_dir = str(Path(__file__).resolve().parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (tests_dir, os.environ.get("PYTHONPATH")) if p)

    session = get_spark("local[2]", conf={"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "2"})
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


@pytest.fixture(scope="session")
def e2e(spark, tmp_path_factory):
    """One quirk-on simulated history in all eight formats, normalized into one lake and applied (shared)."""
    from pyspark.sql import functions as F

    import cdcnorm
    from cdcnorm.simulate.verify import build_lake

    root = tmp_path_factory.mktemp("e2e")
    run = build_lake(spark, root / "sim", root / "lake", natural=E2E_NATURAL, rotate=E2E_ROTATE, **SMALL_HISTORY)
    agg = cdcnorm.read_changes(spark, str(root / "lake")).groupBy("stream").agg(
        F.count(F.lit(1)).alias("rows"), F.countDistinct("event_id").alias("ids"))
    run["stream_stats"] = {r["stream"]: {"rows": r["rows"], "ids": r["ids"]} for r in agg.collect()}
    run["lake"], run["root"] = str(root / "lake"), str(root / "sim")
    return run


@pytest.fixture(scope="session")
def typed_history(spark, tmp_path_factory):
    """The typed history lake of test_compare (`write_history`): what every compare and cut-over scenario is
    built from. Only read (a scenario writes its own lake), so test_compare and test_cutover share one."""
    from test_compare import write_history

    return write_history(spark, tmp_path_factory.mktemp("hist"))
