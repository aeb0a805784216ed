# Sourced by every script that builds release binaries (`make dist`, the benchmarks): sets `release_flags`, the
# `swift build` flags they share, and `release_build`, those flags with `-c release` and the benchmarks' build
# folder. The Swift runtime is linked in (--static-swift-stdlib), as `make dist` ships it, so the benchmarks measure
# the binary a provider installs and the order below covers the runtime's functions. Every function gets its own
# section, so the linker drops the unused ones (--gc-sections) and can place the rest; and the functions a serving
# process runs are placed together, in the order of scripts/callveil.order.gz (made by scripts/link-order.sh), so
# that fewer pages of code are resident.
# The benchmarks build in .build-release, apart from `swift build -c release` in .build: the driver's incremental check
# does not see frontend flags, so a folder once compiled without them would keep its objects.
# CALLVEIL_LINK_ORDER=0 leaves the order out (link-order.sh measures the layout without it).
release_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
release_flags=(--static-swift-stdlib -Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections)
if [ "${CALLVEIL_LINK_ORDER:-1}" != 0 ] && [ -f "$release_top/scripts/callveil.order.gz" ]; then
  # The linker reads the order as text, from a file named by the order's digest: a new order is a new linker
  # argument, so the build links again (it does not watch the file's content).
  release_order="$release_top/.build-release/callveil-$(sha256sum "$release_top/scripts/callveil.order.gz" | cut -c1-16).order"
  if [ ! -f "$release_order" ]; then
    mkdir -p "$release_top/.build-release"
    gunzip -c "$release_top/scripts/callveil.order.gz" > "$release_order.new" && mv "$release_order.new" "$release_order"
  fi
  release_flags+=(-Xlinker "--section-ordering-file=$release_order")
fi
release_build=(-c release --scratch-path "$release_top/.build-release" "${release_flags[@]}")
