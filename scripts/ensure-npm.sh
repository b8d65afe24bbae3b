#!/usr/bin/env bash
# Installs the npm devDependencies (npm ci) when node_modules is missing or stale.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v npm >/dev/null; then
  echo "ensure-npm: npm is missing; install Node.js >= 20 (Debian: apt-get install nodejs npm)" >&2
  exit 1
fi
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm ci --no-audit --no-fund
fi
