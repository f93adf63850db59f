# Tessera: the two Quickstart commands are `make serve` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install serve test lint bench bench-server golden clean

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
	$(BIN)/mypy --strict engine protocol server clients

# The suite runs on TEST_WORKERS processes (pytest-xdist): its tests mostly wait on
# servers, sockets and timers, so more processes than cores keeps both busy. Tests that
# share a module- or package-wide fixture stay together on one (tests/conftest.py).
TEST_WORKERS ?= 4

test: lint
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python -m engine.bench
	@echo "(the engine alone; for the server under load: make bench-server, see docs/PERFORMANCE.md)"

# The server under load (docs/PERFORMANCE.md): capacity, latency under a paced load, the
# per-move CPU breakdown, and the memory of 5,000 idle connections. About three minutes.
bench-server: $(STAMP)
	$(BIN)/tessera bench --games 500 --seconds 20 --breakdown
	$(BIN)/tessera bench --games 500 --seconds 20 --think-ms 400
	$(BIN)/tessera bench --idle 5000

golden: $(STAMP)
	$(BIN)/python -m tests.engine.make_golden

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
