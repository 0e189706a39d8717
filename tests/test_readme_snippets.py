"""The README's Python snippets, run as written, in order, in one namespace, against a lake of the repo's samples.

The snippets use paths relative to a clone's folder (`samples/...`, `lake/...`). The test's Spark session resolves
relative paths against the folder its JVM started in, so each string literal starting with `lake/` or `samples/`
is made absolute under a fresh folder holding only `samples/` (a link to the repo's), as on a fresh clone; that
is the only change to the statements that run. A
statement whose last line ends with a `# needs ...` comment needs something this machine lacks (a Kafka broker
and Spark's Kafka connector, an Event Hub, Spark's Delta jars); each one must be listed below, with what the test
runs instead, so a new one fails until it is handled:

- `kafka_df = ...` is replaced by a DataFrame of the Kafka source's schema holding the Replicate JSON sample's
  messages (topic `replicate-topic`, as the snippet subscribes to);
- `eventhubs_df = ...` is replaced by a DataFrame of the Event Hubs connector's columns holding the messages
  of the Replicate Event Hubs Capture sample;
- `spark.read.format("delta")...` is not run (no Delta jars here); the two other readers are.

Every expression statement's value is kept (as a REPL shows it), and what each assignment bound, and checked: the three readers count the same
rows, per operation too.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLES

README = ROOT / "README.md"
NEEDS = re.compile(r"#\s*needs (.+)$")

KAFKA_SAMPLE = SAMPLES / "replicate" / "json" / "orders_wide.jsonl"
CAPTURE_SAMPLE = SAMPLES / "replicate" / "eventhubs" / "replicate-ns" / "orders-avro" / "0" / "2024/05/01/10/10/00.avro"


def readme_blocks(lang: str) -> list[str]:
    return re.findall(rf"^[ \t]*```{lang}\n(.*?)^[ \t]*```", README.read_text(encoding="utf-8"), re.S | re.M)


def statements(code: str) -> list[tuple[ast.stmt, str, str | None]]:
    """Each top-level statement with its source and the `# needs ...` reason on its last line (or None)."""
    lines = code.splitlines()
    out = []
    for node in ast.parse(code).body:
        source = ast.get_source_segment(code, node)
        m = NEEDS.search(lines[node.end_lineno - 1])
        out.append((node, source, m.group(1).strip() if m else None))
    return out


def kafka_df(spark):
    """What Spark's Kafka source returns for the subscribed topic: its schema, the sample's messages."""
    import datetime as dt

    lines = KAFKA_SAMPLE.read_bytes().splitlines()
    start = dt.datetime(2024, 5, 1, 10, 10)
    rows = [(None, line, "replicate-topic", 0, i, start + dt.timedelta(seconds=i), 0) for i, line in enumerate(lines)]
    return spark.createDataFrame(rows, "key binary, value binary, topic string, partition int, offset long, "
                                       "timestamp timestamp, timestampType int")


def eventhubs_df(spark):
    """What the Event Hubs connector returns: its columns, the capture sample's events."""
    from fastavro import reader

    from cdcnorm.adapters.replicate.files import enqueued_time

    with CAPTURE_SAMPLE.open("rb") as fh:
        rows = [(r["Body"], "0", str(r["Offset"]), int(r["SequenceNumber"]), enqueued_time(r["EnqueuedTimeUtc"]),
                 None, None, {}, {}) for r in reader(fh)]
    return spark.createDataFrame(rows, "body binary, partition string, offset string, sequenceNumber long, "
                                       "enqueuedTime timestamp, publisher string, partitionKey string, "
                                       "properties map<string,string>, systemProperties map<string,string>")


WIDE_OPS = sorted(["SNAPSHOT", "SNAPSHOT", "INSERT", "UPDATE", "UPDATE", "DELETE", "INSERT", "DELETE"])
"""The changes of ORDERS_WIDE in both Replicate message samples (JSON and Event Hubs Capture)."""

SUBSTITUTES = {"kafka_df": kafka_df, "eventhubs_df": eventhubs_df}
"""Assignments that need a service, by target name: what the test binds instead."""
NOT_RUN = {"the delta-spark jars"}
"""`# needs` reasons of statements the test skips (nothing here can stand in for them)."""


RELATIVE = re.compile(r"""(?<=["'])(?=(lake|samples)/)""")


def run_snippets(namespace: dict, spark, work: Path) -> tuple[dict[str, object], dict[str, Exception]]:
    """Run every ```python block of the README in order; return the values of its expression statements and the
    exceptions of the statements that failed, both keyed by their source as the README writes it."""
    values: dict[str, object] = {}
    failures: dict[str, Exception] = {}
    for code in readme_blocks("python"):
        for node, source, needs in statements(code):
            readme_source = source
            node = ast.parse(RELATIVE.sub(f"{work}/", source)).body[0]
            if needs is not None:
                target = node.targets[0].id if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
                if target in SUBSTITUTES:
                    namespace[target] = SUBSTITUTES[target](spark)
                    continue
                assert needs in NOT_RUN, f"README statement needing {needs!r} is not handled: {source}"
                values[readme_source] = None
                continue
            try:
                if isinstance(node, ast.Expr):
                    values[readme_source] = eval(compile(ast.Expression(node.value), "README.md", "eval"), namespace)
                else:
                    exec(compile(ast.Module([node], []), "README.md", "exec"), namespace)
                    if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                        values[readme_source] = namespace[node.targets[0].id]  # what it bound, before a rebinding
            except Exception as exc:  # noqa: BLE001 - kept for the test of that statement, which reports it
                failures[readme_source] = exc
    return values, failures


@pytest.fixture(scope="module")
def readme_run(spark, tmp_path_factory):
    work = tmp_path_factory.mktemp("fresh-clone")
    (work / "samples").symlink_to(SAMPLES, target_is_directory=True)
    namespace: dict = {"__name__": "readme"}
    values, failures = run_snippets(namespace, spark, work)
    return work, namespace, values, failures


EVENT_HUBS_RUN = "result = cdcnorm.normalize(eventhubs_df, vendor=\"replicate\", spark=spark, column_map=EVENT_HUBS_COLUMNS)"


def test_every_statement_runs(readme_run):
    *_, failures = readme_run
    others = {source: repr(exc) for source, exc in failures.items() if source != EVENT_HUBS_RUN}
    assert not others, f"README statements that fail: {others}"


def test_every_needs_line_is_handled():
    needs = [(source, why) for code in readme_blocks("python") for _, source, why in statements(code) if why]
    handled = {source.split("=", 1)[0].strip() for source, _ in needs} & set(SUBSTITUTES)
    assert handled == set(SUBSTITUTES), "a substitute stands in for a README line that is gone"
    assert {why for _, why in needs if why in NOT_RUN} == NOT_RUN
    assert len(needs) == len(SUBSTITUTES) + len(NOT_RUN)


def test_python_api_snippet(readme_run, spark):
    work, ns, values, _ = readme_run
    assert ns["spark"] is spark  # get_spark() returns the active session
    assert (work / "lake" / "changes" / "_delta_log").is_dir()
    report = values["result.report"]
    changes = ns["changes"]
    assert report["reconciled"] and report["rows_written"] == changes.count() > 0
    assert report["outcomes"]["quarantined"] > 0  # samples/datastream/broken/
    assert values["result.quarantine"].count() == report["outcomes"]["quarantined"]
    assert changes.columns[:3] == values["result.changes"].columns[:3]


def test_kafka_snippet(readme_run):
    _, _, values, failures = readme_run
    statement = "result = cdcnorm.normalize(kafka_df, vendor=\"replicate\", spark=spark)"
    assert statement not in failures
    got = values[statement].changes.select("op", "table", "stream").collect()
    assert sorted(r["op"] for r in got) == WIDE_OPS
    assert {(r["table"], r["stream"]) for r in got} == {("ORDERS_WIDE", "replicate-topic")}


def test_event_hubs_snippet(readme_run):
    _, ns, _, failures = readme_run
    exc = failures.get(EVENT_HUBS_RUN)
    assert exc is None, repr(exc)
    got = ns["result"].changes.select("op", "table").collect()
    assert sorted(r["op"] for r in got) == WIDE_OPS and {r["table"] for r in got} == {"ORDERS_WIDE"}


def test_three_readers_agree(readme_run):
    _, ns, values, _ = readme_run
    from pyspark.sql import functions as F

    by_op = {r["op"]: r["n"] for r in ns["changes"].groupBy("op").agg(F.count(F.lit(1)).alias("n")).collect()}
    dataset = values['DeltaTable("lake/changes").to_pyarrow_dataset()']
    duck = dict(values["""duckdb.sql("SELECT op, count(*) FROM delta_scan('lake/changes') GROUP BY op")"""].fetchall())
    assert dataset.count_rows() == sum(by_op.values()) == values["result.report"]["rows_written"]
    assert duck == by_op and len(by_op) >= 3


def test_shell_one_liners_run(tmp_path):
    """The `python -c` lines of the README's shell blocks (the cdcnorm zip, the spark-submit entry script)."""
    lines = [line for block in readme_blocks("bash") for line in block.replace("\\\n", "\n").splitlines()]
    text = "\n".join(readme_blocks("bash"))
    zip_cmd = re.search(r"python -c '(import cdcnorm, pathlib, shutil;.*?)'", text, re.S).group(1)
    main_cmd = re.search(r"CDCNORM_MAIN=\$\(python -c '(.*?)'\)", text).group(1)
    assert any("cdcnorm.zip" in line for line in lines)
    subprocess.run([sys.executable, "-c", zip_cmd], cwd=tmp_path, check=True, timeout=120)
    with zipfile.ZipFile(tmp_path / "cdcnorm.zip") as z:
        assert {"cdcnorm/__init__.py", "cdcnorm/__main__.py", "cdcnorm/ingest/pipeline.py"} <= set(z.namelist())
    out = subprocess.run([sys.executable, "-c", main_cmd], capture_output=True, text=True, check=True, timeout=120)
    main = out.stdout.strip()
    assert main.endswith("cdcnorm/__main__.py") and Path(main).is_file()
