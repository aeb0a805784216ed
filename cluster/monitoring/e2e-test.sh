#!/usr/bin/env bash
# The monitoring kit against a running cluster, on loopback: a real Prometheus (Debian's) scrapes a coordinator,
# a worker and the canary with callveil-rules.yml loaded; every /metrics passes `promtool check metrics`; the
# canary's lookups succeed; the worker is killed and CallVeilShardWithoutReplica must reach the firing state in
# Prometheus's own API; every PromQL expression of grafana-dashboard.json must evaluate without error there.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
kit="$top/cluster/monitoring"
for tool in prometheus promtool curl python3; do
  command -v "$tool" >/dev/null || { echo "monitoring: $tool is missing (apt-get install prometheus)"; exit 1; }
done
swift build --product callveil 2>&1 | grep -E "error|Build" | tail -1
bin="$(swift build --show-bin-path)/callveil"
work=$(mktemp -d /tmp/callveil-monitoring.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]:-}"; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  if [ -n "${KEEP_WORK:-}" ]; then echo "monitoring: work directory kept in $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() { echo "monitoring: FAIL: $*"; for f in "$work"/*.log; do echo "--- $f"; tail -15 "$f"; done; exit 1; }

read -r http admin zmq wadmin canary prom < <(python3 - <<'PY'
import socket
socks = [socket.socket() for _ in range(6)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])
PY
)

# A small dataset with Apple's test identity, a service config with the gateway, CURVE keys and cluster.yaml.
"$bin" generate-demo --count 400 --with-test-identity --output "$work/identities.csv" 2>/dev/null
"$bin" build-db --input "$work/identities.csv" --output "$work" >/dev/null 2>&1
"$bin" process-db --input "$work/block.binpb" --output "$work/block" --shard-count 2 >/dev/null 2>&1
"$bin" process-db --input "$work/identity.binpb" --output "$work/identity" --shard-count 1 >/dev/null 2>&1
python3 - cluster/demo/service-config.json "$work/service-config.json" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config["gateway"] = {}
json.dump(config, open(sys.argv[2], "w"), indent=2)
PY
coordinator_key=$("$bin" keygen --output "$work/coordinator.key")
worker_key=$("$bin" keygen --output "$work/w1.key")
cat > "$work/cluster.yaml" <<YAML
service: service-config.json
host: 127.0.0.1
port: $http
bind: tcp://127.0.0.1:$zmq
keyFile: coordinator.key
replication: 2
heartbeatTimeoutSeconds: 3
workers:
  - { id: w1, publicKey: "$worker_key" }
YAML

"$bin" coordinator --config "$work/cluster.yaml" --admin-port "$admin" > "$work/coordinator.log" 2>&1 &
pids+=($!)
"$bin" worker --coordinator "tcp://127.0.0.1:$zmq" --server-key "$coordinator_key" --key-file "$work/w1.key" --id w1 \
  --data-dir "$work/w1" --admin-port "$wadmin" > "$work/worker.log" 2>&1 &
worker=$!
pids+=($worker)
ready=""
for _ in $(seq 1 240); do
  if curl -sf "http://127.0.0.1:$admin/readyz" >/dev/null 2>&1; then ready=1; break; fi
  sleep 0.5
done
[ -n "$ready" ] || fail "the coordinator did not become ready"
"$bin" canary --url "http://127.0.0.1:$http" --gateway-url "http://127.0.0.1:$http/ohttp-gateway" --user-token AAAA \
  --interval 2 --metrics-port "$canary" > "$work/canary.log" 2>&1 &
pids+=($!)

# Each process's exposition passes promtool's lint (HELP on every family, counters ending in _total, base units).
sleep 5
for target in "$admin" "$wadmin" "$canary"; do
  curl -sf "http://127.0.0.1:$target/metrics" > "$work/metrics-$target.txt" || fail "no /metrics on port $target"
  promtool check metrics < "$work/metrics-$target.txt" || fail "promtool check metrics refused port $target's exposition"
done
echo "monitoring: promtool check metrics passed for the coordinator, the worker and the canary"

cat > "$work/prometheus.yml" <<YAML
global: { scrape_interval: 1s, evaluation_interval: 1s }
rule_files: ["$kit/callveil-rules.yml"]
scrape_configs:
  - { job_name: callveil, static_configs: [{ targets: ["127.0.0.1:$admin"] }] }
  - { job_name: callveil-worker, static_configs: [{ targets: ["127.0.0.1:$wadmin"] }] }
  - { job_name: callveil-canary, static_configs: [{ targets: ["127.0.0.1:$canary"] }] }
YAML
promtool check config "$work/prometheus.yml" >/dev/null || fail "the test's prometheus.yml does not check"
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$prom" > "$work/prometheus.log" 2>&1 &
pids+=($!)
api="http://127.0.0.1:$prom/api/v1"

# query <promql>: the result vector as JSON (fails on an API error).
query() { curl -sf --get "$api/query" --data-urlencode "query=$1"; }
value_of() { query "$1" | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "none")'; }
wait_for() {  # wait_for <seconds> <description> <promql whose first value must be 1>
  local deadline=$((SECONDS + $1))
  while [ $SECONDS -lt $deadline ]; do
    [ "$(value_of "$3" 2>/dev/null || echo none)" = "1" ] && return 0
    sleep 1
  done
  fail "$2 (waited $1 s for: $3)"
}
wait_for 60 "Prometheus did not see all three targets up" 'count(up == 1) == bool 3'
wait_for 60 "the canary's lookups did not succeed" 'callveil_canary_up'
wait_for 30 "the coordinator did not report its shards served" 'callveil_cluster_shards_unserved == bool 0'
firing() { curl -sf "$api/alerts" | python3 -c 'import json,sys
alerts=json.load(sys.stdin)["data"]["alerts"]
print(" ".join(sorted(a["labels"]["alertname"]+":"+a["state"] for a in alerts)))'; }
before=$(firing)
case "$before" in *CallVeilShardWithoutReplica*) fail "CallVeilShardWithoutReplica active before any fault: $before";; esac
echo "monitoring: targets up, canary ok, no shard alert (alerts: ${before:-none})"

# Every expression of the dashboard evaluates against this Prometheus.
python3 - "$kit/grafana-dashboard.json" "$api" <<'PY' || fail "a dashboard expression did not evaluate"
import json, sys, urllib.parse, urllib.request
dashboard, api = json.load(open(sys.argv[1])), sys.argv[2]
exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
bad = []
for e in exprs:
    try:
        with urllib.request.urlopen(api + "/query?" + urllib.parse.urlencode({"query": e}), timeout=10) as r:
            body = json.load(r)
        if body.get("status") != "success": bad.append((e, body))
    except Exception as error:
        bad.append((e, getattr(error, "read", lambda: str(error).encode())().decode(errors="replace")))
for e, why in bad: print("dashboard expression failed:", e, why)
print(f"monitoring: {len(exprs) - len(bad)} of {len(exprs)} dashboard expressions evaluated")
sys.exit(1 if bad else 0)
PY

# The fault: the only worker dies. The shard alert must fire (30 s `for`, after the 3 s heartbeat timeout).
kill -9 "$worker"
wait "$worker" 2>/dev/null || true
killed=$SECONDS
deadline=$((SECONDS + 120))
state=""
while [ $SECONDS -lt $deadline ]; do
  state=$(firing)
  case "$state" in *CallVeilShardWithoutReplica:firing*) break;; esac
  sleep 1
done
case "$state" in *CallVeilShardWithoutReplica:firing*) ;; *) fail "CallVeilShardWithoutReplica did not fire within 120 s of the kill (alerts: $state)";; esac
echo "monitoring: CallVeilShardWithoutReplica firing $((SECONDS - killed)) s after the worker was killed (alerts: $state)"
wait_for 60 "the canary did not report the failing lookups" 'callveil_canary_up == bool 0'
echo "monitoring: PASS"
