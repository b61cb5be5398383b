# Every target bootstraps the project-local virtualenv, so a fresh machine needs only python3
# (3.11+, with venv), make, and a C compiler with Python's headers (or TILEJUDGE_PURE=1).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# What each kind of target needs installed: the runtime alone for `run`, the test and lint tools
# for `test` and `lint`, psutil besides for the pipeline benchmarks.
RUNTIME := $(VENV)/.installed
TOOLS := $(VENV)/.extras-test-lint
BENCH_TOOLS := $(VENV)/.extras-test-bench

.DEFAULT_GOAL := install
.PHONY: install bytecode lexicon browser axe go-tools ha-services clics-tools run shell test test-fast lint bench bench-pipeline clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "tilejudge needs Python 3.11 or newer; run: make PYTHON=python3.11 (or newer)")'
	@$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); \
		echo "$(PYTHON) -m venv failed; on Debian or Ubuntu: sudo apt-get install python3-venv" >&2; \
		exit 1; }

# The judge is compiled with mypyc unless TILEJUDGE_PURE=1; say what is missing before pip does.
$(RUNTIME): pyproject.toml setup.py $(wildcard judge/wordytaire/*.py judge/crosstiles/*.py) | $(BIN)/python
	@[ "$$TILEJUDGE_PURE" = 1 ] || $(BIN)/python -c 'import os, shlex, shutil, sys, sysconfig; \
		cc = shlex.split(sysconfig.get_config_var("CC") or "cc")[0]; \
		headers = os.path.join(sysconfig.get_paths()["include"], "Python.h"); \
		missing = [what for what, ok in (("a C compiler (" + cc + ")", shutil.which(cc)), \
			("Python headers (" + headers + ")", os.path.isfile(headers))) if not ok]; \
		sys.exit("the compiled judge needs " + " and ".join(missing) \
			+ "; on Debian or Ubuntu: sudo apt-get install build-essential python3-dev; " \
			+ "or install the pure-Python judge: TILEJUDGE_PURE=1 make $(or $(MAKECMDGOALS),install)" \
			if missing else None)'
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	touch $@

# Optional dependencies by extra name (.extras-test-lint: the test and lint extras), installed
# beside the runtime without building the project a second time.
$(VENV)/.extras-%: $(RUNTIME)
	$(BIN)/python -c 'import sys, tomllib; \
		extras = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]; \
		print("\n".join(r for name in sys.argv[1:] for r in extras[name]))' \
		$(subst -, ,$*) > $@.txt
	$(BIN)/python -m pip install -q -r $@.txt
	touch $@

install: $(RUNTIME) bytecode

# The project's modules compiled ahead, as pip does for what it installs: an editable install
# leaves them as source, and where PYTHONDONTWRITEBYTECODE is set (as in many containers) every
# process (the CLI, each API and worker process, each test's child) would compile its imports
# again, about 70 ms of every start. Only what changed since is compiled again.
bytecode: $(RUNTIME)
	@$(BIN)/python -m compileall -q -j 0 api benchmarks cli core devstack infra judge workers

lexicon: $(RUNTIME) bytecode
	$(BIN)/tilejudge lexicon fetch

run: install lexicon
	$(BIN)/tilejudge up --demo

# A make target cannot change the shell it runs in: this starts a subshell with the virtualenv
# first on PATH (exit it to leave); `source .venv/bin/activate` does the same in this shell.
shell: $(RUNTIME)
	@echo "a shell with $(BIN) first on PATH; exit to leave"
	@VIRTUAL_ENV="$(CURDIR)/$(VENV)" PATH="$(CURDIR)/$(BIN):$$PATH" $${SHELL:-/bin/sh} -i

lint: $(TOOLS)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The browser test drives Debian's Chromium (no browser download); install it when missing.
browser:
	@test -x /usr/bin/chromium || { \
		echo "installing Debian's chromium for the dashboard's browser test"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && \
		$$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-liberation; }

# The browser tests check every page with npm's axe-core, run in the page; installed under
# .venv (no lock file, an exact version), with Debian's npm when the machine has none.
AXE_VERSION := 4.14.1
AXE := $(VENV)/node/node_modules/axe-core/axe.min.js

axe: $(AXE)

$(AXE): | $(BIN)/python
	@command -v npm >/dev/null || { \
		echo "installing Debian's npm for axe-core, the browser tests' accessibility check"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && \
		$$SUDO apt-get install -y -qq --no-install-recommends npm; }
	npm install --prefix $(VENV)/node --no-save --no-package-lock --no-audit --no-fund \
		--loglevel=error axe-core@$(AXE_VERSION)

# The transparency log's cross-check builds a verifier on Go's own golang.org/x/mod/sumdb
# packages, from Debian's sources (no module download); install them when missing.
go-tools:
	@command -v go >/dev/null && test -d /usr/share/gocode/src/golang.org/x/mod || { \
		echo "installing Debian's Go and x/mod sources for the transparency log's cross-check"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && \
		$$SUDO apt-get install -y -qq --no-install-recommends golang-go golang-golang-x-mod-dev; }

# The cluster test's failover managers, from Debian's packages: Patroni with etcd for
# PostgreSQL, Redis Sentinel for Redis (docs/high-availability.md); install them when missing.
ha-services:
	@test -x /usr/bin/patroni && test -x /usr/bin/etcd && test -x /usr/bin/redis-sentinel || { \
		echo "installing Debian's patroni, etcd-server and redis-sentinel for the cluster test"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && \
		$$SUDO apt-get install -y -qq --no-install-recommends patroni etcd-server redis-sentinel; }

# The CLICS consistency check (check-api-consistency.php of the CCS specs) runs on PHP's
# command-line interpreter, from Debian's package; install it when missing.
clics-tools:
	@command -v php >/dev/null || { \
		echo "installing Debian's php-cli for the CLICS consistency check"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && \
		$$SUDO apt-get install -y -qq --no-install-recommends php-cli; }

# Test processes: the suites in groups (tests/conftest.py), the fault and cluster suites in one,
# in collection order so that the longest group starts first.
TEST_JOBS ?= 2

test: lint lexicon browser axe go-tools ha-services clics-tools
	$(BIN)/pytest -n $(TEST_JOBS) --dist loadscope --no-loadscope-reorder

test-fast: $(TOOLS)
	$(BIN)/pytest -m "not slow and not e2e" -x

bench: install lexicon
	$(BIN)/python -m benchmarks.wordytaire_judge
	$(BIN)/python -m benchmarks.wordytaire_cli_judge
	$(BIN)/python -m benchmarks.crosstiles_speed
	$(BIN)/python -m benchmarks.crosstiles_identity

# The whole stack, several minutes each: figures for BENCHMARKS.md.
bench-pipeline: $(BENCH_TOOLS) lexicon
	$(BIN)/python -m benchmarks.pipeline_bench
	$(BIN)/python -m benchmarks.local_stack
	$(BIN)/python -m benchmarks.local_stack_steady
	$(BIN)/python -m benchmarks.rejudge_bench
	$(BIN)/python -m benchmarks.dashboard_bench
	$(BIN)/python -m benchmarks.spike_bench
	$(BIN)/python -m benchmarks.intake_cpu
	$(BIN)/python -m benchmarks.hostile_bench
	$(BIN)/python -m benchmarks.follower_bench
	$(BIN)/python -m benchmarks.crosstiles_rejudge
	$(BIN)/python -m benchmarks.s3_calls

clean:
	rm -rf $(VENV) build *.egg-info judge/*.so judge/wordytaire/*.so judge/crosstiles/*.so *__mypyc*.so
