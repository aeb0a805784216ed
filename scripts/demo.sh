#!/usr/bin/env bash
# `make run`: builds CallVeil, generates a demo dataset, processes it and serves it on 127.0.0.1:8080.
# Everything generated goes to .demo/ (ignored by git). DEMO_COUNT sets the number of identities.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
count=${DEMO_COUNT:-3000}
port=${PORT:-8080}
swift build --product callveil
bin="$(swift build --show-bin-path)/callveil"
demo="$top/.demo"
mkdir -p "$demo"
if [ ! -f "$demo/block/shard.manifest.json" ] || [ "$(cat "$demo/count" 2>/dev/null)" != "$count+test" ]; then
  rm -rf "$demo/block" "$demo/identity"
  "$bin" generate-demo --count "$count" --with-test-identity --output "$demo/identities.csv"
  "$bin" build-db --input "$demo/identities.csv" --output "$demo"
  # Block: fixed-size cuckoo tables so the config id stays the same across data updates (SPEC-PIR §6.4).
  "$bin" process-db --input "$demo/block.binpb" --output "$demo/block" --shard-count 2 --fixed-bucket-count 2048
  "$bin" process-db --input "$demo/identity.binpb" --output "$demo/identity" --entries-per-shard 1000
  echo "$count+test" > "$demo/count"
fi
cp cluster/demo/service-config.json "$demo/service-config.json"
mapfile -t samples < "$demo/sample-numbers.txt"
cat <<MSG

CallVeil demo: $count identities, serving on http://127.0.0.1:$port (Ctrl-C stops; SIGHUP reloads).
In another terminal, look numbers up like an iPhone does:

  $bin query --url http://127.0.0.1:$port --user-token AAAA --number ${samples[0]}    # blocked, with a name
  $bin query --url http://127.0.0.1:$port --user-token AAAA --number ${samples[1]}    # a business
  $bin query --url http://127.0.0.1:$port --user-token AAAA --number ${samples[3]}    # not in the database
  $bin query --url http://127.0.0.1:$port --user-token AAAA --number +14085551212 --gateway-url http://127.0.0.1:$port/ohttp-gateway
                                            # Apple's test identity, through the Oblivious HTTP gateway as a phone

Metrics: curl http://127.0.0.1:9090/metrics    Health: curl http://127.0.0.1:9090/healthz, /readyz   (the admin listener, loopback only)

MSG
exec "$bin" serve --config "$demo/service-config.json" --port "$port"
