#!/usr/bin/env bash
# Regenerates scripts/callveil.order.gz, the order in which the release link places functions (scripts/release-flags.sh):
# the functions `callveil serve` runs while it loads a dataset and answers lookups, in their address order.
# How: the release binary, linked without an order, is copied to a fresh file and dropped from the page cache; with
# readahead off on its block device, each page of code the process runs is read alone, so the pages resident once it
# has answered are those it touched (the kernel otherwise maps 64 KiB or more around each). The functions on them are
# the order. Root (read_ahead_kb, restored on exit); about 12 minutes from a clean release build folder.
# LINK_ORDER_BIN uses a binary already built with the release flags, LINK_ORDER_BENCH_BIN a built callveil-bench (the
# phones); LINK_ORDER_SECONDS (20) of lookups.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
CALLVEIL_LINK_ORDER=0 source scripts/release-flags.sh
if [ -z "${LINK_ORDER_BIN:-}" ]; then
  swift build "${release_build[@]}" --product callveil 2>&1 | grep -E "error|Build complete" || true
  LINK_ORDER_BIN="$(swift build "${release_build[@]}" --show-bin-path)/callveil"
fi
if [ -z "${LINK_ORDER_BENCH_BIN:-}" ]; then
  swift build "${release_build[@]}" --product callveil-bench 2>&1 | grep -E "error|Build complete" || true
  LINK_ORDER_BENCH_BIN="$(swift build "${release_build[@]}" --show-bin-path)/callveil-bench"
fi
bench_bin=$LINK_ORDER_BENCH_BIN
mkdir -p "$top/.build-release"
work=$(mktemp -d "$top/.build-release/link-order.XXXXXX")
device=$(lsblk -no PKNAME "$(findmnt -no SOURCE --target "$work")" 2>/dev/null || true)
[ -n "$device" ] || device=$(basename "$(findmnt -no SOURCE --target "$work")")
readahead=/sys/block/$device/queue/read_ahead_kb
[ -w "$readahead" ] || { echo "link-order: needs root and $work on a block device (no $readahead)" >&2; exit 2; }
saved=$(cat "$readahead")
server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; echo "$saved" > "$readahead"; rm -rf "$work"; }
trap cleanup EXIT

source bench/demo-service.sh
demo_service "$LINK_ORDER_BIN" "$work" 20000 18751
mkdir -p "$work/state"
cp "$LINK_ORDER_BIN" "$work/callveil"
sync
python3 -c "import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)" "$work/callveil"
echo 0 > "$readahead"
"$work/callveil" serve --config "$work/service-config.json" --port 18750 --log-level warning & server=$!
for _ in $(seq 1 240); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:18751/readyz)" = 200 ] && break
  kill -0 "$server" 2>/dev/null || { echo "link-order: serve exited" >&2; exit 1; }
  sleep 0.5
done
"$bench_bin" bench --url http://127.0.0.1:18750 --dataset "$work/dataset" --phones 4 \
  --duration "${LINK_ORDER_SECONDS:-20}" --output "$work/out" --no-plots > "$work/bench.log" 2>&1
curl -s -o /dev/null http://127.0.0.1:18751/metrics
sleep 3
python3 - "$server" "$work/callveil" "$work/order" <<'PY'
import struct, subprocess, sys
pid, binary, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
base, maps = None, []
for line in open(f"/proc/{pid}/maps"):
    fields = line.split()
    if len(fields) > 5 and fields[5] == binary:
        start, end = (int(x, 16) for x in fields[0].split("-"))
        if int(fields[2], 16) == 0:
            base = start
        maps.append((start, end))
resident = set()
with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
    for start, end in maps:
        pagemap.seek(start // 4096 * 8)
        entries = pagemap.read((end - start) // 4096 * 8)
        for i in range((end - start) // 4096):
            if struct.unpack_from("<Q", entries, i * 8)[0] >> 63:
                resident.add((start - base) // 4096 + i)
functions, seen, size = [], set(), 0
nm = subprocess.run(["nm", "-S", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
for line in nm.splitlines():
    fields = line.split()
    if len(fields) != 4 or fields[2] not in "tTwW":
        continue
    address, length = int(fields[0], 16), int(fields[1], 16)
    if length and any(p in resident for p in range(address // 4096, (address + length - 1) // 4096 + 1)):
        functions.append((address, fields[3]))
        size += length
with open(out, "w") as order:
    for _, name in sorted(functions):
        if name not in seen:
            seen.add(name)
            order.write(f".text.{name}\n")
print(f"link-order: {len(seen)} functions, {size / 2**20:.1f} MiB of code on the {len(resident) * 4 // 1024} MiB resident")
PY
gzip -9n < "$work/order" > scripts/callveil.order.gz
echo "link-order: wrote scripts/callveil.order.gz"
