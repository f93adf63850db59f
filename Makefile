# Tessera: the two Quickstart commands are `make serve` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install serve test lint bench golden clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip==26.3
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

serve: $(STAMP)
	$(BIN)/tessera serve $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check engine protocol server clients migrations tests
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python -m engine.bench

golden: $(STAMP)
	$(BIN)/python -m tests.engine.make_golden

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
