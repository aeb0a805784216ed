#!/usr/bin/env bash
# Three network namespaces on one machine (a coordinator and workers, veth links to a bridge, real TCP with
# CURVE): start the cluster, run queries, kill a worker, check queries still succeed, start a third worker and
# check that shards move to it. Needs root (ip netns). `make cluster-test` runs it.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
swift build --product callveil 2>&1 | grep -E "error|Compiling|Build" | tail -1
bin="$(swift build --show-bin-path)/callveil"
work=$(mktemp -d /tmp/callveil-netns.XXXXXX)
ns=(cvcoord cvw1 cvw2 cvw3)
ips=(10.77.0.1 10.77.0.2 10.77.0.3 10.77.0.4)
pids=()
cleanup() {
  for p in "${pids[@]:-}"; do kill -9 "$p" 2>/dev/null || true; done
  for n in "${ns[@]}"; do ip netns del "$n" 2>/dev/null || true; done
  ip link del cvbr0 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
cleanup_links() { for n in "${ns[@]}"; do ip netns del "$n" 2>/dev/null || true; done; ip link del cvbr0 2>/dev/null || true; }
cleanup_links

# Network: a bridge in the root namespace (10.77.0.254, where the test client runs) and one veth per host.
ip link add cvbr0 type bridge
ip addr add 10.77.0.254/24 dev cvbr0
ip link set cvbr0 up
for i in "${!ns[@]}"; do
  n=${ns[$i]}
  ip netns add "$n"
  ip link add "v$n" type veth peer name eth0 netns "$n"
  ip link set "v$n" master cvbr0 up
  ip netns exec "$n" ip addr add "${ips[$i]}/24" dev eth0
  ip netns exec "$n" ip link set eth0 up
  ip netns exec "$n" ip link set lo up
done

# Data: a demo dataset processed into shards (4 block shards, 2 identity shards).
"$bin" generate-demo --count 2000 --output "$work/identities.csv" 2>/dev/null
"$bin" build-db --input "$work/identities.csv" --output "$work" 2>/dev/null
"$bin" process-db --input "$work/block.binpb" --output "$work/block" --shard-count 4 --fixed-bucket-count 1024 2>/dev/null
"$bin" process-db --input "$work/identity.binpb" --output "$work/identity" --shard-count 2 2>/dev/null
cp cluster/demo/service-config.json "$work/service-config.json"

# Keys: the coordinator's and each worker's CURVE pairs.
coordinator_key=$("$bin" keygen --output "$work/coordinator.key")
declare -A worker_key
for w in w1 w2 w3; do worker_key[$w]=$("$bin" keygen --output "$work/$w.key"); done
cat > "$work/cluster.yaml" <<YAML
service: service-config.json
host: ${ips[0]}
port: 8080
bind: tcp://${ips[0]}:5555
keyFile: coordinator.key
replication: 2
heartbeatTimeoutSeconds: 3
workers:
  - { id: w1, publicKey: "${worker_key[w1]}" }
  - { id: w2, publicKey: "${worker_key[w2]}" }
  - { id: w3, publicKey: "${worker_key[w3]}" }
YAML

ip netns exec cvcoord "$bin" coordinator --config "$work/cluster.yaml" --log-level warning 2>"$work/coordinator.log" &
pids+=($!)
disown
start_worker() {
  local w=$1 n=$2
  ip netns exec "$n" "$bin" worker --coordinator "tcp://${ips[0]}:5555" --server-key "$coordinator_key" \
    --key-file "$work/$w.key" --data-dir "$work/data-$w" --id "$w" --threads 1 --log-level warning 2>"$work/$w.log" &
  pids+=($!)
  eval "pid_$w=$!"
  disown
}
start_worker w1 cvw1
start_worker w2 cvw2

url="http://${ips[0]}:8080"
wait_for() {  # wait_for <description> <command...>
  local what=$1; shift
  for _ in $(seq 1 120); do if "$@" >/dev/null 2>&1; then return 0; fi; sleep 0.5; done
  echo "netns cluster test: FAIL (timed out waiting for $what)"; tail -5 "$work"/*.log; exit 1
}
health() { curl -sf "$url/healthz"; }
shards_on() { health | python3 -c "import json,sys; print(json.load(sys.stdin)['executor']['workers'].get('$1', 0))"; }
placed() { [ "$(shards_on w1)" -ge 6 ] && [ "$(shards_on w2)" -ge 6 ]; }
wait_for "the coordinator" health
wait_for "shards on w1 and w2" placed

mapfile -t samples < "$work/sample-numbers.txt"
query() {
  "$bin" query --url "$url" --user-token AAAA --number "${samples[0]}" --number "${samples[3]}" > "$work/query.out"
  grep -q "BLOCKED" "$work/query.out" && grep -q 'identity: name' "$work/query.out" && grep -q "block: not listed" "$work/query.out"
}
query || { echo "netns cluster test: FAIL (queries before the kill)"; cat "$work/query.out"; exit 1; }
before=$(health)

kill -9 "$pid_w1"
for i in 1 2 3; do query || { echo "netns cluster test: FAIL (query $i after killing w1)"; cat "$work/query.out"; exit 1; }; done
dead() { [ "$(health | python3 -c "import json,sys; print('w1' in json.load(sys.stdin)['executor']['workers'])")" = False ]; }
wait_for "w1 to be declared dead" dead

start_worker w3 cvw3
moved() { [ "$(shards_on w3)" -ge 1 ]; }
wait_for "shards to move to w3" moved
query || { echo "netns cluster test: FAIL (queries with w3)"; exit 1; }
echo "netns cluster test: PASS (2 workers placed 6 shards × 2, queries ok; w1 killed: 3/3 queries ok; w3 joined and holds $(shards_on w3) shards; w2 holds $(shards_on w2))"
