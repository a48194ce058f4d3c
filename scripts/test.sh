#!/usr/bin/env bash
# The whole test suite, as CI runs it: contracts, lint, types, then unit,
# integration and end-to-end tests against real PostgreSQL, NATS, ClickHouse and Redis.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
PATH="$PWD/node_modules/.bin:$PATH"

# Real servers for the integration and end-to-end tests: PostgreSQL, NATS with JetStream, ClickHouse and Redis,
# each started (and installed, the first time) where it does not answer yet; see scripts/services.sh.
bash scripts/services.sh
eval "$(bash scripts/services.sh env | sed 's/^/export /')"
# The read-only ClickHouse user the analytics query tests connect as.
bash scripts/clickhouse-users.sh

# Programs the tests start themselves: a nats-server and a redis-server of a test's own (a test that stops its
# server never stops the shared one), Debian's Chromium for the console's browser tests (console/test), and nginx
# and Caddy, which the forward-auth tests put in front of the gateway (gateway/src/forward-auth); apt-install.sh keeps
# their packaged services from starting.
PATH="$PATH:/usr/sbin"
tools=()
command -v nats-server >/dev/null || tools+=(nats-server)
command -v redis-server >/dev/null || tools+=(redis-server)
[ -x /usr/bin/chromium ] || tools+=(chromium)
[ -x /usr/sbin/nginx ] || tools+=(nginx)
[ -x /usr/bin/caddy ] || tools+=(caddy)
[ ${#tools[@]} -eq 0 ] || bash scripts/apt-install.sh "${tools[@]}"

echo "== proto: lint, and generated code is up to date"
buf lint
gen=$(mktemp -d)
trap 'rm -rf "$gen"' EXIT
buf generate -o "$gen"
if ! diff -r "$gen/proto/gen" proto/gen >/dev/null; then
  echo "proto/gen is stale: run 'npm run generate' and commit the result" >&2
  diff -r "$gen/proto/gen" proto/gen | head -20 >&2
  exit 1
fi

echo "== lint and format"
biome check .

echo "== typecheck"
tsc -p tsconfig.json
tsc -p console/tsconfig.json

echo "== layers: no import cycles, no service importing another's source (docs/architecture.md, Layers)"
npm run --silent check:layers

echo "== console: build once, before the tests' many starts (npm start builds it when missing)"
(cd apps/latchkey && tsx -e 'import("@latchkey/console/build").then((m) => m.ensureBuilt())')

echo "== tests"
vitest run "$@"
