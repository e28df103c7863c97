#!/usr/bin/env bash
# PC sampling on a GPU, end to end: does every kernel of >= 1 ms get PC samples, with each
# sampling period and each kind of capture window, in a C++ program and in PyTorch? Every
# run has WARPSCOPE_PC_DEBUG=1, so its log shows each CUPTI PC sampling call, its arguments
# and result, and each GetData's totals: where samples stop, if they do.
#
#   tests/gpu/gpu_pc.sh [--part cpp|torch|probe|all] [--periods 10,12,15,18]
#
# Cases (C++: tests/gpu/pc_kernels.cu, built here with nvcc -lineinfo; PyTorch:
# tests/gpu/pc_torch.py), each at every period:
#   whole     no capture window (sampling from the first context to the end)
#   delay     --delay 1: the window opens while the program is idle between two rounds
#   profiler  -c cudaProfilerApi around the kernels
#   nvtx      -p pc_window around the kernels
#   default   (period 15 column only) WARPSCOPE_PC_PERIOD=0: CUPTI chooses the period
# and two cases about PM sampling:
#   pm_and_pc  WARPSCOPE_PM_SAMPLING=1 and WARPSCOPE_PC_SAMPLING=1: warpscope must keep PM
#              sampling, say so in one line and count pc_sampling.disabled.pm_sampling_chosen
#   probe      tests/gpu/pc_pm_probe.cu (CUPTI only): PM and PC sampling taking turns in one
#              process; its PROBE VERDICT line says which orders CUPTI accepts
#
# A case passes when the program exits 0 and ws_trace_check finds a complete trace in which
# every kernel that ran >= 1 ms has PC samples (--pc-kernels-min-ms 1), the PC records' cubins
# are all in the trace (--cubins-cover-pcs) and pc_sampling.samples >= 1.
#
# WS_BUILD: a build or staged copy (default .gpu, see tests/gpu/gpu_suite.sh --stage) with
# bin/{warpscope,ws_trace_check} and lib/{libwarpscope.so,libwarpscope_core.so}. Output in
# $OUT (or WS_OUT): pc_summary.txt (the table and PASS/FAIL per case), logs/<case>.log (the
# command, its stdout/stderr with every pc-debug line, ws_trace_check and `warpscope info`),
# and the traces of failed cases. Exit status: the number of failed cases (max 100).
set -u
source "$(dirname "$0")/gpu_build_env.sh" build gpu_pc_out
mkdir -p "$OUTDIR/logs" "$OUTDIR/traces"
part=all; periods=10,12,15,18
while [[ $# -gt 0 ]]; do
  case $1 in
    --part) part=$2; shift ;;
    --periods) periods=$2; shift ;;
  esac
  shift
done
CHECK=$BIN/ws_trace_check
W=$(mktemp -d /tmp/ws_pc.XXXXXX)
summary=$OUTDIR/pc_summary.txt
: >"$summary"
failures=0; cases=0
export PATH="$PATH:/usr/local/cuda/bin"

{
  echo "gpu_pc.sh $(date -u +%FT%TZ) on $(hostname)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -2
  echo "profiling restricted to admins: $(grep -h RmProfilingAdminOnly /proc/driver/nvidia/params 2>/dev/null || echo unknown)"
  echo "build: $WS_BUILD"
} | tee -a "$summary"

# The programs, built here: the toolkit is on the GPU machine, and -lineinfo keeps lines.
PCK=$W/ws_pc_kernels; PROBE=$W/ws_pc_pm_probe
if ! nvcc -O2 -std=c++17 -arch=sm_90 -lineinfo -o "$PCK" "$here/tests/gpu/pc_kernels.cu" -ldl \
     >"$OUTDIR/logs/build_pc_kernels.log" 2>&1; then
  echo "warning: nvcc could not build tests/gpu/pc_kernels.cu (logs/build_pc_kernels.log)" | tee -a "$summary"
fi
if ! nvcc -O2 -std=c++17 -arch=sm_90 -o "$PROBE" "$here/tests/gpu/pc_pm_probe.cu" \
     -L/usr/local/cuda/lib64 -L/usr/local/cuda/extras/CUPTI/lib64 -L/usr/local/cuda/lib64/stubs \
     -lcupti -lcuda >"$OUTDIR/logs/build_probe.log" 2>&1; then
  echo "warning: nvcc could not build tests/gpu/pc_pm_probe.cu (logs/build_probe.log)" | tee -a "$summary"
fi

printf '%-28s %-6s %4s %8s %12s %12s %8s %7s  %s\n' CASE PERIOD RC KERNELS PC_SAMPLES CUPTI_TOTAL HW_FULL CUBINS RESULT \
  | tee -a "$summary"

# run_pc CASE PERIOD "RECORD FLAGS" "EXTRA ENV" CHECK_ARGS -- CMD...
run_pc() {
  local id=$1 period=$2 flags=$3 extra_env=$4
  shift 4
  local checks=()
  while [[ $1 != -- ]]; do checks+=("$1"); shift; done
  shift
  local trace=$W/$id.wst log=$OUTDIR/logs/$id.log
  rm -f "$trace"
  local period_flag=(--pc-period "$period")
  [[ $period == default ]] && period_flag=(--pc-period 0)
  # shellcheck disable=SC2086
  local cmd=(env WARPSCOPE_PC_DEBUG=1 $extra_env "$WS" record -f -o "$trace" --pc-sampling "${period_flag[@]}" $flags -- "$@")
  {
    echo "+ ${cmd[*]}"
    echo "--- program and warpscope output (pc-debug lines: one per CUPTI PC sampling call)"
  } >"$log"
  timeout 300 "${cmd[@]}" >>"$log" 2>&1
  local rc=$?
  local why=() check_out=""
  [[ $rc == 0 ]] || why+=("exit status $rc")
  if grep -q -E 'Segmentation fault|double free|corrupted|Aborted' "$log"; then why+=("crash"); fi
  if [[ -e $trace ]]; then
    check_out=$("$CHECK" "$trace" --complete --counter-min pc_sampling.samples=1 "${checks[@]}" 2>&1)
    [[ $? == 0 ]] || why+=("$(echo "$check_out" | grep -m3 'CHECK FAILED' | tr '\n' ' ')")
    {
      echo "--- ws_trace_check"
      echo "$check_out"
      echo "--- warpscope info"
      "$WS" info "$trace" 2>&1
    } >>"$log"
  else
    why+=("no trace")
  fi
  local kernels pcs total full cubins
  kernels=$(echo "$check_out" | grep -o -m1 'kernels=[0-9]*' | cut -d= -f2)
  pcs=$(echo "$check_out" | grep -o -m1 'pc_samples=[0-9]*' | cut -d= -f2)
  total=$(echo "$check_out" | grep -o -m1 'cupti_total_samples=[0-9]*' | cut -d= -f2)
  cubins=$(echo "$check_out" | grep -o -m1 'cubins=[0-9]*' | cut -d= -f2)
  full=$(grep -c 'buffer_full=1' "$log")
  cases=$((cases + 1))
  local verdict=PASS
  if [[ ${#why[@]} != 0 ]]; then
    verdict="FAIL: ${why[*]}"
    failures=$((failures + 1))
    [[ -e $trace ]] && cp "$trace" "$OUTDIR/traces/"
  fi
  printf '%-28s %-6s %4s %8s %12s %12s %8s %7s  %s\n' "$id" "$period" "$rc" "${kernels:--}" "${pcs:--}" \
    "${total:--}" "$full" "${cubins:--}" "$verdict" | tee -a "$summary"
  echo "--- result: $verdict" >>"$log"
}

window_flags() {  # WINDOW -> record flags
  case $1 in
    whole|default) echo "" ;;
    delay) echo "--delay 1" ;;
    profiler) echo "-c cudaProfilerApi" ;;
    nvtx) echo "-p pc_window" ;;
  esac
}

PC_CHECKS=(--pc-kernels-min-ms 1 --cubins-cover-pcs)
IFS=, read -r -a period_list <<<"$periods"

if [[ $part == cpp || $part == all ]]; then
  for p in "${period_list[@]}"; do
    for w in whole delay profiler nvtx; do
      mode=plain
      case $w in delay) mode=late ;; profiler) mode=profiler ;; nvtx) mode=nvtx ;; esac
      run_pc "cpp_${w}_p$p" "$p" "$(window_flags $w)" "" "${PC_CHECKS[@]}" -- "$PCK" "$mode"
    done
  done
  run_pc cpp_default default "" "" "${PC_CHECKS[@]}" -- "$PCK" plain
fi

if [[ $part == torch || $part == all ]]; then
  if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    for p in "${period_list[@]}"; do
      for w in whole delay profiler nvtx; do
        mode=plain
        case $w in delay) mode=idle ;; profiler) mode=profiler ;; nvtx) mode=nvtx ;; esac
        run_pc "torch_${w}_p$p" "$p" "$(window_flags $w)" "" "${PC_CHECKS[@]}" -- \
          python3 "$here/tests/gpu/pc_torch.py" "$mode"
      done
    done
    run_pc torch_default default "" "" "${PC_CHECKS[@]}" -- python3 "$here/tests/gpu/pc_torch.py" plain
  else
    echo "torch cases skipped: no PyTorch with CUDA" | tee -a "$summary"
  fi
fi

if [[ $part == probe || $part == all ]]; then
  # Both collectors asked for through the environment: PM sampling is kept, PC goes off.
  log=$OUTDIR/logs/pm_and_pc.log; trace=$W/pm_and_pc.wst
  env WARPSCOPE_PM_SAMPLING=1 WARPSCOPE_PC_SAMPLING=1 WARPSCOPE_PC_DEBUG=1 \
    LD_PRELOAD="$LIB/libwarpscope.so" WARPSCOPE_OUTPUT="$trace" WARPSCOPE_FORCE_OVERWRITE=1 \
    "$PCK" plain >"$log" 2>&1
  rc=$?
  out=$("$CHECK" "$trace" --complete --counter-min pc_sampling.disabled.pm_sampling_chosen=1 \
        --counter-min pm_sampling.samples=1 2>&1); crc=$?
  echo "$out" >>"$log"
  cases=$((cases + 1))
  if [[ $rc == 0 && $crc == 0 ]] && grep -q 'warpscope: PC sampling and PM sampling were both requested' "$log"; then
    echo "pm_and_pc                    PASS (PM kept, one line, counted)" | tee -a "$summary"
  else
    failures=$((failures + 1))
    echo "pm_and_pc                    FAIL: rc=$rc check=$crc $(echo "$out" | grep -m2 'CHECK FAILED' | tr '\n' ' ')" | tee -a "$summary"
  fi

  # CUPTI alone: can PM and PC sampling take turns in one process?
  log=$OUTDIR/logs/probe.log
  if [[ -x $PROBE ]]; then
    timeout 120 "$PROBE" >"$log" 2>&1
    echo "probe (rc=$?): $(grep -m1 'PROBE VERDICT' "$log" || echo 'no verdict, see logs/probe.log')" | tee -a "$summary"
  else
    echo "probe: not built (logs/build_probe.log)" | tee -a "$summary"
  fi
fi

echo "$((cases - failures)) of $cases cases passed" | tee -a "$summary"
rm -rf "$W"
exit $((failures > 100 ? 100 : failures))
