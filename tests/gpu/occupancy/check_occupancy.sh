#!/usr/bin/env bash
# `warpscope occupancy` against Nsight Compute on a long-tail kernel (issue 36, point 6): do the
# bounds of achieved occupancy, per active SM cycle and per elapsed cycle, hold Nsight Compute's
# sm__warps_active.avg.pct_of_peak_sustained_active and ..._elapsed?
#
#   WS_BUILD=$PWD/.gpu tests/gpu/occupancy/check_occupancy.sh [OUT_DIR]
#
# The program is tests/gpu/occupancy/long_tail.cu (ws_occupancy_long_tail: a staircase tail
# between two full neighbours that share its edge samples). It is taken from $WS_BUILD/bin
# (built by the CUDA build's target ws_occupancy_long_tail and staged by
# `tests/gpu/gpu_suite.sh --stage BUILD`), else compiled with nvcc if the machine has one.
#   1. records it with `warpscope record --pm-sampling --pm-interval I` for each I in
#      WS_OCC_INTERVALS (default "200us 50us"), WS_OCC_LAUNCHES steps (default 20), and reads
#      `warpscope occupancy -f json` and the table;
#   2. profiles its first three long-tail launches with Nsight Compute (--clock-control none;
#      sm__warps_active.avg.pct_of_peak_sustained_active and _elapsed, active and elapsed
#      cycles, duration);
#   3. tests/gpu/occupancy/occupancy_compare.py checks, per recording and per profiled launch,
#      that the bounds hold Nsight Compute's figures (0.5 points of slack) and writes the result.
#
# WS_BUILD: a build or staged copy with bin/warpscope and lib/{libwarpscope.so,
# libwarpscope_core.so} (tests/gpu/gpu_build_env.sh; default .gpu if present, else build).
# OUT_DIR (else WS_OUT, else OUT, else ./gpu_occupancy_out) receives:
#   occupancy_result.json  the machine-readable result (figures, checks, pass)
#   occupancy_summary.txt  the same for people, PASS/FAIL per check
#   logs/                  every command's output, the traces, warpscope's JSON and tables,
#                          Nsight Compute's CSV and the program's design JSON
# Exit status: failed checks plus failed steps (max 100). About a minute on an H200.
# NCU_TIMEOUT: seconds the Nsight Compute run may take (default 180).
set -u
source "$(dirname "$0")/../gpu_build_env.sh" build gpu_occupancy_out
[[ $# -ge 1 ]] && OUTDIR=$1
mkdir -p "$OUTDIR/logs"
OUTDIR=$(cd "$OUTDIR" && pwd)
LOGS=$OUTDIR/logs
INTERVALS=${WS_OCC_INTERVALS:-200us 50us}
LAUNCHES=${WS_OCC_LAUNCHES:-20}
KERNEL=ws_occ_long_tail
summary=$OUTDIR/occupancy_summary.txt
: >"$summary"
failures=0
W=$(mktemp -d /tmp/ws_occupancy.XXXXXX)
export PATH="$PATH:/usr/local/cuda/bin"
NCU=$(command -v ncu || ls -d /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
NCU_METRICS=sm__warps_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.per_cycle_active,sm__cycles_active.avg,sm__cycles_elapsed.avg,gpu__time_duration.sum,sm__maximum_warps_per_active_cycle_pct

say() { echo "$*" | tee -a "$summary"; }
step_failed() { say "FAIL step: $*"; failures=$((failures + 1)); }

{
  echo "check_occupancy.sh $(date -u +%FT%TZ) on $(hostname); intervals: $INTERVALS; $LAUNCHES steps"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1 | head -2
  echo "ncu: ${NCU:-none} $([[ -n $NCU ]] && "$NCU" --version 2>&1 | tail -1)"
  echo "build: $WS_BUILD"
} | tee -a "$summary"

PROG=$BIN/ws_occupancy_long_tail
if [[ ! -x $PROG ]]; then
  if command -v nvcc >/dev/null 2>&1 &&
     run_logged "$LOGS/build_long_tail.log" nvcc -O3 -std=c++17 -arch=sm_90 -lineinfo \
       -o "$W/ws_occupancy_long_tail" "$here/tests/gpu/occupancy/long_tail.cu"; then
    PROG=$W/ws_occupancy_long_tail
    say "program: compiled here from long_tail.cu ($WS_BUILD/bin has no ws_occupancy_long_tail)"
  else
    step_failed "no $PROG and no nvcc to build it: build the target ws_occupancy_long_tail and stage it (tests/gpu/gpu_suite.sh --stage)"
    PROG=
  fi
fi

compare_args=()
if [[ -n $PROG ]]; then
  for iv in $INTERVALS; do
    trace=$LOGS/long_tail_$iv.wst
    if run_logged "$LOGS/record_$iv.log" timeout 120 "$WS" record -f -o "$trace" --pm-sampling \
         --pm-interval "$iv" -- "$PROG" --launches "$LAUNCHES" --json "$LOGS/design_$iv.json"; then
      "$WS" occupancy "$trace" -f json >"$LOGS/ws_occupancy_$iv.json" 2>"$LOGS/ws_occupancy_$iv.err"
      "$WS" occupancy "$trace" --short-names >"$LOGS/ws_occupancy_$iv.txt" 2>&1
      compare_args+=(--ws "$iv=$LOGS/ws_occupancy_$iv.json")
      [[ -z ${design:-} ]] && design=$LOGS/design_$iv.json
    else
      step_failed "warpscope record at $iv (logs/record_$iv.log)"
    fi
  done
  if [[ -z $NCU ]]; then
    step_failed "no ncu on this machine"
  else
    # The first three long-tail launches, each replayed alone; clocks as the program runs them.
    run_logged "$LOGS/ncu.log" timeout "${NCU_TIMEOUT:-180}" "$NCU" --clock-control none \
      --metrics "$NCU_METRICS" -k "regex:^$KERNEL\$" --launch-count 3 \
      --log-file "$LOGS/ncu_messages.log" -o "$W/ncu" -f "$PROG" --launches 3 --warmup-ms 0 \
      --json "$LOGS/design_ncu.json" ||
      step_failed "ncu (logs/ncu.log)"
    "$NCU" --import "$W/ncu.ncu-rep" --csv --print-units base >"$LOGS/ncu.csv" 2>>"$LOGS/ncu.log"
  fi
fi

python3 "$here/tests/gpu/occupancy/occupancy_compare.py" --kernel "$KERNEL" \
  --ncu "$LOGS/ncu.csv" "${compare_args[@]}" ${design:+--design "$design"} \
  --out "$OUTDIR/occupancy_result.json" >"$LOGS/compare.txt" 2>&1
rc=$?
cat "$LOGS/compare.txt" >>"$summary"
cat "$LOGS/compare.txt"
failures=$((failures + rc))
say "check_occupancy.sh: $failures failed checks and steps; result in $OUTDIR/occupancy_result.json"
rm -rf "$W"
exit $((failures > 100 ? 100 : failures))
