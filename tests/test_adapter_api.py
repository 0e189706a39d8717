"""The adapter API a newcomer or a plug-in meets: the registry, entry points, the tutorial, the contract rules."""

from __future__ import annotations

import dataclasses
import io
import re
import sys
import textwrap
import types
from pathlib import Path
from typing import ClassVar

import pytest

import cdcnorm
from cdcnorm import adapters
from cdcnorm.adapters import REGISTRY, get_adapter, names, register, spec, unregister
from cdcnorm.canonical.emit import BatchBuilder, Bookkeeping, decoded_schema
from cdcnorm.canonical.record import Change
from cdcnorm.canonical.schema import FLAGS
from cdcnorm.errors import UsageError
from cdcnorm.testing import AdapterContract
from decoded import outcomes

TUTORIAL_INPUT = Path(__file__).resolve().parent / "data" / "acme" / "changes.jsonl"


def tutorial_code() -> str:
    """The code block that opens `cdcnorm.adapters.base`'s docstring, exactly as a reader sees it."""
    from cdcnorm.adapters import base

    return re.search(r"```python\n(.*?)```", base.__doc__, re.S).group(1)


def run_tutorial() -> types.ModuleType:
    """Execute the tutorial in a module of its own (not importable: Spark pickles the class by value)."""
    module = types.ModuleType("cdcnorm_tutorial")
    exec(compile(tutorial_code(), "cdcnorm/adapters/base.py (tutorial)", "exec"), module.__dict__)
    return module


@pytest.fixture(scope="module", autouse=True)
def tutorial_adapter():
    module = run_tutorial()
    yield module
    unregister("acme")


# -- the registry ---------------------------------------------------------------------------------------------
def test_registry_is_sorted_and_names_every_builtin_vendor():
    assert list(REGISTRY) == sorted(REGISTRY) == ["datahub", "datastream", "debezium", "dms", "replicate"]
    assert names() == sorted(names())
    for name in REGISTRY:
        s = spec(name)
        assert s.name == name and s.formats == s.adapter_class().formats
        assert set(s.flags) <= set(FLAGS)


def test_unknown_vendor_suggests_the_closest_name():
    with pytest.raises(UsageError, match="Unknown vendor 'replicat'. Did you mean replicate?"):
        spec("replicat")


def test_builtin_vendor_cannot_be_replaced():
    with pytest.raises(UsageError, match="built-in vendor"):
        register("datastream", "somewhere:Else")


def test_naming_vendors_does_not_start_pyspark():
    import subprocess

    code = "import sys, cdcnorm.adapters as a; a.names(); a.spec('datahub'); print('pyspark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_vendor_lists_come_from_the_registry():
    from cdcnorm.canonical.doc import sections
    from cdcnorm.migrate.rules import rules
    from cdcnorm.simulate import VENDORS

    vendor_doc = sections()["vendors"]
    assert [line.split("`")[1] for line in vendor_doc.splitlines()[2:]] == list(REGISTRY)
    assert set(VENDORS) == set(REGISTRY)
    assert {r.name for r in rules() if r.vendor} == {r.name for s in adapters.specs() for r in s.compare_rules}
    assert "acme" in names() and not spec("acme").compare_rules  # the tutorial's vendor, registered above


# -- a plug-in installed as a distribution: discovered through its entry point ---------------------------------
PLUGIN = '''
from cdcnorm.adapters.base import Adapter
from cdcnorm.adapters.spec import VendorSpec
from cdcnorm.canonical.record import Change


class ZetaAdapter(Adapter):
    name = "zeta"
    formats = ("zeta.csv",)

    @classmethod
    def sniff(cls, path, head):
        return head.startswith(b"zeta,")

    def read_file(self, path, fh, out):
        out.set_context(self.name, self.formats[0])
        for index, line in enumerate(fh):
            _, table, seq, value = line.decode().rstrip("\\n").split(",")
            out.begin_record(path, index, raw=line)
            out.change(Change(vendor=self.name, format=self.formats[0], stream=self.stream_name(None, "zeta"),
                              op="INSERT", table=table, after={"value": value}, sort_parts=(1, int(seq)),
                              id_parts=(int(seq),), position=seq))
            yield


SPEC = VendorSpec(name="zeta", adapter="zeta_cdc:ZetaAdapter", formats=("zeta.csv",))
'''


@pytest.fixture()
def installed_plugin(tmp_path, monkeypatch):
    """A tiny distribution `zeta-cdc` on sys.path: a module plus a dist-info with an entry point."""
    (tmp_path / "zeta_cdc.py").write_text(PLUGIN, encoding="utf-8")
    info = tmp_path / "zeta_cdc-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: zeta-cdc\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[cdcnorm.adapters]\nzeta = zeta_cdc:SPEC\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("zeta_cdc", None)


def test_entry_point_plugin_is_discovered_without_editing_cdcnorm(installed_plugin):
    import importlib.metadata

    assert [ep.value for ep in importlib.metadata.entry_points(group="cdcnorm.adapters", name="zeta")] == [
        "zeta_cdc:SPEC"]
    assert "zeta" in names()
    assert spec("zeta").formats == ("zeta.csv",)
    adapter = get_adapter("zeta", {"stream": "s1"})
    out = BatchBuilder()
    list(adapter.read_file("f.csv", io.BytesIO(b"zeta,orders,7,x\n"), out))
    out.end_record()
    [row] = out.flush().to_pylist()
    assert (row["vendor"], row["table"], row["op"], row["stream"], row["_records"]) == ("zeta", "orders", "INSERT", "s1", 1)


def test_entry_point_plugin_normalizes_through_spark(installed_plugin, spark, tmp_path):
    spark.sparkContext.addPyFile(str(installed_plugin / "zeta_cdc.py"))  # the executors import it by name
    data = tmp_path / "in" / "part.csv"
    data.parent.mkdir()
    data.write_bytes(b"zeta,orders,1,a\nzeta,orders,2,b\n")
    result = cdcnorm.normalize([str(data.parent)], spark=spark)  # detected by the plug-in's sniff
    assert result.report["vendor"] == "zeta" and result.report["reconciled"]
    assert sorted(r["position"] for r in result.changes.collect()) == ["1", "2"]


def test_plugin_disappears_with_its_distribution(installed_plugin, monkeypatch):
    assert "zeta" in names()
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(installed_plugin)])
    assert "zeta" not in names()
    with pytest.raises(UsageError, match="Unknown vendor 'zeta'"):
        spec("zeta")


def test_register_by_module_path():
    register("zeta2", "cdcnorm.adapters.datahub:SPEC")
    try:
        with pytest.raises(UsageError, match="registered with a spec named 'datahub'"):
            spec("zeta2")
    finally:
        unregister("zeta2")


# -- the explicit contract -----------------------------------------------------------------------------------
def test_bookkeeping_names_are_the_decoded_schema_tail():
    fields = [f.name for f in decoded_schema().fields]
    assert fields[-len(Bookkeeping):] == [b.value for b in Bookkeeping]


def test_a_flag_outside_the_vocabulary_is_an_error():
    out = BatchBuilder()
    out.begin_record("f", 0)
    change = Change(vendor="acme", format="acme.jsonl", stream="s", op="INSERT", sort_parts=(1,), id_parts=(1,),
                    table="t", after={"a": 1}, flags=["made_up_flag"])
    with pytest.raises(ValueError, match="made_up_flag"):
        out.change(change)
    out.change(dataclasses.replace(change, flags=["no_schema"]))
    assert out.flush().to_pylist()[0]["flags"] == ["no_schema"]


# -- the tutorial ----------------------------------------------------------------------------------------------
def test_tutorial_is_a_complete_adapter(tutorial_adapter):
    adapter = get_adapter("acme")
    out = BatchBuilder()
    list(adapter.read_file(str(TUTORIAL_INPUT), TUTORIAL_INPUT.open("rb"), out))
    out.end_record()
    rows = out.flush().to_pylist()
    assert outcomes(rows) == [("change", None)] * 4 + [("quarantine", "bad_event")]
    assert [r["op"] for r in rows[:4]] == ["INSERT", "INSERT", "UPDATE", "DELETE"]


def test_tutorial_normalizes_through_spark(spark):
    result = cdcnorm.normalize([str(TUTORIAL_INPUT.parent)], spark=spark)  # found by the tutorial's sniff
    assert result.report["vendor"] == "acme" and result.report["reconciled"]
    assert result.report["quarantine_by_reason"] == {"bad_event": 1}
    got = sorted((r["table"], r["op"], r["position"]) for r in result.changes.collect())
    assert got == [("orders", "DELETE", "4"), ("orders", "INSERT", "1"), ("orders", "INSERT", "2"),
                   ("orders", "UPDATE", "3")]


class TestTutorialContract(AdapterContract):
    """The shipped contract suite, inherited exactly as a third-party adapter's tests would."""

    vendor = "acme"
    inputs: ClassVar[list[str]] = [str(TUTORIAL_INPUT.parent)]
    message_file = str(TUTORIAL_INPUT)


def test_tutorial_text_is_what_the_docs_show():
    doc = (Path(__file__).resolve().parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert textwrap.dedent(tutorial_code()).strip().splitlines()[0] in doc
