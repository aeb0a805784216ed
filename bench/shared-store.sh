#!/usr/bin/env bash
# The cost of the shared store: `callveil serve` (release build, the demo config, Privacy Pass on) on a demo
# dataset, loaded by `callveil-bench bench --url` (closed loop, every answer decrypted and checked), once with the SQLite
# stores and once with the PostgreSQL store (a private server from scripts/pg-temp.sh, with pg_stat_statements),
# interleaved ROUNDS times. Prints lookups/s and p50/p99 of each run, and PostgreSQL statements and server time
# per PIR request. SHARED_BENCH_SECONDS, SHARED_BENCH_PHONES, SHARED_BENCH_ROUNDS tune it. Results: bench/README.md.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
source scripts/pg-temp.sh
seconds=${SHARED_BENCH_SECONDS:-20}
phones=${SHARED_BENCH_PHONES:-4}
rounds=${SHARED_BENCH_ROUNDS:-2}
port=18181 admin=19191 pgport=15433
source scripts/release-flags.sh
swift build "${release_build[@]}" --product callveil 2>&1 | grep -E "error|complete" || true
swift build "${release_build[@]}" --product callveil-bench 2>&1 | grep -E "error|complete" || true
bin="$(swift build "${release_build[@]}" --show-bin-path)/callveil"
bench_bin="$(swift build "${release_build[@]}" --show-bin-path)/callveil-bench"
work=$(mktemp -d /tmp/callveil-shared-bench.XXXXXX)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; pg_temp_stop; rm -rf "$work"; }
trap cleanup EXIT

"$bin" generate-demo --count 3000 --output "$work/identities.csv" > /dev/null
"$bin" build-db --input "$work/identities.csv" --output "$work" > /dev/null
"$bin" process-db --input "$work/block.binpb" --output "$work/block" --shard-count 2 --fixed-bucket-count 2048 > /dev/null
"$bin" process-db --input "$work/identity.binpb" --output "$work/identity" --entries-per-shard 1000 > /dev/null
pg_temp_start "$pgport" 127.0.0.1 -c shared_preload_libraries=pg_stat_statements
pg_temp_psql "CREATE EXTENSION pg_stat_statements" > /dev/null
database_url=$(pg_temp_createdb bench)
echo "$pg_temp_password" > "$work/db.password"
"$bin" store-key --output "$work/store.kek"

# Two configs over the same data: SQLite files (the default) and the shared store.
python3 - "$work" "$admin" "${database_url/callveil:$pg_temp_password@/callveil@}" <<'PY'
import json, sys
work, admin, url = sys.argv[1], int(sys.argv[2]), sys.argv[3]
config = json.load(open("cluster/demo/service-config.json"))
config["http"] = {"adminPort": admin}
for store in ("sqlite", "postgres"):
    c = json.loads(json.dumps(config))
    c["keys"]["database"] = f"{work}/keys-{store}.sqlite"
    c["privacyPass"] = {"keyDirectory": f"{work}/issuer-keys-{store}", "nonceDatabase": f"{work}/nonces-{store}.sqlite"}
    if store == "postgres":
        c["database"] = {"url": url, "passwordFile": f"{work}/db.password", "keyEncryptionKeyFile": f"{work}/store.kek", "poolSize": 8}
    c["usecases"] = [dict(u, fileStem=f"{work}/" + u["fileStem"]) for u in c["usecases"]]
    json.dump(c, open(f"{work}/config-{store}.json", "w"), indent=2)
PY

run() {  # run <store> <round>
  local store=$1 round=$2
  "$bin" serve --config "$work/config-$store.json" --port "$port" --log-level warning &
  pid=$!
  for _ in $(seq 1 120); do curl -sf "http://127.0.0.1:$admin/healthz" > /dev/null 2>&1 && break; sleep 0.5; done
  [ "$store" = postgres ] && pg_temp_psql "SELECT pg_stat_statements_reset()" > /dev/null
  "$bench_bin" bench --url "http://127.0.0.1:$port" --dataset "$work" --phones "$phones" --duration "$seconds" \
    --output "$work/out-$store-$round" > "$work/bench-$store-$round.log" 2>&1 || { echo "bench failed ($store)"; tail -n 20 "$work/bench-$store-$round.log"; exit 1; }
  # The parsed-key cache's hits and misses (setup and warm-up included).
  curl -sf "http://127.0.0.1:$admin/metrics" | grep '^callveil_key_cache_lookups_total' > "$work/cache-$store-$round.txt" || true
  if [ "$store" = postgres ]; then
    pg_temp_psql "SELECT COALESCE(SUM(calls),0) || ' ' || COALESCE(SUM(total_exec_time),0) FROM pg_stat_statements
                  WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'bench')" > "$work/pg-$round.txt"
  fi
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
}

for round in $(seq 1 "$rounds"); do run sqlite "$round"; run postgres "$round"; done

python3 - "$work" "$rounds" <<'PY'
import json, sys
work, rounds = sys.argv[1], int(sys.argv[2])
print("| store | round | lookups | lookups/s | lookup p50 ms | lookup p99 ms | wrong | errors | key cache hits | PG statements per PIR request | PG ms per PIR request |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
def cache_hits(path):
    counts = {}
    for line in open(path):
        name, value = line.rsplit(" ", 1)
        counts["hit" if 'result="hit"' in name else "miss"] = float(value)
    total = counts.get("hit", 0) + counts.get("miss", 0)
    return f"{100 * counts.get('hit', 0) / total:.1f}% of {int(total)}" if total else "–"
for r in range(1, rounds + 1):
    for store in ("sqlite", "postgres"):
        report = json.load(open(f"{work}/out-{store}-{r}/results.json"))
        run = report["runs"][0]; res = run["result"]
        lat = sorted(res.get("lookupLatencies", []) or [])
        pct = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000 if lat else float("nan")
        pg = "–", "–"
        if store == "postgres":
            calls, ms = open(f"{work}/pg-{r}.txt").read().split()
            requests = res["lookups"] * 2
            pg = f"{int(calls) / requests:.2f}", f"{float(ms) / requests:.3f}"
        print(f"| {store} | {r} | {res['lookups']} | {res['lookups'] / res['seconds']:.2f} | {pct(0.5):.1f} | {pct(0.99):.1f} | "
              f"{res.get('mismatches', 0)} | {res.get('errors', 0)} | {cache_hits(f'{work}/cache-{store}-{r}.txt')} | {pg[0]} | {pg[1]} |")
PY
