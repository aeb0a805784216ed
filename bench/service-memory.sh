#!/usr/bin/env bash
# Memory of `callveil serve` (release, the demo config, one embedded worker) on one dataset: the process's peak RSS
# while it loaded (VmHWM once ready), its RSS (anonymous and file-backed) 3 s after every shard serves, its peak while
# phones look numbers up (VmRSS every 0.1 s; every answer checked), right after they finish and SERVICE_MEMORY_IDLE
# seconds later, with the server's CPU per request. Several server binaries (another commit's, SERVICE_MEMORY_BINS,
# space-separated) run side by side on the same processed dataset, one after the other in each of
# SERVICE_MEMORY_ROUNDS rounds, each from a fresh state directory. Prints one row per run (bench/README.md, Memory).
#
# The reference's side, built outside this repository (bench/HISTORY.md, "Service memory against the reference"):
# REFERENCE_SERVICE (its PIRService) and REFERENCE_PROCESS (its PIRProcessDatabase) add the reference's service to
# each round, on the same input processed by its own tool; REFERENCE_CLIENT (a driver around the reference's
# PIRClient: `PORT BLOCK_BINPB IDENTITY_BINPB BLOCK_USECASE IDENTITY_USECASE LOOKUPS PHONES SEED`, printing
# `lookups=… requests=… wrong=…`) then makes SERVICE_MEMORY_LOOKUPS lookups against every server instead of
# `callveil-bench` running for SERVICE_MEMORY_SECONDS.
#
# SERVICE_MEMORY_COUNT numbers (200000), SERVICE_MEMORY_SECONDS (30), SERVICE_MEMORY_LOOKUPS (1000, a block and an
# identity request each), SERVICE_MEMORY_PHONES (4), SERVICE_MEMORY_ROUNDS (2), SERVICE_MEMORY_SEED (20261127),
# SERVICE_MEMORY_IDLE (5: seconds after the load before the idle RSS is read),
# SERVICE_MEMORY_DIR keeps the dataset between runs, SERVICE_MEMORY_PORT (18700).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
count=${SERVICE_MEMORY_COUNT:-200000}
seconds=${SERVICE_MEMORY_SECONDS:-30}
phones=${SERVICE_MEMORY_PHONES:-4}
rounds=${SERVICE_MEMORY_ROUNDS:-2}
idle=${SERVICE_MEMORY_IDLE:-5}
port=${SERVICE_MEMORY_PORT:-18700}
admin=$((port + 1))
OVERLOAD_BUILD=release
source "$top/bench/build-products.sh"
bins=(${SERVICE_MEMORY_BINS:-$bin})
work=${SERVICE_MEMORY_DIR:-$(mktemp -d /tmp/callveil-memory.XXXXXX)}
mkdir -p "$work"
server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null || true; [ -n "${SERVICE_MEMORY_DIR:-}" ] || rm -rf "$work"; }
trap cleanup EXIT

source "$top/bench/demo-service.sh"
demo_service "$bin" "$work" "$count" "$admin"
compact=$(cat "$work"/dataset/{block,identity}/*.cvshard | wc -c)
echo "dataset: $count numbers, $(ls "$work"/dataset/{block,identity}/*.cvshard | wc -l) shard files, $((compact >> 20)) MiB of shard files"
rss() { awk '/^VmRSS|^RssAnon|^RssFile/ {printf "%s=%d ", $1, $2/1024}' "/proc/$1/status"; }
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hwm() { awk '/^VmHWM/ {printf "%d", $2/1024}' "/proc/$1/status"; }
lookups=${SERVICE_MEMORY_LOOKUPS:-1000}
seed=${SERVICE_MEMORY_SEED:-20261127}
block_name=$(python3 -c "import json; print(json.load(open('cluster/demo/service-config.json'))['usecases'][0]['name'])")
identity_name=$(python3 -c "import json; print(json.load(open('cluster/demo/service-config.json'))['usecases'][1]['name'])")
servers=("${bins[@]}")
if [ -n "${REFERENCE_SERVICE:-}" ]; then
  [ -n "${REFERENCE_PROCESS:-}" ] || { echo "REFERENCE_SERVICE needs REFERENCE_PROCESS (PIRProcessDatabase)"; exit 2; }
  reference="$work/reference"
  if [ ! -f "$reference/identity-0.bin" ]; then
    mkdir -p "$reference"
    for usecase in block identity; do
      # The reference's tutorial settings, one shard per use case as CallVeil's process-db makes at this size.
      printf '{"inputDatabase": "%s", "outputDatabase": "%s", "outputPirParameters": "%s",
 "rlweParameters": "n_4096_logq_27_28_28_logt_5", "sharding": {"shardCount": 1}, "trialsPerShard": 1,
 "databaseType": "keyword"}\n' "$work/dataset/$usecase.binpb" "$reference/$usecase-SHARD_ID.bin" \
        "$reference/$usecase-SHARD_ID.params.txtpb" > "$reference/$usecase-config.json"
      /usr/bin/time -f "reference processing $usecase: %e s, %M KiB peak" "$REFERENCE_PROCESS" "$reference/$usecase-config.json" > /dev/null
    done
  fi
  printf '{"users": [{"tier": "tier1", "tokens": ["AAAA"]}], "usecases": [
 {"fileStem": "%s", "shardCount": 1, "name": "%s"}, {"fileStem": "%s", "shardCount": 1, "name": "%s"}]}\n' \
    "$reference/block" "$block_name" "$reference/identity" "$identity_name" > "$reference/service-config.json"
  servers+=(reference)
fi

# Phones look numbers up: the reference's client for a fixed count when given, else callveil-bench for a duration.
# Prints "requests wrong".
load() {
  if [ -n "${REFERENCE_CLIENT:-}" ]; then
    "$REFERENCE_CLIENT" "$port" "$work/dataset/block.binpb" "$work/dataset/identity.binpb" "$block_name" "$identity_name" \
      "$lookups" "$phones" "$seed" > "$work/bench.log" 2>&1 || { tail -20 "$work/bench.log" >&2; exit 1; }
    sed -n 's/.*requests=\([0-9]*\) wrong=\([0-9]*\).*/\1 \2/p' "$work/bench.log"
  else
    "$bench_bin" bench --url "http://127.0.0.1:$port" --dataset "$work/dataset" --phones "$phones" --duration "$seconds" \
      --output "$work/out" --no-plots > "$work/bench.log" 2>&1 || { tail -20 "$work/bench.log" >&2; exit 1; }
    python3 -c "
import json; result = json.load(open('$work/out/results.json'))['runs'][0]['result']
print(result['lookups'] * 2, result['mismatches'])"
  fi
}

echo "| round | server | shard bytes held (MiB) | peak while loading (MiB) | RSS loaded (MiB) | anon | file | peak during the run (MiB) | RSS right after the run (MiB) | anon | file | RSS ${idle} s later (MiB) | anon | requests | wrong | server CPU ms/request |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for round in $(seq 1 "$rounds"); do
  for b in "${servers[@]}"; do
    if [ "$b" = reference ]; then
      "$REFERENCE_SERVICE" --port "$port" "$reference/service-config.json" > "$work/reference.log" 2>&1 &
      server=$!
      # Ready once it answers its token directory (it loads the shards before listening).
      for _ in $(seq 1 600); do
        curl -sf "http://127.0.0.1:$port/.well-known/private-token-issuer-directory" > /dev/null 2>&1 && break
        kill -0 "$server" 2>/dev/null || { echo "the reference's service exited during start"; tail -5 "$work/reference.log"; exit 1; }
        sleep 0.5
      done
      held=-
    else
      # A first load: no shard copy or scan file from an earlier run (older binaries kept them beside the config).
      rm -rf "$work/state" "$work/embedded-workers"; mkdir -p "$work/state"
      "$b" serve --config "$work/service-config.json" --port "$port" --log-level warning &
      server=$!
      for _ in $(seq 1 600); do
        # /readyz: every shard served (an older binary without it: /healthz once the shards are placed)
        ready=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$admin/readyz" 2>/dev/null || true)
        [ "$ready" = 200 ] && break
        [ "$ready" = 404 ] && curl -sf "http://127.0.0.1:$admin/healthz" > /dev/null 2>&1 && break
        kill -0 "$server" 2>/dev/null || { echo "the server exited during start"; exit 1; }
        sleep 0.5
      done
      held=$(curl -s "http://127.0.0.1:$admin/metrics" | awk '/^callveil_worker_shard_bytes/ {s += $2} END {printf "%d", s / 1048576}')
    fi
    # 3 s: past the first idle release (2 s without work after the load), which returns the start-up pages.
    sleep 3
    peak=$(hwm "$server")
    loaded=$(rss "$server")
    cpu0=$(cpu "$server")
    # The run's peak: VmRSS sampled every 0.1 s while the phones look up (VmHWM holds the load's peak).
    echo 0 > "$work/run-peak"
    ( peak_kib=0; while kill -0 "$server" 2>/dev/null; do
        now_kib=$(awk '/^VmRSS/ {print $2}' "/proc/$server/status" 2>/dev/null || echo 0)
        [ "${now_kib:-0}" -gt "$peak_kib" ] && peak_kib=$now_kib && echo "$peak_kib" > "$work/run-peak"
        sleep 0.1; done ) &
    sampler=$!
    read -r requests wrong < <(load)
    cpu1=$(cpu "$server")
    after=$(rss "$server")
    kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null || true
    run_peak=$(( $(cat "$work/run-peak") / 1024 ))
    # Idle: an idle process gives its kept query buffers back after a quiet time (the allocator's release thread).
    sleep "$idle"
    settled=$(rss "$server")
    ms=$(python3 -c "print(round(($cpu1 - $cpu0) * 1000 / $(getconf CLK_TCK) / max($requests, 1), 1))")
    l=($loaded); a=($after); i=($settled)
    printf "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" "$round" "$(basename "$b")" "$held" "$peak" \
      "${l[0]#*=}" "${l[1]#*=}" "${l[2]#*=}" "$run_peak" "${a[0]#*=}" "${a[1]#*=}" "${a[2]#*=}" "${i[0]#*=}" "${i[1]#*=}" "$requests" "$wrong" "$ms"
    kill "$server"; wait "$server" 2>/dev/null || true; server=""
  done
done
