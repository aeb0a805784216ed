#!/usr/bin/env bash
# A population of phones through the production path: `callveil serve` with TLS (ALPN h2) and its Oblivious HTTP
# gateway, on a CPU set of its own, and `callveil-bench workload` on the other CPUs: prepare phones (distinct
# User-Identifiers sharing REPLAY_KEYS secret keys), upload every phone's key, measure capacity closed-loop, replay
# Poisson arrivals at REPLAY_LOAD of it through the gateway over REPLAY_CONNECTIONS HTTP/2 connections, and check every
# answer offline. Prints the tables recorded in bench/README.md (Population replay).
#
# REPLAY_PHONES (20000), REPLAY_KEYS (100), REPLAY_ROWS numbers in the dataset (20000), REPLAY_CACHE_MB parsed-key
# cache (default: phones × 0.15 MiB, room for about 6% of the phones' keys: the dataset's two use cases have key
# configs of their own, about 1.2 MiB a key as cached), REPLAY_SECONDS (300), REPLAY_CAPACITY_SECONDS (60),
# REPLAY_LOAD (0.7), REPLAY_RATE (calls/s; skips the capacity run), REPLAY_CONNECTIONS (4), REPLAY_CALLERS
# closed-loop callers (16; a refused one waits out Retry-After, REPLAY_IGNORE_RETRY_AFTER=1 retries at once), REPLAY_CALLS calls to prepare (default: enough for the runs at REPLAY_CAPACITY_GUESS, 90
# calls/s, or at REPLAY_RATE), REPLAY_BUILD (release), REPLAY_SERVER_CPUS (1), REPLAY_CLIENT_CPUS (0), REPLAY_DIR (a
# temporary directory; give one to keep the workload), REPLAY_PORT (18643), REPLAY_SERVER_BIN and REPLAY_BENCH_BIN
# (binaries to use instead of building: another commit's server, side by side). REPLAY_FLOOD (e.g. 4) adds, after the
# load run, REPLAY_FLOOD_SECONDS (60) at that multiple of the capacity, then REPLAY_AFTER_SECONDS (20) at the load's
# rate again, and prints how soon after the flood the calls' p99 was back to the load run's; REPLAY_HOSTILE=1 adds
# make overload's hostile sockets and 10 MiB /key uploads during the flood. REPLAY_ADMISSION_WAIT_MS
# sets http.maxAdmissionWaitMilliseconds, REPLAY_GATE_SLOTS http.maxRequestsProcessing. REPLAY_KEEP_KEYS=1 (with a kept
# REPLAY_DIR) serves the key store the last run uploaded instead of uploading every key again; its parsed-key cache
# then starts empty, so REPLAY_WARM_SECONDS (0) replays that long at the load's rate first, unmeasured.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
phones=${REPLAY_PHONES:-20000}
keys=${REPLAY_KEYS:-100}
rows=${REPLAY_ROWS:-20000}
cache=${REPLAY_CACHE_MB:-$(( phones * 15 / 100 ))}   # about 6% of the phones' keys (two keys of about 1.2 MiB a phone as cached)
seconds=${REPLAY_SECONDS:-300}
capacity_seconds=${REPLAY_CAPACITY_SECONDS:-60}
load=${REPLAY_LOAD:-0.7}
connections=${REPLAY_CONNECTIONS:-4}
callers=${REPLAY_CALLERS:-16}
port=${REPLAY_PORT:-18643}
admin=$((port + 1))
if [ -n "${REPLAY_SERVER_BIN:-}" ] && [ -n "${REPLAY_BENCH_BIN:-}" ]; then  # binaries built elsewhere (an older commit, side by side)
  bin=$REPLAY_SERVER_BIN; bench_bin=$REPLAY_BENCH_BIN
else
  OVERLOAD_BUILD=${REPLAY_BUILD:-release}
  source "$top/bench/build-products.sh"
fi
python="$top/.build-venv/bin/python"
[ -x "$python" ] || { echo "the interop client is not installed: run make deps"; exit 1; }
server_pin=(taskset -c "${REPLAY_SERVER_CPUS:-1}")
client_pin=(taskset -c "${REPLAY_CLIENT_CPUS:-0}")
work=${REPLAY_DIR:-$(mktemp -d /tmp/callveil-replay.XXXXXX)}
mkdir -p "$work"
server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null || true; [ -n "${REPLAY_DIR:-}" ] || rm -rf "$work"; }
trap cleanup EXIT
ulimit -n 8192

source bench/demo-service.sh
if [ ! -f "$work/dataset/identities.csv" ]; then
  demo_dataset "$bin" "$work/dataset" "$rows"
  "$python" scripts/ohttp-client.py make-cert "$work" > /dev/null
fi
"$python" - "$work" "$admin" "$cache" "${REPLAY_ADMISSION_WAIT_MS:-}" "${REPLAY_GATE_SLOTS:-}" <<'PY'
import json, sys
work, admin, cache, wait, slots = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
config = json.load(open("cluster/demo/service-config.json"))
for u in config["usecases"]:
    u["fileStem"] = f"{work}/dataset/{u['fileStem']}"
config["keys"].update({"database": f"{work}/server/keys.sqlite", "cacheMegabytes": cache})
config["privacyPass"] = {"keyDirectory": f"{work}/server/issuer-keys", "nonceDatabase": f"{work}/server/nonces.sqlite"}
config["http"] = {"protocol": "tls", "tlsCertificateFile": f"{work}/cert.pem", "tlsKeyFile": f"{work}/key.pem", "adminPort": admin}
if wait:
    config["http"]["maxAdmissionWaitMilliseconds"] = int(wait)
if slots:
    config["http"]["maxRequestsProcessing"] = int(slots)
config["gateway"] = {"keyDirectory": f"{work}/server/gateway-keys"}
json.dump(config, open(f"{work}/service-config.json", "w"), indent=1)
PY
# A workload kept from an earlier run replays against a fresh store with the same issuer and gateway keys: its tokens
# and keys are spent again (the nonce and key stores are new), its calls from the first.
# REPLAY_KEEP_KEYS=1 keeps the key store the last run filled instead (the same phones' keys, not uploaded again).
keep_keys=""
if [ -f "$work/workload/workload.json" ]; then
  if [ "${REPLAY_KEEP_KEYS:-0}" = 1 ] && [ -f "$work/server/keys.sqlite" ]; then keep_keys=1; else rm -rf "$work/server"/keys.sqlite*; fi
  rm -f "$work/server"/nonces.sqlite*
  echo 0 > "$work/workload/cursor"
fi
mkdir -p "$work/server"
"${server_pin[@]}" "$bin" serve --config "$work/service-config.json" --port "$port" --log-level warning &
server=$!
for _ in $(seq 1 240); do
  curl -sf "http://127.0.0.1:$admin/healthz" > /dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { echo "the server exited during start"; exit 1; }
  sleep 0.5
done
url="https://127.0.0.1:$port"
wl=("${client_pin[@]}" "$bench_bin" workload)
target=(--dir "$work/workload" --url "$url" --ca "$work/cert.pem" --connections "$connections")
# Calls to prepare: enough for every run at REPLAY_RATE, or at REPLAY_CAPACITY_GUESS calls/s of capacity, with a margin.
calls=${REPLAY_CALLS:-$(python3 -c "
rate, guess, load = '${REPLAY_RATE:-}', ${REPLAY_CAPACITY_GUESS:-90}, $load
at_load = float(rate) if rate else guess * load
runs = (0 if rate else guess * $capacity_seconds) + at_load * ($seconds + ${REPLAY_WARM_SECONDS:-0})
if '${REPLAY_FLOOD:-}': runs += guess * float('${REPLAY_FLOOD:-0}') * ${REPLAY_FLOOD_SECONDS:-60} + at_load * ${REPLAY_AFTER_SECONDS:-20}
print(int(runs * 1.3) + 500)")}
if [ ! -f "$work/workload/workload.json" ]; then
  "${wl[@]}" prepare --dir "$work/workload" --url "$url" --ca "$work/cert.pem" --dataset "$work/dataset" \
    --phones "$phones" --distinct-keys "$keys" --calls "$calls"
fi
[ -n "$keep_keys" ] || "${wl[@]}" upload "${target[@]}"
metrics=(--server-pid "$server" --metrics "http://127.0.0.1:$admin/metrics")
rate=${REPLAY_RATE:-}
if [ -z "$rate" ]; then
  "${wl[@]}" replay "${target[@]}" --concurrency "$callers" ${REPLAY_IGNORE_RETRY_AFTER:+--ignore-retry-after} --duration "$capacity_seconds" --label capacity "${metrics[@]}"
  rate=$(python3 -c "import json; print(round(json.load(open('$work/workload/results-capacity.json'))['goodput'] * $load, 2))")
  echo "capacity measured through the gateway: $(python3 -c "import json; print(round(json.load(open('$work/workload/results-capacity.json'))['goodput'], 2))") calls/s; replaying at $rate calls/s"
fi
if [ "${REPLAY_WARM_SECONDS:-0}" != 0 ]; then  # fill the parsed-key cache first: a kept key store starts with it empty
  "${wl[@]}" replay "${target[@]}" --rate "$rate" --duration "$REPLAY_WARM_SECONDS" --label warm "${metrics[@]}" > /dev/null
fi
"${wl[@]}" replay "${target[@]}" --rate "$rate" --duration "$seconds" --label load "${metrics[@]}"
echo "server RSS: $(awk '/VmRSS|VmHWM/ {printf "%s %d MiB  ", $1, $2/1024}' /proc/$server/status)"
"${wl[@]}" check --dir "$work/workload" --label load
if [ -n "${REPLAY_FLOOD:-}" ]; then
  capacity=$(python3 -c "import json; print(json.load(open('$work/workload/results-capacity.json'))['goodput'])")
  flood_rate=$(python3 -c "print(round($capacity * ${REPLAY_FLOOD}, 2))")
  target_p99=$(python3 -c "import json; print(round(json.load(open('$work/workload/results-load.json'))['callP99'] * 1000, 1))")
  echo "flood: ${REPLAY_FLOOD}× the capacity, $flood_rate calls/s for ${REPLAY_FLOOD_SECONDS:-60} s, then $rate calls/s (load p99 $target_p99 ms)"
  # REPLAY_HOSTILE=1 adds make overload's other floods for the flood's duration, in processes of their own on the
  # client's CPUs at the lowest priority (nice 19: the replay's own lag stays the server's, not theirs): 500 hostile
  # sockets on the TLS listener (bench/hostile.py: 300 silent, 100 half ClientHellos, bodies trickled a byte a second to
  # /queries by 60 and to the gateway by 40) and 16 uploaders of 10 MiB /key bodies with tokens of their own.
  hostile=()
  if [ "${REPLAY_HOSTILE:-0}" = 1 ]; then
    flood_seconds=${REPLAY_FLOOD_SECONDS:-60}
    for spec in "silent 300 /" "half 100 /" "trickle 60 /queries" "trickle 40 /ohttp-gateway"; do
      read -r mode count path <<< "$spec"
      nice -n 19 "${client_pin[@]}" "$python" bench/hostile.py --port "$port" --protocol tls --mode "$mode" --count "$count" \
        --seconds "$flood_seconds" --path "$path" > "$work/hostile-$mode-${path//\//_}.json" &
      hostile+=($!)
    done
    nice -n 19 "${wl[@]}" key-flood "${target[@]}" --uploaders 16 --megabytes 10 --seconds "$flood_seconds" > "$work/key-flood.txt" &
    hostile+=($!)
  fi
  "${wl[@]}" replay "${target[@]}" --rate "$flood_rate" --duration "${REPLAY_FLOOD_SECONDS:-60}" --after-rate "$rate" \
    --after-seconds "${REPLAY_AFTER_SECONDS:-20}" --recovered-p99 "$target_p99" --recovery-baseline load --label flood "${metrics[@]}"
  if [ ${#hostile[@]} -gt 0 ]; then
    for p in "${hostile[@]}"; do wait "$p" || true; done
    cat "$work/key-flood.txt"
    printf '| hostile sockets | sockets | opened | closed by the server | median life (s) | longest closed life (s) | open at the end |\n|---|---:|---:|---:|---:|---:|---:|\n'
    for f in "$work"/hostile-*.json; do
      "$python" bench/hostile.py row "$f"
    done
  fi
  echo "server RSS: $(awk '/VmRSS|VmHWM/ {printf "%s %d MiB  ", $1, $2/1024}' /proc/$server/status)"
  "${wl[@]}" check --dir "$work/workload" --label flood
fi
