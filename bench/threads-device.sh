#!/usr/bin/env bash
# The thread-scaling bench on a lent machine with many cores, in one call. Such a machine has no
# Node and no network, takes a copy of the working tree plus at most 64 MiB of carried paths, and
# gives back what a command writes under $OUT.
#
# Here:   bash bench/threads-device.sh pack
#   writes build/device/: favor-threads.tar.xz (bench/threads-bundle.sh: the built package, the
#   bench, the peer's files), node.xz (this project's Node 26, ~31 MB compressed), work_span.xz
#   (bench/native/work_span.cpp linked statically) and work-span.args (the thread bench's calls
#   for it), then prints the call to make.
# There:  bash bench/threads-device.sh run [ARGS for bench/threads.mjs]
#   unpacks them under /tmp and writes $OUT/threads.json (bench/threads.mjs --json), its log
#   $OUT/threads.log, $OUT/cpu.txt (lscpu, the kernel and its huge-page settings) and
#   $OUT/cpuinfo, then the same calls natively:
#   $OUT/work-span.json (their work and span, their speed-ups on the machine's threads, where
#   those threads' time went; given at most 170 s, after the wasm bench, which is given at most
#   330 s), and before both $OUT/together.json: how fast each thread runs a register-only loop
#   and a loop streaming its own 8 MiB with all of them at once, and the share of their time the
#   host took (steal), given at most 30 s.
# Two builds side by side there (a change judged on many cores): here
#   bash bench/threads-device.sh pack DIR   (DIR: the change's package root, built: web/, dist/;
#                                            or a commit, whose core change it builds)
# and there
#   bash bench/threads-device.sh ab --threads 16 [--cases favor8-causal,favor,...] [--rounds N]
#   which runs bench/ab.mjs with this checkout's build as A and DIR's as B into $OUT/ab.txt.
# Back here: node bench/threads.mjs --merge FILES_AT/threads.json --out BENCHMARKS.md
#            node bench/work-span.mjs --merge FILES_AT
# A lent machine's speed moves between runs by up to 2x at one thread: a 15-minute lease holds two
# such calls (each ~6 minutes on 16 cores; the second right after the first, while the machine
# is still warm), merged as ranges with --merge FIRST/threads.json,SECOND/threads.json.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build/device
case ${1:-} in
  pack)
    mkdir -p "$dir"
    variant=${2:-}
    if [[ -n $variant && ! -d $variant ]]; then
      # A commit of this repository (a branch, say) whose change is to the core: its source with
      # this checkout's dist/, and its relaxed-SIMD threads module (the one the bench loads) built
      # by its own scripts/build-wasm.sh with the glue it loads with (the threaded SIMD build's:
      # its imports are named by the build, so one glue does not load another build's module).
      git rev-parse --verify -q "$variant^{commit}" >/dev/null ||
        { echo "pack: $variant is neither a package root nor a commit" >&2; exit 1; }
      [[ -f dist/favor-relaxed-threads.wasm ]] || scripts/build-wasm.sh
      root=build/variant
      rm -rf "$root"
      mkdir -p "$root"
      git archive "$variant" | tar -x -C "$root"
      cp -r dist "$root/"
      ln -s "$PWD/node_modules" "$root/node_modules"  # for the worker bundle that follows the glue
      (cd "$root" && scripts/build-wasm.sh simd-threads relaxed-threads >/dev/null)
      echo "variant: $variant ($(git rev-parse --short "$variant")) built in $root"
      variant=$root
    fi
    VARIANT=$variant bash bench/threads-bundle.sh "$dir/favor-threads.tar.xz"
    node26=$(scripts/ensure-node.sh 26)
    binary=$(readlink -f "$node26")
    if [[ ! $dir/node.xz -nt $binary ]]; then
      echo "compressing $binary (a minute or two)"
      xz -9e -T0 -c "$binary" >"$dir/node.xz.tmp"
      mv "$dir/node.xz.tmp" "$dir/node.xz"
    fi
    # The native driver, static so that it runs whatever libraries the lent machine has.
    static=build/bench-native-static
    cmake -S bench/native -B "$static" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS=-msse4.2 -mno-avx" \
      -DCMAKE_EXE_LINKER_FLAGS=-static >/dev/null
    cmake --build "$static" -j"$(nproc)" --target work_span >/dev/null
    xz -9 -c "$static/work_span" >"$dir/work_span.xz"
    node bench/work-span.mjs --args >"$dir/work-span.args"
    du -h "$dir"/*
    echo "then: run(command='bash bench/threads-device.sh run', carry=['$dir'], timeout_s=540)"
    if [[ -n ${2:-} ]]; then
      echo "  or: run(command='bash bench/threads-device.sh ab --threads 16 --cases favor,favor-short,favor-long,exact,exact-short,favor8,favor8-long,favor8-causal', carry=['$dir'], timeout_s=300)"
    fi
    ;;
  run | ab)
    command=$1
    shift
    out=${OUT:?$command: \$OUT (the folder that comes back) is not set}
    for f in node.xz favor-threads.tar.xz work_span.xz work-span.args; do
      [[ -f $dir/$f ]] || { echo "$command: $dir lacks $f; run 'bash bench/threads-device.sh pack' first and carry $dir" >&2; exit 1; }
    done
    work=$(mktemp -d)
    xz -dc "$dir/node.xz" >"$work/node"
    chmod +x "$work/node"
    tar -C "$work" -xJf "$dir/favor-threads.tar.xz"
    if [[ $command == ab ]]; then
      [[ -d $work/favor-threads/variant ]] || { echo "ab: no second build packed; run 'bash bench/threads-device.sh pack DIR'" >&2; exit 1; }
      lscpu >"$out/cpu.txt" 2>&1 || nproc >"$out/cpu.txt"
      "$work/node" "$work/favor-threads/bench/ab.mjs" --a "$work/favor-threads" --b "$work/favor-threads/variant" "$@" 2>&1 | tee "$out/ab.txt"
      exit "${PIPESTATUS[0]}"
    fi
    xz -dc "$dir/work_span.xz" >"$work/work_span"
    chmod +x "$work/work_span"
    # The machine as the results' note describes it: its CPUs, and what its kernel does with
    # memory (the wasm heap and the native heap may get huge pages or not).
    {
      lscpu 2>&1 || nproc
      echo "kernel: $(uname -r)"
      for f in enabled shmem_enabled defrag; do
        echo "transparent hugepages $f: $(cat /sys/kernel/mm/transparent_hugepage/$f 2>&1)"
      done
      grep -E '^(MemTotal|MemAvailable|AnonHugePages|ShmemHugePages)' /proc/meminfo 2>&1
    } >"$out/cpu.txt"
    cp /proc/cpuinfo "$out/cpuinfo" || true
    cores=$(nproc)
    counts=1
    for t in 2 4 8 12 16 24 32 48 64; do
      if ((t <= cores)); then counts+=",$t"; fi
    done
    # First, apart from any call: how fast each core runs with all of them busy (about 15 s on
    # 16 cores), kept even if what follows is cut short.
    if [[ $counts != 1 ]]; then
      timeout 30 "$work/work_span" --together "${counts#1,}" >"$out/together.json" 2>>"$out/work-span.log" ||
        echo "work_span --together: exit $?" | tee -a "$out/work-span.log"
    fi
    # At most 330 s, so that the native runs keep their 30 s and 170 s within the call's 540: the
    # bench saves its results after every row, so a run cut short keeps the rows it measured.
    timeout 330 "$work/node" "$work/favor-threads/bench/threads.mjs" --json "$out/threads.json" "$@" 2>&1 |
      tee "$out/threads.log" || echo "threads.mjs: stopped (exit ${PIPESTATUS[0]}); $out/threads.json has the rows it measured" |
      tee -a "$out/threads.log"
    # shellcheck disable=SC2046 # one argument per word of the file
    timeout 170 "$work/work_span" --reps 3 --threads "$counts" --timed "$counts" $(cat "$dir/work-span.args") \
      >"$out/work-span.json" 2>>"$out/work-span.log" || echo "work_span: exit $? (see work-span.log)" | tee -a "$out/work-span.log"
    ;;
  *)
    echo "usage: bash bench/threads-device.sh pack [VARIANT_ROOT] | run [ARGS] | ab [ARGS]" >&2
    exit 2
    ;;
esac
