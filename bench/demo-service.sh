# Sourced by the benchmarks that serve a demo dataset (service-memory.sh, replay.sh, replay-cluster.sh) and by
# scripts/link-order.sh; run from the repository's top.
# `demo_dataset BIN DIR COUNT`: COUNT demo numbers in DIR (identities.csv, the use cases' .binpb), processed by
# process-db with its defaults into DIR/block and DIR/identity.
demo_dataset() {
  local bin=$1 dir=$2 count=$3
  mkdir -p "$dir"
  "$bin" generate-demo --count "$count" --output "$dir/identities.csv" > /dev/null
  "$bin" build-db --input "$dir/identities.csv" --output "$dir" > /dev/null
  "$bin" process-db --input "$dir/block.binpb" --output "$dir/block" > /dev/null 2>&1
  "$bin" process-db --input "$dir/identity.binpb" --output "$dir/identity" > /dev/null 2>&1
}

# `demo_service BIN WORK COUNT ADMIN_PORT`: the demo dataset in WORK/dataset (kept if already there) and
# WORK/service-config.json, the demo config of `serve` over it: its state in WORK/state, no gateway, the admin
# listener on ADMIN_PORT.
demo_service() {
  local bin=$1 work=$2 count=$3 admin=$4
  [ -f "$work/dataset/identity/shard.manifest.json" ] || demo_dataset "$bin" "$work/dataset" "$count"
  python3 - "$work" "$admin" <<'PY'
import json, sys
work, admin = sys.argv[1], int(sys.argv[2])
config = json.load(open("cluster/demo/service-config.json"))
for u in config["usecases"]:
    u["fileStem"] = f"{work}/dataset/{u['fileStem']}"
config["stateDirectory"] = f"{work}/state"
config["keys"]["database"] = f"{work}/state/keys.sqlite"
config["http"] = {"adminPort": admin}
config.pop("gateway", None)
json.dump(config, open(f"{work}/service-config.json", "w"), indent=1)
PY
}
