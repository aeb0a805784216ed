#!/usr/bin/env bash
# Release-build benchmark of the BFV primitives: wall-clock medians, then instruction counts per item from
# valgrind's callgrind (stable on a shared machine): (count with K iterations − count with 0) / (K · items).
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product BFVBench >/dev/null
bin=$(swift build -c release --show-bin-path)/BFVBench
echo "== BFV engine benchmark (release build, $(nproc) cores, $(date -u +%Y-%m-%d))"
"$bin"
if ! command -v valgrind >/dev/null; then
  echo "valgrind not installed: skipping instruction counts (make deps installs it)"
  exit 0
fi
# valgrind 3.19 cannot read the DWARF that Swift 6 emits, so count on a copy without debug info.
counted=$(mktemp /tmp/BFVBench.XXXXXX)
trap 'rm -f "$counted"' EXIT
cp "$bin" "$counted"
strip --strip-debug "$counted"
chmod 755 "$counted"
echo
echo "| benchmark | instructions per item (callgrind) |"
echo "|---|---|"
count() { # name iterations -> total instructions collected
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$counted" "$1" "$2" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
for name in $("$bin" --list); do
  k=20
  items=1
  [ "$name" = ct-pt-mac ] && items=64
  base=$(count "$name" 0)
  total=$(count "$name" "$k")
  echo "| $name | $(( (total - base) / (k * items) )) |"
done
