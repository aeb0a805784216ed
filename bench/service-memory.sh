#!/usr/bin/env bash
# Memory of `callveil serve` (release, the demo config, one embedded worker) on one dataset: the process's RSS
# (anonymous and file-backed) once every shard serves, and again after SERVICE_MEMORY_SECONDS of phones looking
# numbers up (every answer checked), with the server's CPU per request. Several server binaries (another commit's,
# SERVICE_MEMORY_BINS, space-separated) run side by side on the same processed dataset, one after the other in each of
# SERVICE_MEMORY_ROUNDS rounds, each from a fresh state directory. Prints one row per run (bench/README.md, Memory).
#
# SERVICE_MEMORY_COUNT numbers (200000), SERVICE_MEMORY_SECONDS (30), SERVICE_MEMORY_PHONES (4),
# SERVICE_MEMORY_ROUNDS (2), SERVICE_MEMORY_DIR keeps the dataset between runs, SERVICE_MEMORY_PORT (18700).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
count=${SERVICE_MEMORY_COUNT:-200000}
seconds=${SERVICE_MEMORY_SECONDS:-30}
phones=${SERVICE_MEMORY_PHONES:-4}
rounds=${SERVICE_MEMORY_ROUNDS:-2}
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

if [ ! -f "$work/dataset/identity/shard.manifest.json" ]; then
  mkdir -p "$work/dataset"
  "$bin" generate-demo --count "$count" --output "$work/dataset/identities.csv" > /dev/null
  "$bin" build-db --input "$work/dataset/identities.csv" --output "$work/dataset" > /dev/null
  "$bin" process-db --input "$work/dataset/block.binpb" --output "$work/dataset/block" > /dev/null 2>&1
  "$bin" process-db --input "$work/dataset/identity.binpb" --output "$work/dataset/identity" > /dev/null 2>&1
fi
python3 - "$work" "$admin" <<'PY'
import json, sys
work, admin = sys.argv[1], int(sys.argv[2])
config = json.load(open("cluster/demo/service-config.json"))
for u in config["usecases"]:
    u["fileStem"] = f"{work}/dataset/{u['fileStem']}"
config["stateDirectory"] = f"{work}/state"
config["keys"]["database"] = f"{work}/state/keys.sqlite"
config["http"] = {"adminPort": admin}
config.pop("gateway", None)
json.dump(config, open(f"{work}/service-config.json", "w"), indent=1)
PY
compact=$(cat "$work"/dataset/{block,identity}/*.cvshard | wc -c)
echo "dataset: $count numbers, $(ls "$work"/dataset/{block,identity}/*.cvshard | wc -l) shard files, $((compact >> 20)) MiB of shard files"
rss() { awk '/^VmRSS|^RssAnon|^RssFile/ {printf "%s=%d ", $1, $2/1024}' "/proc/$1/status"; }
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
echo "| round | server | shard bytes held (MiB) | RSS loaded (MiB) | anon | file | RSS after load (MiB) | anon | file | requests | wrong | server CPU ms/request |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for round in $(seq 1 "$rounds"); do
  for b in "${bins[@]}"; do
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
    sleep 2
    held=$(curl -s "http://127.0.0.1:$admin/metrics" | awk '/^callveil_worker_shard_bytes/ {s += $2} END {printf "%d", s / 1048576}')
    loaded=$(rss "$server")
    cpu0=$(cpu "$server")
    "$bench_bin" bench --url "http://127.0.0.1:$port" --dataset "$work/dataset" --phones "$phones" --duration "$seconds" \
      --output "$work/out" --no-plots > "$work/bench.log" 2>&1 || { tail -20 "$work/bench.log"; exit 1; }
    cpu1=$(cpu "$server")
    after=$(rss "$server")
    read -r requests wrong < <(python3 -c "
import json; result = json.load(open('$work/out/results.json'))['runs'][0]['result']
print(result['lookups'] * 2, result['mismatches'])")
    ms=$(python3 -c "print(round(($cpu1 - $cpu0) * 1000 / $(getconf CLK_TCK) / max($requests, 1), 1))")
    l=($loaded); a=($after)
    printf "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" "$round" "$(basename "$b")" "$held" \
      "${l[0]#*=}" "${l[1]#*=}" "${l[2]#*=}" "${a[0]#*=}" "${a[1]#*=}" "${a[2]#*=}" "$requests" "$wrong" "$ms"
    kill "$server"; wait "$server" 2>/dev/null || true; server=""
  done
done
