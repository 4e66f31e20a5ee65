# streamsift: `make demo` runs a dedup pipeline end to end; `make test` runs the test suite.
# Both create or refresh .venv from pyproject.toml first (idempotent: re-installs only when
# pyproject.toml changes) and check for Java, which Spark needs.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell sha1sum pyproject.toml 2>/dev/null | cut -c1-12)
PYTEST_ARGS ?=

.PHONY: setup demo test lint clean java

setup: $(STAMP) java

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "Python 3.10+ is needed: install python3.11 (apt-get install python3.11 python3.11-venv)")'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	$(PY) -m streamsift.runtime.bytecode
	@rm -f $(VENV)/.installed-*
	@touch $@

java:
	@bash scripts/ensure-java.sh

demo: setup
	$(VENV)/bin/streamsift demo

test: setup
	$(VENV)/bin/ruff check src tests
	$(VENV)/bin/lint-imports --no-cache
	$(PY) -m pytest $(PYTEST_ARGS)

lint: setup
	$(VENV)/bin/ruff check src tests
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/ruff format --check src tests

clean:
	rm -rf $(VENV) .streamsift .pytest_cache .ruff_cache
