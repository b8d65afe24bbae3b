#!/usr/bin/env bash
# Builds the WebAssembly modules into dist/: favor-simd.{js,wasm}, favor-scalar.wasm (no SIMD),
# favor-simd-threads.{js,wasm,worker.js} (pthreads), and their fused multiply-add twins
# favor-relaxed.wasm and favor-relaxed-threads.wasm (relaxed SIMD). The scalar and relaxed modules
# load with the SIMD builds' glue.
# Incremental: reruns only what changed.
#   scripts/build-wasm.sh [MODULE ...]   (simd, scalar, simd-threads, relaxed, relaxed-threads;
#                                         default all, then the worker bundle)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-deps.sh wasm
# Two builds at once in the same folders (npm start while npm test runs) corrupt the outputs.
mkdir -p build
exec 9>build/.wasm-build.lock
flock 9
# Debian's emcc needs its Node modules (acorn) at -O2 and above.
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
mkdir -p dist
modules=("$@")
((${#modules[@]})) || modules=(simd scalar simd-threads relaxed relaxed-threads)
glue=0
for variant in "${modules[@]}"; do
  [[ $variant =~ ^(simd|scalar|simd-threads|relaxed|relaxed-threads)$ ]] ||
    { echo "build-wasm: no module '$variant' (simd, scalar, simd-threads, relaxed, relaxed-threads)" >&2; exit 2; }
  simd=ON; [[ $variant == scalar ]] && simd=OFF
  relaxed=OFF; [[ $variant == relaxed* ]] && relaxed=ON
  threads=OFF; exts="wasm js"
  [[ $variant == *-threads ]] && threads=ON exts="wasm worker.js js"
  # The scalar and relaxed modules load with the SIMD builds' glue, the same file but for its
  # name (tested).
  [[ $relaxed == ON || $variant == scalar ]] && exts="wasm"
  [[ $exts == *js* ]] && glue=1
  dir=build/wasm-$variant
  # Unity builds (8 sources compiled as one), as the native ones: half the compile time, the same
  # bits. Every module the same way: the scalar and relaxed ones load with the SIMD builds' glue,
  # whose imports are named by the build (a folder configured before is configured again).
  if ! grep -qs '^CMAKE_UNITY_BUILD:BOOL=ON$' "$dir/CMakeCache.txt"; then
    emcmake cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DFAVOR_WASM_SIMD=$simd \
      -DFAVOR_WASM_THREADS=$threads -DFAVOR_WASM_RELAXED=$relaxed -DCMAKE_UNITY_BUILD=ON \
      -DEigen3_DIR=/usr/share/eigen3/cmake >/dev/null
  fi
  cmake --build "$dir" -j"$(nproc)" --target favor_wasm
  # Copy then rename: a page or test reading dist/ never sees a .js and .wasm of different builds.
  for ext in $exts; do
    cp "$dir/favor-$variant.$ext" "dist/.favor-$variant.$ext.tmp"
    mv -f "dist/.favor-$variant.$ext.tmp" "dist/favor-$variant.$ext"
  done
done
# Then dist/favor-worker.js, the browser worker of loadFavor({ worker: true }) as one
# self-contained module (see the script for why), which inlines the glue.
if ((glue)); then node scripts/bundle-worker.mjs; fi
