#!/usr/bin/env bash
# Which PM-sampling L2 metric matches Nsight Compute's L2 speed of light (issue 40: the sol set's
# L2 read 47% where Nsight Compute read 88% on a DRAM copy). Run on the GPU machine:
#
#   WS_BUILD=$PWD/.gpu tests/gpu/sol/l2_candidates.sh [OUT_DIR]
#
#   1. lists the chip's PM-sampling L2 metrics (bench/probes/pm_metric_passes.cc, built here:
#      cuptiProfilerHostGetBaseMetrics for each metric type, the sub-metrics of lts__throughput)
#      and the pass count of the candidate set (l2_candidates.py --metrics; one pass on GH100);
#   2. records ws_sol_kernels (tests/gpu/sol/sol_kernels.cu) once with that set
#      (WARPSCOPE_PM_METRICS), exported to Chrome JSON for the samples, and says its holes;
#   3. profiles ws_sol_copy and ws_sol_mma with Nsight Compute: lts__throughput and its
#      breakdown;
#   4. l2_candidates.py ranks the candidates by their distance to lts__throughput per kernel.
# OUT_DIR (else WS_OUT, else OUT, else ./gpu_l2_out) receives l2_candidates.txt (the summary),
# l2_candidates.json and logs/. Exit status: failed steps.
set -u
source "$(dirname "$0")/../gpu_build_env.sh" build gpu_l2_out
[[ $# -ge 1 ]] && OUTDIR=$1
mkdir -p "$OUTDIR/logs"
OUTDIR=$(cd "$OUTDIR" && pwd)
LOGS=$OUTDIR/logs
INTERVAL=${WS_SOL_INTERVAL:-200us}
summary=$OUTDIR/l2_candidates.txt
: >"$summary"
failures=0
export PATH="$PATH:/usr/local/cuda/bin"
NCU=$(command -v ncu || ls -d /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
PY=$here/tests/gpu/sol/l2_candidates.py
say() { echo "$*" | tee -a "$summary"; }
step_failed() { say "FAIL step: $*"; failures=$((failures + 1)); }

CHIP=${WS_CHIP:-GH100}
PROBE=$LOGS/pm_metric_passes
CUPTI_LIB=$(dirname "$(ldconfig -p 2>/dev/null | grep -m1 'libcupti.so ' | awk '{print $NF}')" 2>/dev/null)
if run_logged "$LOGS/probe_build.log" g++ -std=c++20 -I/usr/local/cuda/include \
     "$here/bench/probes/pm_metric_passes.cc" -L/usr/local/cuda/lib64 \
     -L/usr/local/cuda/extras/CUPTI/lib64 ${CUPTI_LIB:+-L$CUPTI_LIB} -lcupti -o "$PROBE"; then
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  for type in throughput ratio counter; do
    echo "== $CHIP $type metrics matching lts__" >>"$LOGS/l2_metrics.txt"
    "$PROBE" "$CHIP" list "$type" lts__ >>"$LOGS/l2_metrics.txt" 2>&1
  done
  echo "== sub-metrics of lts__throughput" >>"$LOGS/l2_metrics.txt"
  "$PROBE" "$CHIP" sub lts__throughput >>"$LOGS/l2_metrics.txt" 2>&1
  say "L2 metrics of $CHIP: $(grep -vc '^==' "$LOGS/l2_metrics.txt") lines in logs/l2_metrics.txt"
  say "candidate set: $("$PROBE" "$CHIP" passes "$(python3 "$PY" --metrics)" 2>&1 | tail -1)"
else
  step_failed "building the metric probe (logs/probe_build.log)"
fi

PROG=$BIN/ws_sol_kernels
if [[ ! -x $PROG ]] && command -v nvcc >/dev/null 2>&1; then
  run_logged "$LOGS/build.log" nvcc -O3 -std=c++17 -arch=sm_90 -cudart static \
    -o "$LOGS/ws_sol_kernels" "$here/tests/gpu/sol/sol_kernels.cu" && PROG=$LOGS/ws_sol_kernels
fi
[[ -x $PROG ]] || { step_failed "no ws_sol_kernels (build the target or install nvcc)"; exit 1; }

trace=$LOGS/l2_candidates.wst
args=(--chrome "$LOGS/l2_candidates.json" --interval-us "${INTERVAL%us}" --out "$OUTDIR/l2_candidates.json")
if run_logged "$LOGS/record.log" env WARPSCOPE_PM_METRICS="$(python3 "$PY" --metrics)" \
     timeout 120 "$WS" record -f -o "$trace" --pm-sampling --pm-interval "$INTERVAL" -- "$PROG"; then
  "$WS" export "$trace" --format chrome -o "$LOGS/l2_candidates.json" >>"$LOGS/record.log" 2>&1 ||
    step_failed "warpscope export --format chrome (logs/record.log)"
  "$WS" info "$trace" -f json >"$LOGS/ws_info.json" 2>>"$LOGS/record.log" &&
    python3 "$here/tests/gpu/sol/pm_holes.py" "$LOGS/ws_info.json" "L2 candidates, $INTERVAL" |
      tee -a "$summary"
else
  step_failed "recording with the candidate set (logs/record.log)"
fi
if [[ -n $NCU ]]; then
  for k in copy mma; do
    if run_logged "$LOGS/ncu_$k.log" timeout "${NCU_TIMEOUT:-120}" "$NCU" --clock-control none \
         --metrics "$(python3 "$PY" --ncu-metrics)" -k "ws_sol_$k" -c 3 --csv --page raw \
         "$PROG" --only "$k" --launches 3 --warmup-ms 0; then
      sed -n '/^"ID"/,$p' "$LOGS/ncu_$k.log" >"$LOGS/ncu_$k.csv"
      args+=(--ncu "ws_sol_$k=$LOGS/ncu_$k.csv")
    else
      step_failed "Nsight Compute on ws_sol_$k (logs/ncu_$k.log)"
    fi
  done
else
  step_failed "no ncu: install Nsight Compute or put it on PATH"
fi
python3 "$PY" "${args[@]}" | tee -a "$summary"
[[ ${PIPESTATUS[0]} -eq 0 ]] || step_failed "l2_candidates.py"
say "l2_candidates.sh: $failures failure(s)"
exit $((failures > 100 ? 100 : failures))
