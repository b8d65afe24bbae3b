#!/usr/bin/env bash
# Builds the C++ core and its GoogleTest suite natively, then runs it with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-deps.sh native
# A unity build (each group of 8 sources compiled as one file) compiles the core and the tests
# in half the time of one file at a time, most of it in the Eigen code that every file instantiates
# anew. The WebAssembly builds are unity builds too (scripts/build-wasm.sh).
cmake -S . -B build/native -DCMAKE_BUILD_TYPE=Release -DFAVOR_BUILD_TESTS=ON -DCMAKE_UNITY_BUILD=ON >/dev/null
cmake --build build/native -j"$(nproc)"
ctest --test-dir build/native --output-on-failure -j"$(nproc)"
