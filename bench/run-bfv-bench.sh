#!/usr/bin/env bash
# Release-build benchmark of the BFV primitives on the Live Caller ID preset (N=4096, moduli 27/28/28 bits).
# Prints one markdown table: the wall-clock median per item beside the instruction count per item from
# valgrind's callgrind, which stays stable on a shared machine:
#   instructions per item = (count with K iterations − count with 0 iterations) / (K · items per run).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/release-flags.sh
swift build "${release_build[@]}" --product BFVBench >/dev/null
bin=$(swift build "${release_build[@]}" --show-bin-path)/BFVBench
timings=$("$bin")

counted=""
if command -v valgrind >/dev/null; then
  # valgrind 3.19 cannot read the DWARF that Swift 6 emits, so count on a copy without debug info.
  counted=$(mktemp /tmp/BFVBench.XXXXXX)
  trap 'rm -f "$counted"' EXIT
  cp "$bin" "$counted"
  strip --strip-debug "$counted"
  chmod 755 "$counted"
else
  echo "valgrind not installed: instruction counts skipped (make deps installs it)" >&2
fi
count() { # name iterations -> total instructions collected
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$counted" "$1" "$2" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

echo "BFV engine benchmark: release build, $(nproc) cores, $(date -u +%Y-%m-%d), $(swift --version 2>&1 | head -1)"
echo
echo "| benchmark | what | µs per item (median) | MB/s | instructions per item (callgrind) |"
echo "|---|---|---:|---:|---:|"
while IFS=$'\t' read -r name what micros mbps; do
  instructions="-"
  if [ -n "$counted" ]; then
    k=20
    items=1
    [ "$name" = ct-pt-mac ] && items=64
    base=$(count "$name" 0)
    total=$(count "$name" "$k")
    instructions=$(( (total - base) / (k * items) ))
  fi
  echo "| $name | $what | $micros | $mbps | $instructions |"
done <<< "$timings"
