#!/usr/bin/env bash
# CallVeil's fuzzing (`make fuzz`; not part of `make test`). Builds the libFuzzer harnesses of this package with
# AddressSanitizer (leak detection on) and runs each for FUZZ_SECONDS (default 600) from the committed seed corpus
# (corpus/<harness>/) plus, when present, the conformance vectors of ../../shared/conformance (read, never copied
# in). Prints a markdown table: executions, exec/s, coverage (edges) and features reached, corpus size, and the
# crashes, leaks, timeouts and out-of-memory inputs found (kept under $FUZZ_BUILD/artifacts/<harness>/).
#
#   fuzz/run.sh            build, replay regressions/, fuzz every harness (FUZZ_JOBS at a time, default 2)
#   fuzz/run.sh seeds      re-record the seed corpus (real exchanges with the fixture; then commit corpus/ and fixture/)
#   fuzz/run.sh regress    build and replay every committed seed and regression input once
#   FUZZ_HARNESSES="FuzzLZ4 …" limits the run to some harnesses.
set -euo pipefail
cd "$(dirname "$0")"
FUZZ_SECONDS=${FUZZ_SECONDS:-600}
FUZZ_JOBS=${FUZZ_JOBS:-2}
FUZZ_BUILD=${FUZZ_BUILD:-.build}
CONFORMANCE=${CALLVEIL_CONFORMANCE:-../../shared/conformance}
HARNESSES=(${FUZZ_HARNESSES:-FuzzQueries FuzzKeyUpload FuzzPrivacyPass FuzzClusterMessage FuzzShardFiles FuzzDataset FuzzOHTTP})
mode=${1:-run}

echo "building the harnesses (libFuzzer + AddressSanitizer) in $FUZZ_BUILD"
swift build --build-path "$FUZZ_BUILD" --sanitize=fuzzer --sanitize=address \
  -Xswiftc -sanitize-coverage=edge,trace-cmp,inline-8bit-counters,pc-table 2>&1 | grep -E "error|Compiling|Build complete" | grep -v "^\[" || true
bin="$FUZZ_BUILD/debug"
for h in "${HARNESSES[@]}"; do [ -x "$bin/$h" ] || { echo "missing $bin/$h: the build failed"; exit 1; }; done
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/lsan.supp}  # false positives only, each with its reason

if [ "$mode" = seeds ]; then
  # FuzzQueries records the device's key first; FuzzKeyUpload's seed is that upload.
  for h in FuzzQueries FuzzKeyUpload FuzzPrivacyPass FuzzClusterMessage FuzzShardFiles FuzzDataset FuzzOHTTP; do
    rm -rf "corpus/$h"; CALLVEIL_FUZZ_SEEDS="corpus/$h" ASAN_OPTIONS=detect_leaks=0 "$bin/$h"
  done
  exit 0
fi

# Each crash, leak or timeout ever found is kept in regressions/<harness>/ and replayed before fuzzing.
regress() {
  local status=0
  for h in "${HARNESSES[@]}"; do
    local inputs=(corpus/"$h"/* regressions/"$h"/*)
    [ "$h" = FuzzKeyUpload ] && inputs+=(fixture/uploads/*)
    local files=(); for f in "${inputs[@]}"; do [ -f "$f" ] && files+=("$f"); done
    [ ${#files[@]} -gt 0 ] || continue
    if "$bin/$h" -timeout=60 -rss_limit_mb=4096 "${files[@]}" > "$FUZZ_BUILD/regress-$h.log" 2>&1; then
      echo "replayed ${#files[@]} inputs of $h: ok"
    else
      echo "REGRESSION in $h (see $FUZZ_BUILD/regress-$h.log)"; status=1
    fi
  done
  return $status
}
regress
[ "$mode" = regress ] && exit 0

# Conformance inputs as extra seeds, prefixed with the selector byte a harness expects.
extras() {
  local h=$1 dir=$2
  mkdir -p "$dir"
  [ -d "$CONFORMANCE" ] || return 0
  case $h in
    FuzzQueries) for f in "$CONFORMANCE"/pir/*/request-q1.binpb "$CONFORMANCE"/service/queries/*/*.binpb; do [ -f "$f" ] && cp "$f" "$dir/$(echo "$f" | tr / _)"; done ;;
    FuzzKeyUpload) cp fixture/uploads/* "$dir/"; for f in "$CONFORMANCE"/service/key/*/*.request.binpb; do [ -f "$f" ] && cp "$f" "$dir/$(echo "$f" | tr / _)"; done ;;
    FuzzPrivacyPass)
      [ -f "$CONFORMANCE/service/privacy-pass/authorization-header.txt" ] && { printf '\0'; cat "$CONFORMANCE/service/privacy-pass/authorization-header.txt"; } > "$dir/header"
      [ -f "$CONFORMANCE/service/privacy-pass/token-request.bin" ] && { printf '\1'; cat "$CONFORMANCE/service/privacy-pass/token-request.bin"; } > "$dir/token-request" ;;
    FuzzShardFiles) for f in "$CONFORMANCE"/service/dataset/block-0.bin; do [ -f "$f" ] && { printf '\3'; cat "$f"; } > "$dir/reference-shard"; done ;;
    FuzzDataset)
      [ -f "$CONFORMANCE/service/dataset/identities.csv" ] && { printf '\0'; head -c 4000 "$CONFORMANCE/service/dataset/identities.csv"; } > "$dir/identities.csv"
      [ -f "$CONFORMANCE/service/dataset/input.txtpb" ] && { printf '\1'; head -c 4000 "$CONFORMANCE/service/dataset/input.txtpb"; } > "$dir/input.txtpb" ;;
  esac
}

run_one() {
  local h=$1 work="$FUZZ_BUILD/corpus/$1" extra="$FUZZ_BUILD/extra/$1" art="$FUZZ_BUILD/artifacts/$1/"
  mkdir -p "$work" "$art" "corpus/$h"
  extras "$h" "$extra"
  # -detect_leaks=0: libFuzzer's per-input leak check fires on every input of a stateful fixture (caches, tasks
  # still answering) and scans the whole heap each time; LeakSanitizer still checks the process at exit.
  "$bin/$h" -max_total_time="$FUZZ_SECONDS" -detect_leaks=0 -timeout=30 -rss_limit_mb=4096 -malloc_limit_mb=2048 -max_len=2097152 \
    -print_final_stats=1 -artifact_prefix="$art" "$work" "corpus/$h" "$extra" > "$FUZZ_BUILD/fuzz-$h.log" 2>&1 || true
}

started=$(date -u +%Y-%m-%dT%H:%MZ)
running=0
for h in "${HARNESSES[@]}"; do
  echo "fuzzing $h for ${FUZZ_SECONDS}s"
  run_one "$h" &
  running=$((running + 1))
  if [ $running -ge "$FUZZ_JOBS" ]; then wait -n; running=$((running - 1)); fi
done
wait

echo
echo "fuzz run of $started, ${FUZZ_SECONDS} s per harness, $FUZZ_JOBS at a time, $(nproc) cores"
echo
echo "| harness | executions | exec/s | coverage (edges) | features | corpus | crashes | leaks | timeouts | oom |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
failed=0
for h in "${HARNESSES[@]}"; do
  log="$FUZZ_BUILD/fuzz-$h.log" art="$FUZZ_BUILD/artifacts/$h"
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}' | tail -1)
  rate=$([ -n "$execs" ] && echo $((execs / FUZZ_SECONDS)))
  last=$(grep -E '^#[0-9]+' "$log" | grep -o 'cov: [0-9]* ft: [0-9]* corp: [0-9]*' | tail -1)
  cov=$(echo "$last" | awk '{print $2}'); ft=$(echo "$last" | awk '{print $4}'); corp=$(echo "$last" | awk '{print $6}')
  crashes=$(ls "$art" 2>/dev/null | grep -c '^crash-' || true)
  leaks=$(( $(ls "$art" 2>/dev/null | grep -c '^leak-' || true) + $(grep -c 'ERROR: LeakSanitizer' "$log" || true) ))
  timeouts=$(ls "$art" 2>/dev/null | grep -c '^timeout-' || true)
  ooms=$(ls "$art" 2>/dev/null | grep -c '^oom-' || true)
  echo "| $h | ${execs:-?} | ${rate:-?} | ${cov:-?} | ${ft:-?} | ${corp:-?} | $crashes | $leaks | $timeouts | $ooms |"
  [ $((crashes + leaks + timeouts + ooms)) -eq 0 ] && [ -n "$execs" ] || failed=1
done
echo
if [ $failed -ne 0 ]; then
  echo "FAIL: a harness found a crash, leak, timeout or out-of-memory input, or did not run (logs: $FUZZ_BUILD/fuzz-*.log)"
  exit 1
fi
echo "PASS: 0 crashes, 0 leaks, 0 timeouts"
