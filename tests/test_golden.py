"""Guard for structural moves: normalize output of the samples and a quirk-on simulated history is unchanged.

See `tests/golden_digest.py`; intended changes are regenerated with `CDCNORM_UPDATE_GOLDEN=1` and listed in the
commit message.
"""

from __future__ import annotations

import os

import pytest

import cdcnorm
from conftest import SAMPLES
from golden_digest import compare, lake_digest

UPDATE = os.environ.get("CDCNORM_UPDATE_GOLDEN") == "1"
SAMPLE_OPTIONS = {"replicate": {"schema_registry": str(SAMPLES / "replicate" / "registry")},
                  "debezium": {"schema_registry": str(SAMPLES / "debezium" / "registry")}}


@pytest.mark.parametrize("vendor", ["canal", "datahub", "datastream", "debezium", "dms", "goldengate", "maxwell",
                                    "replicate"])
def test_samples_match_their_golden_digest(spark, tmp_path, vendor):
    lake = str(tmp_path / "lake")
    result = cdcnorm.normalize([str(SAMPLES / vendor)], vendor, spark=spark, lake=lake,
                               options=SAMPLE_OPTIONS.get(vendor))
    actual = lake_digest(spark, lake, str(SAMPLES), {vendor: result.report})
    assert compare(f"samples-{vendor}", actual, UPDATE) == []


@pytest.mark.slow  # the digest covers the lake of every vendor format
def test_simulated_history_matches_its_golden_digest(spark, e2e_all):
    actual = lake_digest(spark, e2e_all["lake"], e2e_all["root"], e2e_all["reports"])
    assert len(actual["changes"]) > 1000
    assert compare("simulated", actual, UPDATE) == []
