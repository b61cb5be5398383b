# Every target bootstraps the project-local virtualenv, so a fresh machine needs only python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install lexicon run test test-fast lint bench clean

$(STAMP): pyproject.toml setup.py judge/engine.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

install: $(STAMP)

lexicon: $(STAMP)
	$(BIN)/tilejudge lexicon fetch

run: install lexicon
	$(BIN)/tilejudge up --demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: lint lexicon
	$(BIN)/pytest

test-fast: $(STAMP)
	$(BIN)/pytest -m "not slow and not e2e" -x

bench: install lexicon
	$(BIN)/python -m benchmarks.judge_bench

clean:
	rm -rf $(VENV) build *.egg-info judge/*.so
