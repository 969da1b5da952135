# simdup — developer and user entry points. `make help` lists the targets.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP_RUN := $(VENV)/.installed-run
STAMP_DEV := $(VENV)/.installed-dev

.DEFAULT_GOAL := help
.PHONY: help demo test lint typecheck unit golden bench fuzz smoke fresh-clone-test clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP_RUN): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	@touch $@

$(STAMP_DEV): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev,dask,zh,serve,parquet]'
	@touch $@ $(STAMP_RUN)

demo: $(STAMP_RUN) ## Create .venv, install simdup and scan sample_corpus/
	$(BIN)/simdup scan sample_corpus/

lint: $(STAMP_DEV) ## ruff and mypy --strict
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

unit: $(STAMP_DEV) ## Run the test suite only, on every core
	$(BIN)/pytest -q -n auto

test: lint unit ## Create .venv with dev extras, lint, type-check and run the tests

golden: $(STAMP_DEV) ## Regenerate tests/data/golden_scan/ from sample_corpus/ (review the diff!)
	$(BIN)/pytest -q tests/test_golden.py --update-golden

bench: $(STAMP_DEV) ## Run the benchmarks (see benchmarks/README.md)
	@if [ -f benchmarks/run.py ]; then $(BIN)/python benchmarks/run.py; else echo "benchmarks: not yet"; fi

fuzz: $(STAMP_DEV) ## Fuzz decoding and tokenising for FUZZ_SECONDS (default 120)
	@if [ -f tests/fuzz_tokens.py ]; then $(BIN)/python tests/fuzz_tokens.py --seconds $${FUZZ_SECONDS:-120}; else echo "fuzz: not yet"; fi

smoke: ## Build the wheel, install it with runtime deps only in a clean venv, run the quick start
	rm -rf build/smoke && $(PYTHON) -m venv build/smoke
	build/smoke/bin/python -m pip install --quiet build
	build/smoke/bin/python -m build --wheel --outdir build/dist . >/dev/null
	build/smoke/bin/python -m pip install --quiet build/dist/simdup-*.whl
	cd build && smoke/bin/simdup scan ../sample_corpus/

fresh-clone-test: ## Clone the last commit into a private (0700) temporary directory and run make test there
	@dir=$$(mktemp -d) && trap 'rm -rf "$$dir"' EXIT && \
	  echo "fresh clone of $$(git rev-parse --short HEAD) in $$dir (mode $$(stat -c %a "$$dir"))" && \
	  git clone --quiet --no-hardlinks "$(CURDIR)" "$$dir/simdup" && \
	  $(MAKE) -C "$$dir/simdup" test PYTHON="$(PYTHON)"

clean: ## Remove .venv, caches and build output
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
