#!/usr/bin/env bash
# The cost of the Oblivious HTTP hop: `callveil serve` (release build, one embedded worker) on a demo dataset with
# its gateway on and its public port on TLS with ALPN h2 (a self-signed certificate from scripts/ohttp-client.py),
# measured by `callveil-bench gateway-bench`: the same /config and /queries requests directly and through the gateway,
# interleaved in blocks, one at a time over one HTTP/2 connection, every PIR answer decrypted and checked. Prints
# p50/p99 per path and the service's CPU per request. GATEWAY_BENCH_REQUESTS tunes it. Results: bench/README.md.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
requests=${GATEWAY_BENCH_REQUESTS:-400}
port=18443
[ -x .build-venv/bin/python ] || make deps > /dev/null
source scripts/release-flags.sh
swift build "${release_build[@]}" --product callveil 2>&1 | grep -E "error|complete" || true
swift build "${release_build[@]}" --product callveil-bench 2>&1 | grep -E "error|complete" || true
bin="$(swift build "${release_build[@]}" --show-bin-path)/callveil"
bench_bin="$(swift build "${release_build[@]}" --show-bin-path)/callveil-bench"
work=$(mktemp -d /tmp/callveil-gateway-bench.XXXXXX)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

"$bin" generate-demo --count 3000 --output "$work/identities.csv" > /dev/null
"$bin" build-db --input "$work/identities.csv" --output "$work" > /dev/null
"$bin" process-db --input "$work/block.binpb" --output "$work/block" --shard-count 2 --fixed-bucket-count 2048 > /dev/null
"$bin" process-db --input "$work/identity.binpb" --output "$work/identity" --entries-per-shard 1000 > /dev/null
.build-venv/bin/python scripts/ohttp-client.py make-cert "$work"
cat > "$work/service-config.json" <<JSON
{
  "users": [{ "tier": "tier1", "tokens": ["AAAA"] }],
  "usecases": [{ "name": "net.example.lookup.block", "fileStem": "block/shard" }],
  "privacyPass": { "enabled": false },
  "http": { "protocol": "tls", "tlsCertificateFile": "cert.pem", "tlsKeyFile": "key.pem", "adminPort": 0 },
  "gateway": {}
}
JSON
"$bin" serve --config "$work/service-config.json" --port $port --log-level warning &
pid=$!
for _ in $(seq 1 100); do curl -skf "https://127.0.0.1:$port/ohttp-configs" -o /dev/null && break; sleep 0.2; done
mapfile -t samples < "$work/sample-numbers.txt"
echo "gateway hop, $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo
"$bench_bin" gateway-bench --url "https://127.0.0.1:$port" --ca "$work/cert.pem" --server-pid "$pid" --requests "$requests" \
  --blocked "${samples[0]}" --absent "${samples[3]}"
