# Every target bootstraps the project-local virtualenv, so a fresh machine needs only python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install lexicon browser run test test-fast lint bench bench-pipeline clean

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

# The browser test drives Debian's Chromium (no browser download); install it when missing.
browser:
	@test -x /usr/bin/chromium || { \
		echo "installing Debian's chromium for the dashboard's browser test"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium; }

test: lint lexicon browser
	$(BIN)/pytest

test-fast: $(STAMP)
	$(BIN)/pytest -m "not slow and not e2e" -x

bench: install lexicon
	$(BIN)/python -m benchmarks.judge_bench

# The whole stack, several minutes each: figures for BENCHMARKS.md.
bench-pipeline: install lexicon
	$(BIN)/python -m benchmarks.pipeline_bench
	$(BIN)/python -m benchmarks.rejudge_bench
	$(BIN)/python -m benchmarks.dashboard_bench
	$(BIN)/python -m benchmarks.spike_bench
	$(BIN)/python -m benchmarks.intake_cpu

clean:
	rm -rf $(VENV) build *.egg-info judge/*.so
