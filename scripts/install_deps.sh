#!/usr/bin/env bash
# Installs what building and testing warpscope needs on Debian 12 / Ubuntu (run as root or
# with sudo). The CUDA 13.0 toolkit (nvcc, CUPTI, NVTX headers) is expected to be installed
# already; this script says so and stops if it is not.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

# clang-14 and libclang-rt-14-dev (libFuzzer) build the fuzzer that scripts/fuzz.sh runs;
# chromium renders `advise --html` pages headless in tests/advise.
pkgs=(cmake ninja-build g++ ccache pkg-config
      libprotobuf-dev protobuf-compiler libabsl-dev libre2-dev
      libgtest-dev libgmock-dev libbenchmark-dev
      clang-14 libclang-rt-14-dev
      python3-protobuf python3-pandas python3-pytest
      chromium)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "warpscope: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The Python package's dependencies for the python3 on PATH (when it is not Debian's): its
# runtime ones, nanobind for the extension (-DWARPSCOPE_PYTHON=ON), scikit-build-core for
# `pip install ./python`, pyarrow for the Parquet export (`warpscope export --format parquet`),
# duckdb for the README's query of it (examples/duckdb_straggler.py) and the tests, pytest.
if [ "$(command -v python3)" != /usr/bin/python3 ]; then
  python3 -m pip install -q --disable-pip-version-check protobuf pandas numpy pytest \
    nanobind scikit-build-core pyarrow duckdb
  # Holistic Trace Analysis reads `warpscope export --format kineto` in
  # python/tests/test_hta_export.py. Its package requires jupyterlab, which its analyses never
  # import: it goes in without its requirements, then the ones it imports (about 40 s).
  if ! python3 -c "import hta.trace_analysis" 2>/dev/null; then
    python3 -m pip install -q --disable-pip-version-check --no-deps "holistictraceanalysis>=0.5"
    python3 -m pip install -q --disable-pip-version-check plotly networkx psutil
  fi
fi

if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "warpscope: the CUDA 13.0 toolkit (nvcc, CUPTI) is not installed; install it first" >&2
  exit 1
fi
