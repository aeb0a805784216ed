# A throwaway PostgreSQL server for scripts (sourced, not run): Debian's server binaries, a data directory under
# a temporary directory, password (SCRAM) authentication, durability off. As root the server runs as Debian's
# `postgres` user. Used by the bench and cluster scripts; the Swift tests have their own (TestPostgres).
#
#   pg_temp_start PORT [LISTEN_ADDRESS] [EXTRA_POSTGRES_ARGS…]       sets pg_temp_url (superuser callveil, no database)
#   pg_temp_createdb NAME                                             prints a URL of a new database NAME
#   pg_temp_psql SQL…                                                 runs SQL on the postgres database
#   pg_temp_stop                                                      stops the server and removes its directory

pg_temp_bin() {
  local version
  version=$(ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -1)
  [ -n "$version" ] || { echo "no PostgreSQL server under /usr/lib/postgresql (make deps installs it)" >&2; return 1; }
  echo "/usr/lib/postgresql/$version/bin"
}

pg_temp_as() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

pg_temp_start() {
  pg_temp_port=$1
  local listen=${2:-127.0.0.1}
  shift 2 || shift $#
  local bin; bin=$(pg_temp_bin) || return 1
  # Its own directory (the server's user must reach it, which a caller's 0700 work directory would not allow).
  pg_temp_dir=$(mktemp -d /tmp/callveil-pg.XXXXXX)
  pg_temp_password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
  echo "$pg_temp_password" > "$pg_temp_dir/pw"
  [ "$(id -u)" = 0 ] && chown -R postgres "$pg_temp_dir"
  pg_temp_as "$bin/initdb" -D "$pg_temp_dir/data" -U callveil --auth=scram-sha-256 --pwfile="$pg_temp_dir/pw" -E UTF8 --no-sync >/dev/null
  echo "host all all 0.0.0.0/0 scram-sha-256" >> "$pg_temp_dir/data/pg_hba.conf"
  pg_temp_as "$bin/pg_ctl" -D "$pg_temp_dir/data" -l "$pg_temp_dir/log" -w -t 30 start \
    -o "-p $pg_temp_port -k $pg_temp_dir -c listen_addresses=$listen -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400 $*" >/dev/null
  pg_temp_host=${listen%%,*}
  pg_temp_url="postgres://callveil:$pg_temp_password@$pg_temp_host:$pg_temp_port"
}

pg_temp_psql() {
  PGPASSWORD=$pg_temp_password psql -X -q -t -A -h "$pg_temp_host" -p "$pg_temp_port" -U callveil -d postgres -c "$*"
}

pg_temp_createdb() {
  pg_temp_psql "CREATE DATABASE $1" >/dev/null
  echo "$pg_temp_url/$1?sslmode=disable"
}

pg_temp_stop() {
  [ -n "${pg_temp_dir:-}" ] && [ -d "$pg_temp_dir/data" ] || return 0
  pg_temp_as "$(pg_temp_bin)/pg_ctl" -D "$pg_temp_dir/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$pg_temp_dir"
}
