#!/usr/bin/env bash
# `make dist-test` (root): the Debian package from `make dist`, installed with dpkg into a fresh Debian 12 root made by
# debootstrap (minbase: no Swift toolchain), must run there. The test follows the deployment steps of docs/cluster.md
# (*One host from the package*): the package's Depends installed with apt, `dpkg -i`, a dataset built with the
# installed binary as the callveil user, the example config given a user token and TLS; then `callveil serve` runs
# with the installed unit's ExecStart (as the unit's user, with $STATE_DIRECTORY as systemd sets it), answers a
# `callveil query` from outside the root, and stops on SIGTERM within its grace period while an HTTP/2 client keeps
# its connection open; then a coordinator and a worker run from their units (keygen, cluster.yaml, worker.env, CURVE on
# loopback) and answer a query. DIST_MIRROR (default http://deb.debian.org/debian) is the Debian mirror.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ "$(id -u)" = 0 ] || { echo "dist-test needs root (debootstrap, chroot): skipped"; exit 0; }
mirror=${DIST_MIRROR:-http://deb.debian.org/debian}
command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
bash scripts/dist.sh
deb=$(ls -t dist/callveil_*.deb | head -1)
bin="${DIST_BUILD_PATH:-.build-dist}/release/callveil"
root=$(mktemp -d /tmp/callveil-root.XXXXXX)
server=""
worker=""
cleanup() {
  [ -n "$server" ] && kill -9 "$server" 2>/dev/null || true
  [ -n "$worker" ] && kill -9 "$worker" 2>/dev/null || true
  [ -n "${hold:-}" ] && kill -9 "$hold" 2>/dev/null || true
  umount "$root/proc" 2>/dev/null || true
  umount "$root/dev" 2>/dev/null || true
  rm -rf "$root"
}
trap cleanup EXIT
step() { echo "dist-test: $*"; }
fail() { echo "dist-test: FAIL: $*" >&2; exit 1; }

step "debootstrap --variant=minbase bookworm ($mirror)"
start=$(date +%s)
debootstrap --variant=minbase bookworm "$root" "$mirror" > "$root.log" 2>&1 || { tail -20 "$root.log"; fail "debootstrap"; }
rm -f "$root.log"
step "fresh root in $(( $(date +%s) - start )) s"
[ ! -e "$root/usr/bin/swift" ] && ! find "$root" -name 'libswiftCore*' | grep -q . || fail "the fresh root has a Swift runtime"
chmod 0755 "$root"
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
cp /etc/resolv.conf "$root/etc/resolv.conf"
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }

# A Debian host runs systemd (and procps' kill, which the units' ExecReload uses); minbase has neither.
step "apt-get install systemd procps (what a Debian host has)"
in_root apt-get install -y -qq --no-install-recommends systemd procps > /dev/null 2>&1
# docs/cluster.md, One host from the package: the Depends with apt, then dpkg -i.
depends=$(dpkg-deb -f "$deb" Depends | sed 's/([^)]*)//g; s/,/ /g')
step "apt-get install $depends"
in_root apt-get install -y -qq --no-install-recommends $depends > /dev/null 2>&1
cp "$deb" "$root/tmp/callveil.deb"
step "dpkg -i $(basename "$deb")"
in_root dpkg -i /tmp/callveil.deb
version=$(in_root callveil --version)
[ "$version" = "$(dpkg-deb -f "$deb" Version)" ] || fail "callveil --version printed '$version'"
if in_root ldd /usr/bin/callveil | grep -q 'not found\|swift'; then in_root ldd /usr/bin/callveil; fail "the installed binary misses a library"; fi
for unit in callveil callveil-coordinator callveil-worker callveil-gateway; do
  out=$(in_root systemd-analyze verify "/lib/systemd/system/$unit.service" 2>&1) || fail "systemd-analyze verify $unit.service: $out"
  [ -z "$out" ] || fail "systemd-analyze verify $unit.service: $out"
done
step "units verified; state directory $(in_root stat -c '%U %a' /var/lib/callveil), config $(in_root stat -c '%U:%G %a' /etc/callveil)"

# A dataset, built with the installed tools as the service's user.
as_callveil() { chroot --userspec=callveil:callveil "$root" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/var/lib/callveil "$@"; }
as_callveil mkdir -p /var/lib/callveil/data
as_callveil callveil generate-demo --count 500 --output /var/lib/callveil/data/identities.csv > /dev/null
as_callveil callveil build-db --input /var/lib/callveil/data/identities.csv --output /var/lib/callveil/data 2> /dev/null
as_callveil callveil process-db --input /var/lib/callveil/data/block.binpb --output /var/lib/callveil/data/block 2> /dev/null
as_callveil callveil process-db --input /var/lib/callveil/data/identity.binpb --output /var/lib/callveil/data/identity 2> /dev/null
mapfile -t samples < "$root/var/lib/callveil/data/sample-numbers.txt"

# The operator's edits of the example config: a user token, TLS (HTTP/2 with ALPN, as Apple's relay connects).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$root/etc/callveil/tls.key" \
  -out "$root/etc/callveil/tls.crt" -days 2 -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" 2> /dev/null
in_root chgrp callveil /etc/callveil/tls.key /etc/callveil/tls.crt
in_root chmod 0640 /etc/callveil/tls.key
python3 - "$root/etc/callveil/service-config.json" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config["users"][0]["tokens"] = ["AAAA"]
config["http"].update({"protocol": "tls", "tlsCertificateFile": "tls.crt", "tlsKeyFile": "tls.key"})
json.dump(config, open(sys.argv[1], "w"), indent=2)
PY

# The installed unit's command line, as the unit's user, with the environment systemd gives it.
exec_start=$(sed -n 's/^ExecStart=//p' "$root/lib/systemd/system/callveil.service")
user=$(sed -n 's/^User=//p' "$root/lib/systemd/system/callveil.service")
port=$(echo "$exec_start" | sed -n 's/.*--port \([0-9]*\).*/\1/p')
step "ExecStart=$exec_start (User=$user)"
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then fail "port $port is taken on this machine"; fi
chroot --userspec="$user:$user" "$root" /usr/bin/env -i PATH=/usr/bin:/bin STATE_DIRECTORY=/var/lib/callveil $exec_start \
  > /tmp/callveil-dist-serve.log 2>&1 &
server=$!
for _ in $(seq 1 150); do curl -sf http://127.0.0.1:9090/healthz > /dev/null && break; sleep 0.2; done
curl -sf http://127.0.0.1:9090/healthz > /dev/null || { cat /tmp/callveil-dist-serve.log; fail "the service did not start"; }
[ -f "$root/var/lib/callveil/keys.sqlite" ] && [ -d "$root/var/lib/callveil/issuer-keys" ] || fail "the state is not in /var/lib/callveil"
[ ! -e "$root/etc/callveil/keys.sqlite" ] || fail "the service wrote beside its config"

step "callveil query from outside the root (https, HTTP/2)"
answer=$(timeout 60 "$bin" query --url "https://127.0.0.1:$port" --ca "$root/etc/callveil/tls.crt" --user-token AAAA \
  --block-usecase com.example.app.block --identity-usecase com.example.app.identity --number "${samples[0]}" --number "${samples[3]}")
echo "$answer" | sed 's/^/  /'
echo "$answer" | grep -q "block: BLOCKED" || fail "the blocked sample was not answered BLOCKED"
echo "$answer" | grep -q 'identity: name "' || fail "the sample's identity is missing"
echo "$answer" | grep -q "block: not listed" || fail "the absent sample was not answered 'not listed'"

step "SIGTERM with an idle HTTP/2 client connected"
exec {holdout}< <(.build-venv/bin/python scripts/ohttp-client.py hold --port "$port" --path /.well-known/private-token-issuer-directory \
  --tls --ca "$root/etc/callveil/tls.crt")
hold=$!
read -r -t 20 status <&"$holdout" || fail "the HTTP/2 client did not connect"
[ "$status" = "status 200" ] || fail "the HTTP/2 client got '$status'"
grace=10
start=$(date +%s%N)
kill -TERM "$server"
for _ in $(seq 1 $(( (grace + 5) * 10 ))); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$server" 2>/dev/null; then fail "still running $(( grace + 5 )) s after SIGTERM"; fi
wait "$server" || true
server=""
elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
step "stopped $elapsed ms after SIGTERM (grace ${grace} s; the unit's TimeoutStopSec is $(sed -n 's/^TimeoutStopSec=//p' "$root/lib/systemd/system/callveil.service") s)"
[ "$elapsed" -le $(( grace * 1000 + 500 )) ] || fail "stopping took $elapsed ms, more than the grace period (and 0.5 s for the measurement)"
# docs/cluster.md, A cluster: a coordinator and a worker from their units, on this root's loopback with CURVE.
step "a cluster from the units: keygen, cluster.yaml, worker.env"
coordinator_key=$(in_root callveil keygen --output /etc/callveil/coordinator.key)
worker_key=$(in_root callveil keygen --output /etc/callveil/worker.key)
in_root chown callveil /etc/callveil/coordinator.key /etc/callveil/worker.key
# The key goes in with bash's substitution, quoted: a Z85 key may hold & or |, which sed would read.
cluster_yaml=$(sed -e 's|^bind: .*|bind: tcp://127.0.0.1:5555|' -e 's|^replication: .*|replication: 1|' -e '/^  - id: worker-2/,$d' \
  "$root/usr/share/doc/callveil/examples/cluster.yaml")
printf '%s\n' "${cluster_yaml//REPLACE-WITH-worker-1-PUBLIC-KEY-40-CHARS/"$worker_key"}" > "$root/etc/callveil/cluster.yaml"
printf 'WORKER_ID=worker-1\nCOORDINATOR_ARGS=--coordinator tcp://127.0.0.1:5555 --server-key %s\n' "$coordinator_key" > "$root/etc/callveil/worker.env"
in_root chgrp callveil /etc/callveil/cluster.yaml /etc/callveil/worker.env
# Each unit's ExecStart with its EnvironmentFile's variables put in as systemd does (an unbraced $VAR is split into
# words when the command runs; globbing is off for it, since a Z85 key may hold * or ?).
unit_command() {
  local unit="$root/lib/systemd/system/$1.service" command line key value file
  command=$(awk '/^ExecStart=/ { on = 1; sub(/^ExecStart=/, "") } on { line = $0; more = sub(/\\$/, "", line); printf "%s ", line; if (!more) exit }' "$unit")
  file=$(sed -n 's/^EnvironmentFile=-\{0,1\}//p' "$unit")
  if [ -n "$file" ]; then
    while read -r line; do
      case "$line" in ''|\#*|[!A-Za-z_]*) continue ;; esac
      key=${line%%=*} value=${line#*=}
      command=${command//"\${$key}"/"$value"}
      command=${command//"\$$key"/"$value"}
    done < "$root$file"
  fi
  echo "$command"
}
coordinator_cmd=$(unit_command callveil-coordinator)
worker_cmd=$(unit_command callveil-worker)
step "ExecStart=$coordinator_cmd"
step "ExecStart=$worker_cmd"
set -f
chroot --userspec="$user:$user" "$root" /usr/bin/env -i PATH=/usr/bin:/bin STATE_DIRECTORY=/var/lib/callveil $coordinator_cmd \
  > /tmp/callveil-dist-coordinator.log 2>&1 &
server=$!
chroot --userspec="$user:$user" "$root" /usr/bin/env -i PATH=/usr/bin:/bin STATE_DIRECTORY=/var/lib/callveil $worker_cmd \
  > /tmp/callveil-dist-worker.log 2>&1 &
worker=$!
set +f
# The worker receives its shards from the coordinator first: ask until it answers (30 s at most).
for _ in $(seq 1 15); do
  kill -0 "$server" 2>/dev/null || { cat /tmp/callveil-dist-coordinator.log; fail "the coordinator exited"; }
  kill -0 "$worker" 2>/dev/null || { cat /tmp/callveil-dist-worker.log; fail "the worker exited"; }
  answer=$(timeout 20 "$bin" query --url "https://127.0.0.1:$port" --ca "$root/etc/callveil/tls.crt" --user-token AAAA \
    --block-usecase com.example.app.block --identity-usecase com.example.app.identity --number "${samples[0]}" 2>&1) && break
  sleep 2
done
echo "$answer" | sed 's/^/  /'
echo "$answer" | grep -q "block: BLOCKED" || { tail -5 /tmp/callveil-dist-coordinator.log /tmp/callveil-dist-worker.log; fail "the cluster did not answer"; }
worker_metrics=$(curl -sf --max-time 5 http://127.0.0.1:9091/metrics) && grep -q '^callveil_worker_shards ' <<< "$worker_metrics" \
  || fail "the worker unit's admin listener (/metrics on 9091) did not answer"
kill -TERM "$server" "$worker"
for _ in $(seq 1 150); do kill -0 "$server" 2>/dev/null || kill -0 "$worker" 2>/dev/null || break; sleep 0.1; done
kill -0 "$server" 2>/dev/null && fail "the coordinator did not stop"
kill -0 "$worker" 2>/dev/null && fail "the worker did not stop"
server=""
worker=""
step "the coordinator and worker units' command lines served the query through CURVE and stopped on SIGTERM"
in_root dpkg --purge callveil > /dev/null
[ ! -e "$root/var/lib/callveil" ] && ! in_root getent passwd callveil > /dev/null || fail "purge left the state or the user"
step "PASS: installed on a fresh Debian 12 root without Swift; one host and a coordinator with a worker served queries from the units' command lines; stopped with an HTTP/2 client connected; purged"
