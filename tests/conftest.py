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
