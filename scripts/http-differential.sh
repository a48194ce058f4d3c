#!/usr/bin/env bash
# The long differential run of the gateway's HTTP server (gateway/src/edge.ts) against node:http:
#   scripts/http-differential.sh [--seed N] [--cases N] [--pairs N] [--show N]
# (defaults: seed 1, 100,000 cases, 4 server pairs). `npm test` runs a bounded part of it
# (gateway/src/edge-differential.test.ts). Exits 1 on any disagreement, printing each.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
cd gateway
exec ../node_modules/.bin/tsx testing/edge-differential-run.ts "$@"
