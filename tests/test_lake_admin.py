"""`cdcnorm lake upgrade | check | maintain` on a small format-1 lake built the old way (tests/format1_lake.py)."""

from __future__ import annotations

import os
import shutil
import time

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake
from pyspark.sql import functions as F

import cdcnorm
import format1_lake as f1
from conftest import SAMPLES


def as_json(df):
    return df.select(F.to_json(F.struct(*[F.col(f"`{c}`") for c in df.columns])).alias("j"))


def same_rows(a, b) -> bool:
    a, b = as_json(a), as_json(b)
    return a.count() == b.count() and a.exceptAll(b).count() == 0 and b.exceptAll(a).count() == 0


def age(path: str, hours: float) -> None:
    """Make a file (and, for a folder, everything in it) look `hours` old."""
    then = time.time() - hours * 3600
    for root, _dirs, names in os.walk(path):
        for n in names:
            os.utime(os.path.join(root, n), (then, then))
        os.utime(root, (then, then))
    if os.path.isfile(path):
        os.utime(path, (then, then))


def some_parquet(folder: str) -> str:
    for root, _dirs, names in os.walk(folder):
        for n in sorted(names):
            if n.endswith(".parquet") and "_delta_log" not in root:
                return os.path.join(root, n)
    raise AssertionError(f"no parquet file under {folder}")


BROKEN = str(SAMPLES / "datastream" / "broken")
OLD_RUN = "20250101T000000000000Z-000000"
"""A format-1 run without data files whose report names a file that is gone and a folder holding a file older than
the run's start and one modified after it."""
ZERO = {"emitted": 0, "merged": 0, "metadata": 0, "filtered": 0, "duplicate": 0, "quarantined": 0}


def plant_old_run(path: str, root) -> dict:
    folder = root / "inputs" / "later"
    folder.mkdir(parents=True)
    (folder / "old.jsonl").write_text('{"x": 1}\n')
    then = 1_717_200_000  # 2024-06-01, before the run started
    os.utime(folder / "old.jsonl", (then, then))
    (folder / "new.jsonl").write_text('{"x": 2}\n')  # modified now: after the run, which cannot have read it
    gone = str(root / "inputs" / "gone.jsonl")
    report = {"run_id": OLD_RUN, "vendor": "datastream", "input_kind": "files", "inputs": [gone, str(folder)],
              "started_at": "2025-01-01T00:00:00+00:00", "finished_at": "2025-01-01T00:01:00+00:00",
              "records_read": 0, "outcomes": ZERO, "rows_written": 0, "quarantine_new": 0, "schema_versions_new": 0}
    with open(os.path.join(path, "runs", f"{OLD_RUN}.json"), "w") as fh:
        fh.write(orjson.dumps(report).decode())
    return {"gone": gone, "old": str(folder / "old.jsonl"), "new": str(folder / "new.jsonl")}


def ledger_rows(path: str) -> set[tuple]:
    """The input-file ledger's rows (delta-rs, latest version) as (uri, size, mtime_ms, etag, run_id)."""
    rows = DeltaTable(os.path.join(path, "inputs")).to_pyarrow_table().to_pylist()
    return {(r["uri"], r["size"], r["mtime_ms"], r["etag"], r["run_id"]) for r in rows}


@pytest.fixture(scope="module")
def old_lake(spark, tmp_path_factory):
    """A format-1 lake: a normalize run with rows and quarantine, written with INT96 timestamps (Spark's default
    outside cdcnorm's session), a retry that resolved one quarantined record, a run without data files whose
    inputs are partly gone (:func:`plant_old_run`), plus an uncommitted run's folder and a staging folder (never
    committed)."""
    from cdcnorm.runtime.fs import list_files, normalized_uri

    root = tmp_path_factory.mktemp("format1")
    path = str(root / "lake")
    f1.create(path)
    first = f1.normalize_run(spark, path, BROKEN, "datastream", timestamps="INT96")
    qids = f1.quarantine_ids(spark, path)
    f1.resolve_run(spark, path, qids[:1])
    planted = plant_old_run(path, root)
    read = list_files(spark, [BROKEN])[0]
    old = os.stat(planted["old"])
    ledger = {(f.identity().uri, f.size, f.mtime_ms, None, first["run_id"]) for f in read} | {
        (normalized_uri(planted["gone"]), -1, None, None, OLD_RUN),
        (normalized_uri(planted["old"]), old.st_size, old.st_mtime_ns // 1_000_000, None, OLD_RUN)}
    crashed = os.path.join(path, "changes", "vendor=datastream", "run_id=CRASHED")
    os.makedirs(crashed)
    shutil.copy(some_parquet(os.path.join(path, "changes")), os.path.join(crashed, "part-00000-x.parquet"))
    os.makedirs(os.path.join(path, "_staging", "STAGED", "decoded"))
    with open(os.path.join(path, "_staging", "STAGED", "decoded", "part-0.parquet"), "wb") as fh:
        fh.write(b"x" * 10)
    pristine = str(root / "pristine")
    shutil.copytree(path, pristine)
    return {"path": path, "pristine": pristine, "root": root, "report": first, "qids": qids,
            "rows": first["rows_written"], "read": read, "ledger": ledger}


@pytest.fixture(scope="module")
def upgraded(spark, old_lake):
    from cdcnorm.lake.admin.upgrade import upgrade

    path = str(old_lake["root"] / "upgraded")
    shutil.copytree(old_lake["pristine"], path)
    return {"path": path, "result": upgrade(spark, path)}


def test_format1_lake_is_refused_until_upgraded(spark, old_lake):
    from cdcnorm.errors import LakeError

    with pytest.raises(LakeError, match="cdcnorm lake upgrade"):
        cdcnorm.read_changes(spark, old_lake["pristine"])


def test_upgrade_registers_the_old_files_and_reads_the_same_rows(spark, old_lake, upgraded):
    path, res = upgraded["path"], upgraded["result"]
    assert old_lake["rows"] > 0 and old_lake["report"]["quarantine_new"] > 1
    assert res.upgraded and res.runs == 3
    assert res.registered["changes"]["rows"] == old_lake["rows"]
    assert res.registered["quarantine"]["rows"] == len(old_lake["qids"])
    assert res.registered["quarantine_resolved"]["rows"] == 1
    # every row, every column, exactly as the old reader read it (INT96 timestamps of the second run included)
    assert same_rows(cdcnorm.read_changes(spark, path), f1.changes(spark, old_lake["pristine"]))
    int96 = os.path.join(old_lake["pristine"], "changes", "vendor=datastream",
                         f"run_id={old_lake['report']['run_id']}")
    leaves = pq.ParquetFile(some_parquet(int96)).schema
    assert next(c for c in leaves if c.path == "source_ts").physical_type == "INT96"
    # the resolved record is no longer listed; with include_resolved it is
    open_ids = sorted(r[0] for r in cdcnorm.read_quarantine(spark, path).select("quarantine_id").collect())
    assert open_ids == old_lake["qids"][1:]
    assert cdcnorm.read_quarantine(spark, path, include_resolved=True).count() == len(old_lake["qids"])
    assert cdcnorm.read_schemas(spark, path).count() > 0
    # reports are readable, and the old layout's leftovers were listed, not registered
    from cdcnorm.lake.store import Lake

    lk = Lake(spark, path)
    assert lk.committed_runs() == f1.committed_runs(old_lake["pristine"])
    assert lk.run_report(old_lake["report"]["run_id"])["rows_written"] == old_lake["rows"]
    left = {x.path: x for x in res.leftovers}
    assert set(left) == {"changes/vendor=datastream/run_id=CRASHED", "_staging/STAGED"}
    assert left["changes/vendor=datastream/run_id=CRASHED"].files == 1
    with open(os.path.join(path, "_cdcnorm.json")) as fh:
        assert orjson.loads(fh.read())["lake_format"] == 2


def test_upgrade_again_changes_nothing_and_a_crashed_upgrade_finishes(spark, old_lake, upgraded, monkeypatch):
    from cdcnorm.lake.admin import upgrade as up
    from cdcnorm.lake.store import Lake

    versions = {n: t.version() for n, t in Lake(spark, upgraded["path"]).tables.items()}
    assert not up.upgrade(spark, upgraded["path"]).upgraded
    assert {n: t.version() for n, t in Lake(spark, upgraded["path"]).tables.items()} == versions

    path = str(old_lake["root"] / "crashed")
    shutil.copytree(old_lake["pristine"], path)

    def crash(*_a, **_k):
        raise RuntimeError("killed after registering the data files")

    monkeypatch.setattr(up, "_record_runs", crash)
    with pytest.raises(RuntimeError):
        up.upgrade(spark, path)
    with pytest.raises(Exception, match="lake upgrade"):  # still format 1: refused
        cdcnorm.read_changes(spark, path)
    monkeypatch.undo()
    again = up.upgrade(spark, path)
    assert again.upgraded and all(d["runs"] == 0 for d in again.registered.values())  # nothing registered twice
    assert same_rows(cdcnorm.read_changes(spark, path), cdcnorm.read_changes(spark, upgraded["path"]))
    assert len(Lake(spark, path).committed_runs()) == 3
    assert ledger_rows(path) == old_lake["ledger"]  # the ledger's commit was not repeated


def test_upgrade_fills_the_input_ledger_from_the_reports(spark, old_lake, upgraded):
    from cdcnorm.lake import ledger
    from cdcnorm.lake.admin.upgrade import LedgerFill
    from cdcnorm.lake.store import Lake

    path = upgraded["path"]
    # the normalize run's files as they are now; of the old run, the gone file as an unknown identity and the
    # file older than its start; the file modified after it is left for the next run; the retry reads no file
    assert upgraded["result"].ledger == LedgerFill(runs=2, files=len(old_lake["read"]) + 1, unknown=1, newer=1)
    assert ledger_rows(path) == old_lake["ledger"]
    lk = Lake(spark, path)
    assert lk.cut()["inputs"] == lk.table("inputs").version()  # the runs rows' cut includes the ledger
    assert ledger.known(lk, old_lake["read"]) == {f.identity() for f in old_lake["read"]}  # a new run skips them


def test_upgrade_fills_the_ledger_of_a_format2_lake_written_before_it(spark, old_lake, upgraded, tmp_path):
    from typer.testing import CliRunner

    from cdcnorm.cli import app
    from cdcnorm.lake import ledger
    from cdcnorm.lake.admin.check import check
    from cdcnorm.lake.admin.upgrade import upgrade
    from cdcnorm.lake.store import Lake

    path = str(tmp_path / "lake")
    shutil.copytree(upgraded["path"], path)
    # a format-2 lake whose runs ran before the ledger: no `inputs` table, no ledger version in the runs rows
    shutil.rmtree(os.path.join(path, "inputs"))
    runs_path = os.path.join(path, "runs")
    runs = DeltaTable(runs_path).to_pyarrow_table()
    versions = [orjson.dumps({k: v for k, v in orjson.loads(x).items() if k != "inputs"}).decode()
                for x in runs.column("versions").to_pylist()]
    reports = []
    for x in runs.column("report").to_pylist():
        rep = orjson.loads(x)
        rep["table_versions"].pop("inputs")
        reports.append(orjson.dumps(rep).decode())
    runs = runs.set_column(runs.schema.get_field_index("versions"), "versions", pa.array(versions, pa.string()))
    runs = runs.set_column(runs.schema.get_field_index("report"), "report", pa.array(reports, pa.string()))
    write_deltalake(runs_path, runs, mode="overwrite")

    assert not Lake(spark, path).table("inputs").exists()  # a reader does not create it
    lk = Lake(spark, path, create=True)  # a writer does: empty
    assert lk.table("inputs").exists() and lk.table("inputs").live() == []
    assert ledger.known(lk, old_lake["read"]) == set()

    res = CliRunner().invoke(app, ["lake", "upgrade", "--lake", path])
    said = " ".join(res.output.split())
    assert res.exit_code == 0, res.output
    assert "already a format-2 lake; input-file ledger filled from 2 run report(s)" in said, said
    assert ledger_rows(path) == old_lake["ledger"]
    lk = Lake(spark, path)
    assert lk.cut()["inputs"] == lk.table("inputs").version()
    assert lk.run_reports()[-1]["input_kind"] == "ledger"
    assert ledger.known(lk, old_lake["read"]) == {f.identity() for f in old_lake["read"]}

    versions = {n: t.version() for n, t in lk.tables.items()}
    again = upgrade(spark, path)
    assert not again.upgraded and again.ledger.runs == 0
    assert {n: t.version() for n, t in Lake(spark, path).tables.items()} == versions
    res = CliRunner().invoke(app, ["lake", "upgrade", "--lake", path])
    assert res.exit_code == 0 and "nothing to do" in res.output
    checks = check(spark, path).to_dict()["checks"]
    assert not checks["ledger"]["problem"] and not checks["reconciliation"]["problem"], checks


@pytest.mark.slow  # a normalize and an apply: ~20 s
def test_upgraded_lake_takes_new_runs_and_apply(spark, old_lake, tmp_path):
    from cdcnorm.lake.admin.upgrade import upgrade

    path = str(tmp_path / "lake")
    shutil.copytree(old_lake["pristine"], path)
    upgrade(spark, path)
    again = cdcnorm.normalize(BROKEN, "datastream", spark=spark, lake=path)  # every file is in the ledger
    assert again.report["files_skipped_known"] == len(old_lake["read"]) and again.report["files"] == 0
    assert again.report["rows_written"] == 0 and again.report["records_read"] == 0
    forced = cdcnorm.normalize(BROKEN, "datastream", spark=spark, lake=path, reprocess=True)
    assert forced.report["rows_written"] == 0 and forced.report["outcomes"]["duplicate"] > 0
    assert cdcnorm.read_changes(spark, path).count() == old_lake["rows"]
    state = cdcnorm.apply(spark, path)
    assert len(state) > 0 and sum(df.count() for df in state.values()) > 0


def test_check_is_clean_after_upgrade_and_finds_planted_problems(spark, upgraded, tmp_path):
    from cdcnorm.lake.admin.check import check
    from cdcnorm.lake.delta.files import file_adds, write_arrow
    from cdcnorm.lake.store import Lake

    path = str(tmp_path / "lake")
    shutil.copytree(upgraded["path"], path)
    first = check(spark, path).to_dict()["checks"]
    assert not any(first[k]["problem"] for k in ("duplicates", "ledger", "pending", "reconciliation")), first
    # the old layout's uncommitted run folder is the one problem: unreferenced, of a run that never committed
    assert [(d["folder"], d["kind"]) for d in first["orphans"]["details"]] == [
        ("vendor=datastream/run_id=CRASHED", "uncommitted")]

    lk = Lake(spark, path)
    # ledger rows: one of a run that is not committed (a problem), and a second row for a file the ledger holds,
    # from another committed run (two concurrent runs over the same new files leave that: no problem)
    inputs = lk.table("inputs")
    held = min(r for r in ledger_rows(path) if r[1] >= 0)
    other = next(r for r in lk.committed_runs() if r != held[4])
    for run, uri in (("GHOST", "file:///nowhere/a.jsonl"), (other, held[0])):
        row = pa.table({"uri": [uri], "size": pa.array([10], pa.int64()), "mtime_ms": pa.array([1], pa.int64()),
                        "etag": pa.array([None], pa.string()), "vendor": ["datastream"], "run_id": [run],
                        "recorded_at": pa.array([None], pa.timestamp("us", tz="UTC"))})
        inputs.commit(write_arrow(spark, row, inputs, f"run={run}", lk.specs["inputs"].stats))
    table = lk.table("changes")
    src = some_parquet(os.path.join(path, "changes"))
    copy = "planted/vendor=datastream/source_day=__HIVE_DEFAULT_PARTITION__/part-dup.parquet"  # not a run folder
    os.makedirs(os.path.dirname(os.path.join(path, "changes", copy)))
    shutil.copy(src, os.path.join(path, "changes", copy))
    table.commit(file_adds(spark, table, [copy], lk.specs["changes"].stats))  # the same rows twice, no report
    crashed = os.path.join(path, "changes", "run=CRASHED", "vendor=datastream")
    os.makedirs(crashed)
    shutil.copy(src, os.path.join(crashed, "part-x.parquet"))
    os.makedirs(os.path.join(path, "_commits"))
    with open(os.path.join(path, "_commits", "PENDING.json"), "w") as fh:
        fh.write("{}")
    # readers use the cut: move it past the planted commit like any later run would
    from cdcnorm.lake.commit import append_run_rows

    append_run_rows(lk.table("runs"), [{"run_id": "ZZ", "records_read": 1, "outcomes": {"emitted": 2}}],
                {n: lk.table(n).version() for n in ("schemas", "quarantine", "quarantine_resolved", "changes")},
                ["test.ZZ"])
    res = check(spark, path).to_dict()["checks"]
    dup_rows = spark.read.parquet(src).count()
    assert res["duplicates"]["problem"] and res["duplicates"]["summary"].startswith(f"{dup_rows} event id")
    assert "no run report counts a row written unchecked" in res["duplicates"]["summary"]
    assert len(res["duplicates"]["details"]) == min(5, dup_rows) and res["duplicates"]["details"][0]["rows"] == 2
    orphan = res["orphans"]["details"]
    assert res["orphans"]["problem"] and [(d["folder"], d["kind"], d["files"]) for d in orphan] == [
        ("run=CRASHED/vendor=datastream", "uncommitted", 1), ("vendor=datastream/run_id=CRASHED", "uncommitted", 1)]
    assert orphan[0]["bytes"] == os.path.getsize(src)
    assert res["pending"]["problem"] and res["pending"]["details"][0]["run_id"] == "PENDING"
    assert res["ledger"]["problem"] and res["ledger"]["details"] == [
        {"run_id": "GHOST", "files": 1, "pending": False, "example": "file:///nowhere/a.jsonl"}]
    rec = res["reconciliation"]
    assert rec["problem"] and "whose outcomes do not add up" in rec["summary"]
    assert rec["details"][0]["totals"]["changes_rows"] == rec["details"][0]["totals"]["rows_written"] + dup_rows


def test_maintain_compacts_checkpoints_and_vacuums_only_old_files(spark, upgraded, tmp_path):
    from cdcnorm.lake.admin.check import check
    from cdcnorm.lake.admin.maintain import maintain
    from cdcnorm.lake.store import Lake

    path = str(tmp_path / "lake")
    shutil.copytree(upgraded["path"], path)
    before = {name: as_json(df).collect() for name, df in (
        ("changes", cdcnorm.read_changes(spark, path)), ("quarantine", cdcnorm.read_quarantine(spark, path, True)),
        ("schemas", cdcnorm.read_schemas(spark, path)))}
    changes_dir = os.path.join(path, "changes")
    src = Lake(spark, path).table("changes").live()[0]["uri"]  # a registered file of the old layout
    assert "run_id=" in src
    age(os.path.join(changes_dir, "vendor=datastream"), 300)  # the registered files are old, their removal is not
    for name in ("OLD", "FRESH"):
        folder = os.path.join(changes_dir, f"run={name}", "vendor=datastream")
        os.makedirs(folder)
        shutil.copy(src, os.path.join(folder, "part-0.parquet"))
        os.makedirs(os.path.join(path, "_staging", name, "decoded"))
        shutil.copy(src, os.path.join(path, "_staging", name, "decoded", "part-0.parquet"))
    age(os.path.join(changes_dir, "run=OLD"), 200)
    age(os.path.join(path, "_staging", "OLD"), 200)
    files_before = len(Lake(spark, path).table("changes").live())

    res = maintain(spark, path, retention_hours=100)

    work = {w.table: w for w in res.tables}
    assert work["changes"].compacted_files == files_before > work["changes"].written_files >= 1
    assert res.cut_advanced
    for name, df in (("changes", cdcnorm.read_changes(spark, path)),
                     ("quarantine", cdcnorm.read_quarantine(spark, path, True)),
                     ("schemas", cdcnorm.read_schemas(spark, path))):
        assert sorted(r[0] for r in as_json(df).collect()) == sorted(r[0] for r in before[name]), name
    assert len(Lake(spark, path).table("changes").live()) == work["changes"].written_files
    for name in ("changes", "quarantine", "schemas", "runs"):
        assert os.path.exists(os.path.join(path, name, "_delta_log", "_last_checkpoint")), name
    assert not os.path.exists(os.path.join(changes_dir, "run=OLD", "vendor=datastream", "part-0.parquet"))
    assert os.path.exists(os.path.join(changes_dir, "run=FRESH", "vendor=datastream", "part-0.parquet"))
    assert work["changes"].vacuumed_files >= 1 and work["changes"].vacuumed_bytes >= os.path.getsize(src)
    assert [s["run"] for s in res.staging_removed] == ["OLD"]
    assert os.path.exists(os.path.join(path, "_staging", "FRESH"))
    # the compacted-away small files are younger than the retention: still there for readers of older versions
    assert os.path.exists(src)
    assert check(spark, path).to_dict()["checks"]["reconciliation"]["problem"] is False


def test_cli_lake_commands(spark, upgraded, tmp_path):
    from typer.testing import CliRunner

    from cdcnorm.cli import app

    path = str(tmp_path / "lake")
    shutil.copytree(upgraded["path"], path)
    runner = CliRunner()
    shutil.rmtree(os.path.join(path, "changes", "vendor=datastream", "run_id=CRASHED"))
    res = runner.invoke(app, ["lake", "check", "--lake", path, "--json"])
    assert res.exit_code == 0, res.output
    assert orjson.loads(res.stdout)["ok"] is True
    res = runner.invoke(app, ["lake", "upgrade", "--lake", path])
    assert res.exit_code == 0 and "already a format-2 lake" in res.output
    res = runner.invoke(app, ["lake", "maintain", "--lake", path, "--no-vacuum", "--no-compact"])
    assert res.exit_code == 0 and "changes" in res.output
    os.makedirs(os.path.join(path, "_commits"))
    with open(os.path.join(path, "_commits", "R.json"), "w") as fh:
        fh.write("{}")
    res = runner.invoke(app, ["lake", "check", "--lake", path])
    assert res.exit_code == 1 and "PROBLEMS FOUND" in res.output
    res = runner.invoke(app, ["lake", "check", "--lake", str(tmp_path / "none")])
    assert res.exit_code == 3 and "No cdcnorm lake" in res.output
