# CallVeil: the two set-up commands are `make run` and `make test` (see README.md).
SHELL := /bin/bash
# Debian packages the build, tests and benchmarks need; installed only when missing.
DEB_PACKAGES := valgrind libsqlite3-dev zlib1g-dev libzmq3-dev liblz4-dev iproute2 curl python3 python3-venv postgresql prometheus
# PyPI packages of the Oblivious HTTP interop test (scripts/ohttp-client.py: an independent HPKE and HTTP/2 client),
# installed into .build-venv.
PY_PACKAGES := pyhpke==0.6.5 httpx==0.28.1 h2==4.4.1 cryptography==50.0.2
VENV := .build-venv
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# swift-testing runs at most 2 tests at a time: the suite's servers, clusters and PostgreSQL share the machine's cores,
# and at full width on 2 cores its deadline and heartbeat tests failed by load, not by fault.
SWIFT_TEST_FLAGS ?= --parallel --experimental-maximum-parallelization-width 2

.PHONY: deps test run bench build clean cluster-test chaos fuzz overload dist dist-test monitoring-test

deps:
	@missing=""; for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi
	@if ! $(VENV)/bin/python -c 'import pyhpke, httpx, h2' 2>/dev/null; then \
	  echo "installing into $(VENV): $(PY_PACKAGES)"; \
	  python3 -m venv $(VENV) && $(VENV)/bin/pip install -q $(PY_PACKAGES); \
	fi

build:
	swift build

test: deps
	python3 scripts/check-layout.py
	bash scripts/swift-test.sh $(SWIFT_TEST_FLAGS)
	$(MAKE) --no-print-directory monitoring-test
	@if ip netns add callveil-probe 2>/dev/null; then ip netns del callveil-probe; \
	  $(MAKE) --no-print-directory cluster-test && $(MAKE) --no-print-directory chaos; \
	  else echo "network namespaces not available here: skipping the netns cluster test and the chaos run"; fi
	$(MAKE) --no-print-directory overload

# The monitoring kit (cluster/monitoring): promtool checks and unit-tests the rules; then a real Prometheus scrapes a
# coordinator, a worker and the canary on loopback, a worker is killed and the shard alert must fire, and every
# dashboard expression must evaluate (cluster/monitoring/e2e-test.sh, about 75 s).
monitoring-test: deps
	promtool check rules cluster/monitoring/callveil-rules.yml
	promtool test rules cluster/monitoring/callveil-rules.test.yml
	promtool check config cluster/monitoring/prometheus.yml
	bash cluster/monitoring/e2e-test.sh

# Network namespaces, real TCP with CURVE (needs root): kill a worker, add one (cluster/netns-test.sh); two
# coordinators on one PostgreSQL: a token spent once across both, the leader killed under load, takeover, rejoin
# (cluster/netns-shared-test.sh).
cluster-test: deps
	bash cluster/netns-test.sh
	bash cluster/netns-shared-test.sh

# Fault injection under load (cluster/chaos.sh; needs root): kills, restarts, reloads, admission and revocation
# while simulated phones check every answer; prints a table. CALLVEIL_SEED, CALLVEIL_CHAOS_SECONDS tune it.
chaos: deps
	bash cluster/chaos.sh

# Overload and hostile input against the default `serve` while a phone checks every answer (bench/overload.sh):
# slow connections, 10 MiB /key uploads, 4x query capacity; then the TLS and h2c listeners and the gateway path
# under silent sockets, half handshakes and trickled bodies (bench/overload-doors.sh). Prints tables, fails on a
# bound exceeded. About 5 minutes; the last step of `make test`. OVERLOAD_SERVER_CPUS and OVERLOAD_CLIENT_CPUS (CPU
# lists for taskset) give the server and the load CPUs of their own; OVERLOAD_BUILD=release measures the release build.
overload: deps
	bash bench/overload.sh

# Coverage-guided fuzzing (fuzz/run.sh, libFuzzer + AddressSanitizer): every harness for FUZZ_SECONDS (600) each,
# FUZZ_JOBS (2) at a time; not part of `make test`. Results: docs/operations.md.
fuzz: deps
	bash fuzz/run.sh

# A release build with the Swift runtime linked in and a Debian package of it (scripts/dist.sh): dist/callveil_<v>_<arch>.deb.
dist:
	bash scripts/dist.sh

# The package installed with dpkg into a fresh Debian 12 root from debootstrap (no Swift there): serve from the
# installed unit's command line, a query from outside, SIGTERM with an HTTP/2 client connected, purge
# (scripts/dist-test.sh; root; about 15 minutes from a clean checkout, most of it the release build). Run by CI.
dist-test: deps
	bash scripts/dist-test.sh

# Main job: a local service with a demo dataset on 127.0.0.1:8080 (scripts/demo.sh).
run: deps
	bash scripts/demo.sh

bench: deps
	bash bench/run-bfv-bench.sh
	@echo
	bash bench/run-pir-bench.sh
	@echo
	bash bench/run-cluster-bench.sh

clean:
	rm -rf .build .build-* dist
