#!/usr/bin/env bash
# `npm test`: every test suite of the project, in order. Installs what it lacks.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== native (C++ core, ctest)"
scripts/test-native.sh
echo "== native under ASan + UBSan, then 60 s of fuzzing (clang, libFuzzer)"
scripts/test-sanitize.sh
echo "== WebAssembly build"
scripts/ensure-npm.sh
scripts/build-wasm.sh
echo "== Node (node --test; --expose-gc for the FinalizationRegistry test)"
node --expose-gc --test --test-reporter=spec tests/node/
echo "== browser and package (headless Chromium, npm pack)"
scripts/ensure-deps.sh browser
node --test --test-reporter=spec --test-concurrency=1 tests/package/ tests/browser/
