#!/usr/bin/env bash
# Builds what reads traces (analyzers, CLI, Python extension, their tests) without the CUDA
# toolkit: -DWARPSCOPE_ANALYZERS_ONLY=ON, with the toolkit's folders taken off PATH and
# CUDA_PATH/CUDACXX unset, then checks that no compile or link line names the toolkit and
# that no object included one of its headers.
#   scripts/build_analyzers_only.sh [BUILD_DIR] [cmake args...]   (default build-nocuda)
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-build-nocuda}"
shift || true
path_without_cuda=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v -i cuda | paste -sd:)
run() { env -u CUDA_PATH -u CUDA_HOME -u CUDACXX PATH="$path_without_cuda" "$@"; }
run cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWARPSCOPE_WERROR=ON \
  -DWARPSCOPE_ANALYZERS_ONLY=ON -DWARPSCOPE_PYTHON=ON -DWARPSCOPE_BUILD_TESTS=ON \
  -DWARPSCOPE_BUILD_BENCH=OFF "$@" >/dev/null
if grep -q -E "/cuda[^/ ]*/" "$dir/build.ninja"; then
  echo "warpscope: the analyzers-only build names the CUDA toolkit:" >&2
  grep -o -E "[^ ]*/cuda[^/ ]*/[^ ]*" "$dir/build.ninja" | sort -u | head >&2
  exit 1
fi
run cmake --build "$dir" -j "$(nproc 2>/dev/null || echo 2)"
# The toolkit's headers can sit on the compiler's default path (/usr/local/include): no object
# may have used one.
if ninja -C "$dir" -t deps | grep -E "/usr/local/include/(cupti|cuda|nvtx)|/cuda[^/ ]*/|/nvtx3/"; then
  echo "warpscope: the analyzers-only build used the CUDA toolkit's headers (above)" >&2
  exit 1
fi
