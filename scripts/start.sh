#!/usr/bin/env bash
# `npm start`: builds whatever is missing (Debian packages, npm devDependencies, the wasm
# modules), then serves the interactive page (demo/) with Vite's dev server on 127.0.0.1 and
# prints its URL. Cross-origin isolation headers (COOP/COEP) are sent (demo/vite.config.js).
#   PORT=5173 HOST=127.0.0.1 npm start
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/ensure-deps.sh wasm
scripts/ensure-npm.sh

# The wasm: rebuild when a module is missing or older than a source it is built from.
stale=0
for f in dist/favor-simd.js dist/favor-simd.wasm dist/favor-scalar.wasm dist/favor-relaxed.wasm \
         dist/favor-simd-threads.js dist/favor-simd-threads.wasm dist/favor-relaxed-threads.wasm; do
  [[ -f $f ]] || { stale=1; break; }
done
if [[ $stale -eq 0 ]] && [[ -n $(find src bindings CMakeLists.txt cmake scripts/relax-wasm.mjs scripts/wasm-reader.mjs -newer dist/favor-simd.wasm -type f 2>/dev/null | head -n 1) ]]; then
  stale=1
fi
if [[ $stale -eq 1 ]]; then
  echo "npm start: building the WebAssembly modules (scripts/build-wasm.sh)"
  scripts/build-wasm.sh
fi
# The browser worker of loadFavor({ worker: true }), which the page's loader names (so Vite
# needs it): rebuilt each time (0.2 s), as web/ may have changed since.
node scripts/bundle-worker.mjs

host=${HOST:-127.0.0.1}
port=${PORT:-5173}
echo "npm start: serving the demo at http://$host:$port/ (Ctrl+C stops it; if the port is taken, Vite picks the next one and prints it below)"
exec node_modules/.bin/vite --config demo/vite.config.js --host "$host" --port "$port"
