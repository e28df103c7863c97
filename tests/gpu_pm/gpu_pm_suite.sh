#!/usr/bin/env bash
# GPU proof for PM sampling, occupancy and long tails (runs on the GPU machine from staged
# binaries; needs nothing but the driver, ncu and python3 there).
#
#   tests/gpu_pm/gpu_pm_suite.sh [--no-ncu] [--no-torch]
#
# WS_BUILD: a build or staged copy with bin/{warpscope,ws_pm_repro,ws_gpu_pm_check} and
# lib/{libwarpscope.so,libwarpscope_core.so} (default: .gpu if present, else build-pm).
# Results go to $OUT (or WS_OUT, default ./gpu_pm_out): pm_suite.log (every command),
# pm_results.csv (one row per repro mode), pm_checks.txt (PASS/FAIL lines), per mode the
# trace, Nsight Compute CSV, `warpscope occupancy`/`tail` output and the tail SVG, plus
# coexistence.txt and pm_overhead.csv. Exit status: number of failed checks (max 100).
# Whole run: about 3-5 minutes (every step has a timeout; total kept under 8 minutes).
set -u
source "$(dirname "$0")/../gpu/gpu_build_env.sh" build-pm gpu_pm_out
mkdir -p "$OUTDIR"
T=$(mktemp -d /tmp/ws_pm.XXXXXX)
use_ncu=1; use_torch=1
for a in "$@"; do
  case $a in
    --no-ncu) use_ncu=0 ;;
    --no-torch) use_torch=0 ;;
  esac
done
REPRO=$BIN/ws_pm_repro
CHECK=$BIN/ws_gpu_pm_check
INTERVAL=${WS_PM_INTERVAL:-200us}
log=$OUTDIR/pm_suite.log; checks=$OUTDIR/pm_checks.txt; rows=$OUTDIR/pm_results.csv
: >"$log"; : >"$checks"
echo "mode,kernel,api_blocks_per_sm,warpscope_blocks_per_sm,warpscope_theoretical_pct,ncu_theoretical_pct,warpscope_achieved_pct,ncu_achieved_pct,tail_fraction,designed_tail,sample_coverage,tail_verdict,failed_checks" >"$rows"
started=$(date +%s)
say() { echo "$*" | tee -a "$log"; }
run() {  # logs and runs a command with a timeout (first argument, seconds)
  local limit=$1; shift
  echo "+ $*" >>"$log"; timeout "$limit" "$@" >>"$log" 2>&1; local rc=$?; echo "  rc=$rc" >>"$log"
  return $rc
}
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || true)
if [[ -z $NCU ]]; then use_ncu=0; fi

say "== probe $(date -u +%FT%TZ) build=$WS_BUILD interval=$INTERVAL"
run 20 nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
run 5 bash -c 'grep -i RmProfilingAdminOnly /proc/driver/nvidia/params; id -u'
[[ $use_ncu == 1 ]] && run 20 "$NCU" --version

# 1. Per mode: traced run with PM sampling, Nsight Compute on the same kernel, checks.
for mode in balanced imbalanced reglimited smemlimited; do
  say "== $mode $(date -u +%T)"
  trace=$OUTDIR/$mode.wst
  run 90 env LD_PRELOAD="$SHIM" WARPSCOPE_OUTPUT="$trace" WARPSCOPE_FORCE_OVERWRITE=1 \
      WARPSCOPE_PM_SAMPLING=1 WARPSCOPE_PM_INTERVAL="$INTERVAL" \
      "$REPRO" $mode --launches 3 --ms 20 --json "$OUTDIR/$mode.json"
  run 30 "$CHECK" --trace "$trace" --counts
  ncu_args=()
  if [[ $use_ncu == 1 && -s $OUTDIR/$mode.json ]]; then
    iters=$(sed -n 's/.*"iters": \([0-9]*\).*/\1/p' "$OUTDIR/$mode.json")
    echo "+ ncu $mode" >>"$log"
    timeout 120 "$NCU" --clock-control none --csv --print-units base \
        --metrics sm__warps_active.avg.pct_of_peak_sustained_active,sm__maximum_warps_per_active_cycle_pct,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,launch__occupancy_limit_warps,launch__occupancy_limit_blocks,launch__registers_per_thread,gpu__time_duration.sum \
        -k regex:ws_pm_ --launch-count 1 \
        "$REPRO" $mode --launches 1 --iters "$iters" --json "$T/$mode.ncu.json" \
        >"$OUTDIR/$mode.ncu.csv" 2>>"$log"
    echo "  rc=$?" >>"$log"
    ncu_args=(--ncu "$OUTDIR/$mode.ncu.csv")
  fi
  "$CHECK" --trace "$trace" --expect "$OUTDIR/$mode.json" "${ncu_args[@]}" --row "$rows" \
      2>&1 | tee -a "$checks" >>"$log"
  "$WS" occupancy "$trace" >"$OUTDIR/$mode.occupancy.txt" 2>&1
  "$WS" tail "$trace" --instances --svg "$OUTDIR/$mode.tail.svg" >"$OUTDIR/$mode.tail.txt" 2>&1
  "$WS" tail "$trace" --instances --format json >"$OUTDIR/$mode.tail.json" 2>&1
done

# 2. Coexistence: PM sampling + tracing is step 1. Add PC sampling (if this build has the
#    collector) and see what each facility delivers and what it reports.
say "== coexistence $(date -u +%T)"
{
  echo "# PM sampling + tracing + PC sampling (WARPSCOPE_PC_SAMPLING=1)"
  env WARPSCOPE_PC_SAMPLING=1 LD_PRELOAD="$SHIM" WARPSCOPE_OUTPUT="$T/coexist.wst" \
      WARPSCOPE_FORCE_OVERWRITE=1 WARPSCOPE_PM_SAMPLING=1 WARPSCOPE_PM_INTERVAL="$INTERVAL" \
      timeout 90 "$REPRO" balanced --launches 2 --ms 20 --json "$T/coexist.json" 2>&1
  echo "rc=$?"
  "$CHECK" --trace "$T/coexist.wst" --counts 2>&1
  echo "# PM sampling at 20 us: faster than the decode thread follows for long, so samples are"
  echo "# lost (the hardware buffer overflows, or the decoder falls behind: gaps, or it stops);"
  echo "# expected: the loss counted and said in one line, a complete trace, the program unharmed"
  env LD_PRELOAD="$SHIM" WARPSCOPE_OUTPUT="$T/pm10.wst" WARPSCOPE_FORCE_OVERWRITE=1 \
      WARPSCOPE_PM_SAMPLING=1 WARPSCOPE_PM_INTERVAL=20us \
      timeout 90 "$REPRO" imbalanced --launches 2 --ms 20 --json "$T/pm10.json" 2>&1
  rc=$?
  echo "rc=$rc"
  counts=$("$CHECK" --trace "$T/pm10.wst" --counts 2>&1)
  echo "$counts"
  if [[ $rc == 0 ]] && grep -q 'truncated=0' <<<"$counts" &&
     grep -Eq '^counter pm_sampling.(overflows|gaps|disabled.decoder_overloaded)=[1-9]' <<<"$counts" &&
     grep -Eq '^notice \[pm_sampling\].*(overflowed|fell behind|cannot keep up)' <<<"$counts"; then
    echo "PASS overflow/reported_program_unharmed rc=$rc, sample loss counted and reported" | tee -a "$checks"
  else
    echo "FAIL overflow/reported_program_unharmed rc=$rc; expected rc=0, a complete trace, a pm_sampling loss counter (overflows, gaps or decoder_overloaded) and its notice" | tee -a "$checks"
  fi
  echo "# Bad settings: one line, the program runs unprofiled by PM sampling"
  env LD_PRELOAD="$SHIM" WARPSCOPE_OUTPUT="$T/bad.wst" WARPSCOPE_FORCE_OVERWRITE=1 \
      WARPSCOPE_PM_SAMPLING=1 WARPSCOPE_PM_INTERVAL=often \
      timeout 60 "$REPRO" balanced --launches 1 --ms 5 --json "$T/bad.json" 2>&1
  echo "rc=$?"
  echo "# A two-pass metric set must be refused at run time (sm__inst_executed_realtime added to set A)"
  env LD_PRELOAD="$SHIM" WARPSCOPE_OUTPUT="$T/passes.wst" WARPSCOPE_FORCE_OVERWRITE=1 \
      WARPSCOPE_PM_SAMPLING=1 \
      WARPSCOPE_PM_METRICS=sm__warps_active.avg.per_cycle_active,sm__warps_active.sum.per_cycle_elapsed,sm__cycles_active.avg,gr__cycles_elapsed.max,TriageCompute.sm__throughput.avg.pct_of_peak_sustained_elapsed,FBSP.TriageCompute.dramc__throughput.avg.pct_of_peak_sustained_elapsed,TPC.TriageCompute.sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed \
      timeout 60 "$REPRO" balanced --launches 1 --ms 5 --json "$T/passes.json" 2>&1
  echo "rc=$?"
  "$CHECK" --trace "$T/passes.wst" --counts 2>&1
} >"$OUTDIR/coexistence.txt" 2>&1
cat "$OUTDIR/coexistence.txt" >>"$log"

# 3. PM interval vs overhead on a small PyTorch loop (falls back to ws_pm_repro without torch).
say "== overhead $(date -u +%T)"
echo "config,interval,loop_ms,pm_samples,overflows" >"$OUTDIR/pm_overhead.csv"
cat >"$T/loop.py" <<'EOF'
import time, torch
x = torch.randn(4096, 4096, device="cuda")
for _ in range(5): y = torch.relu(x @ x)
torch.cuda.synchronize(); t = time.perf_counter()
for _ in range(100): y = torch.relu(x @ x)
torch.cuda.synchronize(); print("loop_ms=%.3f" % ((time.perf_counter() - t) * 1e3))
EOF
have_torch=0
if [[ $use_torch == 1 ]] && timeout 60 python3 -c 'import torch; assert torch.cuda.is_available()' >>"$log" 2>&1; then
  have_torch=1
fi
overhead_run() {  # label interval(or "") -> one CSV row
  local label=$1 interval=$2 tr=$T/ov_$1.wst out
  local elapsed=$(( $(date +%s) - started ))
  if (( elapsed > 400 )); then echo "$label,$interval,skipped (time budget),," >>"$OUTDIR/pm_overhead.csv"; return; fi
  if [[ $have_torch == 1 ]]; then cmd=(python3 "$T/loop.py"); else cmd=("$REPRO" balanced --launches 10 --ms 5 --json "$T/ov.json"); fi
  case $label in
    plain) out=$(timeout 120 "${cmd[@]}" 2>&1) ;;
    trace) out=$(env LD_PRELOAD="$SHIM" WARPSCOPE_OUTPUT="$tr" WARPSCOPE_FORCE_OVERWRITE=1 timeout 120 "${cmd[@]}" 2>&1) ;;
    *) out=$(env LD_PRELOAD="$SHIM" WARPSCOPE_OUTPUT="$tr" WARPSCOPE_FORCE_OVERWRITE=1 WARPSCOPE_PM_SAMPLING=1 WARPSCOPE_PM_INTERVAL="$interval" timeout 120 "${cmd[@]}" 2>&1) ;;
  esac
  echo "+ overhead $label $interval: $out" >>"$log"
  local ms; ms=$(echo "$out" | sed -n 's/.*loop_ms=\([0-9.]*\).*/\1/p; s/.*, \([0-9.]*\) ms\/launch.*/\1/p' | tail -1)
  local counts=""; [[ -s $tr ]] && counts=$("$CHECK" --trace "$tr" --counts 2>/dev/null)
  local n; n=$(echo "$counts" | sed -n 's/.*pm_samples=\([0-9]*\).*/\1/p')
  local o; o=$(echo "$counts" | sed -n 's/counter pm_sampling.overflows=\([0-9]*\)/\1/p')
  echo "$label,$interval,${ms:-?},${n:-0},${o:-0}" >>"$OUTDIR/pm_overhead.csv"
}
overhead_run plain ""
overhead_run trace ""
for iv in 1000us 100us 20us 10us 5us; do overhead_run "pm_$iv" "$iv"; done
[[ $have_torch == 0 ]] && echo "# no torch: the loop is ws_pm_repro balanced (ms/launch)" >>"$OUTDIR/pm_overhead.csv"

# 4. Final table.
failed=$(grep -c '^FAIL' "$checks")
passed=$(grep -c '^PASS' "$checks")
say ""
say "== results ($passed passed, $failed failed; $(( $(date +%s) - started )) s)"
tr , "\t" <"$rows" | tee -a "$log"
say ""
grep -E '^(FAIL|SKIP)' "$checks" | tee -a "$log"
say ""
say "PM interval vs overhead:"
tr , "\t" <"$OUTDIR/pm_overhead.csv" | tee -a "$log"
say ""
say "coexistence (see coexistence.txt):"
grep -E '^(#|kernels=|counter|notice|rc=|PASS|FAIL)' "$OUTDIR/coexistence.txt" | tee -a "$log"
rm -rf "$T"
exit $(( failed > 100 ? 100 : failed ))
