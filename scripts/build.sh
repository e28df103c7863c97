#!/usr/bin/env bash
# Configures and builds warpscope into build/ (CLI: build/bin/warpscope, injection library:
# build/lib/libwarpscope.so).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/cuda/bin"
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build build -j "$jobs"
