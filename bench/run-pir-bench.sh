#!/usr/bin/env bash
# Release-build benchmark of the keyword-PIR server core on three shards: block 100,000 and 1,000,000 rows
# (1-byte values) and identity 100,000 rows (128-byte values), each at 1 and 2 threads with the phase split
# (expansion, scan, second dimension). Every answer is decrypted and checked; a wrong one fails the run.
#
# Parts (all by default; PIR_BENCH_PARTS=times,callgrind,keys,reference picks some):
#   times      PIRBench tables, with the machine's memory read bandwidth measured in the same run
#   callgrind  instructions per query of the server alone (valgrind's callgrind counts only inside
#              MulPirServer.computeResponses; valgrind runs the kernels' portable path)
#   keys       evaluation-key bytes and 1-thread server time per key-compression strategy and shard
#   reference  side by side with the reference library's server, interleaved (bench/interleave.py), when
#              REFERENCE_RELEASE and/or REFERENCE_MAIN name harness binaries built outside this repository that
#              speak interleave.py's protocol (see bench/README.md); skipped otherwise
# PIR_BENCH_SEED fixes the shards (printed), PIR_BENCH_ROUNDS the reference rounds (default 5).
set -euo pipefail
cd "$(dirname "$0")/.."
parts=${PIR_BENCH_PARTS:-times,callgrind,keys,reference}
seed=${PIR_BENCH_SEED:-$RANDOM$RANDOM}
rounds=${PIR_BENCH_ROUNDS:-5}
has() { [[ ",$parts," == *",$1,"* ]]; }
source scripts/release-flags.sh
swift build "${release_build[@]}" --product PIRBench >/dev/null
bin=$(swift build "${release_build[@]}" --show-bin-path)/PIRBench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# label rows value-bytes queries
shards=("block-100k 100000 1 9" "block-1m 1000000 1 5" "identity-100k 100000 128 5")
echo "PIR server benchmark: release build, $(nproc) cores, $(date -u +%Y-%m-%d), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "n_4096_logq_27_28_28_logt_5, 2 hash functions, seed $seed (PIR_BENCH_SEED=$seed repeats the shards)"
for shard in "${shards[@]}"; do
  read -r label rows bytes _ <<<"$shard"
  "$bin" --rows "$rows" --value-bytes "$bytes" --seed "$seed" --rows-out "$work/$label.rows"
done

if has times; then
  echo
  first=--bandwidth
  for shard in "${shards[@]}"; do
    read -r label rows bytes queries <<<"$shard"
    "$bin" $first --rows-in "$work/$label.rows" --seed "$seed" --queries "$queries" --threads 1,2 --batches 1
    first=
    echo
  done
fi

if has callgrind; then
  if command -v valgrind >/dev/null; then
    # valgrind 3.19 cannot read the toolchain's DWARF 5: count a copy without debug info (symbols stay).
    counted="$work/PIRBench.counted"
    cp "$bin" "$counted"
    strip --strip-debug "$counted"
    echo "| shard | instructions per query (callgrind, server only, portable kernels) |"
    echo "|---|---:|"
    for shard in "${shards[@]}"; do
      read -r label _ _ _ <<<"$shard"
      count=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null --collect-atstart=no \
          --toggle-collect='*MulPirServerV16computeResponses*' \
          "$counted" --rows-in "$work/$label.rows" --seed "$seed" --server-loop 2 2>&1 |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
      echo "| $label | $(python3 -c "print(f'{int(\"$count\") // 2:,}')") |"
    done
    echo
  else
    echo "(valgrind not installed: no instruction counts)"
  fi
fi

if has keys; then
  echo "| shard | key compression | Galois keys | evaluation key bytes | ms per query (1 thread, median) |"
  echo "|---|---|---:|---:|---:|"
  for shard in "${shards[@]}"; do
    read -r label _ _ queries <<<"$shard"
    for compression in none hybrid maximum; do
      out=$("$bin" --rows-in "$work/$label.rows" --seed "$seed" --queries "$queries" --threads 1 --batches 1 \
        --key-compression "$compression")
      bytes=$(sed -n 's/.*evaluation key \([0-9]*\) bytes.*/\1/p' <<<"$out")
      keys=$(sed -n 's/.*bytes (\([0-9]*\) Galois keys.*/\1/p' <<<"$out")
      ms=$(grep '^| [a-z]' <<<"$out" | grep -v '^| shard' | awk -F'|' '{print $5}' | xargs)
      echo "| $label | $compression | $keys | $(python3 -c "print(f'{$bytes:,}')") | $ms |"
    done
  done
  echo
fi

if has reference; then
  if [[ -n "${REFERENCE_RELEASE:-}${REFERENCE_MAIN:-}" ]]; then
    for shard in "${shards[@]}"; do
      read -r label _ _ queries <<<"$shard"
      contestants=("callveil=$bin --interleave --rows-in $work/$label.rows --seed $seed")
      [[ -n "${REFERENCE_RELEASE:-}" ]] &&
        contestants+=("ref-release:1=$REFERENCE_RELEASE --impl ref-release --rows-in $work/$label.rows --seed $seed")
      [[ -n "${REFERENCE_MAIN:-}" ]] &&
        contestants+=("ref-main=$REFERENCE_MAIN --impl ref-main --rows-in $work/$label.rows --seed $seed")
      # The driver's progress goes to a log, shown when it fails (a contestant that exited names its code).
      if ! python3 bench/interleave.py --rounds "$rounds" --queries "$queries" --threads 1,2 --label "$label" \
        "${contestants[@]}" 2>"$work/$label.interleave.log"; then
        echo "interleaved run of $label failed:" >&2
        tail -n 20 "$work/$label.interleave.log" >&2
        exit 1
      fi
      echo
    done
  else
    echo "(REFERENCE_RELEASE / REFERENCE_MAIN not set: no side-by-side run; see bench/README.md)"
  fi
fi
