# The two set-up commands of the README: `make demo` (the main job) and `make test` (everything CI runs).
# Both create .venv, install the pinned tools from PyPI and build the extension with maturin.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
# `make test BUILD_FLAGS=` builds the debug profile (faster to compile, slower to run).
BUILD_FLAGS ?= --release
export PYO3_PYTHON := $(abspath $(PY))

.PHONY: demo test build lint rust-test pytest bench compare clean mtrag-table mtrag-retrieval scale

$(BIN)/maturin:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "maturin>=1.8,<2"

build: $(BIN)/maturin
	$(BIN)/maturin develop $(BUILD_FLAGS) --extras dev --quiet

demo: build
	$(BIN)/fanfuse demo

lint: build
	cargo fmt --all -- --check
	cargo clippy --all-targets --all-features -- -D warnings
	$(BIN)/ruff check python tests benches
	$(BIN)/ruff format --check python tests benches
	$(BIN)/mypy
	$(PY) -m mypy.stubtest fanfuse._core

rust-test:
	cargo test

# One worker per core (pytest-xdist); the slowest tests are listed so a slow one shows up in CI logs.
pytest: build
	$(BIN)/pytest -n auto --durations=15

test: lint rust-test pytest

# Benchmarks with timing on (the test run only smoke-runs them), and the comparison table of the README.
bench: build
	$(BIN)/pytest benches --benchmark-enable --benchmark-only --benchmark-columns=min,median,ops

compare: build
	$(PY) benches/compare.py

clean:
	rm -rf $(VENV) target

# The MT-RAG fusion table of docs/mtrag-fusion.md, from the real runs in ../shared/data/mtrag.
mtrag-table: build
	$(PY) benches/mtrag_table.py

# The multi-query retrieval table of docs/mtrag-retrieval.md (BM25, both domains and query sets).
mtrag-retrieval: build
	$(PY) benches/mtrag_retrieval.py

# End-to-end scale benchmark of `fanfuse fuse` (10k and 100k queries; add SIZES=...,1000000 for 1M).
SIZES ?= 10000,100000
scale: build
	$(PY) benches/scale_fuse.py --sizes $(SIZES)
