# Studio: `make run` serves the app, `make test` runs everything CI runs.
# Both create the virtual environment and install dependencies on first use.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
COMPILED := $(VENV)/.compiled
HOST   ?= 127.0.0.1
PORT   ?= 8000
UV_VERSION := 0.13.9

.PHONY: run test suite lint style typecheck audit check-python install bytecode

run: $(COMPILED)
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py seed_demo
	@echo "Studio: http://$(HOST):$(PORT)/  (sign in as demo / demo)"
	$(BIN)/python manage.py runserver $(HOST):$(PORT)

# The second run repeats the session contract, API and OTLP ingest tests on PostgreSQL (PG_TESTS),
# then runs tests/scale (PostgreSQL, Redis, Daphnes and a worker). Without those
# servers it is skipped, saying so; under CI=true it fails instead.
SCALE_ENV := DATABASE_URL=postgres://postgres@127.0.0.1:5432/test REDIS_URL=redis://127.0.0.1:6379/15
PG_TESTS := tests/studio/test_session_service.py tests/studio/test_session_cache.py tests/studio/test_group_commit.py tests/studio/test_api_*.py \
	tests/studio/test_owner_scoping.py tests/studio/test_query_plans.py tests/studio/test_database_pool.py \
	tests/studio/test_run_worker_concurrency.py tests/studio/test_otlp_*.py tests/studio/test_pages_ingest_tokens.py

# The first run and PG_TESTS use three pytest-xdist workers on these two cores (most
# tests wait on a browser or a server: two kept the cores 66% busy), each taking whole
# files (tests/conftest.py; each worker its own test database); PYTEST_XDIST=-n0 runs them in
# one process, PYTEST_ARGS narrows the first. tests/scale runs after PG_TESTS, not beside
# them (with API tests on another worker, two scale tests' approval relay between servers
# and the worker once timed out), on three workers of its own (SCALE_XDIST): a file
# each at a time, the longest first, each worker's clusters in Redis databases of their
# own. Its servers mostly wait: in one process the pass kept the cores a third busy.
PYTEST_XDIST ?= -n 3 --dist loadgroup
SCALE_XDIST ?= -n 3 --dist loadgroup
# The slowest tests of each run and the files that used the most CPU, named in its output
# (CI's log too): where to start when the run grows toward CI's 20 minutes. The run keeps
# both cores busy throughout, so the CPU list is the one to cut from; a slow test may be
# waiting (tests/support/cpu_report.py).
PYTEST_REPORT := --durations=25 --cpu-report=15

# Every test run starts well over a hundred Python processes (Daphnes, workers,
# manage.py): compiled once here, the project's modules are not compiled again in each.
# PYTHONDONTWRITEBYTECODE (set on these machines) is not passed on either: with it, no
# pytest process kept its rewrite of a module's asserts, and each one rewrote every test
# module and every module of its plugins' packages (~850; hypothesis' and schemathesis'
# are most) as it imported them: 10 of a full collection's 21 s of CPU. Now the first
# pass's processes cache them for the later passes and runs.
unexport PYTHONDONTWRITEBYTECODE
bytecode: $(COMPILED)
	$(BIN)/python -m compileall -q -j 0 agents_core studio tests bench manage.py > /dev/null

# The installed packages, compiled once after each install (pip did it as it installed).
$(COMPILED): $(STAMP)
	$(BIN)/python -m compileall -q -j 0 $(VENV)/lib/python3.12/site-packages > /dev/null
	touch $(COMPILED)

# The quick linters and the compile first, side by side (-j2). mypy then runs beside the
# tests (-j2 again): alone it kept one core busy for ~50 s while the other waited, and
# the tests keep both busy from their start. A type error still fails the run, once the
# tests running beside it have ended.
test: $(STAMP)
	@$(MAKE) --no-print-directory -j2 style bytecode
	@$(MAKE) --no-print-directory -j2 typecheck suite

suite: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_XDIST) $(PYTEST_REPORT) $(PYTEST_ARGS)
	@if [ "$$CI" = true ] || $(SCALE_ENV) $(BIN)/python -m tests.scale.reachable; then \
		echo "$(SCALE_ENV) pytest $(PG_TESTS)"; \
		$(SCALE_ENV) $(BIN)/python -m pytest $(PYTEST_XDIST) $(PYTEST_REPORT) $(PG_TESTS) && \
		echo "$(SCALE_ENV) pytest tests/scale" && \
		$(SCALE_ENV) $(BIN)/python -m pytest $(SCALE_XDIST) $(PYTEST_REPORT) tests/scale; \
	else \
		echo "PostgreSQL or Redis unreachable: skipping the PostgreSQL run (CI=true fails)"; \
	fi

# Known vulnerabilities in the locked dependencies. Needs PyPI's per-release JSON API
# (or OSV with AUDIT_ARGS='-s osv'); --strict fails on any package it could not check.
audit: $(STAMP)
	$(BIN)/pip-audit --strict --no-deps --disable-pip -r requirements.lock $(AUDIT_ARGS)

lint: style typecheck

style: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

install: $(COMPILED)

# Scaled out on this machine (README, "Scale out"): PostgreSQL database `studio`, Redis
# db 0, two Daphnes on 127.0.0.1:8001 and :8002 and WORKERS run workers (each executes
# one run at a time); Ctrl-C stops them all (a run in progress ends interrupted). Each
# process holds at most DB_POOL PostgreSQL connections (STUDIO_DB_POOL_MAX, README).
SCALED_DB  ?= postgres://postgres@127.0.0.1:5432/studio
WORKERS    ?= 2
DB_POOL    ?= 10
SCALED_RUN := DATABASE_URL=$(SCALED_DB) REDIS_URL=redis://127.0.0.1:6379/0 STUDIO_RUN_EXECUTION=worker \
	STUDIO_DB_POOL_MAX=$(DB_POOL)

.PHONY: run-scaled
run-scaled: $(COMPILED)
	psql "$(SCALED_DB:/studio=/postgres)" -tAc "SELECT 1 FROM pg_database WHERE datname = 'studio'" \
		| grep -q 1 || psql "$(SCALED_DB:/studio=/postgres)" -c 'CREATE DATABASE studio'
	$(SCALED_RUN) $(BIN)/python manage.py migrate --noinput
	$(SCALED_RUN) $(BIN)/python manage.py seed_demo
	@echo "Studio: http://127.0.0.1:8001/ and http://127.0.0.1:8002/  (sign in as demo / demo)"
	trap 'kill 0' INT TERM; \
	$(SCALED_RUN) $(BIN)/python -m daphne -b 127.0.0.1 -p 8001 studio.asgi:application & \
	$(SCALED_RUN) $(BIN)/python -m daphne -b 127.0.0.1 -p 8002 studio.asgi:application & \
	for i in $$(seq $(WORKERS)); do $(SCALED_RUN) $(BIN)/python manage.py run_worker & done; \
	wait

# Many users on the scaled deployment (bench/load/run.py): two Daphnes and workers on a
# throwaway PostgreSQL database and Redis db 13, Locust headless; prints the figures.
# LOAD_ARGS: e.g. '--users 50 --live 10 --seconds 120' (default 200 + 50 for 10 min).
.PHONY: load
load: $(COMPILED)
	DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/13 \
		$(BIN)/python -m bench.load.run $(LOAD_ARGS)

# Benchmarks (bench/README.md): figures, not assertions; refreshes the README's table.
.PHONY: bench
bench: $(COMPILED)
	$(BIN)/python -m bench.run_all

check-python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 12) else "Studio needs Python 3.12; set PYTHON=python3.12")'

# uv installs the locked packages: ~9 s here where pip took ~47, most of it compiling
# every installed module, which `bytecode` does beside the linters instead (`test`).
$(STAMP): pyproject.toml requirements.lock | check-python
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv==$(UV_VERSION)
	$(BIN)/uv pip install --quiet --python $(BIN)/python -c requirements.lock -e '.[dev]'
	touch $(STAMP)
