#!/usr/bin/env bash
# Builds the C++ core and its GoogleTest suite natively, then runs it with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-deps.sh native
cmake -S . -B build/native -DCMAKE_BUILD_TYPE=Release -DFAVOR_BUILD_TESTS=ON >/dev/null
cmake --build build/native -j"$(nproc)"
ctest --test-dir build/native --output-on-failure -j"$(nproc)"
