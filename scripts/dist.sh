#!/usr/bin/env bash
# `make dist`: a release build with the Swift runtime linked in (--static-swift-stdlib, set in release-flags.sh), and
# a Debian package (dpkg-deb) holding the binary, the systemd units, an example config and the docs, with `Depends:`
# on the Debian packages of the libraries the binary really links (read with ldd and dpkg -S on this machine).
# Output: dist/callveil_<version>_<arch>.deb. DIST_BUILD_PATH (default .build-dist) is the build folder.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
version=$(sed -n 's/^let callveilVersion = "\(.*\)"$/\1/p' Sources/callveil/Support/Version.swift)
[ -n "$version" ] || { echo "dist: no version in Sources/callveil/Support/Version.swift" >&2; exit 1; }
build=${DIST_BUILD_PATH:-.build-dist}
source scripts/release-flags.sh
swift build -c release "${release_flags[@]}" --product callveil --build-path "$build"
bin="$build/release/callveil"
python3 scripts/check-link-order.py "$bin" scripts/callveil.order.gz
arch=$(dpkg --print-architecture)

# The Debian package of each shared library the binary links directly (its NEEDED entries, found where ldd finds
# them; their own dependencies come with their packages). The Swift runtime is linked in.
depends=()
while read -r name; do
  path=$(ldd "$bin" | awk -v lib="$name" '$1 == lib && $3 ~ /^\// { print $3 } $1 ~ ("/" lib "$") { print $1 }')
  [ -n "$path" ] || { echo "dist: the binary needs $name, which ldd does not find" >&2; exit 1; }
  package=""
  for candidate in "$path" "/usr$path" "$(readlink -f "$path")"; do
    package=$(dpkg -S "$candidate" 2>/dev/null | head -1 | cut -d: -f1) && [ -n "$package" ] && break
  done
  [ -n "$package" ] || { echo "dist: no Debian package owns $path (linked by the binary)" >&2; exit 1; }
  case " ${depends[*]-} " in *" $package "*) ;; *) depends+=("$package") ;; esac
done < <(readelf -d "$bin" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p')
if ldd "$bin" | grep -q 'libswift\|not found'; then
  echo "dist: the binary still loads the Swift runtime or misses a library:" >&2; ldd "$bin" >&2; exit 1
fi

stage=$(mktemp -d /tmp/callveil-dist.XXXXXX)
trap 'rm -rf "$stage"' EXIT
install -D -m 0755 "$bin" "$stage/usr/bin/callveil"
strip --strip-unneeded "$stage/usr/bin/callveil" 2>/dev/null || true
for unit in cluster/systemd/*.service; do install -D -m 0644 "$unit" "$stage/lib/systemd/system/$(basename "$unit")"; done
install -D -m 0640 cluster/debian/service-config.json "$stage/etc/callveil/service-config.json"
doc="$stage/usr/share/doc/callveil"
for file in README.md docs/operations.md docs/cluster.md docs/capacity.md docs/provider-guide.md cluster/postgres.md; do
  [ -f "$file" ] && install -D -m 0644 "$file" "$doc/$(basename "$file")"
done
install -D -m 0644 cluster/cluster.yaml "$doc/examples/cluster.yaml"
install -D -m 0644 cluster/two-coordinators/worker.env "$doc/examples/worker.env"
install -D -m 0644 cluster/service-config-shared.json "$doc/examples/service-config-shared.json"
for file in callveil-rules.yml callveil-rules.test.yml grafana-dashboard.json prometheus.yml; do
  install -D -m 0644 "cluster/monitoring/$file" "$doc/monitoring/$file"
done
install -d "$stage/DEBIAN"
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@DEPENDS@/$(IFS=,; echo "${depends[*]}" | sed 's/,/, /g')/" \
  cluster/debian/control.in > "$stage/DEBIAN/control"
echo "Installed-Size: $(du -sk --exclude=DEBIAN "$stage" | cut -f1)" >> "$stage/DEBIAN/control"
install -m 0755 cluster/debian/postinst cluster/debian/postrm "$stage/DEBIAN/"
echo /etc/callveil/service-config.json > "$stage/DEBIAN/conffiles"
mkdir -p dist
deb="dist/callveil_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "dist: $deb ($(du -h "$deb" | cut -f1)); Depends: adduser, ${depends[*]}"
