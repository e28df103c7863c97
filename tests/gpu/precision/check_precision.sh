#!/usr/bin/env bash
# `warpscope advise`'s precision finding on held-out PyTorch programs (issue 42, point 3): the
# FP32 matrix work that tensor cores could run, its predicted saving against the saving TF32
# measures, the phases it names, and no finding on a program already on bf16.
#
#   WS_BUILD=$PWD/.gpu tests/gpu/precision/check_precision.sh [OUT_DIR]
#
# Programs (tests/gpu/precision/, written for this check; precision_loop.py is their loop):
#   transformer  precision_transformer.py: 4 pre-norm decoder blocks, batch 16, sequence 512,
#                d_model 1024, AdamW; NVTX xf_step_<i> / xf_forward, xf_backward, xf_optimizer
#   cnn          precision_cnn.py: a ResNet-50 written out, batch 64 at 224x224, SGD;
#                NVTX cnn_iter_<i> / cnn_forward, cnn_backward, cnn_sgd
# For each program:
#   1. records it at fp32 and at bf16 (autocast) with `warpscope record` defaults, and runs
#      `warpscope advise -f json` (and the table) on each recording;
#   2. runs it plain (not recorded) at fp32, tf32 and bf16, WS_PREC_ROUNDS rounds (default 5)
#      of one run each, the order rotated each round and the programs interleaved, so that a
#      slow spell of the machine touches every precision; each run prints its median step time
#      over its steps after the warm-up (CUDA events), and the error of an FP32 matmul and
#      convolution against float64 (--probe: which math the TF32 flags gave);
#   3. tests/gpu/precision/check_precision.py checks that the fp32 runs ran FP32 math and the
#      tf32 runs TF32 (the probe's matmul error), that the fp32 advise has a finding whose
#      rule holds "precision" or "tf32", that its predicted saving per step is within 25% of
#      the measured one (median fp32 step minus median tf32 step), that it names the phases that
#      hold the matrix work (forward and backward), and that the bf16 advise has none. It prints
#      every such finding whole, and every finding's rule when none matched.
# Settings (environment):
#   WS_PREC_PROGRAMS     programs to run (default "transformer cnn")
#   WS_PREC_ROUNDS       plain rounds (default 5; the check wants 5 runs of each precision)
#   WS_PREC_XF_STEPS, WS_PREC_CNN_STEPS   steps a run (default 20 each), WS_PREC_WARMUP the
#                        untimed leading steps of each (default 5)
#   WS_PREC_RECORD_TF32  1: record the tf32 run too and list its findings (not checked)
#   WS_PREC_CHECK_ARGS   more arguments for check_precision.py (--field NAME, --combine max,
#                        --tolerance 0.25)
#   WS_PREC_KEEP_TRACES  0: do not return the recordings (default 1)
#   WS_PREC_BUDGET       seconds from the start after which no run that could end later is
#                        started (default 540): the whole script fits one 600 s device call
# About 5 minutes on an H200 with the defaults (30 plain runs of 5-10 s, most of it Python and
# CUDA start-up, 4 recordings); each step that starts says the seconds since the start.
#
# WS_BUILD: a build or staged copy with bin/warpscope and lib/{libwarpscope.so,
# libwarpscope_core.so} (tests/gpu/gpu_build_env.sh; default .gpu if present, else build).
# OUT_DIR (else WS_OUT, else OUT, else ./gpu_precision_out) receives:
#   precision_summary.txt  the table (program, fp32/tf32/bf16 step ms, measured and predicted
#                          saving, ratio, PASS/FAIL), the checks, the findings whole
#   precision_result.json  every figure and check
#   precision_logs.tgz     the runs' JSON lines, record logs, advise JSON and tables
#   precision_traces.tgz   the recordings (split into .part-NN over 15 MiB), to run advise on
#                          again offline: check_precision.py --case NAME:RUNS:FP32:BF16
# Exit status: failed checks plus failed steps (max 100); 77 when this machine has no PyTorch
# with a CUDA GPU (nothing is run).
set -u
source "$(dirname "$0")/../gpu_build_env.sh" build gpu_precision_out
[[ $# -ge 1 ]] && OUTDIR=$1
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
PROGRAMS=${WS_PREC_PROGRAMS:-transformer cnn}
ROUNDS=${WS_PREC_ROUNDS:-5}
WARMUP=${WS_PREC_WARMUP:-5}
BUDGET=${WS_PREC_BUDGET:-540}
PRECISIONS=(fp32 tf32 bf16)
RECORDED=(fp32 bf16)
[[ ${WS_PREC_RECORD_TF32:-0} == 1 ]] && RECORDED+=(tf32)
DIR=$here/tests/gpu/precision
W=$(mktemp -d /tmp/ws_precision.XXXXXX)
LOGS=$W/logs
mkdir -p "$LOGS"
summary=$OUTDIR/precision_summary.txt
: >"$summary"
began=$(date +%s)
failures=0

say() { echo "$*" | tee -a "$summary"; }
step_failed() { say "FAIL step: $*"; failures=$((failures + 1)); }
elapsed() { echo $(($(date +%s) - began)); }
# True when a command given `need` seconds still ends within the budget; else says so.
in_budget() {  # name, need
  (( $(elapsed) + $2 <= BUDGET )) && return 0
  step_failed "$1 not started: $(elapsed) s gone, it may take $2 s," \
    "budget ${BUDGET} s (WS_PREC_BUDGET)"
  return 1
}
steps_of() {  # program
  case $1 in
    transformer) echo "${WS_PREC_XF_STEPS:-20}" ;;
    cnn) echo "${WS_PREC_CNN_STEPS:-20}" ;;
  esac
}
program_cmd() {  # program, precision: the command line, in the array cmd
  cmd=(python3 "$DIR/precision_$1.py" --precision "$2" --steps "$(steps_of "$1")" --warmup "$WARMUP")
}

{
  echo "check_precision.sh $(date -u +%FT%TZ) on $(hostname); programs: $PROGRAMS; $ROUNDS rounds"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1 | head -2
  python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda,
                                  "cuDNN", torch.backends.cudnn.version())' 2>&1 | tail -1
  echo "build: $WS_BUILD"
} | tee -a "$summary"
if ! python3 -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  say "SKIP check_precision: python3 has no PyTorch with a CUDA GPU here"
  rm -rf "$W"
  exit 77
fi
[[ -x $WS ]] || step_failed "no $WS: stage a build (tests/gpu/gpu_suite.sh --stage build) or set WS_BUILD"
for p in $PROGRAMS; do
  [[ -n $(steps_of "$p") ]] || step_failed "unknown program '$p' in WS_PREC_PROGRAMS (transformer, cnn)"
done

# 1. The recordings and their advise.
for p in $PROGRAMS; do
  [[ -x $WS && -n $(steps_of "$p") ]] || continue
  for prec in "${RECORDED[@]}"; do
    in_budget "record $p $prec" 150 || continue
    say "== $(elapsed) s: record $p at $prec"
    program_cmd "$p" "$prec"
    trace=$W/$p.$prec.wst
    if ! run_logged "$LOGS/$p.$prec.record.log" \
         timeout 150 "$WS" record -f -o "$trace" -- "${cmd[@]}"; then
      step_failed "warpscope record of $p at $prec (logs/$p.$prec.record.log)"
    fi
    # The recorded run's own line, marked: shown beside the plain runs, not in their medians.
    grep '^{' "$LOGS/$p.$prec.record.log" | sed 's/^{/{"recorded": true, /' >>"$LOGS/$p.runs.jsonl"
    [[ -s $trace ]] || continue
    timeout 90 "$WS" advise -f json "$trace" >"$LOGS/$p.$prec.advise.json" \
      2>"$LOGS/$p.$prec.advise.err" ||
      step_failed "warpscope advise -f json on $p at $prec (logs/$p.$prec.advise.err)"
    timeout 90 "$WS" advise --top 10 "$trace" >"$LOGS/$p.$prec.advise.txt" 2>&1
    head -8 "$LOGS/$p.$prec.advise.txt"
  done
done

# 2. Plain runs: rounds of every program at every precision, the order rotated each round.
for ((r = 0; r < ROUNDS; r++)); do
  for p in $PROGRAMS; do
    [[ -n $(steps_of "$p") ]] || continue
    for ((k = 0; k < 3; k++)); do
      prec=${PRECISIONS[$(((r + k) % 3))]}
      in_budget "plain run $((r + 1)) of $p at $prec" 60 || continue
      program_cmd "$p" "$prec"
      if ! timeout 60 "${cmd[@]}" --probe >>"$LOGS/$p.runs.jsonl" 2>>"$LOGS/$p.$prec.plain.err"; then
        step_failed "plain run $((r + 1)) of $p at $prec (logs/$p.$prec.plain.err)"
      fi
    done
  done
  say "== $(elapsed) s: round $((r + 1)) of $ROUNDS done"
done

# 3. The check.
cases=()
for p in $PROGRAMS; do
  [[ -n $(steps_of "$p") ]] || continue
  c=$p:$LOGS/$p.runs.jsonl:$LOGS/$p.fp32.advise.json:$LOGS/$p.bf16.advise.json
  [[ ${WS_PREC_RECORD_TF32:-0} == 1 ]] && c+=:$LOGS/$p.tf32.advise.json
  cases+=(--case "$c")
done
# shellcheck disable=SC2086  # WS_PREC_CHECK_ARGS is split into arguments on purpose
python3 "$DIR/check_precision.py" "${cases[@]}" --min-runs "$ROUNDS" \
  --json "$OUTDIR/precision_result.json" ${WS_PREC_CHECK_ARGS:-} >"$LOGS/check.txt" 2>&1
rc=$?
tee -a "$summary" <"$LOGS/check.txt"
failures=$((failures + rc))
(cd "$W" && tar czf "$OUTDIR/precision_logs.tgz" logs)
if [[ ${WS_PREC_KEEP_TRACES:-1} == 1 ]] && ls "$W"/*.wst >/dev/null 2>&1; then
  (cd "$W" && tar czf "$OUTDIR/precision_traces.tgz" ./*.wst)
  if (( $(stat -c %s "$OUTDIR/precision_traces.tgz") > 15 * 1024 * 1024 )); then
    split -b 15M -d "$OUTDIR/precision_traces.tgz" "$OUTDIR/precision_traces.tgz.part-"
    rm "$OUTDIR/precision_traces.tgz"
  fi
fi
say "check_precision.sh: $failures failed checks and steps in $(elapsed) s; result in $OUTDIR/precision_result.json"
rm -rf "$W"
exit $((failures > 100 ? 100 : failures))
