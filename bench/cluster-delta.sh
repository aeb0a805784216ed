#!/usr/bin/env bash
# A 0.1% data update through the netns cluster (needs root for ip netns): a coordinator and one worker, each in a
# network namespace of its own (real TCP, CURVE), serve the 10 M-number dataset of bench/dataset-scale.sh; the
# update (that script's 0.1% deltas, applied in place) is swapped in and the coordinator reloaded (SIGHUP).
# Phones' lookups (`callveil query`, sample numbers the update removes, changes and adds, and unchanged ones) are
# checked before (old answers), during (old or new, never anything else) and after convergence (new answers).
# Prints the compressed bytes the coordinator sent the worker for the update, whole and as patches, against the
# bytes of the plaintexts that changed, and the time to converge (bench/README.md, Data updates through a cluster).
#
#   bash bench/cluster-delta.sh [DATASET]     (default /tmp/callveil-scale, made by bench/dataset-scale.sh)
#
# DELTA_SAMPLES (20 changed and 20 unchanged numbers), DELTA_BUILD (release), DELTA_SEED (sample choice; printed).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
data=$(cd "${1:-/tmp/callveil-scale}" && pwd)
for d in block identity block-0.1pct identity-0.1pct; do
  [ -f "$data/$d/shard.manifest.json" ] || { echo "no $data/$d: run bench/dataset-scale.sh first"; exit 1; }
done
source cluster/netns-lib.sh
tag=cluster-delta
ns=(cdcoord cdw1)
ips=(10.81.0.1 10.81.0.2)  # apart from the netns tests' and the replay's
bridge=cdbr0 bridge_ip=10.81.0.254
CALLVEIL_BUILD=${DELTA_BUILD:-release}
seed=${DELTA_SEED:-$RANDOM}
check=(python3 "$top/bench/delta_check.py")
netns_build
trap netns_cleanup EXIT
netns_up

# The base version, as hard links (the update writes new files beside the ones it keeps).
cp -al "$data/block" "$work/block"
cp -al "$data/identity" "$work/identity"
netns_service_config
netns_keys w1
netns_cluster_yaml w1
echo "sample seed $seed (DELTA_SEED=$seed repeats the choice)"
"${check[@]}" samples "$data" "${DELTA_SAMPLES:-20}" "$seed" "$work/numbers"
mapfile -t numbers < "$work/numbers"
args=(); for n in "${numbers[@]}"; do args+=(--number "$n"); done
query() { "$bin" query --url "$url" --user-token AAAA --timeout 600 "${args[@]}" > "$1" 2>>"$work/query.log"; }
metric() { curl -sf --max-time 5 "$admin_url/metrics" | awk -v s="$1" '$1 == s { print $2 }'; }
bytes() { local v; v=$(metric "callveil_cluster_transfer_bytes_total{kind=\"$1\"}"); echo "${v:-0}"; }
rss() { awk '/VmRSS/ { print int($2 / 1024) }' "/proc/${worker_pid[w1]}/status"; }
generation() { health_field "h['executor']['desiredGeneration']"; }
placed() { converged && [ "$(shards_on w1)" -ge 1 ]; }

t0=$(now)
netns_start_coordinator
netns_start_worker w1 cdw1
wait_seconds=300 wait_for "the coordinator" health
wait_seconds=1800 wait_for "the first placement" placed
t1=$(now)
first_whole=$(bytes whole)
printf 'initial placement: %.0f s, %s MiB sent whole, worker RSS %s MiB\n' "$(echo "$t1 - $t0" | bc)" "$(( ${first_whole%.*} >> 20 ))" "$(rss)"
query "$work/before.out"
"${check[@]}" check "$work/numbers.json" before "$work/before.out"

# The update: both use cases' 0.1% versions swapped in, then SIGHUP.
g=$(generation)
whole0=$(bytes whole) patch0=$(bytes patch)
for u in block identity; do
  cp -al "$data/$u-0.1pct" "$work/$u.new"
  mv "$work/$u" "$work/$u.old" && mv "$work/$u.new" "$work/$u"
done
t2=$(now)
kill -HUP "$coordinator_pid"
# Phones keep looking up while the cluster converges.
( i=0; while [ ! -f "$work/stop-during" ]; do query "$work/during-$i.out" || true; i=$((i + 1)); done ) &
during_pid=$!
updated() { [ "$(generation)" -gt "$g" ] && converged; }
wait_seconds=1800 wait_for "the update to converge" updated
t3=$(now)
touch "$work/stop-during"; wait "$during_pid" || true
whole1=$(bytes whole) patch1=$(bytes patch)
query "$work/after.out"
"${check[@]}" check "$work/numbers.json" during "$work"/during-*.out
"${check[@]}" check "$work/numbers.json" after "$work/after.out"

changed_block=$("${check[@]}" changed "$work/block.old" "$work/block")
changed_identity=$("${check[@]}" changed "$work/identity.old" "$work/identity")
python3 - "$changed_block" "$changed_identity" "$whole0" "$whole1" "$patch0" "$patch1" "$(echo "$t3 - $t2" | bc)" "$(rss)" <<'PY'
import json, sys
b, i = json.loads(sys.argv[1]), json.loads(sys.argv[2])
whole0, whole1, patch0, patch1, seconds, rss = map(float, sys.argv[3:9])
plaintexts = b["plaintext_bytes"] + i["plaintext_bytes"]
files = b["shard_file_bytes"] + i["shard_file_bytes"]
moved = (whole1 - whole0) + (patch1 - patch0)
mib = lambda x: f"{x / 2**20:.1f} MiB"
print(f"update: {b['shards']} block and {i['shards']} identity shards changed; {b['plaintexts'] + i['plaintexts']} plaintexts changed ({mib(plaintexts)}); changed shard files {mib(files)}")
print(f"sent to the worker: {mib(patch1 - patch0)} as patches, {mib(whole1 - whole0)} whole; {moved / plaintexts:.2f}x the changed plaintexts (issue bound 1.5x), {moved / files:.3f}x the changed shard files")
print(f"converged {seconds:.1f} s after SIGHUP; worker RSS after {rss:.0f} MiB")
sys.exit(0 if moved <= 1.5 * plaintexts else 1)
PY
echo "$tag: PASS"
