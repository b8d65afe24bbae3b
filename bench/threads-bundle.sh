#!/usr/bin/env bash
# The thread-scaling bench as one folder that runs as is on a machine with many cores, a Node
# binary and no network: the built package (web/, dist/), bench/threads.mjs, the peer's graphs and
# the few files of onnxruntime-web that Node loads. Then, there:
#   tar xJf favor-threads.tar.xz && node favor-threads/bench/threads.mjs --json results.json
# The 2-core machines this project builds on cannot show scaling past two threads. For a lent
# machine with many cores, bench/threads-device.sh packs this folder with a Node binary.
#   bash bench/threads-bundle.sh [OUT.tar.xz]   (default build/favor-threads.tar.xz)
# With VARIANT=DIR (the package root of a second build: a checkout of a change, built), its web/
# and dist/ go in as favor-threads/variant/, for bench/ab.mjs to time both builds side by side
# there (bench/threads-device.sh ab).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/favor-threads.tar.xz}
[[ -f dist/favor-relaxed-threads.wasm ]] || scripts/build-wasm.sh
ort=node_modules/onnxruntime-web
[[ -f $ort/package.json ]] || scripts/ensure-npm.sh
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/favor-threads
mkdir -p "$root/bench/onnx" "$root/$ort/dist"
cp package.json "$root/"
cp -rL web dist "$root/"
mkdir -p "$root/bench/lib"
cp bench/threads.mjs bench/ab.mjs "$root/bench/"
cp bench/lib/thread-cases.mjs bench/lib/thread-rounds.mjs bench/lib/thread-table.mjs bench/lib/thread-targets.mjs bench/lib/cpu-history.mjs bench/lib/inputs.mjs bench/lib/ort-peer.mjs "$root/bench/lib/"
if [[ -n ${VARIANT:-} ]]; then
  [[ -f $VARIANT/dist/favor-relaxed-threads.wasm && -f $VARIANT/web/node.js ]] ||
    { echo "threads-bundle: VARIANT=$VARIANT is not a built package root (web/node.js, dist/)" >&2; exit 1; }
  mkdir -p "$root/variant"
  cp "$VARIANT/package.json" "$root/variant/"
  cp -rL "$VARIANT/web" "$VARIANT/dist" "$root/variant/"
fi
cp bench/onnx/exact-bidirectional.onnx bench/onnx/favor-bidirectional.onnx "$root/bench/onnx/"
cp $ort/package.json "$root/$ort/"
cp $ort/dist/ort.node.min.mjs $ort/dist/ort-wasm-simd-threaded.mjs $ort/dist/ort-wasm-simd-threaded.wasm "$root/$ort/dist/"
cp -r node_modules/onnxruntime-common "$root/node_modules/"
mkdir -p "$(dirname "$out")"
tar -C "$stage" -cJf "$out" favor-threads
echo "$out ($(du -h "$out" | cut -f1))"
