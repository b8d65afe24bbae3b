#!/usr/bin/env bash
# The thread-scaling bench on a lent machine with many cores, in one call. Such a machine has no
# Node and no network, takes a copy of the working tree plus at most 64 MiB of carried paths, and
# gives back what a command writes under $OUT.
#
# Here:   bash bench/threads-device.sh pack
#   writes build/device/: favor-threads.tar.xz (bench/threads-bundle.sh: the built package, the
#   bench, the peer's files) and node.xz (this project's Node 26, ~31 MB compressed), then prints
#   the call to make.
# There:  bash bench/threads-device.sh run [ARGS for bench/threads.mjs]
#   unpacks both under /tmp and writes $OUT/threads.json (bench/threads.mjs --json), its log
#   $OUT/threads.log and $OUT/cpu.txt (lscpu).
# Back here: node bench/threads.mjs --merge FILES_AT/threads.json --out BENCHMARKS.md
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build/device
case ${1:-} in
  pack)
    mkdir -p "$dir"
    bash bench/threads-bundle.sh "$dir/favor-threads.tar.xz"
    node26=$(scripts/ensure-node.sh 26)
    binary=$(readlink -f "$node26")
    if [[ ! $dir/node.xz -nt $binary ]]; then
      echo "compressing $binary (a minute or two)"
      xz -9e -T0 -c "$binary" >"$dir/node.xz.tmp"
      mv "$dir/node.xz.tmp" "$dir/node.xz"
    fi
    du -h "$dir"/*
    echo "then: run(command='bash bench/threads-device.sh run', carry=['$dir'], timeout_s=540)"
    ;;
  run)
    shift
    out=${OUT:?run: \$OUT (the folder that comes back) is not set}
    [[ -f $dir/node.xz && -f $dir/favor-threads.tar.xz ]] || { echo "run: $dir lacks node.xz or favor-threads.tar.xz; run 'bash bench/threads-device.sh pack' first and carry $dir" >&2; exit 1; }
    work=$(mktemp -d)
    xz -dc "$dir/node.xz" >"$work/node"
    chmod +x "$work/node"
    tar -C "$work" -xJf "$dir/favor-threads.tar.xz"
    lscpu >"$out/cpu.txt" 2>&1 || nproc >"$out/cpu.txt"
    "$work/node" "$work/favor-threads/bench/threads.mjs" --json "$out/threads.json" "$@" 2>&1 | tee "$out/threads.log"
    ;;
  *)
    echo "usage: bash bench/threads-device.sh pack | run [ARGS]" >&2
    exit 2
    ;;
esac
