#!/usr/bin/env bash
# The test suite (scripts/test.sh) on another major version of Node than the one on the PATH:
#
#   bash scripts/test-node.sh 24                     # everything
#   bash scripts/test-node.sh 24 --project unit      # arguments after the major go to vitest
#
# That Node comes from npm's `node` package (Node's own builds, from the npm registry), installed once into
# .node/<major>, which git ignores, and put first on the PATH, so the tests and every process they start run on it.
set -euo pipefail
cd "$(dirname "$0")/.."
major=${1:-}
if ! [[ "$major" =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/test-node.sh <major> [vitest arguments]" >&2
  exit 2
fi
shift

dir="$PWD/.node/$major"
bin="$dir/node_modules/node/bin"
if [ ! -x "$bin/node" ] || [ "$("$bin/node" -p 'process.versions.node.split(".")[0]')" != "$major" ]; then
  echo "== installing Node $major from npm's node package into .node/$major" >&2
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-save --no-package-lock --no-audit --no-fund --loglevel=error "node@$major" >&2
fi
export PATH="$bin:$PATH"
echo "== Node $(node --version)"
exec bash scripts/test.sh "$@"
