"""Small-run planning: which settings a run gets by its input size, that they are restored, and which command-line
runs start their JVM with the small-run options."""

from __future__ import annotations

import pytest

from cdcnorm.runtime.small_runs import (
    INTERPRETED,
    INTERPRETED_RUN_BYTES,
    SMALL_RUN_BYTES,
    SMALL_RUN_JVM_OPTIONS,
    jvm_conf_for,
    planned_for,
    settings_for,
)


def test_settings_by_input_size(spark):
    tiny = settings_for(spark, 82 << 10)
    assert tiny["spark.sql.adaptive.enabled"] == "false"
    assert tiny["spark.sql.shuffle.partitions"] == "1"
    assert {k: tiny[k] for k in INTERPRETED} == INTERPRETED
    middle = settings_for(spark, INTERPRETED_RUN_BYTES + 1)
    assert middle["spark.sql.adaptive.enabled"] == "false" and "spark.sql.codegen.factoryMode" not in middle
    assert settings_for(spark, SMALL_RUN_BYTES + 1) == {}
    assert settings_for(spark, None) == {}


def test_interpreter_can_be_turned_off(spark, monkeypatch):
    monkeypatch.setenv("CDCNORM_INTERPRETED_RUN_BYTES", "0")
    got = settings_for(spark, 82 << 10)
    assert got["spark.sql.adaptive.enabled"] == "false" and "spark.sql.codegen.wholeStage" not in got


def test_planned_for_restores_the_session(codegen):
    spark = codegen
    before = spark.conf.get("spark.sql.codegen.wholeStage", None)
    with planned_for(spark, 1000) as applied:
        assert applied["spark.sql.codegen.wholeStage"] == "false"
        assert spark.conf.get("spark.sql.codegen.factoryMode") == "NO_CODEGEN"
        assert spark.range(3).selectExpr("sum(id * 2) AS s").first()["s"] == 6  # the interpreter evaluates
    assert spark.conf.get("spark.sql.codegen.wholeStage", None) == before
    assert spark.conf.get("spark.sql.codegen.factoryMode", None) == "FALLBACK"


def test_jvm_options_only_for_small_local_input(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f.jsonl").write_bytes(b"x" * 1000)
    monkeypatch.setenv("CDCNORM_JVM_ARCHIVE_DIR", str(tmp_path / "jvm"))
    with_archive = jvm_conf_for([str(tmp_path)])["spark.driver.extraJavaOptions"]
    assert with_archive.startswith(SMALL_RUN_JVM_OPTIONS + " -XX:ArchiveClassesAtExit=")  # cdcnorm.runtime.jvm_archive
    monkeypatch.setenv("CDCNORM_JVM_ARCHIVE", "off")
    assert jvm_conf_for([str(tmp_path)]) == {"spark.driver.extraJavaOptions": SMALL_RUN_JVM_OPTIONS}
    assert jvm_conf_for(["gs://bucket/folder"]) == {}
    monkeypatch.setenv("CDCNORM_INTERPRETED_RUN_BYTES", "999")
    assert jvm_conf_for([str(tmp_path)]) == {}
    monkeypatch.setenv("CDCNORM_INTERPRETED_RUN_BYTES", str(INTERPRETED_RUN_BYTES))
    monkeypatch.setenv("CDCNORM_SMALL_RUN_JVM_OPTIONS", "")
    assert jvm_conf_for([str(tmp_path)]) == {}


def _applied(spark, lake: str, group: str) -> tuple[set[str], int]:
    """(every applied row as JSON, Spark jobs it took) of a write-less apply of `lake`."""
    from lake_checks import applied_state

    sc = spark.sparkContext
    sc.setJobGroup(group, group)
    try:
        return applied_state(spark, lake, meta=True), len(sc.statusTracker().getJobIdsForGroup(group))
    finally:
        sc.setJobGroup("", "")


def test_a_small_lake_is_applied_as_a_small_run(codegen, tmp_path, monkeypatch):
    """The same state through the small-run plan (interpreted, no AQE) as through the session's (generated code)."""
    from cdcnorm.ingest.pipeline import normalize
    from cdcnorm.lake.store import Lake
    from cdcnorm.state.build import small_apply_bytes
    from conftest import SAMPLES

    spark = codegen
    lake = str(tmp_path / "lake")
    normalize([str(SAMPLES / "datastream" / "shop_orders")], "datastream", spark=spark, lake=lake)
    size = small_apply_bytes(Lake(spark, lake))
    assert size == sum(f.stat().st_size for f in (tmp_path / "lake" / "changes").rglob("*.parquet"))
    small, small_jobs = _applied(spark, lake, "small-apply")
    monkeypatch.setenv("CDCNORM_INTERPRETED_RUN_BYTES", str(size - 1))
    monkeypatch.setenv("CDCNORM_SMALL_RUN_BYTES", str(size - 1))
    assert small_apply_bytes(Lake(spark, lake)) is None
    session, session_jobs = _applied(spark, lake, "session-apply")
    assert small == session and len(small) == 2  # the sample's two orders
    assert small_jobs < session_jobs  # AQE off: no job per shuffle stage or broadcast


@pytest.mark.parametrize("vendor", ["datastream", pytest.param("datahub", marks=pytest.mark.slow)])
def test_generated_code_and_the_interpreter_normalize_alike(codegen, monkeypatch, vendor):
    """The suite runs interpreted (conftest.session_interprets); large runs use generated code: both give the
    same rows and report."""
    from pyspark.sql import functions as F

    from cdcnorm.ingest.pipeline import normalize
    from conftest import SAMPLES

    def run() -> tuple[set[str], dict]:
        result = normalize([str(SAMPLES / vendor)], vendor, spark=codegen)
        rows = {r[0] for r in result.changes.select(F.to_json(F.struct("*"))).collect()}
        report = {k: v for k, v in result.report.items() if k not in ("run_id", "started_at", "finished_at")}
        result.decoded.unpersist()
        return rows, report

    interpreted = run()
    monkeypatch.setenv("CDCNORM_INTERPRETED_RUN_BYTES", "0")  # small-run planning, but generated code
    generated = run()
    assert generated == interpreted and len(interpreted[0]) > 10
