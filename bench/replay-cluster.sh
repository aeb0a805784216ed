#!/usr/bin/env bash
# The population replay through a cluster (needs root for ip netns): a coordinator serving TLS (ALPN h2) with its
# Oblivious HTTP gateway and two workers, each host in a network namespace of its own (real TCP, CURVE), replication
# 2; `callveil-bench workload` in the root namespace sends every phone's requests through the gateway over HTTP/2
# connections, as the relay does. After a closed-loop capacity run it replays Poisson arrivals at REPLAY_LOAD of that
# capacity in three windows back to back: `steady`; `recovery`, in which worker w2 is killed (SIGKILL) REPLAY_KILL_AT
# seconds in and restarted REPLAY_DOWN seconds later; and `after`. Every answer of every window is checked offline.
# Prints each window's table (bench/README.md, Population replay through a cluster).
#
# REPLAY_PHONES (20000), REPLAY_KEYS (100 distinct secret keys), REPLAY_ROWS (20000 numbers), REPLAY_CACHE_MB each
# worker's parsed-key cache (default: the two together hold about 6% of the phones' keys), REPLAY_WINDOW seconds per window
# (100), REPLAY_CAPACITY_SECONDS (60), REPLAY_LOAD (0.7), REPLAY_RATE (calls/s: skips the capacity run),
# REPLAY_CONNECTIONS (4), REPLAY_CALLERS (16; REPLAY_IGNORE_RETRY_AFTER=1 as in replay.sh), REPLAY_CALLS calls to prepare (default: enough at REPLAY_RATE or at
# REPLAY_CAPACITY_GUESS, 90 calls/s), REPLAY_KILL_AT (20), REPLAY_DOWN (10), REPLAY_BUILD (release),
# REPLAY_SERVER_CPUS (1: the coordinator and both workers) and REPLAY_CLIENT_CPUS (0), REPLAY_DIR (keeps the dataset
# and the prepared workload for another run). REPLAY_KEEP_KEYS=1 (with REPLAY_DIR) keeps the coordinator's key store
# there too, so a later run serves the keys the first uploaded instead of uploading every key again.
# REPLAY_SERVER_BIN and REPLAY_BENCH_BIN run binaries built elsewhere (an older commit, side by side).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
source cluster/netns-lib.sh
tag=replay-cluster
ns=(rccoord rcw1 rcw2)
ips=(10.80.0.1 10.80.0.2 10.80.0.3)  # apart from the netns tests' (10.77-10.79)
bridge=rcbr0 bridge_ip=10.80.0.254
phones=${REPLAY_PHONES:-20000}
keys=${REPLAY_KEYS:-100}
rows=${REPLAY_ROWS:-20000}
cache=${REPLAY_CACHE_MB:-$(( phones * 15 / 200 ))}  # about 6% of the phones' keys between the two workers (about 1.2 MiB a key)
window=${REPLAY_WINDOW:-100}
capacity_seconds=${REPLAY_CAPACITY_SECONDS:-60}
load=${REPLAY_LOAD:-0.7}
connections=${REPLAY_CONNECTIONS:-4}
callers=${REPLAY_CALLERS:-16}
kill_at=${REPLAY_KILL_AT:-20}
down=${REPLAY_DOWN:-10}
CALLVEIL_BUILD=${REPLAY_BUILD:-release}
server_pin=(taskset -c "${REPLAY_SERVER_CPUS:-1}")
client_pin=(taskset -c "${REPLAY_CLIENT_CPUS:-0}")
worker_extra=(--key-cache "$cache")
python="$top/.build-venv/bin/python"
[ -x "$python" ] || { echo "the interop client is not installed: run make deps"; exit 1; }
netns_build
if [ -n "${REPLAY_SERVER_BIN:-}" ] && [ -n "${REPLAY_BENCH_BIN:-}" ]; then bin=$REPLAY_SERVER_BIN; bench_bin=$REPLAY_BENCH_BIN; fi
trap netns_cleanup EXIT
state=${REPLAY_DIR:-$work/state}
mkdir -p "$state"
ulimit -n 8192
netns_up

source bench/demo-service.sh
if [ ! -f "$state/dataset/identities.csv" ]; then
  demo_dataset "$bin" "$state/dataset" "$rows"
fi
# The coordinator's certificate names its address (made anew each run: a kept state may come from other addresses).
"$python" scripts/ohttp-client.py make-cert "$state" "${ips[0]}" > /dev/null
# The coordinator's service config: the demo's use cases on the dataset, TLS with the gateway on the public port,
# the admin listener where the root namespace reaches it; the issuer and gateway keys kept with the workload.
keys_db="$work/coordinator/keys.sqlite" keep_keys=""
if [ "${REPLAY_KEEP_KEYS:-0}" = 1 ]; then
  keys_db="$state/coordinator-keys.sqlite"
  [ -f "$keys_db" ] && [ -f "$state/workload/workload.json" ] && keep_keys=1
fi
"$python" - "$state" "$work" "${ips[0]}" "$keys_db" <<'PY'
import json, sys
state, work, host, keys_db = sys.argv[1:5]
config = json.load(open("cluster/demo/service-config.json"))
for u in config["usecases"]:
    u["fileStem"] = f"{state}/dataset/{u['fileStem']}"
config["keys"].update({"database": keys_db})
config["privacyPass"] = {"keyDirectory": f"{state}/issuer-keys", "nonceDatabase": f"{work}/coordinator/nonces.sqlite"}
config["http"] = {"protocol": "tls", "tlsCertificateFile": f"{state}/cert.pem", "tlsKeyFile": f"{state}/key.pem",
                  "adminHost": host, "adminPort": 9090}
config["gateway"] = {"keyDirectory": f"{state}/gateway-keys"}
json.dump(config, open(f"{work}/service-config.json", "w"), indent=1)
PY
mkdir -p "$work/coordinator"
[ -f "$state/workload/workload.json" ] && echo 0 > "$state/workload/cursor"
netns_keys w1 w2
netns_cluster_yaml w1 w2
netns_start_coordinator
netns_start_worker w1 "${ns[1]}"
netns_start_worker w2 "${ns[2]}"
wait_for "the coordinator" health
placed() { converged && [ "$(shards_on w1)" -ge 1 ] && [ "$(shards_on w2)" -ge 1 ]; }
wait_for "the initial placement" placed
echo "$tag: coordinator and workers w1, w2 up, replication 2, each worker's key cache $cache MiB"

url="https://${ips[0]}:8080"
wl=("${client_pin[@]}" "$bench_bin" workload)
target=(--dir "$state/workload" --url "$url" --ca "$state/cert.pem" --connections "$connections")
metrics=(--metrics "$admin_url/metrics")
calls=${REPLAY_CALLS:-$(python3 -c "print(int(${REPLAY_RATE:-${REPLAY_CAPACITY_GUESS:-90}} * (3 * $window + $capacity_seconds) * 1.3) + 500)")}
if [ ! -f "$state/workload/workload.json" ]; then
  "${wl[@]}" prepare --dir "$state/workload" --url "$url" --ca "$state/cert.pem" --dataset "$state/dataset" \
    --phones "$phones" --distinct-keys "$keys" --calls "$calls"
fi
[ -n "$keep_keys" ] || "${wl[@]}" upload "${target[@]}"
rate=${REPLAY_RATE:-}
if [ -z "$rate" ]; then
  "${wl[@]}" replay "${target[@]}" --concurrency "$callers" ${REPLAY_IGNORE_RETRY_AFTER:+--ignore-retry-after} --duration "$capacity_seconds" --label capacity "${metrics[@]}"
  capacity=$(python3 -c "import json; print(round(json.load(open('$state/workload/results-capacity.json'))['goodput'], 2))")
  rate=$(python3 -c "print(round($capacity * $load, 2))")
  echo "$tag: capacity through the gateway $capacity calls/s; replaying at $rate calls/s"
fi

"${wl[@]}" replay "${target[@]}" --rate "$rate" --duration "$window" --label steady --seed 1 "${metrics[@]}"
# The recovery window: w2 is killed and restarted while the replay runs; the coordinator sees its connection close,
# fails its queries in flight over to w1 at once, the phones whose replica it was go to w1, and w2 rejoins with its
# shards from its data directory.
(
  sleep "$kill_at"
  kill -9 "${worker_pid[w2]}"
  echo "$tag: killed w2 at $(date +%T) ($kill_at s into the recovery window)"
  sleep "$down"
  netns_start_worker w2 "${ns[2]}"
  echo "$tag: restarted w2 at $(date +%T)"
  for _ in $(seq 1 300); do placed && break; sleep 0.2; done
  echo "$tag: converged again at $(date +%T)"
  echo "${worker_pid[w2]}" > "$work/w2.pid"
) &
fault=$!
"${wl[@]}" replay "${target[@]}" --rate "$rate" --duration "$window" --label recovery --seed 2 "${metrics[@]}"
wait "$fault"
pids+=("$(cat "$work/w2.pid")")
wait_for "the placement after the restart" placed
"${wl[@]}" replay "${target[@]}" --rate "$rate" --duration "$window" --label after --seed 3 "${metrics[@]}"
echo "$tag: how the coordinator saw w2 go and come back:"
grep -h "worker connection closed\|worker lost\|worker restarted\|worker joined" "$work/coordinator.log" | cut -c1-200 || true
status=0
for label in steady recovery after; do
  "${wl[@]}" check --dir "$state/workload" --label "$label" || status=1
done
exit $status
