# The two commands of the README, plus bench, fuzz and format.
#   make run    installs what is missing, builds, starts the explorer
#   make test   installs what is missing, builds, runs every test
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
PORT ?= 8080
WEB ?= ON

.PHONY: run test bench bench-compare build setup format clean unit browser fuzz conformance conformance-and-lab lab

# Debian packages (as root) and npm packages; the browser only for tests.
setup:
	scripts/setup.sh $(if $(filter ON,$(WEB)),--web,)

build: setup
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DRETRYSTORM_WEB=$(WEB) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/retrystorm serve --port $(PORT)

# Every test: C++ (GoogleTest via CTest), the page's unit tests and the
# browser tests against a real `retrystorm serve`.
test: build
	scripts/setup.sh $(if $(filter ON,$(WEB)),--browser,)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE 'conformance|lab'
	$(MAKE) --no-print-directory conformance-and-lab

# Tests that time real processes on 127.0.0.1 (conformance: one at a time;
# lab): a run that a busy machine disturbs gets a second try, no more.
conformance-and-lab:
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L 'conformance|lab' --repeat until-pass:2

unit: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L unit

# Real clients and proxies (gRPC, botocore, HAProxy, nginx) against the
# scripted server, compared with the model (docs/conformance.md).
conformance: build
	cd $(BUILD) && ctest --output-on-failure -L conformance --repeat until-pass:2

# The defense ladders run for real on 127.0.0.1 next to the prediction;
# their tables in docs/lab.md are rewritten (about 3 and 6 minutes, all rows at once).
lab: build
	scripts/lab_ladder.py $(BUILD)/retrystorm primary-failover --through direct,haproxy,grpc \
	  --scale 0.1 --jobs 15 --write docs/lab.md
	scripts/lab_ladder.py $(BUILD)/retrystorm order-status --through direct,haproxy --scale 1 \
	  --jobs 22 --write docs/lab.md

browser: build
	scripts/setup.sh --browser
	cd $(BUILD) && ctest --output-on-failure -L 'web|browser'

# The C++ benchmarks, the per-run overhead of the Python package
# (bench/python_bench.py, docs/python.md), then 10,000 agent-engine sweep
# points on Dask with 1 and 2 workers (bench/dask_bench.py, docs/distributed.md).
bench: build
	$(BUILD)/bench/retrystorm_bench --benchmark_min_time=0.2
	PYTHONPATH=$(BUILD)/python /usr/bin/python3 bench/python_bench.py $(BUILD)/retrystorm
	PYTHONPATH=$(BUILD)/python /usr/bin/python3 bench/dask_bench.py

# This tree's benchmarks beside commit REF's, interleaved on this machine
# (scripts/bench_compare.py): each benchmark's ratio with its spread, then
# Google Benchmark's compare.py. FILTER narrows them (a regex), ROUNDS (4);
# CLI='run --preset partial-brownout --set engine=agent' also times that
# command line of both builds (wall time and peak memory).
REF ?=
FILTER ?= .
ROUNDS ?= 4
CLI ?=
bench-compare: build
	@test -n "$(REF)" || { echo "usage: make bench-compare REF=<commit> [FILTER=regex] [ROUNDS=n] [CLI='run ...']" >&2; exit 2; }
	/usr/bin/python3 scripts/bench_compare.py --ref '$(REF)' --build $(BUILD) \
	  --filter '$(FILTER)' --rounds $(ROUNDS) --jobs $(JOBS) $(if $(CLI),--command '$(CLI)',)

# libFuzzer (clang) on every reader of outside input, FUZZ_SECONDS each: the
# configuration importers and the scenario reader, the HTTP API bodies, the
# incident-log readers, merge's shard reader and the Python converter. Corpora in
# fuzz/corpus/<format>/. Not part of `make test`.
FUZZ_SECONDS ?= 60
fuzz:
	$(MAKE) -C fuzz run run-http run-logs run-python FUZZ_SECONDS=$(FUZZ_SECONDS)

format:
	clang-format -i $$(git ls-files '*.cpp' '*.hpp')

clean:
	rm -rf $(BUILD)
