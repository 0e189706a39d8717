"""A Delta table whose protocol needs what the jar-less path cannot honour is refused with one clear line."""

from __future__ import annotations

import pytest
from deltalake import Schema
from deltalake.transaction import create_table_with_add_actions
from pyspark.sql.types import StringType, StructField, StructType

from cdcnorm.errors import LakeError
from cdcnorm.lake.delta.table import DeltaTableRef

SCHEMA = StructType([StructField("a", StringType(), True)])


def _table(path, configuration):
    create_table_with_add_actions(str(path), Schema.from_json(SCHEMA.json()), [], configuration=configuration)
    return DeltaTableRef(str(path), SCHEMA)


@pytest.mark.parametrize(("configuration", "feature"), [
    ({"delta.enableDeletionVectors": "true"}, "deletionVectors"),
    ({"delta.columnMapping.mode": "name"}, "columnMapping"),
])
def test_unsupported_features_are_refused(tmp_path, configuration, feature):
    table = _table(tmp_path / "t", configuration)
    with pytest.raises(LakeError, match=rf"uses .*{feature}.*cannot read or write without Spark's Delta jars") as err:
        table.check_features()
    assert "\n" not in err.value.message


def test_plain_tables_are_accepted(tmp_path):
    table = _table(tmp_path / "plain", None)
    table.check_features()  # no error; the variant feature is accepted by every lake test (changes has `after`)
    assert table.exists() and table.version() == 0
