# Sourced by the GPU scripts (tests/gpu/**/gpu_*.sh, tests/gpu_pm/gpu_pm_suite.sh, the probes
# of bench/probes), after `set -u`: which build they test and where their results go.
# Arguments: the build folder to test when WS_BUILD is not set and .gpu/ holds no staged copy,
# and the results folder's default name.
# Sets here (the source tree), WS_BUILD (made absolute), OUTDIR ($WS_OUT, else $OUT, else
# ./<name>), BIN and LIB (the build's bin/ and lib/), SHIM (the injected library) and WS (the
# CLI), defines run_logged (a command's line and output into a log file, its status back), and
# makes libcupti.so.13 findable for
# the build's injected library: the core finds it through its RUNPATH (/usr/local/cuda/lib64,
# extras/CUPTI/lib64); where that fails, the first directory below that holds it (the
# toolkit's, then the pip wheel nvidia-cuda-cupti's) goes in front of LD_LIBRARY_PATH.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)  # this file is tests/gpu/
WS_BUILD=${WS_BUILD:-$([[ -d $here/.gpu/bin ]] && echo "$here/.gpu" || echo "$here/$1")}
WS_BUILD=$(cd "$WS_BUILD" && pwd)
OUTDIR=${WS_OUT:-${OUT:-$PWD/$2}}
BIN=$WS_BUILD/bin; LIB=$WS_BUILD/lib
SHIM=$LIB/libwarpscope.so; WS=$BIN/warpscope
if [[ -e $LIB/libwarpscope_core.so ]] && ! ldd "$LIB/libwarpscope_core.so" 2>/dev/null | grep -q 'libcupti.so.13 => /'; then
  for d in /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64 \
           $(python3 -c 'import nvidia.cuda_cupti, os; print(os.path.dirname(nvidia.cuda_cupti.__file__)+"/lib")' 2>/dev/null); do
    if [[ -e $d/libcupti.so.13 ]]; then export LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}; break; fi
  done
fi
run_logged() {  # LOG CMD...: the command and its output in LOG; returns its status
  local log=$1; shift
  echo "+ $*" >"$log"
  "$@" >>"$log" 2>&1
  local rc=$?
  echo "--- exit status $rc" >>"$log"
  return $rc
}
