# tracebound — every target does its own setup on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup lint test test-unit demo up down status bench clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

setup: $(STAMP)

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy tracebound services projections web replay

# The test command: lint, then every test against a real Kafka and PostgreSQL.
# The pytest session starts the local stack when none is configured and stops it
# again if it started it. pytest's "no tests collected" (exit 5) is a failure.
test: lint
	@rc=0; $(BIN)/python -m pytest $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: no tests were collected" >&2; exit 1; fi; \
	exit $$rc

test-unit: setup
	$(BIN)/python -m pytest -m "not integration and not faults" $(PYTEST_ARGS)

up: setup
	$(BIN)/tracebound up

down: setup
	$(BIN)/tracebound down

status: setup
	$(BIN)/tracebound status

demo: setup
	$(BIN)/tracebound demo

bench: setup
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
