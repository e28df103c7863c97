#!/usr/bin/env bash
# `warpscope sol` against Nsight Compute's SpeedOfLight on held-out kernels (issue 40): is each
# unit's share of peak within 5 points of Nsight Compute's, does the interval hold it, is the
# short kernel reported with its coverage, do the verdicts agree?
#
#   WS_BUILD=$PWD/.gpu tests/gpu/sol/gpu_sol.sh [OUT_DIR]
#
# The program is tests/gpu/sol/sol_kernels.cu (ws_sol_kernels: a DRAM copy, an FMA loop, a
# WMMA tensor-core loop, a pointer chase, a short kernel launched 2000 times), taken from
# $WS_BUILD/bin (target ws_sol_kernels, staged by `tests/gpu/gpu_suite.sh --stage BUILD`),
# else compiled here with nvcc.
#   1. records all five with `warpscope record --pm-sampling --pm-metrics sol` (WS_SOL_INTERVAL,
#      default 1ms, the set's own), then `warpscope sol -f json` and the table, and `--svg` (roofline);
#   2. profiles the first 3 launches of each long kernel with Nsight Compute
#      (--section SpeedOfLight plus the metrics sol_compare.py maps each unit to,
#      --clock-control none, CSV), one kernel per run so that each run stays short;
#   3. tests/gpu/sol/sol_compare.py compares and writes sol_result.json and the summary.
# The summary also says the recording's holes (tests/gpu/sol/pm_holes.py: time without samples,
# invalid and overlong samples, overflows, drains cut short, the decode thread's time).
# OUT_DIR (else WS_OUT, else OUT, else ./gpu_sol_out) receives sol_result.json,
# sol_summary.txt, roofline.svg and logs/ (traces, warpscope's JSON, Nsight Compute's CSV).
# Exit status: failed checks plus failed steps (max 100). About 2-3 minutes on an H200, most of
# it Nsight Compute (NCU_TIMEOUT, default 120 s a kernel).
set -u
source "$(dirname "$0")/../gpu_build_env.sh" build gpu_sol_out
[[ $# -ge 1 ]] && OUTDIR=$1
mkdir -p "$OUTDIR/logs"
OUTDIR=$(cd "$OUTDIR" && pwd)
LOGS=$OUTDIR/logs
INTERVAL=${WS_SOL_INTERVAL:-1ms}  # the sol set's own default (pm_metric_sets.h kSolPmIntervalNs)
summary=$OUTDIR/sol_summary.txt
: >"$summary"
failures=0
W=$(mktemp -d /tmp/ws_sol.XXXXXX)
export PATH="$PATH:/usr/local/cuda/bin"
NCU=$(command -v ncu || ls -d /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
NCU_METRICS=$(python3 "$here/tests/gpu/sol/sol_compare.py" --ncu-metrics)

say() { echo "$*" | tee -a "$summary"; }
step_failed() { say "FAIL step: $*"; failures=$((failures + 1)); }

{
  echo "gpu_sol.sh $(date -u +%FT%TZ) on $(hostname); interval $INTERVAL"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1 | head -2
  echo "ncu: ${NCU:-none} $([[ -n $NCU ]] && "$NCU" --version 2>&1 | tail -1)"
  echo "build: $WS_BUILD"
} | tee -a "$summary"

PROG=$BIN/ws_sol_kernels
if [[ ! -x $PROG ]]; then
  if command -v nvcc >/dev/null 2>&1 &&
     run_logged "$LOGS/build.log" nvcc -O3 -std=c++17 -arch=sm_90 -cudart static \
       -o "$W/ws_sol_kernels" "$here/tests/gpu/sol/sol_kernels.cu"; then
    PROG=$W/ws_sol_kernels
    say "program: compiled here from sol_kernels.cu"
  else
    step_failed "no $PROG and no nvcc to build it: build the target ws_sol_kernels and stage it"
    PROG=
  fi
fi

compare_args=(--out "$OUTDIR/sol_result.json")
if [[ -n $PROG ]]; then
  trace=$LOGS/sol_kernels.wst
  if run_logged "$LOGS/record.log" timeout 120 "$WS" record -f -o "$trace" --pm-sampling \
       --pm-metrics sol --pm-interval "$INTERVAL" -- "$PROG"; then
    tail -2 "$LOGS/record.log" | head -1 >"$LOGS/durations.json"
    "$WS" sol "$trace" -f json --top 0 >"$LOGS/ws_sol.json" 2>"$LOGS/ws_sol.err" ||
      step_failed "warpscope sol (logs/ws_sol.err)"
    "$WS" sol "$trace" --short-names --svg "$OUTDIR/roofline.svg" >"$LOGS/ws_sol.txt" 2>&1 ||
      step_failed "warpscope sol --svg (logs/ws_sol.txt)"
    "$WS" info "$trace" >"$LOGS/ws_info.txt" 2>&1
    # Holes in the samples (time without samples, invalid samples, overflows): in the summary.
    if "$WS" info "$trace" -f json >"$LOGS/ws_info.json" 2>>"$LOGS/ws_info.txt"; then
      python3 "$here/tests/gpu/sol/pm_holes.py" "$LOGS/ws_info.json" "sol set, $INTERVAL" |
        tee -a "$summary"
    else
      step_failed "warpscope info -f json (logs/ws_info.txt)"
    fi
    compare_args+=(--ws "$LOGS/ws_sol.json")
  else
    step_failed "recording (logs/record.log)"
  fi
  if [[ -n $NCU ]]; then
    for k in copy fma mma chase; do
      if run_logged "$LOGS/ncu_$k.log" timeout "${NCU_TIMEOUT:-120}" "$NCU" --clock-control none \
           --section SpeedOfLight --metrics "$NCU_METRICS" -k "ws_sol_$k" -c 3 --csv --page raw \
           "$PROG" --only "$k" --launches 3 --warmup-ms 0; then
        sed -n '/^"ID"/,$p' "$LOGS/ncu_$k.log" >"$LOGS/ncu_$k.csv"
        compare_args+=(--ncu "ws_sol_$k=$LOGS/ncu_$k.csv")
      else
        step_failed "Nsight Compute on ws_sol_$k (logs/ncu_$k.log)"
      fi
    done
  else
    step_failed "no ncu: install Nsight Compute or put it on PATH"
  fi
fi

python3 "$here/tests/gpu/sol/sol_compare.py" "${compare_args[@]}" | tee -a "$summary"
failures=$((failures + ${PIPESTATUS[0]}))
rm -rf "$W"
say "gpu_sol.sh: $failures failure(s)"
exit $((failures > 100 ? 100 : failures))
