#!/usr/bin/env bash
# A traced `make overload`: the server exports every request's spans (OpenTelemetry, OTLP/HTTP JSON) to
# `callveil-bench trace-collect`, which prints, after the run, the mean of each stage over all /queries traces and
# the slowest lookup's trace as a tree. TRACE_PORT sets the collector's port, TRACE_TOP how many slow traces to print,
# TRACE_SAMPLE the share of requests traced (OTEL_TRACES_SAMPLER_ARG, default 1); other arguments and OVERLOAD_*
# variables go to bench/overload.sh (the doors' run is skipped).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
source "$top/bench/build-products.sh"
port=${TRACE_PORT:-14318}
out=$(mktemp /tmp/callveil-trace.XXXXXX)
collector=""
cleanup() { [ -n "$collector" ] && kill "$collector" 2>/dev/null; wait 2>/dev/null || true; rm -f "$out"; }
trap cleanup EXIT
cpus=$(nproc)
pin=(); [ "$cpus" -ge 2 ] && pin=(taskset -c "0-$((cpus - 2))")
"${pin[@]}" "$bench_bin" trace-collect --port "$port" --top "${TRACE_TOP:-1}" > "$out" &
collector=$!
sleep 1
export OTEL_TRACES_EXPORTER=otlp
export OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="http://127.0.0.1:$port/v1/traces"
export OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json
export OTEL_TRACES_SAMPLER=parentbased_traceidratio
export OTEL_TRACES_SAMPLER_ARG=${TRACE_SAMPLE:-1}
export OTEL_BSP_MAX_QUEUE_SIZE=65536 OTEL_BSP_SCHEDULE_DELAY=500
OVERLOAD_DOORS=0 bash bench/overload.sh "$@"
unset OTEL_TRACES_EXPORTER
kill -TERM "$collector"
wait "$collector" || true
collector=""
cat "$out"
