#!/usr/bin/env bash
# The whole test suite, as CI runs it: contracts, lint, types, then unit,
# integration and end-to-end tests against real PostgreSQL, NATS, ClickHouse and Redis.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
PATH="$PWD/node_modules/.bin:$PATH"

# Real servers for integration and end-to-end tests (idempotent), where the machine
# provides a start-services.sh beside the checkout.
services=../shared/services/start-services.sh
if [ -f "$services" ]; then
  bash "$services" >/dev/null
fi
# The read-only ClickHouse user the analytics query tests connect as.
bash scripts/clickhouse-users.sh

# The console's browser tests drive Debian's Chromium (console/test); installed once when missing.
if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null; then
  echo "== installing chromium for the console's browser tests"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null
fi

echo "== proto: lint, and generated code is up to date"
buf lint
gen=$(mktemp -d)
trap 'rm -rf "$gen"' EXIT
buf generate -o "$gen"
if ! diff -r "$gen/proto/gen" proto/gen >/dev/null; then
  echo "proto/gen is stale: run 'pnpm generate' and commit the result" >&2
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
