#!/usr/bin/env bash
# Installs the workspace's dependencies with the pinned pnpm when they are missing,
# so `npm start` and `npm test` work on a fresh clone that has only Node and npm.
set -euo pipefail
cd "$(dirname "$0")/.."
PNPM_VERSION=$(node -p 'require("./package.json").packageManager.split("@")[1]')
if [ ! -f node_modules/.modules.yaml ] || [ pnpm-lock.yaml -nt node_modules/.modules.yaml ]; then
  npx -y "pnpm@$PNPM_VERSION" install --frozen-lockfile >&2
fi
