#!/usr/bin/env bash
# The real servers Latchkey's integration and end-to-end tests use, on 127.0.0.1:
# PostgreSQL, NATS with JetStream, ClickHouse and Redis. Each one already answering
# on its port is left alone; the others are started, with Docker Compose when a
# Docker engine answers (scripts/services.compose.yaml), otherwise from Debian's or
# Ubuntu's packages (installed with scripts/apt-install.sh, as root or through sudo)
# run from the data folder SERVICES_DIR. A second run finds them all answering and
# changes nothing.
#
#   bash scripts/services.sh [start]   start what does not answer, print the URLs
#   bash scripts/services.sh stop      stop what this script started (from SERVICES_DIR), nothing else
#   bash scripts/services.sh env       the URLs as shell assignments (TEST_DATABASE_URL=... and so on)
#
# Settings, from the environment:
#   PG_PORT 5432, NATS_PORT 4222, CH_HTTP_PORT 8123, CH_TCP_PORT 9000, REDIS_PORT 6379
#   SERVICES_DIR   the data folder (.services in the repository, which git ignores)
#   SERVICES_WITH  docker or apt (docker when `docker info` and `docker compose version` succeed)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
PG_PORT=${PG_PORT:-5432}
NATS_PORT=${NATS_PORT:-4222}
CH_HTTP_PORT=${CH_HTTP_PORT:-8123}
CH_TCP_PORT=${CH_TCP_PORT:-9000}
REDIS_PORT=${REDIS_PORT:-6379}
dir=${SERVICES_DIR:-$root/.services}
# Debian puts nats-server and clickhouse-server in /usr/sbin, which a user's PATH may lack.
PATH="$PATH:/usr/sbin:/sbin"

pg_url="postgres://postgres@127.0.0.1:$PG_PORT/postgres"
nats_url="nats://127.0.0.1:$NATS_PORT"
ch_url="http://127.0.0.1:$CH_HTTP_PORT"
redis_url="redis://127.0.0.1:$REDIS_PORT"

log() { echo "services: $*" >&2; }
die() {
  log "$*"
  exit 1
}

# --- Is it answering? Each check speaks the server's protocol, so another program on the port is not taken for it.

pg_up() {
  if command -v pg_isready >/dev/null; then
    pg_isready -q -h 127.0.0.1 -p "$PG_PORT" -t 2
  else
    timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PG_PORT" 2>/dev/null
  fi
}
# NATS greets every connection with an INFO line, which says whether JetStream is on.
nats_state() {
  local info
  info=$(timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$NATS_PORT && IFS= read -r line <&3 && printf '%s' \"\$line\"" 2>/dev/null || true)
  case "$info" in
    INFO*'"jetstream":true'*) echo jetstream ;;
    INFO*) echo plain ;;
    *) echo none ;;
  esac
}
ch_up() { [ "$(curl -s --max-time 2 "$ch_url/ping" 2>/dev/null)" = "Ok." ]; }
redis_up() {
  local reply
  reply=$(timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$REDIS_PORT && printf 'PING\r\n' >&3 && IFS= read -r line <&3 && printf '%s' \"\$line\"" 2>/dev/null || true)
  case "$reply" in +PONG* | -NOAUTH*) return 0 ;; *) return 1 ;; esac
}

# wait_for <what> <seconds> <check...>
wait_for() {
  local what=$1 seconds=$2
  shift 2
  local until=$((SECONDS + seconds))
  until "$@"; do
    [ $SECONDS -lt $until ] || return 1
    sleep 0.2
  done
}

# --- What this script started: a pid file in SERVICES_DIR whose process still runs from SERVICES_DIR.

# owned <pidfile>: the pid, when that process is alive and its command line or working folder names
# SERVICES_DIR (a daemonized redis-server rewrites its command line, but works in its --dir).
owned() {
  local pid
  pid=$(head -1 "$1" 2>/dev/null || true)
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  if tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$dir/"; then
    echo "$pid"
  else
    case "$(readlink "/proc/$pid/cwd" 2>/dev/null)/" in "$dir"/*) echo "$pid" ;; *) return 1 ;; esac
  fi
}

# --- PostgreSQL from the distribution's packages: a cluster of its own, initdb'd once, trust auth, fsync off.

pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }
# initdb refuses root: as root the cluster belongs to the postgres user the package creates.
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start_postgres_apt() {
  local bin data=$dir/postgres
  bin=$(pg_bin)
  mkdir -p "$data"
  chmod 700 "$data"
  [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$data"
  as_pg test -w "$data" || die "the postgres user cannot write $data (a parent folder is closed to it); set SERVICES_DIR to a folder it can reach"
  if [ ! -f "$data/PG_VERSION" ]; then
    as_pg "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --no-locale >"$dir/postgres-initdb.log" 2>&1 ||
      die "initdb failed: $(tail -5 "$dir/postgres-initdb.log")"
    # For tests: nothing here must survive a crash, so the disk is not waited for.
    as_pg tee -a "$data/postgresql.conf" >/dev/null <<EOF
# scripts/services.sh: a test server on 127.0.0.1 only (no Unix socket, whose path a deep checkout could make
# too long, nor one beside the system's cluster), not waiting for the disk
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
  fi
  as_pg "$bin/pg_ctl" -D "$data" -l "$data/server.log" -o "-p $PG_PORT" -w -t 60 start >/dev/null 9>&- ||
    die "PostgreSQL did not start: $(tail -5 "$data/server.log")"
  if [ -z "$(psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -Atc "SELECT 1 FROM pg_database WHERE datname = 'test'")" ]; then
    psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -qc "CREATE DATABASE test" >/dev/null
  fi
}

stop_postgres_apt() {
  local data=$dir/postgres
  [ -n "$(owned "$data/postmaster.pid")" ] || return 0
  as_pg "$(pg_bin)/pg_ctl" -D "$data" -m fast -w -t 60 stop >/dev/null
  echo "PostgreSQL  stopped ($data)"
}

# --- NATS: -js, its JetStream store in SERVICES_DIR.

start_nats_apt() {
  local data=$dir/nats
  mkdir -p "$data"
  setsid nats-server -a 127.0.0.1 -p "$NATS_PORT" -js -sd "$data" -P "$data/nats.pid" -l "$data/nats.log" \
    </dev/null >/dev/null 2>&1 9>&- &
  wait_for NATS 30 nats_is_jetstream || die "NATS did not answer on $NATS_PORT: $(tail -5 "$data/nats.log" 2>/dev/null)"
}
nats_is_jetstream() { [ "$(nats_state)" = jetstream ]; }

# --- ClickHouse: a generated config and users file. Debian's 18.16 needs LowCardinality allowed in the default
# profile; clients never send that setting, which current servers refuse.

ch_server() { command -v clickhouse-server || echo /usr/sbin/clickhouse-server; }

start_clickhouse_apt() {
  local data=$dir/clickhouse lowcard=""
  mkdir -p "$data/data" "$data/tmp" "$data/user_files" "$data/log" "$data/users.d"
  case "$(clickhouse-client --version 2>/dev/null)" in
    *" version 18."* | *" version 19."*) lowcard="<allow_experimental_low_cardinality_type>1</allow_experimental_low_cardinality_type>" ;;
  esac
  cat >"$data/config.xml" <<EOF
<?xml version="1.0"?>
<!-- Written by scripts/services.sh at every start: a test server on 127.0.0.1. -->
<yandex>
  <logger><level>warning</level><log>$data/log/server.log</log><errorlog>$data/log/error.log</errorlog><size>100M</size><count>2</count></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>$CH_HTTP_PORT</http_port>
  <tcp_port>$CH_TCP_PORT</tcp_port>
  <path>$data/data/</path>
  <tmp_path>$data/tmp/</tmp_path>
  <user_files_path>$data/user_files/</user_files_path>
  <users_config>$data/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <mark_cache_size>268435456</mark_cache_size>
  <uncompressed_cache_size>268435456</uncompressed_cache_size>
</yandex>
EOF
  # users.d beside it holds the read-only query user scripts/clickhouse-users.sh writes.
  cat >"$data/users.xml" <<EOF
<?xml version="1.0"?>
<!-- Written by scripts/services.sh: the default user, passwordless, from this host only. -->
<yandex>
  <profiles><default>$lowcard<max_memory_usage>4000000000</max_memory_usage></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
EOF
  "$(ch_server)" --config-file="$data/config.xml" --pid-file="$data/clickhouse.pid" --daemon >/dev/null 2>&1 9>&- ||
    die "ClickHouse did not start: $(tail -5 "$data/log/error.log" 2>/dev/null)"
  wait_for ClickHouse 60 ch_up || die "ClickHouse did not answer on $CH_HTTP_PORT: $(tail -5 "$data/log/error.log" 2>/dev/null)"
}

# --- Redis: nothing kept on disk.

start_redis_apt() {
  local data=$dir/redis
  mkdir -p "$data"
  redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --daemonize yes --pidfile "$data/redis.pid" \
    --logfile "$data/redis.log" --dir "$data" --save "" --appendonly no >/dev/null 9>&-
  wait_for Redis 30 redis_up || die "Redis did not answer on $REDIS_PORT: $(tail -5 "$data/redis.log" 2>/dev/null)"
}

# A process that has exited but is not reaped yet (its parent, often init, does that when it gets to it) is gone.
running() { kill -0 "$1" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }

# stop_pid <name> <pidfile>: SIGTERM to a process this script started, and wait until it is gone.
stop_pid() {
  local name=$1 pid
  pid=$(owned "$2") || return 0
  kill "$pid" 2>/dev/null || true
  local until=$((SECONDS + 30))
  while running "$pid"; do
    if [ $SECONDS -ge $until ]; then
      kill -9 "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.1
  done
  rm -f "$2"
  echo "$name  stopped ($(dirname "$2"))"
}

# --- Docker Compose: the same four, from images, on the host's network so that they listen on 127.0.0.1 as the
# packages' servers do (and ClickHouse's query user, allowed from 127.0.0.1 only, can log in).

compose() {
  PG_PORT=$PG_PORT NATS_PORT=$NATS_PORT CH_HTTP_PORT=$CH_HTTP_PORT CH_TCP_PORT=$CH_TCP_PORT REDIS_PORT=$REDIS_PORT \
    SERVICES_DIR=$dir docker compose -f "$root/scripts/services.compose.yaml" \
    -p "latchkey-services-$(printf '%s' "$dir" | sha256sum | cut -c1-8)" "$@"
}
docker_usable() { docker info >/dev/null 2>&1 && docker compose version >/dev/null 2>&1; }

start_docker() {
  mkdir -p "$dir/docker/clickhouse/config.d" "$dir/docker/clickhouse/users.d"
  # The image's own config.d is replaced by this one file: listen on 127.0.0.1 only, on these ports, and open
  # none of the image's other ports (MySQL, PostgreSQL, interserver) on the host.
  cat >"$dir/docker/clickhouse/config.d/latchkey.xml" <<EOF
<?xml version="1.0"?>
<!-- Written by scripts/services.sh. -->
<clickhouse>
  <listen_host>127.0.0.1</listen_host>
  <http_port>$CH_HTTP_PORT</http_port>
  <tcp_port>$CH_TCP_PORT</tcp_port>
  <mysql_port remove="1"/>
  <postgresql_port remove="1"/>
  <interserver_http_port remove="1"/>
</clickhouse>
EOF
  compose up -d --wait "$@" >&2 9>&- || die "docker compose up $* failed"
  local s
  for s in "$@"; do touch "$dir/docker/$s.started"; done
}

stop_docker() {
  local s started=()
  for s in postgres nats clickhouse redis; do
    [ -f "$dir/docker/$s.started" ] && started+=("$s")
  done
  [ ${#started[@]} -eq 0 ] && return 0
  compose rm -s -f -v "${started[@]}" >&2
  for s in "${started[@]}"; do
    rm -f "$dir/docker/$s.started"
    echo "$s  stopped (docker)"
  done
}

# --- Commands

# One NAME=value a line, the value quoted for the shell (scripts/test.sh evals them).
env_lines() {
  local users=""
  # The query user's file goes beside the users config of the ClickHouse this script runs; for another,
  # scripts/clickhouse-users.sh finds it from that server's command line.
  if [ -n "$(owned "$dir/clickhouse/clickhouse.pid")" ]; then
    users=$dir/clickhouse/users.d
  elif [ -f "$dir/docker/clickhouse.started" ]; then
    users=$dir/docker/clickhouse/users.d
  fi
  printf 'TEST_DATABASE_URL=%q\n' "$pg_url"
  printf 'TEST_NATS_URL=%q\n' "$nats_url"
  printf 'TEST_CLICKHOUSE_URL=%q\n' "$ch_url"
  printf 'TEST_REDIS_URL=%q\n' "$redis_url"
  printf 'CLICKHOUSE_HTTP=%q\n' "$ch_url"
  if [ -n "$users" ]; then printf 'CLICKHOUSE_USERS_DIR=%q\n' "$users"; fi
}

start() {
  local missing=() how
  pg_up || missing+=(postgres)
  case "$(nats_state)" in
    none) missing+=(nats) ;;
    plain) die "NATS on 127.0.0.1:$NATS_PORT runs without JetStream; restart it with -js, or set NATS_PORT to a free port" ;;
  esac
  ch_up || missing+=(clickhouse)
  redis_up || missing+=(redis)

  if [ ${#missing[@]} -gt 0 ]; then
    how=${SERVICES_WITH:-}
    if [ -z "$how" ]; then
      if docker_usable; then how=docker; else how=apt; fi
    fi
    case "$how" in
      docker)
        docker_usable || die "SERVICES_WITH=docker, but no Docker engine with compose answers"
        start_docker "${missing[@]}"
        ;;
      apt)
        local packages=() s
        for s in "${missing[@]}"; do
          case "$s" in
            postgres) [ -n "$(pg_bin)" ] || packages+=(postgresql) ;;
            nats) command -v nats-server >/dev/null || packages+=(nats-server) ;;
            clickhouse) command -v clickhouse-server >/dev/null || packages+=(clickhouse-server clickhouse-client) ;;
            redis) command -v redis-server >/dev/null || packages+=(redis-server) ;;
          esac
        done
        if [ ${#packages[@]} -gt 0 ] && ! bash "$root/scripts/apt-install.sh" "${packages[@]}"; then
          die "could not install ${packages[*]}; install them (ClickHouse also comes from ClickHouse's own apt repository), or start the servers yourself on these ports"
        fi
        for s in "${missing[@]}"; do "start_${s}_apt"; done
        ;;
      *) die "SERVICES_WITH is '$how': docker or apt" ;;
    esac
  fi

  started() { case " ${missing[*]} " in *" $1 "*) echo "started ($how, $dir)" ;; *) echo "already answering" ;; esac; }
  echo "PostgreSQL  $pg_url  $(started postgres)"
  echo "NATS        $nats_url  (JetStream)  $(started nats)"
  echo "ClickHouse  $ch_url  $(started clickhouse)"
  echo "Redis       $redis_url  $(started redis)"
}

stop() {
  stop_postgres_apt
  stop_pid "NATS" "$dir/nats/nats.pid"
  stop_pid "ClickHouse" "$dir/clickhouse/clickhouse.pid"
  stop_pid "Redis" "$dir/redis/redis.pid"
  if [ -d "$dir/docker" ] && compgen -G "$dir/docker/*.started" >/dev/null; then stop_docker; fi
}

case "${1:-start}" in
  start | stop)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    # Two runs at once (two test commands) would both start what is missing: one waits for the other.
    exec 9>"$dir/.lock"
    flock 9
    "${1:-start}"
    ;;
  env)
    [ -d "$dir" ] && dir=$(cd "$dir" && pwd)
    env_lines
    ;;
  *)
    echo "usage: scripts/services.sh [start|stop|env]" >&2
    exit 2
    ;;
esac
