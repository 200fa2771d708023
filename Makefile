# Studio: `make run` serves the app, `make test` runs everything CI runs.
# Both create the virtual environment and install dependencies on first use.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
HOST   ?= 127.0.0.1
PORT   ?= 8000

.PHONY: run test lint check-python install

run: $(STAMP)
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py seed_demo
	@echo "Studio: http://$(HOST):$(PORT)/  (sign in as demo / demo)"
	$(BIN)/python manage.py runserver $(HOST):$(PORT)

test: $(STAMP) lint
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy

install: $(STAMP)

check-python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 12) else "Studio needs Python 3.12; set PYTHON=python3.12")'

$(STAMP): pyproject.toml requirements.lock | check-python
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c requirements.lock -e '.[dev]'
	touch $(STAMP)
