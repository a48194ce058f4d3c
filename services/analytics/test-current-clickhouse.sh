#!/usr/bin/env bash
# Runs the raw-query error-channel probes against a current ClickHouse, in process
# (services/analytics/src/raw-query-current-clickhouse.int.test.ts). That needs chdb
# (npm, ClickHouse 26.x, about 540 MB installed), which is not a dependency of the
# repository: it is installed once, outside it, into LATCHKEY_CHDB_DIR
# (default ~/.cache/latchkey-chdb). Extra arguments go to vitest.
set -euo pipefail

version=3.4.0
dir=${LATCHKEY_CHDB_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/latchkey-chdb}
root=$(cd "$(dirname "$0")/../.." && pwd)

installed=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$dir/node_modules/chdb/package.json" 2>/dev/null || true)
if [ "$installed" != "$version" ]; then
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || echo '{"private": true}' >"$dir/package.json"
  echo "test-current-clickhouse: installing chdb@$version into $dir" >&2
  (cd "$dir" && npm install --no-audit --no-fund --silent "chdb@$version")
fi

cd "$root"
LATCHKEY_CHDB_DIR="$dir" exec node_modules/.bin/vitest run services/analytics/src/raw-query-current-clickhouse.int.test.ts "$@"
