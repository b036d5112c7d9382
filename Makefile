# Everything runs inside .venv, created on first use from the machine's python3.11.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test test-faults screenshots interop-env system-packages bench bench-compare bench-core bench-profile bench-backup bench-storage bench-s3 run clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)

$(STAMP): $(BIN)/python setup.py
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	touch $(STAMP)

## interop-env: install the real Tahoe-LAFS 1.20 outside the clone (~/.cache), once per machine
interop-env:
	sh misc/interop/install-tahoe-1.20.sh >/dev/null

## system-packages: Debian packages the tests use (munin-node, for munin-run); as root, quick when present
system-packages:
	sh misc/ci/install-system-packages.sh

## test: install into .venv if needed, then run the whole test suite (interop included), in two
## processes (most tests wait on nodes and subprocesses; a module's tests stay in one process).
## Bytecode is compiled first: with PYTHONDONTWRITEBYTECODE set (as on this machine) every node
## and CLI process the tests start would otherwise compile our modules again (0.3 s a node)
test: $(STAMP) interop-env system-packages
	$(BIN)/python -m compileall -q src tests misc
	$(BIN)/python -m pytest -q -n 2 --dist loadfile tests

## test-faults: the reliability suite with its long seeded schedules (FAULT_RUNS times the runs
## of make test, and the tests too long for it); regenerates the table of docs/reliability.md
FAULT_RUNS ?= 5
RELIABILITY_TESTS := tests/core/test_trust_boundaries.py tests/integration/test_gateway_fuzz.py \
	tests/integration/test_storage_foolscap_fuzz.py tests/integration/test_storage_http_fuzz.py \
	tests/integration/test_crash_schedules.py tests/integration/test_grid_fault_schedules.py \
	tests/integration/test_sigkill_uploads.py tests/integration/test_disk_full.py \
	tests/integration/test_netns_grid.py tests/integration/test_clock_jumps.py \
	tests/integration/test_authority.py tests/integration/test_resource_limits.py \
	tests/integration/test_identical_uploads.py tests/integration/test_sftp_real_clients.py \
	tests/integration/test_directory_races.py tests/integration/test_s3_hostile.py \
	tests/integration/test_s3_crash.py
test-faults: $(STAMP) system-packages
	rm -f .reliability-ledger.jsonl
	TAHOE_FAULT_RUNS=$(FAULT_RUNS) TAHOE_RELIABILITY_LEDGER=$(CURDIR)/.reliability-ledger.jsonl \
	TAHOE_RELIABILITY_DOC=$(CURDIR)/docs/reliability.md \
	$(BIN)/python -m pytest -q $(RELIABILITY_TESTS)

## screenshots: run the browser tests and keep their screenshots as the gallery (docs/web-ui/)
screenshots: $(STAMP) system-packages
	TAHOE_WEB_UI_GALLERY=$(CURDIR)/docs/web-ui $(BIN)/python -m pytest -q tests/integration/test_web_ui.py

## bench-core: encode throughput of the pure core (64 MiB) against zfec and AES alone
bench-core: $(STAMP)
	$(BIN)/python misc/bench/bench_core.py --json bench-core.json

## bench-backup: tahoe backup of 10,000 files: first, unchanged (target <= 2 s), changed; and Tahoe 1.20's unchanged run
bench-backup: $(STAMP) interop-env
	$(BIN)/python misc/bench/bench_backup.py --compare --json bench-backup.json

## bench-storage: a storage node on 10k/100k/1M shares (half expired): rebuild + GC, indexed GC, lookups, Tahoe's crawler (as root: on a loop-mounted ext4)
bench-storage: $(STAMP) interop-env
	$(BIN)/python misc/bench/bench_storage.py --json bench-storage.json

## bench-s3: the S3 gateway beside the web API: 1 kB PutObject/GetObject (boto3), 100 MB by aws s3 cp, ListObjectsV2 of 10,000 keys, restic backup of 2,000 files (200 MB); SeaweedFS (weed server -s3) on the same workloads when ~/.cache/seaweedfs/bin/weed is built
bench-s3: $(STAMP) system-packages
	$(BIN)/python misc/bench/bench_s3.py --json bench-s3.json

## bench: the grid benchmark on our nodes (10 servers, 3-of-10): table on stdout, bench-grid.{json,png,md};
## then the S3 gateway's section (bench-s3, bench-s3.json)
bench: $(STAMP) system-packages
	$(BIN)/python misc/bench/bench.py --json bench-grid.json --plot bench-grid.png --markdown bench-grid.md
	$(BIN)/python misc/bench/bench_s3.py --json bench-s3.json

## bench-compare: the same workload on our grid and a Tahoe-LAFS 1.20 grid, with ours/Tahoe ratios
bench-compare: $(STAMP) interop-env
	$(BIN)/python misc/bench/bench.py --compare --json bench-compare.json --plot bench-compare.png --markdown bench-compare.md

## bench-profile: cProfile of the client during 1 kB uploads and one 100 MB upload
bench-profile: $(STAMP)
	$(BIN)/python misc/bench/bench_profile.py --out bench-profile

## run: start a local grid (./local-grid) in the foreground, put and get a sample file, serve until Ctrl-C
run: $(STAMP)
	$(BIN)/python -m compileall -q src
	$(BIN)/python misc/run_demo.py local-grid

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .reliability-ledger.jsonl bench-*.json bench-*.png bench-*.md bench-profile local-grid
