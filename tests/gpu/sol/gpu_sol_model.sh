#!/usr/bin/env bash
# `warpscope sol` and advise's speed-of-light rules on a real model (issue 40): a ResNet-50
# training step (resnet_sol.py: bf16 autocast, channels-last, inputs on the GPU), recorded with
# `--pm-sampling --pm-metrics sol`, against Nsight Compute's figures for one step of the same
# program (--profile-from-start off around one step, SpeedOfLight plus the metrics sol_compare.py maps
# each unit to, --clock-control none).
#
#   WS_BUILD=$PWD/.gpu tests/gpu/sol/gpu_sol_model.sh [OUT_DIR]
#
# OUT_DIR (else WS_OUT, else OUT, else ./gpu_sol_model_out) receives sol_model.txt (the summary:
# sol's table, advise's findings, the comparison), sol_model.json and logs/ (the trace, both
# tools' output). Exit status: failed checks plus failed steps (max 100). About 8 minutes on
# an H200, most of it Nsight Compute replaying the step's ~1300 launches (NCU_TIMEOUT, default
# 540 s; 300 s was too short).
set -u
source "$(dirname "$0")/../gpu_build_env.sh" build gpu_sol_model_out
[[ $# -ge 1 ]] && OUTDIR=$1
mkdir -p "$OUTDIR/logs"
OUTDIR=$(cd "$OUTDIR" && pwd)
LOGS=$OUTDIR/logs
SOL=$here/tests/gpu/sol
summary=$OUTDIR/sol_model.txt
: >"$summary"
failures=0
export PATH="$PATH:/usr/local/cuda/bin"
NCU=$(command -v ncu || ls -d /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
NCU_METRICS=$(python3 "$SOL/sol_compare.py" --ncu-metrics)
say() { echo "$*" | tee -a "$summary"; }
step_failed() { say "FAIL step: $*"; failures=$((failures + 1)); }

say "gpu_sol_model.sh $(date -u +%FT%TZ); ncu: ${NCU:-none}"
trace=$LOGS/resnet_sol.wst
if run_logged "$LOGS/record.log" timeout 240 "$WS" record -f -o "$trace" --pm-sampling \
     --pm-metrics sol -- python3 "$SOL/resnet_sol.py" --warmup 5 --steps 20; then
  tail -3 "$LOGS/record.log" | tee -a "$summary"
  "$WS" sol "$trace" -f json --top 0 >"$LOGS/ws_sol.json" 2>"$LOGS/ws_sol.err" ||
    step_failed "warpscope sol -f json (logs/ws_sol.err)"
  "$WS" sol "$trace" --short-names --top 8 2>&1 | tee -a "$summary"
  "$WS" advise "$trace" -f json >"$LOGS/advise.json" 2>"$LOGS/advise.err" ||
    step_failed "warpscope advise -f json (logs/advise.err)"
  "$WS" advise "$trace" 2>&1 | head -60 | tee -a "$summary"
  "$WS" info "$trace" -f json >"$LOGS/ws_info.json" 2>/dev/null &&
    python3 "$SOL/pm_holes.py" "$LOGS/ws_info.json" "sol set, ResNet-50" | tee -a "$summary"
else
  step_failed "recording (logs/record.log)"
fi

if [[ -n $NCU ]]; then
  if run_logged "$LOGS/ncu.log" timeout "${NCU_TIMEOUT:-540}" "$NCU" --clock-control none \
       --profile-from-start off --section SpeedOfLight --metrics "$NCU_METRICS" \
       --csv --page raw python3 "$SOL/resnet_sol.py" --warmup 5 --profile-step; then
    sed -n '/^"ID"/,$p' "$LOGS/ncu.log" >"$LOGS/ncu.csv"
  else
    step_failed "Nsight Compute (logs/ncu.log)"
  fi
else
  step_failed "no ncu: install Nsight Compute or put it on PATH"
fi

if [[ -s $LOGS/ws_sol.json && -s $LOGS/ncu.csv ]]; then
  (cd "$SOL" && python3 sol_model_compare.py --ws "$LOGS/ws_sol.json" --ncu "$LOGS/ncu.csv" \
     --advise "$LOGS/advise.json" --top 6 --out "$OUTDIR/sol_model.json") | tee -a "$summary"
  failures=$((failures + ${PIPESTATUS[0]}))
fi
say "gpu_sol_model.sh: $failures failure(s)"
exit $((failures > 100 ? 100 : failures))
