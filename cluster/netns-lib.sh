# Shared by cluster/netns-test.sh and cluster/chaos.sh (sourced, not run): network namespaces joined by a
# bridge, the callveil binary, a cluster.yaml, workers started and killed, and waits on /healthz. Needs root.
# The caller sets: ns (namespace names, the coordinator first), ips (their addresses), bridge, bridge_ip, tag; and
# optionally server_pin (a command prefix for the cluster's processes, e.g. taskset -c 1) and worker_extra (more
# `callveil worker` arguments).

# CALLVEIL_BUILD=release builds and runs the release binary (benchmarks); the default is the debug build.
netns_build() {
  local flags=()
  if [ "${CALLVEIL_BUILD:-debug}" = release ]; then
    source "$(dirname "${BASH_SOURCE[0]}")/../scripts/release-flags.sh"
    flags=("${release_build[@]}")
  fi
  swift build "${flags[@]}" --product callveil 2>&1 | grep -E "error|Build" | tail -1
  swift build "${flags[@]}" --product callveil-bench 2>&1 | grep -E "error|Build" | tail -1
  bin="$(swift build "${flags[@]}" --show-bin-path)/callveil"
  bench_bin="$(swift build "${flags[@]}" --show-bin-path)/callveil-bench"
  work=$(mktemp -d "/tmp/callveil-$tag.XXXXXX")
  pids=()
  declare -gA worker_pid worker_key
}

netns_down() {
  for n in "${ns[@]}"; do ip netns del "$n" 2>/dev/null || true; ip link del "v$n" 2>/dev/null || true; done
  ip link del "$bridge" 2>/dev/null || true
}

netns_cleanup() {
  for p in "${pids[@]:-}"; do kill -9 "$p" 2>/dev/null || true; done
  netns_down
  if [ -n "${keep_work:-}" ]; then echo "$tag: work directory kept in $work"; else rm -rf "$work"; fi
}

# A bridge in the root namespace (bridge_ip, where test clients run) and one veth per namespace.
netns_up() {
  netns_down
  ip link add "$bridge" type bridge
  ip addr add "$bridge_ip/24" dev "$bridge"
  ip link set "$bridge" up
  for i in "${!ns[@]}"; do
    local n=${ns[$i]}
    ip netns add "$n"
    ip link add "v$n" type veth peer name eth0 netns "$n"
    ip link set "v$n" master "$bridge" up
    ip netns exec "$n" ip addr add "${ips[$i]}/24" dev eth0
    ip netns exec "$n" ip link set eth0 up
    ip netns exec "$n" ip link set lo up
  done
  url="http://${ips[0]}:8080"
  admin_url="http://${ips[0]}:9090"
}

# netns_service_config: the demo service config with the admin listener (/healthz, /metrics) on the
# coordinator's address, where the root namespace reaches it.
netns_service_config() {
  python3 - cluster/demo/service-config.json "$work/service-config.json" "${ips[0]}" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config.setdefault("http", {})["adminHost"] = sys.argv[3]
json.dump(config, open(sys.argv[2], "w"), indent=2)
PY
}

# netns_keys <worker ids…>: the coordinator's and each worker's CURVE key pair.
netns_keys() {
  coordinator_key=$("$bin" keygen --output "$work/coordinator.key")
  for w in "$@"; do worker_key[$w]=$("$bin" keygen --output "$work/$w.key"); done
}

# netns_cluster_yaml <listed worker ids…>: (re)writes cluster.yaml with only those workers on the allow-list.
netns_cluster_yaml() {
  {
    echo "service: service-config.json"
    echo "host: ${ips[0]}"
    echo "port: 8080"
    echo "bind: tcp://${ips[0]}:5555"
    echo "keyFile: coordinator.key"
    echo "replication: 2"
    echo "heartbeatTimeoutSeconds: 3"
    echo "workers:"
    for w in "$@"; do echo "  - { id: $w, publicKey: \"${worker_key[$w]}\" }"; done
  } > "$work/cluster.yaml.new"
  mv "$work/cluster.yaml.new" "$work/cluster.yaml"
}

netns_start_coordinator() {
  ${server_pin[@]+"${server_pin[@]}"} ip netns exec "${ns[0]}" "$bin" coordinator --config "$work/cluster.yaml" --log-level warning 2>>"$work/coordinator.log" &
  coordinator_pid=$!
  pids+=("$coordinator_pid")
  disown
}

# netns_start_worker <id> <namespace>: a worker process with its own data directory (kept across restarts).
netns_start_worker() {
  local w=$1 n=$2
  ${server_pin[@]+"${server_pin[@]}"} ip netns exec "$n" "$bin" worker --coordinator "tcp://${ips[0]}:5555" --server-key "$coordinator_key" \
    --key-file "$work/$w.key" --data-dir "$work/data-$w" --id "$w" --threads 1 --log-level warning \
    ${worker_extra[@]+"${worker_extra[@]}"} 2>>"$work/$w.log" &
  worker_pid[$w]=$!
  pids+=("$!")
  disown
}

# wait_for <description> <command…>: polls every 0.2 s for up to wait_seconds (60) s; fails the run on timeout.
wait_for() {
  local what=$1; shift
  for _ in $(seq 1 $(( ${wait_seconds:-60} * 5 ))); do if "$@" >/dev/null 2>&1; then return 0; fi; sleep 0.2; done
  echo "$tag: FAIL (timed out waiting for $what)"; tail -n 5 "$work"/*.log; exit 1
}

health() { curl -sf --max-time 5 "$admin_url/healthz"; }
# health_field <python expression on h, the /healthz JSON>
health_field() { health | python3 -c "import json,sys; h=json.load(sys.stdin); print($1)"; }
shards_on() { health_field "h['executor']['workers'].get('$1', 0)"; }
converged() { [ "$(health_field "h['executor']['converged']")" = True ]; }
now() { date +%s.%N; }
