#!/usr/bin/env bash
# Dataset processing at scale (issue 14): N numbers (default 10,000,000) from an identities CSV to shards with the
# release build, then a delta of 1% and of 0.1% applied incrementally. Prints wall time, rows/s and peak RSS of
# each step, bytes on disk per row, shards rewritten and the compact bytes a cluster would move to workers.
#
#   bash bench/dataset-scale.sh [ROWS] [WORKDIR]       (default 10000000, /tmp/callveil-scale; 100000000 needs ~25 GB free)
set -euo pipefail
ROWS=${1:-10000000}
WORK=${2:-/tmp/callveil-scale}
BLOCK_SHARDS=${BLOCK_SHARDS:-$(( (ROWS + 999999) / 1000000 ))}
IDENTITY_SHARDS=${IDENTITY_SHARDS:-$(( (ROWS + 149999) / 150000 ))}
cd "$(dirname "$0")/.."
source scripts/release-flags.sh
swift build "${release_build[@]}" --product callveil >/dev/null
CV=$(swift build "${release_build[@]}" --show-bin-path)/callveil
mkdir -p "$WORK"
cd "$WORK"

# run LABEL CMD...: wall time and peak RSS of one command (its own process tree), appended to results.tsv.
run() {
  local label=$1; shift
  python3 - "$label" "$@" <<'PY'
import resource, subprocess, sys, time
label, cmd = sys.argv[1], sys.argv[2:]
t = time.monotonic()
subprocess.run(cmd, check=True)
wall = time.monotonic() - t
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"{label}\t{wall:.1f} s\tpeak RSS {rss:.0f} MiB", flush=True)
open("results.tsv", "a").write(f"{label}\t{wall:.2f}\t{rss:.0f}\n")
PY
}
rm -f results.tsv
[ -f ids-$ROWS.csv ] || "$CV" generate-demo --count "$ROWS" --output ids-$ROWS.csv
if [ -n "${REUSE_KW:-}" ] && [ -f kw/identity.csv ]; then echo "reusing kw/ (REUSE_KW)"; else
  run build-db "$CV" build-db --input ids-$ROWS.csv --output kw --format csv
fi
rm -rf block identity
# A fixed shard configuration (bucket count and 1 KiB buckets) so that updates keep the config id: sized for
# the input's bytes per shard at 85% load plus 4% room to grow (2% was too little for one of 667 identity shards
# at 100 M rows).
read -r BLOCK_FIXED IDENTITY_FIXED < <(python3 - "$BLOCK_SHARDS" "$IDENTITY_SHARDS" <<'PY'
import math, sys
out = []
for name, shards in (("block", int(sys.argv[1])), ("identity", int(sys.argv[2]))):
    total = sum(10 + (len(line.rstrip("\n")) - line.index(",") - 1) // 2 for line in open(f"kw/{name}.csv") if not line.startswith("keyword,"))
    buckets = math.ceil(total / shards * 1.04 / (1024 * 0.85))
    out.append(str(buckets + buckets % 2))
print(" ".join(out))
PY
)
echo "fixed bucket counts: block $BLOCK_FIXED, identity $IDENTITY_FIXED"
run process-block "$CV" process-db --input kw/block.csv --output block --file-stem shard --use-case block --shard-count "$BLOCK_SHARDS" \
  --fixed-bucket-count "$BLOCK_FIXED" --max-bucket-size 1024
run process-identity "$CV" process-db --input kw/identity.csv --output identity --file-stem shard --use-case identity \
  --shard-count "$IDENTITY_SHARDS" --fixed-bucket-count "$IDENTITY_FIXED" --max-bucket-size 1024

# Deltas: a third removals, a third value changes, a third additions.
python3 - <<'PY'
import random
# Streams the keyword CSVs (two passes, only the picked lines kept), so 100 M rows fit in memory.
for name in ("block", "identity"):
    path = f"kw/{name}.csv"
    with open(path) as f:
        n = sum(1 for _ in f) - 1
    rng = random.Random(14)
    plans = []
    for share, tag in ((0.01, "1pct"), (0.001, "0.1pct")):
        k = max(int(n * share) // 3, 1)
        picked = rng.sample(range(n), 2 * k)
        sources = [rng.randrange(n) for _ in range(2 * k)]
        plans.append((tag, k, picked, sources))
    wanted = {i for _, _, picked, sources in plans for i in picked + sources}
    lines = {}
    with open(path) as f:
        next(f)
        for i, line in enumerate(f):
            if i in wanted:
                lines[i] = line.rstrip("\n").split(",")
    for tag, k, picked, sources in plans:
        out = ["op,keyword,value"]
        for i in picked[:k]:
            out.append("remove," + lines[i][0])
        for i, s in zip(picked[k:], sources[:k]):
            out.append(f"change,{lines[i][0]},{lines[s][1]}")
        for j, s in enumerate(sources[k:]):
            out.append(f"add,+1999{j:07d},{lines[s][1]}")
        open(f"{name}-delta-{tag}.csv", "w").write("\n".join(out) + "\n")
PY
for name in block identity; do
  for tag in 1pct 0.1pct; do
    rm -rf "$name-$tag"; cp -al "$name" "$name-$tag"   # hard links: the update writes new files, the base stays
    run "delta-$name-$tag" "$CV" process-db --previous "$name-$tag/shard.manifest.json" --delta "$name-delta-$tag.csv" --output "$name-$tag"
    "$CV" db diff "$name/shard.manifest.json" "$name-$tag/shard.manifest.json" > "$name-$tag.diff.txt"
    head -4 "$name-$tag.diff.txt"
  done
done

# Bytes on disk and the compact bytes a cluster moves for the changed shards.
python3 - "$ROWS" <<'PY'
import json, os, struct, sys
rows = int(sys.argv[1])
def compact(path):
    with open(path, "rb") as f:
        head = f.read(72)
        header, blob, tables, slots = struct.unpack_from("<IIII", head, 12)
        f.seek(header + blob)
        presence = f.read(tables * slots)
    return 20 + tables * slots + presence.count(1) * 2560   # 4096 coefficients of 5 bits per present plaintext
total = 0
for name in ("block", "identity"):
    m = json.load(open(f"{name}/shard.manifest.json"))
    size = sum(s["shard"]["bytes"] + s["parameters"]["bytes"] + (s.get("rowFile") or {}).get("bytes", 0) for s in m["shards"])
    rowbytes = sum((s.get("rowFile") or {}).get("bytes", 0) for s in m["shards"])
    comp = sum(compact(f"{name}/{s['shard']['path']}") for s in m["shards"])
    total += size
    print(f"{name}: {m['rows']} rows, {len(m['shards'])} shards, {size/2**30:.2f} GiB on disk ({size/m['rows']:.0f} B/row; row files {rowbytes/m['rows']:.0f} B/row), compact form {comp/2**30:.2f} GiB")
    for tag in ("1pct", "0.1pct"):
        n = json.load(open(f"{name}-{tag}/shard.manifest.json"))
        changed = [s for s, o in zip(n["shards"], m["shards"]) if s["shard"]["sha256"] != o["shard"]["sha256"]]
        moved = sum(compact(f"{name}-{tag}/{s['shard']['path']}") for s in changed)
        print(f"  delta {tag}: {len(changed)}/{len(n['shards'])} shards rewritten, {moved/2**20:.0f} MiB compact to move, config id {'same' if n['configID'] == m['configID'] else 'changed'}")
print(f"total on disk: {total/2**30:.2f} GiB for {rows} numbers ({total/rows:.0f} B per number)")
PY
cat results.tsv
