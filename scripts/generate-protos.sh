#!/usr/bin/env bash
# Regenerates the committed Swift code for CallVeil's protobuf schemas: each module's proto/ folder into its
# generated/ folder (LookupProtocol: the API, HE and PIR schemas; Cluster: the cluster-internal messages;
# URLFilter: the report body). A generated file whose schema is not in the tree is left as it is.
# Needs protoc (Debian: protobuf-compiler) and protoc-gen-swift built from swift-protobuf at the version
# Package.swift uses: PROTOC_GEN_SWIFT=/path/to/protoc-gen-swift scripts/generate-protos.sh
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
plugin=${PROTOC_GEN_SWIFT:-$(command -v protoc-gen-swift || true)}
if [ -z "$plugin" ]; then
  echo "protoc-gen-swift not found: build it with 'swift build -c release --product protoc-gen-swift' in a checkout of swift-protobuf, then set PROTOC_GEN_SWIFT" >&2
  exit 1
fi
# Schemas of other modules are imported by path and their types referenced through the module (protoc-gen-swift's
# ProtoPathModuleMappings): the cluster messages carry LookupProtocol's PIR query, key and response.
base="$top/Sources/LookupProtocol/proto"
mappings=$(mktemp)
trap 'rm -f "$mappings"' EXIT
{
  echo 'mapping {'
  echo '  module_name: "LookupProtocol"'
  (cd "$base" && find . -name '*.proto' | sort | sed 's|^\./||; s|.*|  proto_file_path: "&"|')
  echo '}'
} > "$mappings"
for module in LookupProtocol ClusterTransport URLFilter; do
  options=(--swift_opt=Visibility=Public --swift_opt=FileNaming=PathToUnderscores)
  [ "$module" = LookupProtocol ] || options+=(--swift_opt=ProtoPathModuleMappings="$mappings")
  src="$top/Sources/$module/proto"
  out="$top/Sources/$module/generated"
  mkdir -p "$out"
  (cd "$src" && find . -name '*.proto' | sort | sed 's|^\./||' | xargs protoc \
    --plugin=protoc-gen-swift="$plugin" \
    "${options[@]}" --swift_out="$out" -I . -I "$base")
  echo "$module: $(cd "$out" && ls | tr '\n' ' ')"
done
