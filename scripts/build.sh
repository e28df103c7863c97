#!/usr/bin/env bash
# Configures and builds warpscope into build/ (CLI: build/bin/warpscope, injection library:
# build/lib/libwarpscope.so), then the Python extension (warpscope_native) into build/python/,
# beside the package that `warpscope export --format parquet` runs from there.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/cuda/bin"
jobs=$(nproc 2>/dev/null || echo 2)
# Paths below the checkout hashed relative to it, so that build-python/ reuses build/'s objects.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build build -j "$jobs"

# The extension cannot go into build/: a Python module cannot take the static protobuf and
# abseil that build/'s executables carry (they run where those libraries are not installed),
# so it is built in build-python/, a configuration with them shared, for the python3 on PATH
# (the one the CLI runs). Its other objects are build/'s, from the compiler cache.
python=$(command -v python3 || true)
if [ -z "$python" ] || ! "$python" -m nanobind --cmake_dir >/dev/null 2>&1; then
  echo "warpscope: no nanobind for python3: the Python extension was not built, and" \
       "\`warpscope export --format parquet\` writes no collectives.parquet" \
       "(scripts/install_deps.sh installs it)" >&2
  exit 0
fi
cmake -S . -B build-python -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWARPSCOPE_PYTHON=ON \
  -DWARPSCOPE_BUILD_TESTS=OFF -DWARPSCOPE_BUILD_BENCH=OFF -DPython_EXECUTABLE="$python" \
  -DWARPSCOPE_PYTHON_OUTPUT_DIR="$PWD/build/python" "$@" >/dev/null
cmake --build build-python -j "$jobs" --target warpscope_native
