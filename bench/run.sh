#!/usr/bin/env bash
# `npm run bench`: makes sure the wasm package (dist/) and the two native benchmark drivers
# (build/bench-native-sse: -O3 -msse4.2 -mno-avx; build/bench-native-native: -O3 -march=native)
# are built from the current sources, and the ceiling loop (bench/native/peak_kernel.cpp) as wasm
# (plain and relaxed SIMD), then runs bench/run.mjs in Node 26, the active LTS (scripts/ensure-node.sh
# 26: relaxed SIMD by default) with the given arguments (--quick for a few sizes; see bench/run.mjs). The ONNX
# graphs are committed in bench/onnx/.
# ruvector-attention-wasm (a devDependency) is not required here: if it is missing or fails to
# load, the report lists it as unavailable with its error.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-deps.sh native wasm
scripts/ensure-npm.sh
for peer in onnxruntime-web @tensorflow/tfjs-core @tensorflow/tfjs-backend-wasm; do
  if [[ ! -f node_modules/$peer/package.json ]]; then
    echo "bench: the peer $peer is missing from node_modules; run: npm ci" >&2
    exit 1
  fi
done
bash scripts/build-wasm.sh
mkdir -p build
exec 8>build/.bench-native.lock
flock 8
for variant in sse native; do
  case $variant in
    sse) flags="-msse4.2 -mno-avx" ;;
    native) flags="-march=native" ;;
  esac
  dir=build/bench-native-$variant
  if [[ ! -f $dir/CMakeCache.txt ]]; then
    cmake -S bench/native -B "$dir" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS=$flags" >/dev/null
  fi
  if ! cmake --build "$dir" -j"$(nproc)" >"$dir/build.log" 2>&1; then
    tail -n 40 "$dir/build.log" >&2
    echo "bench: building $dir failed (full log: $dir/build.log)" >&2
    exit 1
  fi
done
# The ceiling loop as a standalone wasm module (no JS glue; instantiated by bench/lib/ceiling.mjs).
mkdir -p build/bench-peak
# peak-relaxed.wasm: the same loop with fused multiply-adds (relaxed SIMD), the relaxed build's ceiling.
for peak in peak peak-relaxed; do
  if [[ ! build/bench-peak/$peak.wasm -nt bench/native/peak_kernel.cpp ]]; then
    flags=(-msimd128); [[ $peak == peak-relaxed ]] && flags+=(-mrelaxed-simd)
    emcc -O3 "${flags[@]}" -ffp-contract=off bench/native/peak_kernel.cpp --no-entry -sSTANDALONE_WASM \
      "-sEXPORTED_FUNCTIONS=['_peak_kernel','_peak_kernel_flops_per_iteration','_peak_kernel_8','_peak_kernel_8_flops_per_iteration']" \
      -o build/bench-peak/$peak.wasm
    if [[ $peak == peak-relaxed ]]; then node scripts/relax-wasm.mjs build/bench-peak/$peak.wasm; fi
  fi
done
flock -u 8
# Node 26 runs relaxed SIMD by default: loadFavor() there picks favor-relaxed.wasm, the build users
# of current browsers get, and the plain SIMD build runs beside it. (bench/node-peers.mjs repeats the
# side-by-side in Node 22, in maintenance until 2027-04, whose older V8 compiles the wasm differently.)
node26=$(scripts/ensure-node.sh 26)
exec "$node26" bench/run.mjs "$@"
