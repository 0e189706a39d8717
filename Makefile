# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# `make test` runs on this many pytest-xdist workers, each with its own Spark session (docs/testing.md).
TEST_WORKERS ?= 2
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow e2e-large lint bench clean check-java

check-java:
	@command -v java >/dev/null 2>&1 || { echo "cdcnorm needs Java 17+ (Spark runs on the JVM): install a JDK, e.g. 'apt-get install openjdk-17-jre-headless'."; exit 1; }

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	@touch $(STAMP)

demo: check-java $(STAMP)
	rm -rf demo-lake
	$(PY) -m cdcnorm.demo .

test: check-java $(STAMP)
	$(PY) -m pytest -q -m "not slow" -n $(TEST_WORKERS) --dist loadfile

# the large variants keep Spark's code generation, which large runs use (docs/testing.md)
test-slow: check-java $(STAMP)
	CDCNORM_TEST_CODEGEN=1 $(PY) -m pytest -q -m slow

e2e-large: check-java $(STAMP)
	CDCNORM_TEST_CODEGEN=1 $(PY) -m pytest -q -m slow tests/test_e2e.py

bench: check-java $(STAMP)
	$(PY) benchmarks/bench.py $(BENCH_ARGS)
	$(PY) benchmarks/decode_floor.py $(DECODE_FLOOR_ARGS)
	$(PY) benchmarks/decode_floor.py --format datastream-avro --files 10 $(DECODE_FLOOR_ARGS)
	$(PY) benchmarks/lake_dedup.py $(DEDUP_ARGS)
	$(PY) benchmarks/apply_incremental.py $(APPLY_ARGS)
	$(PY) benchmarks/follow_batch.py $(FOLLOW_ARGS)
	$(PY) benchmarks/follow_floor.py $(FLOOR_ARGS)
	$(PY) benchmarks/small_file.py $(SMALL_ARGS)
	$(PY) benchmarks/decode_kernel.py $(KERNEL_ARGS)
	$(PY) benchmarks/daily_prefix.py $(DAILY_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests

clean:
	rm -rf $(VENV) demo-lake demo-sim demo-sim-lake demo-migration build dist .bench
