#!/usr/bin/env bash
# Fault injection under load (`make chaos`; needs root for ip netns). A coordinator and three worker hosts in
# network namespaces (real TCP, CURVE); `callveil-bench bench` drives it from the root namespace with several phones
# for the whole run, decrypting and checking every answer and retrying 503s after their Retry-After. While the
# load runs the script, in turn: kills a worker and restarts it 1 s later; reloads the block database with one
# value changed and the same config id; reloads it with a new config id; adds a worker (allow-list + SIGHUP);
# revokes a worker's key (allow-list + SIGHUP). After each fault it measures the time until the coordinator
# reports its actual state equal to the desired one (and, for the data update, until the new value is served).
# Passes when there are 0 wrong answers, every failed request was a 503 with Retry-After that succeeded when
# retried, and the final placement equals the desired one. Prints a table.
#   CALLVEIL_CHAOS_SECONDS  minimum seconds of load (default 75; the issue asks for at least 60)
#   CALLVEIL_CHAOS_PHONES   simulated phones (default 4)
#   CALLVEIL_CHAOS_GAP      seconds of undisturbed load after each fault has converged (default 6)
#   CALLVEIL_SEED           seed of the phones' numbers (default: random, printed)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
source cluster/netns-lib.sh
tag=chaos
ns=(cxcoord cxw1 cxw2 cxw3)
ips=(10.78.0.1 10.78.0.2 10.78.0.3 10.78.0.4)
bridge=cxbr0 bridge_ip=10.78.0.254
load_seconds=${CALLVEIL_CHAOS_SECONDS:-75}
phones=${CALLVEIL_CHAOS_PHONES:-4}
gap=${CALLVEIL_CHAOS_GAP:-6}
seed=${CALLVEIL_SEED:-$(( (RANDOM << 15) | RANDOM ))}
echo "chaos: seed $seed (CALLVEIL_SEED=$seed to repeat), $phones phones, at least $load_seconds s of load"
netns_build
trap netns_cleanup EXIT
netns_up
fail() { echo "chaos: FAIL ($*)"; tail -n 5 "$work"/*.log 2>/dev/null; exit 1; }

# Data, all prepared before the load starts: A (served first), B (one number's block value flipped, same
# bucket count, so the same config id) and C (B's data with another bucket count: a new config id).
"$bin" generate-demo --count 2000 --output "$work/identities.csv" 2>/dev/null
"$bin" build-db --input "$work/identities.csv" --output "$work" 2>/dev/null
process_block() { "$bin" process-db --input "$1/block.binpb" --output "$2" --shard-count 4 --fixed-bucket-count "$3" 2>/dev/null; }
process_block "$work" "$work/block" 1024
"$bin" process-db --input "$work/identity.binpb" --output "$work/identity" --shard-count 2 2>/dev/null
mapfile -t samples < "$work/sample-numbers.txt"
flipped=${samples[0]}  # blocked and named in A
mkdir -p "$work/b"
awk -F, -v n="$flipped" 'BEGIN{OFS=","} $1==n {$4 = ($4 == 1 ? 0 : 1)} {print}' "$work/identities.csv" > "$work/b/identities.csv"
cmp -s "$work/identities.csv" "$work/b/identities.csv" && fail "dataset B does not differ from A"
"$bin" build-db --input "$work/b/identities.csv" --output "$work/b" 2>/dev/null
process_block "$work/b" "$work/b/block" 1024
process_block "$work/b" "$work/c-block" 2048
netns_service_config

netns_keys w1 w2 w3
netns_cluster_yaml w1 w2
netns_start_coordinator
netns_start_worker w1 cxw1
netns_start_worker w2 cxw2
wait_for "the coordinator" health
initial() { converged && [ "$(shards_on w1)" -ge 1 ] && [ "$(shards_on w2)" -ge 1 ]; }
wait_for "the initial placement" initial

block_config() { health_field "[v['configId'] for v in h['versions'] if v['usecase'].endswith('.block')][-1]"; }
generation() { health_field "h['executor']['desiredGeneration']"; }
incarnation() { health_field "h['executor']['incarnations'].get('$1', '')"; }
flipped_value() { "$bin" query --url "$url" --user-token AAAA --number "$flipped" 2>/dev/null | grep -o "block: [A-Za-z ]*[A-Za-z]" | head -1; }
value_a=$(flipped_value)
[ "$value_a" = "block: BLOCKED" ] || fail "the flipped number answers '$value_a' before the update"

# The load: every answer checked against A; rows that B changes may answer either value until the update has
# converged (the marker file), and only B's value after.
"$bench_bin" bench --url "$url" --dataset "$work" --accept-either "$work/b/identities.csv" \
  --converged-marker "$work/update-converged" --phones "$phones" \
  --duration "$load_seconds" --retries 20 --config-refresh 5 --seed "$seed" --output "$work/bench" --no-plots \
  >"$work/bench.out" 2>"$work/bench.err" &
bench_pid=$!
pids+=("$bench_pid")
load_start=$(now)
# The phones are set up (config, keys, warm-up) before the measured phase starts.
wait_for "the bench to start measuring" grep -q "lookups" "$work/bench.err"
sleep 5

rows=()
# measure <fault> <start> <done-condition…>: the seconds from start until the condition holds (60 s at most),
# then $gap seconds of undisturbed load.
measure() {
  local fault=$1 start=$2; shift 2
  wait_for "convergence after: $fault" "$@"
  local took
  took=$(python3 -c "print(f'{$(now) - $start:.1f}')")
  rows+=("$fault|$took")
  echo "chaos: $fault: converged after $took s"
  sleep "$gap"
}

# 1. kill -9 a worker, restart it 1 s later (as systemd would, faster than the 3 s heartbeat timeout).
before=$(incarnation w1)
t=$(now)
kill -9 "${worker_pid[w1]}"
sleep 1
netns_start_worker w1 cxw1
restarted() { local i; i=$(incarnation w1); [ -n "$i" ] && [ "$i" != "$before" ] && converged; }
measure "kill -9 w1, restart after 1 s" "$t" restarted

# 2. Every worker killed at once and restarted 1 s later: no replica for a moment, so queries get 503 with
# Retry-After and succeed when the phones retry.
before1=$(incarnation w1) before2=$(incarnation w2)
t=$(now)
kill -9 "${worker_pid[w1]}" "${worker_pid[w2]}"
sleep 1
netns_start_worker w1 cxw1
netns_start_worker w2 cxw2
both_restarted() {
  local i1 i2; i1=$(incarnation w1); i2=$(incarnation w2)
  [ -n "$i1" ] && [ "$i1" != "$before1" ] && [ -n "$i2" ] && [ "$i2" != "$before2" ] && converged
}
measure "kill -9 w1 and w2, restart after 1 s" "$t" both_restarted

# 3. Same config id, one value changed: the new value once converged.
config_before=$(block_config)
g=$(generation)
cp "$work/b/block/"* "$work/block/"
t=$(now)
kill -HUP "$coordinator_pid"
# Once converged, the marker file tells the phones that lookups starting from then on must answer the new value.
updated() { [ "$(generation)" -gt "$g" ] && converged && [ "$(flipped_value)" = "block: not blocked" ] && touch "$work/update-converged"; }
measure "reload, same config id, 1 value changed" "$t" updated
[ "$(block_config)" = "$config_before" ] || fail "the same-config update changed the config id"

# 4. A new config id (the phones pick it up at their next config sync; the old one stays served).
g=$(generation)
cp "$work/c-block/"* "$work/block/"
t=$(now)
kill -HUP "$coordinator_pid"
renewed() { [ "$(generation)" -gt "$g" ] && [ "$(block_config)" != "$config_before" ] && converged; }
measure "reload, new config id" "$t" renewed

# 5. Add a worker: list its key, SIGHUP, start it.
t=$(now)
netns_cluster_yaml w1 w2 w3
kill -HUP "$coordinator_pid"
sleep 0.5
netns_start_worker w3 cxw3
joined() { [ "$(shards_on w3)" -ge 1 ] && converged; }
measure "add worker w3" "$t" joined

# 6. Revoke a worker's key: drop it from the allow-list, SIGHUP; its shards are re-placed.
t=$(now)
netns_cluster_yaml w1 w3
kill -HUP "$coordinator_pid"
revoked() { [ "$(health_field "'w2' in h['executor']['workers']")" = False ] && converged; }
measure "revoke w2's key" "$t" revoked
faults_done=$(now)
kill -0 "$bench_pid" 2>/dev/null || fail "the load ended before the last fault converged: raise CALLVEIL_CHAOS_SECONDS"

bench_rc=0
wait "$bench_pid" || bench_rc=$?
load_end=$(now)
final_ok=$(health_field "h['executor']['converged'] and sorted(h['executor']['workers']) == ['w1', 'w3'] and all(n > 0 for n in h['executor']['workers'].values())")
[ "$(flipped_value)" = "block: not blocked" ] || fail "the flipped number no longer answers its new value"

python3 - "$work/bench/results.json" "$load_start" "$load_end" "$bench_rc" "$final_ok" "${rows[@]}" <<'PY' || fail "see the table: bench exit $bench_rc, final placement = desired: $final_ok"
import json, sys
results, start, end, rc, final = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
faults = [r.split("|") for r in sys.argv[6:]]
r = json.load(open(results))["runs"][0]["result"]
requests = r["lookups"] * 2
print()
print(f"| load | requests | wrong | failed | 503 (all with Retry-After, retried) | 503 without Retry-After | retried ok | 410 resyncs | final placement = desired |")
print(f"|---|---|---|---|---|---|---|---|---|")
print(f"| {end - start:.0f} s, {r['lookups']} lookups | {requests} | {r['mismatches']} | {r['errors']} | {r['unavailable']} | {r['unavailableWithoutRetryAfter']} | {r['retriedSucceeded']} | {r['configRefreshes']} | {final} |")
print()
print("| fault | converged after (s) |")
print("|---|---|")
for fault, took in faults: print(f"| {fault} | {took} |")
print(f"| max | {max(float(t) for _, t in faults):.1f} |")
for p in r["problems"]: print("problem:", p)
ok = rc == 0 and r["mismatches"] == 0 and r["errors"] == 0 and r["unavailableWithoutRetryAfter"] == 0 and final == "True"
sys.exit(0 if ok else 1)
PY
echo "chaos: PASS (0 wrong answers; every failure a 503 with Retry-After that succeeded when retried; final placement = desired)"
