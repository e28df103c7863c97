#!/usr/bin/env bash
# Runs every test: C++ unit tests, diff tests, fuzz replay, Python tests (through ctest).
# Tests labelled `gpu` skip themselves where no GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d build ] || scripts/build.sh
jobs=$(nproc 2>/dev/null || echo 2)
ctest --test-dir build --output-on-failure -j "$jobs" "$@"
