#!/usr/bin/env bash
# Regenerates scripts/callveil.order.gz, the order in which the release link places functions (scripts/release-flags.sh):
# the functions `callveil serve` runs while it answers lookups, then those it ran only while starting and loading,
# each part in address order.
# How: the release binary, linked without an order, is copied to a fresh file and dropped from the page cache; with
# readahead off on its block device, each page of code the process runs is read alone, so the pages resident once it
# loaded are those it touched (the kernel otherwise maps 64 KiB or more around each). After the first idle release has
# given the start-up pages back (Sources/CKernels/StartupPages.c), the copy's cache is dropped again, and the pages
# resident once it has answered are those serving touched. The functions on those pages are the order (scripts/
# resident-functions.py), less those the link cannot move (scripts/function-sections.py: functions compiled into an
# object's shared .text, as parts of the Swift runtime's archives are). The release build links the Swift runtime in
# (scripts/release-flags.sh), so the order covers the runtime's functions too. Root (read_ahead_kb, restored on exit);
# about 12 minutes from a clean release build folder.
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
# Drops a file's cached pages that no process maps.
drop_cached() { python3 -c "import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)" "$1"; }
drop_cached "$work/callveil"
echo 0 > "$readahead"
"$work/callveil" serve --config "$work/service-config.json" --port 18750 --log-level warning & server=$!
for _ in $(seq 1 240); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:18751/readyz)" = 200 ] && break
  kill -0 "$server" 2>/dev/null || { echo "link-order: serve exited" >&2; exit 1; }
  sleep 0.2
done
# The pages resident once loaded (read before the first idle release, 2 s after the load, gives them back).
python3 scripts/resident-functions.py "$server" "$work/callveil" "$work/loaded"
# After that release, the pages serving runs come back one by one: drop the copy's cached pages, which no process
# maps any more, so that each is read alone again.
sleep 4
drop_cached "$work/callveil"
"$bench_bin" bench --url http://127.0.0.1:18750 --dataset "$work/dataset" --phones 4 \
  --duration "${LINK_ORDER_SECONDS:-20}" --output "$work/out" --no-plots > "$work/bench.log" 2>&1
curl -s -o /dev/null http://127.0.0.1:18751/metrics
sleep 3
python3 scripts/resident-functions.py "$server" "$work/callveil" "$work/serving"
# Serving's functions first, then those only starting and loading ran: after the release, the pages serving faults
# back in hold serving's code, not start-up code beside it.
# Only functions with a section of their own in the link's inputs: the binary's build folder and the runtime's
# archives.
runtime=$(swiftc -print-target-info |
  python3 -c "import json, sys; print(json.load(sys.stdin)['paths']['runtimeResourcePath'])")
python3 scripts/function-sections.py "$work/movable" "$(dirname "$LINK_ORDER_BIN")" "${runtime}_static/linux"
python3 - "$work/serving" "$work/loaded" "$work/movable" "$work/order" <<'PY'
import sys
movable = set(open(sys.argv[3]).read().split())
serving = [name for name in open(sys.argv[1]).read().split() if name in movable]
seen = set(serving)
loading = [name for name in open(sys.argv[2]).read().split() if name in movable and name not in seen]
with open(sys.argv[4], "w") as order:
    for name in serving + loading:
        order.write(f".text.{name}\n")
print(f"link-order: {len(serving)} functions serving runs, then {len(loading)} only loading ran")
PY
gzip -9n < "$work/order" > scripts/callveil.order.gz
echo "link-order: wrote scripts/callveil.order.gz"
