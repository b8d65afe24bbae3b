#!/usr/bin/env bash
# The native GoogleTest suite under AddressSanitizer + UndefinedBehaviorSanitizer (clang, any
# report aborts), its thread tests (favor_thread_tests: the thread pool, threaded attention, the
# calling thread's tasks, inputs arriving, rousing, thread time) under ThreadSanitizer in
# build/tsan, then the libFuzzer target over the core (tests/fuzz/, entered at fuzz_core.cpp) for a bounded
# time. The ASan tests and the fuzzer link one build of the core in build/asan:
# sanitizers, libFuzzer coverage of the core, and a 32-bit Eigen::Index as in wasm32 (CMake option
# FAVOR_FUZZ). Both are unity builds, as in scripts/test-native.sh.
# FUZZ_SECONDS (default 60) sets the fuzzing time; the corpus grows in build/asan/fuzz-corpus from
# the seeds in tests/fuzz/seeds.hex, crashes land in build/asan/fuzz-crashes.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-deps.sh sanitize
fuzz_seconds=${FUZZ_SECONDS:-60}
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

echo "== native tests with ASan + UBSan (build/asan)"
# -O1 without NDEBUG: Eigen's own range assertions stay on. Line tables are all a report needs
# (file and line in its stack), and compile faster than full -g.
cmake -S . -B build/asan -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -gline-tables-only" \
  -DFAVOR_FUZZ=ON -DFAVOR_BUILD_TESTS=ON -DFAVOR_INSTALL=OFF -DCMAKE_UNITY_BUILD=ON >/dev/null
cmake --build build/asan -j"$(nproc)" --target favor_tests fuzz_core
# Left to scripts/test-native.sh, which runs them too:
# - the consumer_* tests build downstream projects with the default compiler;
# - the Monte Carlo error studies (MeanSquaredError.*) rerun thousands of times code that other
#   tests here reach once.
ctest --test-dir build/asan --output-on-failure -j"$(nproc)" \
  -E '^(consumer_|MeanSquaredError\.)'

echo "== thread tests with TSan (build/tsan)"
cmake -S . -B build/tsan -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -gline-tables-only" \
  -DCMAKE_CXX_FLAGS=-fsanitize=thread -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread \
  -DFAVOR_BUILD_TESTS=ON -DFAVOR_INSTALL=OFF -DCMAKE_UNITY_BUILD=ON >/dev/null
cmake --build build/tsan -j"$(nproc)" --target favor_thread_tests
TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1} build/tsan/tests/native/favor_thread_tests --gtest_brief=1

echo "== libFuzzer over the core for ${fuzz_seconds} s (build/asan/fuzz_core)"
mkdir -p build/asan/fuzz-corpus build/asan/fuzz-crashes
# The committed seeds (tests/fuzz/seeds.hex, one input per line in hex) join the corpus: replayed
# first, then grown from.
perl -e 'my $dir = shift; my $n = 0;
  while (<>) { chomp; next if /^#/ || !length; ++$n;
    open(my $f, ">:raw", sprintf("%s/seed-%04d", $dir, $n)) or die "$dir: $!";
    print $f pack("H*", $_); close $f or die "$dir: $!"; }' build/asan/fuzz-corpus tests/fuzz/seeds.hex
build/asan/fuzz_core -max_total_time="$fuzz_seconds" -timeout=30 -print_final_stats=1 \
  -artifact_prefix=build/asan/fuzz-crashes/ build/asan/fuzz-corpus 2>build/asan/fuzz.log || {
  tail -n 60 build/asan/fuzz.log >&2
  echo "fuzz_core found a crash: reproduce with build/asan/fuzz_core <file in build/asan/fuzz-crashes>" \
       "(FUZZ_TRACE=1 prints the decoded call)" >&2
  exit 1
}
grep -E '^(stat::number_of_executed_units|stat::new_units_added|Done)|cov:' build/asan/fuzz.log | tail -n 4
