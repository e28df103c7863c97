#!/usr/bin/env bash
# `warpscope stalls` against Nsight Compute on a GPU, in one go: five kernels each built to
# stall on one warp state (tests/gpu/stall_kernels.cu), and the top kernels of a ResNet-18
# training step (tests/gpu/stall_torch.py).
#
#   tests/gpu/gpu_stalls.sh [--part cpp|torch|all] [--period N]
#
# cpp    builds stall_kernels.cu (nvcc -lineinfo -arch=sm_90); records it with `warpscope
#        record --pc-sampling --pc-period N` (default 15: ~250k samples per 30 ms kernel);
#        reads `warpscope stalls -f json` (every state), `--by line --top 3` and `--by pc`;
#        profiles the same binary with Nsight Compute (the metrics
#        smsp__average_warps_issue_stalled_*_per_issue_active.ratio, clocks left alone) and
#        compares with tests/gpu/stall_compare.py. Per kernel: the top state equals Nsight
#        Compute's and is the one the kernel is built for; every state in either side's top
#        three is within 5 points; the hottest line is the one marked `// ws-stall-line:`.
#        The hot PCs are also mapped to lines through nvdisasm's line table (shown, not checked).
# torch  records stall_torch.py with its NVTX range train_step as the capture window, prints
#        `warpscope stalls --top 5`, profiles the top five kernels in one training step with
#        Nsight Compute (one launch per launch configuration) and puts both side by side (no
#        verdicts).
#
# WS_BUILD: a build or staged copy (default .gpu, see tests/gpu/gpu_suite.sh --stage) with
# bin/warpscope and lib/{libwarpscope.so,libwarpscope_core.so}. Output in $OUT (or WS_OUT):
# stalls_summary.txt (a table per kernel: warpscope's top three shares against Nsight
# Compute's, the difference, cycles per issued instruction, hottest line against the marked
# one, PASS/FAIL; then the PyTorch breakdown) and logs/ (every command's output, the JSON and
# CSV compared, the SASS with line information). Exit status: failed checks plus failed steps
# (max 100). NCU_TIMEOUT: seconds one ncu run may take (default 300).
set -u
source "$(dirname "$0")/gpu_build_env.sh" build gpu_stalls_out
LOGS=$OUTDIR/logs
mkdir -p "$LOGS"
part=all; period=15
while [[ $# -gt 0 ]]; do
  case $1 in
    --part) part=$2; shift ;;
    --period) period=$2; shift ;;
  esac
  shift
done
COMPARE=(python3 "$here/tests/gpu/stall_compare.py")
W=$(mktemp -d /tmp/ws_stalls.XXXXXX)
summary=$OUTDIR/stalls_summary.txt
: >"$summary"
failures=0
export PATH="$PATH:/usr/local/cuda/bin"
# Nsight Compute's warp states, its issue-active cycles (to weigh launches) and durations.
NCU_METRICS='^smsp__(average_warps_issue_stalled_.*_per_issue_active\.ratio|issue_active\.sum)$|^gpu__time_duration\.sum$'

NCU=$(command -v ncu || ls -d /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)

say() { echo "$*" | tee -a "$summary"; }
step_failed() { say "FAIL step: $*"; failures=$((failures + 1)); }
# ncu_profile NAME "NCU FLAGS" CMD...: profiles into $W/NAME.ncu-rep, writes $LOGS/NAME.csv.
ncu_profile() {
  local name=$1 flags=$2; shift 2
  if [[ -z $NCU ]]; then step_failed "$name: no ncu on this machine"; return 1; fi
  # shellcheck disable=SC2086
  run_logged "$LOGS/$name.log" timeout "${NCU_TIMEOUT:-300}" "$NCU" --metrics "regex:$NCU_METRICS" \
    --clock-control none $flags -f -o "$W/$name" "$@"
  local rc=$?
  "$NCU" --import "$W/$name.ncu-rep" --csv --page raw --print-kernel-base demangled \
    >"$LOGS/$name.csv" 2>>"$LOGS/$name.log"
  [[ $rc == 0 && -s $LOGS/$name.csv ]]
}

{
  echo "gpu_stalls.sh $(date -u +%FT%TZ) on $(hostname), part $part, PC sampling period 2^$period"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | head -2
  echo "ncu: ${NCU:-none} $([[ -n $NCU ]] && "$NCU" --version 2>&1 | tail -1)"
  echo "nvcc: $(nvcc --version 2>&1 | tail -1)"
  echo "build: $WS_BUILD"
} | tee -a "$summary"

if [[ $part == cpp || $part == all ]]; then
  say ""
  say "== kernels built to stall on one warp state (tests/gpu/stall_kernels.cu)"
  src=$here/tests/gpu/stall_kernels.cu
  prog=$W/ws_stall_kernels
  if ! run_logged "$LOGS/build_stall_kernels.log" \
       nvcc -O3 -std=c++17 -arch=sm_90 -lineinfo -o "$prog" "$src"; then
    step_failed "nvcc could not build stall_kernels.cu (logs/build_stall_kernels.log)"
  else
    run_logged "$LOGS/stall_kernels_alone.log" "$prog" all || step_failed "the program alone failed"
    trace=$W/stall_kernels.wst
    if run_logged "$LOGS/record_stall_kernels.log" timeout 300 \
         "$WS" record -f -o "$trace" --pc-sampling --pc-period "$period" -- "$prog" all; then
      "$WS" stalls "$trace" --top 5 >"$LOGS/ws_stall_kernels.txt" 2>&1
      "$WS" stalls "$trace" -f json --top 0 >"$LOGS/ws_stall_kernels.json" 2>>"$LOGS/ws_stall_kernels.txt"
      "$WS" stalls "$trace" -f json --by line --top 3 >"$LOGS/ws_stall_kernels_lines.json" \
        2>"$LOGS/ws_stall_kernels_lines.err"
      "$WS" stalls "$trace" -f json --by pc --top 0 >"$LOGS/ws_stall_kernels_pcs.json" \
        2>"$LOGS/ws_stall_kernels_pcs.err"
      cp "$trace" "$LOGS/"
    else
      step_failed "warpscope record (logs/record_stall_kernels.log)"
    fi
    # The PC-to-line table of the program's own cubin (not checked, shown beside warpscope's).
    (cd "$W" && cuobjdump -xelf all "$prog" >/dev/null 2>&1)
    cubin=$(ls "$W"/*.sm_90*.cubin 2>/dev/null | head -1)
    [[ -n $cubin ]] && nvdisasm -g -c "$cubin" >"$LOGS/stall_kernels.sass" 2>&1
    ncu_profile ncu_stall_kernels "-k regex:ws_stall_" "$prog" all ||
      step_failed "ncu on stall_kernels (logs/ncu_stall_kernels.log)"
    if [[ -s $LOGS/ws_stall_kernels.json ]]; then
      "${COMPARE[@]}" check --ws "$LOGS/ws_stall_kernels.json" --ws-lines "$LOGS/ws_stall_kernels_lines.json" \
        --ncu "$LOGS/ncu_stall_kernels.csv" --source "$src" \
        --pcs "$LOGS/ws_stall_kernels_pcs.json" --sass "$LOGS/stall_kernels.sass" \
        >"$LOGS/compare_stall_kernels.txt" 2>&1
      rc=$?
      cat "$LOGS/compare_stall_kernels.txt" >>"$summary"
      failures=$((failures + rc))
    fi
  fi
fi

if [[ $part == torch || $part == all ]]; then
  say ""
  say "== ResNet-18 training step (tests/gpu/stall_torch.py): top 5 kernels"
  if ! python3 -c 'import torch, torchvision; assert torch.cuda.is_available()' 2>/dev/null; then
    step_failed "no PyTorch with CUDA and torchvision"
  else
    trace=$W/stall_torch.wst
    if run_logged "$LOGS/record_stall_torch.log" timeout 300 "$WS" record -f -o "$trace" \
         --pc-sampling --pc-period "$period" -p train_step -- python3 "$here/tests/gpu/stall_torch.py"; then
      "$WS" stalls "$trace" --top 5 >"$LOGS/ws_stall_torch.txt" 2>&1
      "$WS" stalls "$trace" -f json --top 0 >"$LOGS/ws_stall_torch.json" 2>>"$LOGS/ws_stall_torch.txt"
      say "warpscope stalls --top 5 (first 5 kernels; all in logs/ws_stall_torch.txt):"
      head -7 "$LOGS/ws_stall_torch.txt" | tee -a "$summary"
      regex=$("${COMPARE[@]}" ncu-filter --ws "$LOGS/ws_stall_torch.json" --top 5)
      echo "$regex" >"$LOGS/ncu_stall_torch.regex"
      # One training step; the first launch of each launch configuration (grid, block, shared
      # memory) of each of the five kernels. No NVTX filter: ncu's is per thread, and PyTorch
      # launches the backward pass from its autograd thread, outside the main thread's range.
      ncu_profile ncu_stall_torch "--kernel-name-base demangled --filter-mode per-launch-config -c 1" \
        -k "regex:$regex" python3 "$here/tests/gpu/stall_torch.py" --warmup 0 --steps 1 ||
        say "note: ncu on the training step failed (logs/ncu_stall_torch.log); warpscope alone below"
      "${COMPARE[@]}" report --ws "$LOGS/ws_stall_torch.json" --ncu "$LOGS/ncu_stall_torch.csv" --top 5 \
        >"$LOGS/compare_stall_torch.txt" 2>&1 || step_failed "stall_compare.py report"
      cat "$LOGS/compare_stall_torch.txt" >>"$summary"
    else
      step_failed "warpscope record of the training step (logs/record_stall_torch.log)"
    fi
  fi
fi

say ""
say "gpu_stalls.sh: $failures failed checks and steps"
rm -rf "$W"
exit $((failures > 100 ? 100 : failures))
