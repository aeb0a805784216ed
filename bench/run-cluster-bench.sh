#!/usr/bin/env bash
# Cluster benchmark (release build): coordinator overhead per query versus the in-process executor, queries/s
# with 1 and 2 workers over TCP with CURVE, shard transfer rate and LZ4 ratios. ROWS (default 100000) block rows.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/release-flags.sh
swift build "${release_build[@]}" --product ClusterBench 2>&1 | grep -E "error|Compiling|Build complete" | tail -1
"$(swift build "${release_build[@]}" --show-bin-path)/ClusterBench" "${ROWS:-100000}"
