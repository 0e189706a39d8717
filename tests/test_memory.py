"""No file reader holds a whole input file in memory: RSS growth while decoding ~100 MB per container.

Each container's file is generated once per session (benchmarks/memory.py, from the samples) and decoded
with the adapter's `read_file` in a fresh subprocess; the peak RSS above the post-warm-up RSS must stay under
64 MB. `make bench` reports the same for 300 MB files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import benchmark_module

SIZE_MB = 100
memory = benchmark_module("memory")


@pytest.fixture(scope="session")
def generated(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("memory")


@pytest.mark.slow
@pytest.mark.parametrize("container", list(memory.CONTAINERS))
def test_reader_memory_does_not_grow_with_the_file(container, generated):
    path = memory.generate(container, SIZE_MB, generated)
    result = memory.measure(container, path)
    assert result["records"] > 1000
    assert result["growth_mb"] < memory.LIMIT_MB, result


def test_memory_script_measures_a_small_file(tmp_path):
    path = memory.generate("jsonl", 1, tmp_path)
    result = memory.measure("jsonl", path)
    assert result["records"] > 100 and result["rows"] >= result["records"]
    assert result["growth_mb"] < memory.LIMIT_MB
