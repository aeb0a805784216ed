#!/usr/bin/env bash
# Release-build benchmark of the keyword-PIR server core: block shards of 100,000 and 1,000,000 rows and an
# identity shard of 100,000 rows (128-byte values), with 1 and 2 threads, single queries and batches of 8.
# Every answer is decrypted and checked; a wrong one fails the run. Prints markdown tables and the machine's
# memory read bandwidth measured in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product PIRBench >/dev/null
bin=$(swift build -c release --show-bin-path)/PIRBench
echo "PIR server benchmark: release build, $(nproc) cores, $(date -u +%Y-%m-%d), n_4096_logq_27_28_28_logt_5, 2 hash functions"
echo
"$bin" --bandwidth --rows 100000 --queries 5 --threads 1,2 --batches 1,8
echo
"$bin" --rows 1000000 --queries 3 --threads 1,2 --batches 1,8
echo
"$bin" --rows 100000 --value-bytes 128 --queries 3 --threads 1,2 --batches 1,8
