# Sourced by bench/overload.sh and bench/overload-doors.sh: builds callveil and callveil-bench and sets $bin and
# $bench_bin. OVERLOAD_BUILD=release measures the release build, as a provider runs it; `make test` uses the debug
# build it already has.
build=(-c debug)
if [ "${OVERLOAD_BUILD:-debug}" = release ]; then
  source "$(dirname "${BASH_SOURCE[0]}")/../scripts/release-flags.sh"
  build=("${release_build[@]}")
fi
swift build "${build[@]}" --product callveil 2>&1 | grep -E "error|Build complete" || true
swift build "${build[@]}" --product callveil-bench 2>&1 | grep -E "error|Build complete" || true
bin="$(swift build "${build[@]}" --show-bin-path)/callveil"
bench_bin="$(swift build "${build[@]}" --show-bin-path)/callveil-bench"
