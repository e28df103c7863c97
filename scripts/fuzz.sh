#!/usr/bin/env bash
# Builds the libFuzzer binary of the trace reader and the analyses (tests/fuzz) with clang,
# ASan and UBSan in build-fuzz/, and runs it for a fixed time from the seed corpus. Fails on
# a crash, a sanitizer report, a leak or an input that runs longer than 10 s; the input is
# left in build-fuzz/crashes/ (add it to tests/fuzz/corpus as a regression seed once fixed).
# Usage: scripts/fuzz.sh [SECONDS]   (default 60)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
export PATH="$PATH:/usr/local/cuda/bin"
cc=${WARPSCOPE_FUZZ_CC:-clang-14}
cxx=${WARPSCOPE_FUZZ_CXX:-clang++-14}
jobs=$(nproc 2>/dev/null || echo 2)
# Everything is instrumented for coverage (fuzzer-no-link), so that libFuzzer sees the
# reader and the analyses, not only the fuzz entry; the entry links libFuzzer itself.
sanitize="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_C_FLAGS="$sanitize" -DCMAKE_CXX_FLAGS="$sanitize -fno-omit-frame-pointer" \
  -DWARPSCOPE_BUILD_GPU_PROGRAMS=OFF -DWARPSCOPE_BUILD_BENCH=OFF >/dev/null
cmake --build build-fuzz -j "$jobs" --target trace_reader_fuzz
# New inputs go to build-fuzz/corpus; the checked-in seeds are only read.
mkdir -p build-fuzz/corpus build-fuzz/crashes
echo "warpscope: fuzzing the reader and the analyses for ${seconds} s"
# libFuzzer prints a line per new input: that goes to build-fuzz/fuzz.log, its end here.
status=0
build-fuzz/bin/trace_reader_fuzz -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix=build-fuzz/crashes/ build-fuzz/corpus tests/fuzz/corpus \
  >build-fuzz/fuzz.log 2>&1 || status=$?
if [[ $status != 0 ]]; then
  tail -n 60 build-fuzz/fuzz.log
  echo "warpscope: the fuzzer found a problem (exit $status); the input is in build-fuzz/crashes/" >&2
  exit "$status"
fi
grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)' build-fuzz/fuzz.log || tail -n 5 build-fuzz/fuzz.log
