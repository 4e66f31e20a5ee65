# streamsift: `make demo` runs a dedup pipeline end to end; `make test` runs the test suite.
# Both create or refresh .venv from pyproject.toml first (idempotent: re-installs only when
# pyproject.toml changes), check for Java, which Spark needs, and build the web UI (ui/ ->
# src/streamsift/ui/static/; again only when its sources or lock file change). `make test`
# also makes sure Debian's chromium is there for the UI's browser tests.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml tools/streamsift-bench/pyproject.toml 2>/dev/null | sha1sum | cut -c1-12)
PYTEST_ARGS ?=
UI_BUILT := src/streamsift/ui/static/index.html
UI_SOURCES := $(shell find ui/src -type f 2>/dev/null) ui/index.html ui/package.json \
	ui/package-lock.json ui/tsconfig.json ui/vite.config.ts ui/openapi.json ui/openapi-types/package.json \
	$(shell find src/streamsift/wire src/streamsift/api -name '*.py' 2>/dev/null)

.PHONY: setup demo test lint clean java ui browser jvm-archive

setup: $(STAMP) java ui jvm-archive

$(STAMP): pyproject.toml tools/streamsift-bench/pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "Python 3.10+ is needed: install python3.11 (apt-get install python3.11 python3.11-venv)")'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	$(PY) -m pip install -q -e tools/streamsift-bench
	$(PY) -m streamsift.spark_host.bytecode
	@rm -f $(VENV)/.installed-*
	@touch $@

java:
	@bash scripts/ensure-java.sh

# the driver JVM's class-data-sharing archive, built once into the user's cache (~1 min the
# first time; afterwards only checked); runs start without it when it is missing or stale
jvm-archive: $(STAMP) java
	@$(PY) -m streamsift.spark_host.class_archive_build

ui: $(UI_BUILT)

$(UI_BUILT): $(UI_SOURCES)
	bash scripts/build-ui.sh
	@touch $@

browser:
	@bash scripts/ensure-chromium.sh

demo: setup
	$(VENV)/bin/streamsift demo

test: setup browser
	$(VENV)/bin/ruff check src tests tools
	$(VENV)/bin/lint-imports --no-cache
	$(PY) -m pytest $(PYTEST_ARGS)

lint: setup
	$(VENV)/bin/ruff check src tests tools
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/ruff format --check src tests tools

clean:
	rm -rf $(VENV) .streamsift .pytest_cache .ruff_cache ui/node_modules ui/openapi-types/node_modules \
		src/streamsift/ui/static
