#!/usr/bin/env bash
# Three network namespaces on one machine (a coordinator and workers, veth links to a bridge, real TCP with
# CURVE): start the cluster, run queries, kill a worker, check queries still succeed, start a third worker and
# check that shards move to it. Needs root (ip netns). `make cluster-test` runs it.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
source cluster/netns-lib.sh
tag=netns-test
ns=(cvcoord cvw1 cvw2 cvw3)
ips=(10.77.0.1 10.77.0.2 10.77.0.3 10.77.0.4)
bridge=cvbr0 bridge_ip=10.77.0.254
netns_build
trap netns_cleanup EXIT

# A Z85 key may begin with '-' (1 key in 85): the worker must take it as --server-key's value, not as an option.
# Here the parse succeeds and the run stops at the missing key file.
dash_key="-$(printf '0%.0s' $(seq 39))"
if "$bin" worker --coordinator tcp://127.0.0.1:1 --server-key "$dash_key" --key-file "$work/absent.key" \
    --data-dir "$work/unused" 2>&1 | grep -q "Missing value"; then
  echo "$tag: FAIL (a server key beginning with '-' is not accepted)"; exit 1
fi
netns_up

# Data: a demo dataset processed into shards (4 block shards, 2 identity shards).
"$bin" generate-demo --count 2000 --output "$work/identities.csv" 2>/dev/null
"$bin" build-db --input "$work/identities.csv" --output "$work" 2>/dev/null
"$bin" process-db --input "$work/block.binpb" --output "$work/block" --shard-count 4 --fixed-bucket-count 1024 2>/dev/null
"$bin" process-db --input "$work/identity.binpb" --output "$work/identity" --shard-count 2 2>/dev/null
netns_service_config

netns_keys w1 w2 w3
netns_cluster_yaml w1 w2 w3
netns_start_coordinator
netns_start_worker w1 cvw1
netns_start_worker w2 cvw2

placed() { [ "$(shards_on w1)" -ge 6 ] && [ "$(shards_on w2)" -ge 6 ]; }
wait_for "the coordinator" health
wait_for "shards on w1 and w2" placed

mapfile -t samples < "$work/sample-numbers.txt"
query() {
  "$bin" query --url "$url" --user-token AAAA --number "${samples[0]}" --number "${samples[3]}" > "$work/query.out"
  grep -q "BLOCKED" "$work/query.out" && grep -q 'identity: name' "$work/query.out" && grep -q "block: not listed" "$work/query.out"
}
query || { echo "netns cluster test: FAIL (queries before the kill)"; cat "$work/query.out"; exit 1; }

kill -9 "${worker_pid[w1]}"
for i in 1 2 3; do query || { echo "netns cluster test: FAIL (query $i after killing w1)"; cat "$work/query.out"; exit 1; }; done
dead() { [ "$(health_field "'w1' in h['executor']['workers']")" = False ]; }
wait_for "w1 to be declared dead" dead

netns_start_worker w3 cvw3
moved() { [ "$(shards_on w3)" -ge 1 ]; }
wait_for "shards to move to w3" moved
query || { echo "netns cluster test: FAIL (queries with w3)"; exit 1; }
echo "netns cluster test: PASS (2 workers placed 6 shards × 2, queries ok; w1 killed: 3/3 queries ok; w3 joined and holds $(shards_on w3) shards; w2 holds $(shards_on w2))"
