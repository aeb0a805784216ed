#!/usr/bin/env bash
# Regenerates the committed Swift code for CallVeil's protobuf schemas.
# Needs protoc (Debian: protobuf-compiler) and protoc-gen-swift built from swift-protobuf at the version
# Package.swift uses: PROTOC_GEN_SWIFT=/path/to/protoc-gen-swift scripts/generate-protos.sh
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
plugin=${PROTOC_GEN_SWIFT:-$(command -v protoc-gen-swift || true)}
if [ -z "$plugin" ]; then
  echo "protoc-gen-swift not found: build it with 'swift build -c release --product protoc-gen-swift' in a checkout of swift-protobuf, then set PROTOC_GEN_SWIFT" >&2
  exit 1
fi
src="$top/Sources/LookupProtocol/proto"
out="$top/Sources/LookupProtocol/generated"
rm -f "$out"/*.pb.swift
mkdir -p "$out"
(cd "$src" && find . -name '*.proto' | sort | sed 's|^\./||' | xargs protoc \
  --plugin=protoc-gen-swift="$plugin" \
  --swift_opt=Visibility=Public \
  --swift_opt=FileNaming=PathToUnderscores \
  --swift_out="$out" -I .)
echo "generated: $(ls "$out")"
