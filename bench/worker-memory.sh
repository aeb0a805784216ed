#!/usr/bin/env bash
# Memory-mapped shards at scale (issue 14): a coordinator and one worker process on loopback (CURVE) serve the
# 10 M-number dataset of bench/dataset-scale.sh (block and identity, ~6 GB of evaluation form). The worker runs
# with --memory-budget (default 1024 MiB) inside a memory cgroup (default limit 3 GiB, page cache included), so
# most shards are served from mapped scan files. Measures: the first load (transfer, rebuild, scan files written),
# the coordinator's and the worker's peak RSS, phones checking every answer against the identities CSV, then
# kill -9 and restart with a cold page cache and with a warm one (time until every shard serves again), and the
# phones once more.
#
#   bash bench/worker-memory.sh [WORKDIR]     (default /tmp/callveil-scale, made by bench/dataset-scale.sh; root for
#                                              the cgroup and drop_caches, skipped without)
#
# BUDGET_MIB (1024), CGROUP_LIMIT_MIB (3072), KEY_CACHE_MIB (the worker's parsed-key cache, 512), LOAD_SECONDS (20);
# WORKER_MEMORY_BIN runs another `callveil` binary (another commit's) for side-by-side runs. With a budget that holds
# every shard (BUDGET_MIB=8192 CGROUP_LIMIT_MIB=16384) the worker's RSS is compared with the evaluation form it
# holds plus its key cache.
set -euo pipefail
WORK=${1:-/tmp/callveil-scale}
BUDGET_MIB=${BUDGET_MIB:-1024}
CGROUP_LIMIT_MIB=${CGROUP_LIMIT_MIB:-3072}
LOAD_SECONDS=${LOAD_SECONDS:-20}
KEY_CACHE_MIB=${KEY_CACHE_MIB:-512}
cd "$(dirname "$0")/.."
[ -f "$WORK/block/shard.manifest.json" ] && [ -f "$WORK/identity/shard.manifest.json" ] || {
  echo "no dataset in $WORK: run bash bench/dataset-scale.sh first"; exit 1; }
source scripts/release-flags.sh
swift build "${release_build[@]}" --product callveil >/dev/null
swift build "${release_build[@]}" --product callveil-bench >/dev/null
CV=${WORKER_MEMORY_BIN:-$(swift build "${release_build[@]}" --show-bin-path)/callveil}
CVB=$(swift build "${release_build[@]}" --show-bin-path)/callveil-bench
run=$(mktemp -d /tmp/callveil-worker-memory.XXXXXX)
pids=()
cgroup=/sys/fs/cgroup/memory/callveil-bench-$$
cleanup() {
  for p in "${pids[@]:-}"; do kill -9 "$p" 2>/dev/null || true; done
  sleep 0.5; rmdir "$cgroup" 2>/dev/null || true
  rm -rf "$run"
}
trap cleanup EXIT
now() { date +%s.%N; }
since() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$(now)"; }
rss_peak() { awk '/VmHWM/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }
# Resident anonymous memory (the process's own) and resident file pages (the mapped scan files, reclaimable).
rss_split() { awk '/RssAnon/ {a=$2} /RssFile/ {f=$2} END {printf "%.0f MiB anonymous + %.0f MiB mapped file pages", a / 1024, f / 1024}' "/proc/$1/status"; }
# The worker's RSS against the evaluation form it holds (callveil_worker_shard_bytes, in memory and mapped) plus its
# configured key cache.
against_held() {
  local held rss
  held=$(curl -s --max-time 5 http://127.0.0.1:19091/metrics | awk '/^callveil_worker_shard_bytes/ {s += $2} END {printf "%.0f", s / 1048576}')
  rss=$(awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$1/status")
  python3 -c "import sys; rss, held, cache = map(int, sys.argv[1:]); print(f'worker RSS {rss} MiB; evaluation form held {held} MiB; + key cache {cache} MiB = {held + cache} MiB; RSS / (held + cache) = {rss / (held + cache):.3f}; RSS / held = {rss / max(held, 1):.3f}')" "$rss" "$held" "$KEY_CACHE_MIB"
}

ln -s "$WORK/ids-"*.csv "$run/identities.csv"
python3 - "$run" "$WORK" <<'PY'
import json, sys
run, work = sys.argv[1], sys.argv[2]
json.dump({
  "users": [{"tier": "tier1", "tokens": ["AAAA"]}],
  "usecases": [
    {"name": "net.example.lookup.block", "manifest": f"{work}/block/shard.manifest.json", "versionCount": 1},
    {"name": "net.example.lookup.identity", "manifest": f"{work}/identity/shard.manifest.json", "versionCount": 1}],
  "keys": {"database": f"{run}/keys.sqlite"},
  "http": {"adminHost": "127.0.0.1", "adminPort": 19090},
}, open(f"{run}/service-config.json", "w"), indent=2)
PY
coordinator_key=$("$CV" keygen --output "$run/coordinator.key")
worker_key=$("$CV" keygen --output "$run/w1.key")
cat > "$run/cluster.yaml" <<YAML
service: service-config.json
host: 127.0.0.1
port: 18080
bind: tcp://127.0.0.1:15555
keyFile: coordinator.key
replication: 1
heartbeatTimeoutSeconds: 3
workers:
  - { id: w1, publicKey: "$worker_key" }
YAML
converged() { curl -sf --max-time 5 http://127.0.0.1:19090/healthz | python3 -c "import json,sys; sys.exit(0 if json.load(sys.stdin)['executor']['converged'] else 1)"; }
wait_converged() {
  for _ in $(seq 1 3000); do converged 2>/dev/null && return 0; sleep 0.2; done
  echo "timed out waiting for convergence"; tail -n 5 "$run"/*.log; exit 1
}
start_worker() {
  "$CV" worker --coordinator tcp://127.0.0.1:15555 --server-key "$coordinator_key" --key-file "$run/w1.key" --data-dir "$run/data-w1" \
    --id w1 --threads 2 --memory-budget "$BUDGET_MIB" --key-cache "$KEY_CACHE_MIB" --admin-port 19091 \
    --log-level warning 2>>"$run/w1.log" &
  worker=$!
  pids+=("$worker")
  if [ -d "$cgroup" ]; then echo "$worker" > "$cgroup/cgroup.procs"; fi
}
phones() {
  "$CVB" bench --url http://127.0.0.1:18080 --dataset "$run" --phones 2 --duration "$LOAD_SECONDS" --retries 20 --no-plots \
    --output "$run/bench-$1" 2>&1 | grep -E "^\|" || true
}

if [ "$(id -u)" = 0 ] && mkdir "$cgroup" 2>/dev/null; then
  echo $((CGROUP_LIMIT_MIB << 20)) > "$cgroup/memory.limit_in_bytes"
  echo "worker cgroup: memory limit $CGROUP_LIMIT_MIB MiB (page cache included); memory budget $BUDGET_MIB MiB"
else
  echo "no memory cgroup (not root?): the worker runs with its memory budget only"
fi
t=$(now)
echo "start: $(date -u +%H:%M:%S)"
"$CV" coordinator --config "$run/cluster.yaml" --log-level warning 2>>"$run/coordinator.log" &
coordinator=$!
pids+=("$coordinator")
start_worker
wait_converged
echo "first load (compact, transfer, rebuild, scan files written): $(since "$t") s"
echo "coordinator peak RSS $(rss_peak "$coordinator") MiB; worker RSS $(rss_split "$worker")"
against_held "$worker"
du -sb "$run/data-w1" | awk '{printf "worker data directory: %.2f GiB\n", $1 / 2^30}'
find "$run/data-w1" -name '*.scan' -printf '%s\n' | awk '{n++; s+=$1} END {printf "scan files: %d, %.2f GiB\n", n, s / 2^30}'
[ -d "$cgroup" ] && awk '{printf "worker cgroup peak usage: %.0f MiB\n", $1 / 2^20}' "$cgroup/memory.max_usage_in_bytes"
echo "phones, every answer checked against identities.csv:"
phones first
against_held "$worker"

for cache in cold warm; do
  echo "$cache restart: w1 killed at $(date -u +%H:%M:%S.%3N)"
  kill -9 "$worker"
  wait "$worker" 2>/dev/null || true
  sleep 1
  if [ "$cache" = cold ] && [ -w /proc/sys/vm/drop_caches ]; then sync; echo 3 > /proc/sys/vm/drop_caches; fi
  t=$(now)
  echo "$cache restart: w1 started at $(date -u +%H:%M:%S.%3N)"
  start_worker
  sleep 0.3
  wait_converged
  echo "restart with a $cache page cache: every shard serving again after $(since "$t") s (worker RSS $(rss_split "$worker"))"
done
echo "scan files refused on restart: $(grep -c "scan cache refused" "$run/w1.log" || true)"
echo "coordinator heartbeat timeouts (a restarted worker is re-admitted by its new hello, not timed out): $(grep -c "no heartbeat" "$run/coordinator.log" || true)"
grep -h "no heartbeat\|heartbeat late" "$run/coordinator.log" "$run/w1.log" | sort | cut -c1-160 || true
echo "phones after the restarts:"
phones restarted
echo "worker RSS after the phones: $(rss_split "$worker")"
against_held "$worker"
sleep 5
echo "worker RSS idle 5 s later: $(rss_split "$worker")"
against_held "$worker"
[ -d "$cgroup" ] && awk '{printf "worker cgroup peak usage: %.0f MiB\n", $1 / 2^20}' "$cgroup/memory.max_usage_in_bytes"
exit 0
