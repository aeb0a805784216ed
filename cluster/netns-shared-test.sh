#!/usr/bin/env bash
# Two coordinators on one PostgreSQL (`make cluster-test`; needs root for ip netns). Coordinators A and B and
# workers w1 and w2 in network namespaces (real TCP, CURVE), PostgreSQL on the bridge; every worker connects to
# both coordinators. Checks, in order:
#   1. one coordinator leads placement, the other follows; shards are placed on both workers;
#   2. the same Privacy Pass token presented at A and B at the same moment is accepted exactly once (100 trials);
#   3. under load from `callveil-bench bench` (phones live at A or B and upload their keys through the other), the
#      leader is killed with SIGKILL: the survivor leads within 10 s, no lookup through the survivor fails, the
#      lookups through the dead one fail only without an HTTP answer, and no answer is wrong;
#   4. the dead coordinator restarts and rejoins as a follower, and lookups through it succeed again.
#   CALLVEIL_SEED  seed of the phones' numbers (default: random, printed)
# With the argument `bench` it stops after step 1 and measures instead: lookups/s and latency with one and with
# two coordinators in front of the same workers, interleaved (one, two, one, two), CALLVEIL_BENCH_SECONDS each
# (default 30) with CALLVEIL_BENCH_PHONES phones (default 4); prints a table (bench/README.md records one, with
# CALLVEIL_BUILD=release).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
source cluster/netns-lib.sh
source scripts/pg-temp.sh
tag=netns-shared
ns=(cvsa cvsb cvsw1 cvsw2)
ips=(10.79.0.1 10.79.0.2 10.79.0.3 10.79.0.4)
bridge=cvsbr0 bridge_ip=10.79.0.254
seed=${CALLVEIL_SEED:-$(( (RANDOM << 15) | RANDOM ))}
echo "$tag: seed $seed (CALLVEIL_SEED=$seed to repeat)"
netns_build
cleanup() { netns_cleanup; pg_temp_stop; }
trap cleanup EXIT
netns_up
fail() { echo "$tag: FAIL ($*)"; tail -n 8 "$work"/*.log 2>/dev/null; exit 1; }
declare -A door=([a]="http://${ips[0]}:8080" [b]="http://${ips[1]}:8080")
declare -A admin=([a]="http://${ips[0]}:9090" [b]="http://${ips[1]}:9090")
declare -A host_ns=([a]=${ns[0]} [b]=${ns[1]})
declare -A coordinator_pid

# PostgreSQL on the bridge address, reachable from every namespace.
pg_temp_start 55479 "$bridge_ip"
database_url=$(pg_temp_createdb callveil_shared)
echo "$pg_temp_password" > "$work/db.password"
"$bin" store-key --output "$work/store.kek" >/dev/null

"$bin" generate-demo --count 2000 --output "$work/identities.csv" 2>/dev/null
"$bin" build-db --input "$work/identities.csv" --output "$work" 2>/dev/null
"$bin" process-db --input "$work/block.binpb" --output "$work/block" --shard-count 4 --fixed-bucket-count 1024 2>/dev/null
"$bin" process-db --input "$work/identity.binpb" --output "$work/identity" --shard-count 2 2>/dev/null

# One CURVE key pair for both coordinators (workers give one --server-key for all), one for each worker.
netns_keys w1 w2
for c in a b; do
  i=$([ $c = a ] && echo 0 || echo 1)
  python3 - cluster/demo/service-config.json "$work/service-$c.json" "${ips[$i]}" "${database_url%%\?*}" "$work" <<'PY'
import json, sys, urllib.parse
config = json.load(open(sys.argv[1]))
config.setdefault("http", {})["adminHost"] = sys.argv[3]
url = urllib.parse.urlsplit(sys.argv[4])
# The password comes from a file, not the URL.
config["database"] = {"url": f"postgres://{url.username}@{url.hostname}:{url.port}{url.path}?sslmode=disable",
                      "passwordFile": f"{sys.argv[5]}/db.password", "keyEncryptionKeyFile": f"{sys.argv[5]}/store.kek",
                      "poolSize": 8, "operationTimeoutSeconds": 3}
json.dump(config, open(sys.argv[2], "w"), indent=2)
PY
  {
    echo "service: service-$c.json"
    echo "name: coordinator-$c"
    echo "host: ${ips[$i]}"
    echo "port: 8080"
    echo "bind: tcp://${ips[$i]}:5555"
    echo "keyFile: coordinator.key"
    echo "replication: 2"
    echo "heartbeatTimeoutSeconds: 3"
    echo "workers:"
    for w in w1 w2; do echo "  - { id: $w, publicKey: \"${worker_key[$w]}\" }"; done
  } > "$work/cluster-$c.yaml"
done

start_coordinator() {
  ip netns exec "${host_ns[$1]}" "$bin" coordinator --config "$work/cluster-$1.yaml" --log-level notice 2>>"$work/coordinator-$1.log" &
  coordinator_pid[$1]=$!
  pids+=("$!")
  disown
}
start_worker() {
  ip netns exec "$2" "$bin" worker --coordinator "tcp://${ips[0]}:5555" --coordinator "tcp://${ips[1]}:5555" \
    --server-key "$coordinator_key" --key-file "$work/$1.key" --data-dir "$work/data-$1" --id "$1" --threads 1 \
    --log-level warning 2>>"$work/$1.log" &
  pids+=("$!")
  disown
}
health_of() { curl -sf --max-time 3 "${admin[$1]}/healthz"; }
field_of() { health_of "$1" | python3 -c "import json,sys; h=json.load(sys.stdin); print($2)"; }
leads() { [ "$(field_of "$1" "h['executor']['placementLeader']")" = True ]; }
up() { health_of "$1" >/dev/null; }

start_coordinator a
start_coordinator b
wait_for "coordinator A" up a
wait_for "coordinator B" up b
start_worker w1 "${ns[2]}"
start_worker w2 "${ns[3]}"
one_leader() { local n=0; leads a && n=$((n + 1)); leads b && n=$((n + 1)); [ $n = 1 ]; }
wait_for "exactly one placement leader" one_leader
if leads a; then leader=a follower=b; else leader=b follower=a; fi
placed() {
  [ "$(field_of $leader "h['executor']['workers'].get('w1', 0)")" -ge 6 ] && [ "$(field_of $leader "h['executor']['workers'].get('w2', 0)")" -ge 6 ] \
    && [ "$(field_of $leader "h['executor']['converged']")" = True ] && [ "$(field_of $follower "h['executor']['converged']")" = True ]
}
wait_for "shards on w1 and w2, as both coordinators see it" placed
echo "$tag: coordinator-$leader leads, coordinator-$follower follows; 6 shards × 2 placed"

if [ "${1:-}" = bench ]; then
  seconds=${CALLVEIL_BENCH_SECONDS:-30} phones=${CALLVEIL_BENCH_PHONES:-4}
  echo "| round | front doors | lookups/s | lookup p50 ms | lookup p99 ms | block p50/p99 ms | wrong | errors |"
  echo "|---|---|---|---|---|---|---|---|"
  for round in 1 2 3 4; do
    if [ $((round % 2)) = 1 ]; then urls=(--url "${door[a]}"); doors="A"; else urls=(--url "${door[a]}" --url "${door[b]}"); doors="A + B"; fi
    "$bench_bin" bench "${urls[@]}" --dataset "$work" --phones "$phones" --duration "$seconds" --seed "$((seed + round))" \
      --output "$work/bench-$round" --no-plots >/dev/null 2>"$work/bench-$round.err" || fail "bench round $round"
    python3 - "$work/bench-$round/results.json" "$round" "$doors" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]["result"]
def p(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(round((len(v) - 1) * q)))] * 1000 if v else float("nan")
print(f"| {sys.argv[2]} | {sys.argv[3]} | {r['lookups'] / r['seconds']:.2f} | {p(r['lookupLatencies'], .5):.0f} | {p(r['lookupLatencies'], .99):.0f} "
      f"| {p(r['blockLatencies'], .5):.0f}/{p(r['blockLatencies'], .99):.0f} | {r['mismatches']} | {r['errors']} |")
PY
  done
  exit 0
fi

# 2. One token at A and B at the same moment: accepted exactly once.
"$bench_bin" token-race --url "${door[a]}" --url "${door[b]}" --trials 100 | tee "$work/token-race.out" || fail "token race"

# 3. Kill the leader under load.
"$bench_bin" bench --url "${door[a]}" --url "${door[b]}" --dataset "$work" --phones 4 --duration 24 --seed "$seed" \
  --tolerate-connection-errors --output "$work/bench" --no-plots >"$work/bench.out" 2>"$work/bench.err" &
bench_pid=$!
pids+=("$bench_pid")
wait_for "the bench to start measuring" grep -q "lookups" "$work/bench.err"
sleep 6
kill -9 "${coordinator_pid[$leader]}"
killed_at=$(now)
takeover=""
for _ in $(seq 1 100); do
  if leads $follower; then takeover=$(python3 -c "print(f'{$(now) - $killed_at:.2f}')"); break; fi
  sleep 0.1
done
[ -n "$takeover" ] || fail "coordinator-$follower did not take over placement within 10 s"
echo "$tag: coordinator-$leader killed under load; coordinator-$follower leads after $takeover s"

# 4. The dead one restarts (while the load still runs) and follows.
sleep 4
start_coordinator $leader
wait_for "coordinator-$leader back" up $leader
follows() { ! leads $leader && leads $follower && [ "$(field_of $leader "h['executor']['desiredShards']")" -ge 6 ] \
  && [ "$(field_of $leader "h['executor']['workers'].get('w1', 0)")" -ge 6 ]; }
wait_for "coordinator-$leader to rejoin as a follower" follows
echo "$tag: coordinator-$leader restarted and follows coordinator-$follower"
bench_rc=0
wait "$bench_pid" || bench_rc=$?
# After the restart, lookups through it succeed again.
"$bin" query --url "${door[$leader]}" --user-token AAAA --number "$(sed -n 1p "$work/sample-numbers.txt")" > "$work/query.out" \
  || fail "a lookup through the restarted coordinator-$leader"

python3 - "$work/bench/results.json" "${door[$leader]}" "${door[$follower]}" "$bench_rc" <<'PY' || fail "see above (bench exit $bench_rc)"
import json, sys
results = json.load(open(sys.argv[1]))
dead, survivor, rc = sys.argv[2], sys.argv[3], int(sys.argv[4])
run = results["runs"][0]["result"]
targets = run["targets"]
print(f"| front door | lookups | wrong | errors | no HTTP answer |")
print(f"|---|---|---|---|---|")
for name, t in sorted(targets.items()):
    role = "killed leader" if name == dead else "survivor"
    print(f"| {name} ({role}) | {t['lookups']} | {t['mismatches']} | {t['errors']} | {t['connectionErrors']} |")
s, d = targets.get(survivor, {}), targets.get(dead, {})
problems = []
if run["mismatches"]: problems.append(f"{run['mismatches']} wrong answers")
if s.get("errors", 1): problems.append(f"{s.get('errors', 'no')} lookups through the survivor failed")
if d.get("errors", 0) != d.get("connectionErrors", 0): problems.append("a lookup through the killed coordinator failed with an HTTP answer")
if s.get("lookups", 0) == 0: problems.append("no lookups through the survivor")
if rc: problems.append(f"bench exit {rc}")
for p in run.get("problems", [])[:5]: print("  ", p)
if problems:
    print("; ".join(problems)); sys.exit(1)
PY
echo "$tag: PASS (token race 100/100 once; leader killed under load, takeover in $takeover s, 0 failed through the survivor, 0 wrong; the killed coordinator rejoined as a follower)"
