"""The adapter contract suite, shipped so a third-party adapter's tests inherit it (`pip install cdcnorm[testing]`).

Usage, in the plug-in's tests::

    # conftest.py
    pytest_plugins = ["cdcnorm.testing"]          # a session-wide `spark` fixture (local[2])

    # test_acme.py
    from cdcnorm.testing import AdapterContract

    class TestAcmeContract(AdapterContract):
        vendor = "acme"
        inputs = ["samples/acme"]
        message_file = "samples/acme/changes.jsonl"   # optional: file vs message event ids

A project with its own `spark` fixture (as cdcnorm's tests have) just imports `AdapterContract`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cdcnorm.testing.contract import EMITTER_FLAGS, AdapterContract

__all__ = ["EMITTER_FLAGS", "AdapterContract", "spark"]


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A small local Spark session for the whole test run, stopped at the end."""
    from cdcnorm.runtime.session import get_spark

    session = get_spark("local[2]", conf={"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "2"})
    yield session
    session.stop()
