#!/usr/bin/env bash
# `make overload`: the default `callveil serve` (the demo config: one embedded worker, Privacy Pass on, default
# limits) on a demo dataset, flooded by `callveil-bench overload` — 500 slow connections, 10 MiB /key uploads from new
# User-Identifiers, 4× the measured /queries capacity — while a phone checks every answer. Prints the table and
# fails on a crash, an RSS or p99 bound exceeded, a wrong answer, a phone given less than half an equal split of the
# queries answered during the flood, a refusal without Retry-After or a slow recovery.
# OVERLOAD_COUNT sets the dataset size, OVERLOAD_PORT the port, OVERLOAD_CONFIG another service config than the demo's,
# OVERLOAD_DOORS=0 skips the relay-facing doors' run, OVERLOAD_SERVER_BIN runs another server binary (another
# commit's, side by side); other arguments go to `callveil-bench overload`.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
count=${OVERLOAD_COUNT:-3000}
port=${OVERLOAD_PORT:-18080}
source "$top/bench/build-products.sh"
bin=${OVERLOAD_SERVER_BIN:-$bin}
work=$(mktemp -d /tmp/callveil-overload.XXXXXX)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
"$bin" generate-demo --count "$count" --output "$work/identities.csv" > /dev/null
"$bin" build-db --input "$work/identities.csv" --output "$work" > /dev/null
"$bin" process-db --input "$work/block.binpb" --output "$work/block" --shard-count 2 --fixed-bucket-count 2048 > /dev/null
"$bin" process-db --input "$work/identity.binpb" --output "$work/identity" --entries-per-shard 1000 > /dev/null
cp "${OVERLOAD_CONFIG:-cluster/demo/service-config.json}" "$work/service-config.json"
# 500 slow sockets plus the floods need more descriptors than a login shell's 1,024 (a systemd unit sets
# LimitNOFILE the same way, cluster/systemd/).
ulimit -n 8192
# OVERLOAD_SERVER_CPUS / OVERLOAD_CLIENT_CPUS pin the server and the load to CPU sets of their own (taskset), so
# that the figures are the server's and the generator's CPU is not taken from it. By default, with two CPUs or more,
# the server gets the last one and the load the others (set OVERLOAD_SERVER_CPUS= to run both unpinned): unpinned,
# the flood's debug-build client, minting tokens and encrypting on the same cores, is what the phone waits behind.
cpus=$(nproc)
if [ -z "${OVERLOAD_SERVER_CPUS+set}" ] && [ "$cpus" -ge 2 ]; then
  OVERLOAD_SERVER_CPUS=$((cpus - 1))
  OVERLOAD_CLIENT_CPUS=${OVERLOAD_CLIENT_CPUS:-0-$((cpus - 2))}
fi
server_pin=(); client_pin=()
[ -n "${OVERLOAD_SERVER_CPUS:-}" ] && server_pin=(taskset -c "$OVERLOAD_SERVER_CPUS")
[ -n "${OVERLOAD_CLIENT_CPUS:-}" ] && client_pin=(taskset -c "$OVERLOAD_CLIENT_CPUS")
"${server_pin[@]}" "$bin" serve --config "$work/service-config.json" --port "$port" --log-level warning &
pid=$!
for _ in $(seq 1 120); do
  curl -sf "http://127.0.0.1:9090/healthz" > /dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { echo "the server exited during start"; exit 1; }
  sleep 0.5
done
# The phone's p99 during the flood (the slowest of its 13-31 lookups) guards against the service falling over
# (6.8-21.5 s before the fair gate). Under the gate with its 900 ms wait, a phone is refused whenever its turn would
# come late and retries after Retry-After (1 s), more often the slower a request holds its slot: the release build's
# p99 is about 1.2 s, the debug build's 2.7-6.8 s on this machine (each 1 s is a retry more), so the bound
# (OVERLOAD_P99_LIMIT) is 3 s for the release build and 10 s for the debug one. A starved phone fails on its share
# of the queries answered (--min-served-share) whatever the build.
p99_default=10
if [ "${OVERLOAD_BUILD:-debug}" = release ]; then p99_default=3; fi
"${client_pin[@]}" "$bench_bin" overload --url "http://127.0.0.1:$port" --dataset "$work" --pid "$pid" --admin-url "http://127.0.0.1:9090" \
  --p99-limit "${OVERLOAD_P99_LIMIT:-$p99_default}" "$@"
# The relay-facing doors: the TLS and h2c listeners and the gateway path under silent sockets, half handshakes and
# trickled bodies, with a phone checking every answer through the gateway (bench/overload-doors.sh).
kill "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
pid=""
[ "${OVERLOAD_DOORS:-1}" = 0 ] || bash bench/overload-doors.sh
