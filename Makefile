# Everything runs inside .venv, created on first use from the machine's python3.11.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test interop-env system-packages bench bench-core run clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)

$(STAMP): $(BIN)/python setup.py
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

## interop-env: install the real Tahoe-LAFS 1.20 outside the clone (~/.cache), once per machine
interop-env:
	sh misc/interop/install-tahoe-1.20.sh >/dev/null

## system-packages: Debian packages the tests use (munin-node, for munin-run); as root, quick when present
system-packages:
	sh misc/ci/install-system-packages.sh

## test: install into .venv if needed, then run the whole test suite (interop included)
test: $(STAMP) interop-env system-packages
	$(BIN)/python -m pytest -q tests

## bench-core: encode throughput of the pure core (64 MiB) against zfec and AES alone
bench-core: $(STAMP)
	$(BIN)/python misc/bench/bench_core.py --json bench-core.json

## bench: every benchmark (for now the core benchmark)
bench: bench-core

## run: start a local grid (./local-grid) in the foreground, put and get a sample file, serve until Ctrl-C
run: $(STAMP)
	$(BIN)/python -m compileall -q src
	$(BIN)/python misc/run_demo.py local-grid

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis bench-*.json local-grid
