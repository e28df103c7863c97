#!/usr/bin/env bash
# The whole GPU proof in one call on the GPU machine: the tracing suite (tests, and the
# overhead benchmark unless --no-bench), the PM sampling / occupancy / tail suite, the warp
# stall kernels against Nsight Compute (C++ part of tests/gpu/gpu_stalls.sh), `warpscope diff` on
# runs with a known change (tests/gpu/gpu_diff.sh), `warpscope advise` on programs with a problem
# each against the time their fix saves (tests/gpu/advise/gpu_advise.sh), and a recording of the example
# pipeline (the trace bundled in examples/traces/), and call stacks (tests/gpu/stacks/gpu_stacks.sh).
#
#   tests/gpu/gpu_suite.sh --stage build      # here: copy what the GPU run needs into .gpu/
#   tests/gpu/gpu_all.sh [--no-bench] [--no-tests] [--no-pm] [--no-stalls] [--no-diff] [--no-advise]
#                      [--no-example] [--no-stacks]
#
# The device tool returns at most 8 files, so everything is packed into
# $OUT/gpu_results.tgz; the check lists are also copied to $OUT as plain text.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
OUTDIR=${OUT:-$PWD/gpu_all_out}
mkdir -p "$OUTDIR"
res=$(mktemp -d /tmp/ws_all.XXXXXX)
bench=1; pm=1; tests=1; example=1; stalls=1; diff=1; advise=1; stacks=1
for a in "$@"; do
  case $a in
    --no-bench) bench=0 ;;
    --no-tests) tests=0 ;;
    --no-pm) pm=0 ;;
    --no-example) example=0 ;;
    --no-stalls) stalls=0 ;;
    --no-diff) diff=0 ;;
    --no-advise) advise=0 ;;
    --no-stacks) stacks=0 ;;
  esac
done
BIN=$here/.gpu/bin
failed=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv >"$res/gpu.txt" 2>&1

if [[ $example == 1 ]]; then
echo "== example pipeline (PM sampling on)"
mkdir -p "$res/example"
timeout 120 "$BIN/warpscope" record -f -o "$res/example/pipeline.wst" --pm-sampling --pm-interval 20us --pm-buffer 512M \
    -- "$BIN/ws_example_pipeline" 300 >"$res/example/record.log" 2>&1 || failed=$((failed+1))
tail -3 "$res/example/record.log"
for cmd in summary occupancy tail; do
  timeout 60 "$BIN/warpscope" "$cmd" "$res/example/pipeline.wst" >"$res/example/$cmd.txt" 2>&1
done
timeout 60 "$BIN/warpscope" tail "$res/example/pipeline.wst" --svg "$res/example/tail.svg" >/dev/null 2>&1
cat "$res/example/occupancy.txt" "$res/example/tail.txt"
fi

if [[ $pm == 1 ]]; then
  echo "== PM sampling suite"
  WS_OUT=$res/pm timeout 200 bash "$here/tests/gpu_pm/gpu_pm_suite.sh" --no-torch
  failed=$((failed + $?))
  cp "$res/pm/pm_checks.txt" "$OUTDIR/" 2>/dev/null
fi
if [[ $stalls == 1 ]]; then
  echo "== warp stall kernels against Nsight Compute"
  WS_OUT=$res/stalls timeout 300 bash "$here/tests/gpu/gpu_stalls.sh" --part cpp
  failed=$((failed + $?))
  cp "$res/stalls/stalls_summary.txt" "$OUTDIR/" 2>/dev/null
fi
if [[ $diff == 1 ]]; then
  echo "== warpscope diff on runs with a known change"
  WS_OUT=$res/diff timeout 120 bash "$here/tests/gpu/gpu_diff.sh"
  failed=$((failed + $?))
  cp "$res/diff/diff_summary.txt" "$OUTDIR/" 2>/dev/null
fi
if [[ $advise == 1 ]]; then
  echo "== warpscope advise on programs with one problem each"
  WS_OUT=$res/advise timeout 540 bash "$here/tests/gpu/advise/gpu_advise.sh"
  failed=$((failed + $?))
  cp "$res/advise/advise_summary.txt" "$OUTDIR/" 2>/dev/null
fi
if [[ $stacks == 1 ]]; then
  echo "== call stacks: frame reader, sync sites, hostile cases, cost"
  stack_args=()
  [[ $bench == 0 ]] && stack_args=(--no-bench)
  OUT=$res/stacks timeout 560 bash "$here/tests/gpu/stacks/gpu_stacks.sh" "${stack_args[@]}"
  failed=$((failed + $?))
  cp "$res/stacks/stacks_results.txt" "$OUTDIR/" 2>/dev/null
fi
if [[ $tests == 1 || $bench == 1 ]]; then
  echo "== tracing suite"
  args=()
  [[ $bench == 0 ]] && args=(--tests-only)
  [[ $tests == 0 ]] && args=(--bench-only)
  WS_OUT=$res/trace timeout 330 bash "$here/tests/gpu/gpu_suite.sh" "${args[@]}"
  failed=$((failed + $?))
  cp "$res/trace/results.txt" "$OUTDIR/" 2>/dev/null
  cp "$res/trace/bench.txt" "$OUTDIR/" 2>/dev/null
fi
tar czf "$OUTDIR/gpu_results.tgz" -C "$res" .
echo "gpu_all: $failed failed"
exit $((failed > 100 ? 100 : failed))
