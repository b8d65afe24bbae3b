#!/usr/bin/env bash
# `npm test`: every test suite of the project, in order. Installs what it lacks. Ends with the
# time each step took: CI gives the whole run 30 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
timings=()
step() {  # step NAME COMMAND...: runs it under a heading, then records its time
  local name=$1 start=$SECONDS
  shift
  echo "== $name"
  "$@"
  timings+=("$(printf '%5d s  %s' $((SECONDS - start)) "$name")")
}
# Node 20 can deadlock at exit when a background TurboFan job waits for a GC that the exiting main
# thread never runs (nodejs/node#54918; seen here in ~1 of 4 runs of a test file on a loaded 2-core
# machine, none in 60 with this flag): compile on the main thread instead.
node_flags=--no-concurrent-recompilation
# A test file per core at a time; the files wait on compiling modules and on their workers as
# much as they compute, and two at a time took 1.6 min, not 2.5.
files_at_once=--test-concurrency=$(nproc)
node_suite() { node --expose-gc $node_flags --test $files_at_once --test-reporter=spec tests/node/; }
node22_suite() {
  local node22
  node22=$(scripts/ensure-node.sh 22)
  "$node22" --expose-gc --test $files_at_once --test-reporter=dot tests/node/*.test.mjs
}
browser_suite() {
  scripts/ensure-deps.sh browser
  # scripts/firefox.mjs drives Firefox over WebDriver BiDi with the global WebSocket (Node 20: a flag).
  node $node_flags --experimental-websocket --test --test-reporter=spec --test-concurrency=1 tests/package/ tests/browser/
}
wasm_build() { scripts/ensure-npm.sh && scripts/build-wasm.sh; }

step "native (C++ core, ctest)" scripts/test-native.sh
step "native under ASan + UBSan and TSan, then 60 s of fuzzing (clang, libFuzzer)" scripts/test-sanitize.sh
step "WebAssembly build" wasm_build
step "Node (node --test; --expose-gc for the FinalizationRegistry test)" node_suite
step "Node 22 (relaxed SIMD by default: loadFavor() picks favor-relaxed.wasm)" node22_suite
step "browser and package (headless Chromium and Firefox, npm pack)" browser_suite
echo "== every suite passed; time per step:"
printf '%s\n' "${timings[@]}"
