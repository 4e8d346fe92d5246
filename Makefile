# The two commands of the README, and their parts. Every step is idempotent.
#   make demo   set up this machine and run the main job
#   make test   set up this machine and run the whole test suite (what CI runs)

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: demo test unit bench setup client-library browser stack lint clean-venv

demo: setup
	$(BIN)/tidemark demo

# Three workers share the stack (each test's names are its own): on two cores, because most
# long tests wait on the servers or on wall-clock windows, a third worker took the suite from
# 23 to 20 minutes. The few tests that change or watch a server for every client
# (-m server_wide) then run by themselves, so no worker waits for them to have the servers alone.
test: setup lint browser
	$(BIN)/pytest -n 3 --dist worksteal -m "not server_wide"; parallel=$$?; \
		$(BIN)/pytest -m server_wide && exit $$parallel

# The lane of tests that need no service (no stack, no browser): about 20 s
unit: $(BIN)/tidemark
	$(BIN)/pytest -m "not services"

# Benchmarks on the local stack: one table of figures and targets, written to
# bench/RESULTS.md on a full run; never assertions. make bench BENCH_ARGS="--quick --only ingest"
bench: setup
	@command -v sysbench >/dev/null || apt-get install -y -q sysbench
	$(BIN)/python -m bench $(BENCH_ARGS)

# A virtualenv with the project and its dev tools, then the local stack, installed and started.
setup: $(BIN)/tidemark stack

$(BIN)/tidemark: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "Tidemark needs Python 3.11 or newer: make PYTHON=python3.12 ..." >&2; exit 1; }
	@pkg-config --exists libmariadb 2>/dev/null || pkg-config --exists mysqlclient 2>/dev/null || \
		$(MAKE) --no-print-directory client-library
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $@

# mysqlclient (the bootstrap's row reads) builds against a MySQL client library
client-library:
	$(SUDO) apt-get update -q
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		pkg-config libmariadb-dev gcc

# the status page's test drives Debian's Chromium through its driver (tests/browser.py)
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
		$(SUDO) apt-get update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
			chromium chromium-driver; }

stack: $(BIN)/tidemark
	$(BIN)/tidemark stack up

lint: $(BIN)/tidemark
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

clean-venv:
	rm -rf $(VENV)
