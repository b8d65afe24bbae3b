#!/usr/bin/env bash
# Builds the demo page as a static site into demo/dist/ (relative URLs: it works from any
# static host, in any sub-folder). Builds the wasm first when it is missing.
#   bash scripts/build-demo.sh [--out DIR]
# Serve it with any static server that sends .wasm as application/wasm, e.g.
#   python3 -m http.server -d demo/dist 8080 --bind 127.0.0.1
set -euo pipefail
cd "$(dirname "$0")/.."

out=demo/dist
if [[ ${1:-} == --out ]]; then out=$(realpath -m "$2"); fi

scripts/ensure-npm.sh
for f in dist/favor-simd.js dist/favor-simd.wasm dist/favor-scalar.wasm; do
  if [[ ! -f $f ]]; then scripts/build-wasm.sh; break; fi
done
# The browser worker of loadFavor({ worker: true }), which the page's loader names (so Vite
# needs it): rebuilt each time (0.2 s), as web/ may have changed since.
node scripts/bundle-worker.mjs

node_modules/.bin/vite build --config demo/vite.config.js --outDir "$(realpath -m "$out")" --emptyOutDir
echo "build-demo: static site in $out/ — copy it to any static host, or try it with:"
echo "  python3 -m http.server -d $out 8080 --bind 127.0.0.1   # then open http://127.0.0.1:8080/"
