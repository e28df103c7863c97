#!/usr/bin/env bash
# The hostile-run matrix: the orders and endings real programs use (NVTX before CUDA, NVTX
# without CUDA, no CUDA at all, short and long runs, exit() from a thread, _exit, SIGTERM,
# SIGKILL, fork, fork+exec, a full disk, an unwritable output, another CUPTI client, a bad
# setting), each with tracing alone, with PM sampling and with PC sampling, through
# LD_PRELOAD and through `warpscope record`, in C++ (tests/gpu/hostile.cu) and in PyTorch
# (tests/gpu/hostile.py). Every run must keep the program's own output and exit status, leave
# no crash, and leave a trace that is complete, or cut short where the ending allows nothing
# else (SIGKILL), or none where warpscope must step aside.
#
#   tests/gpu/gpu_hostile.sh [--part cpp|torch|all] [--repeat N] [--modes trace,pm,pc]
#
# WS_BUILD: a build or staged copy (default .gpu, see tests/gpu/gpu_suite.sh --stage) with
# bin/{warpscope,ws_hostile,ws_trace_check,ws_other_subscriber} and
# lib/{libwarpscope.so,libwarpscope_core.so,libws_crash_report.so}. Results go to $OUT (or
# WS_OUT): hostile.txt (one PASS/FAIL line per run, then the counts) and hostile.log (every
# command, its output and the trace checks). Exit status: the number of failed runs (max 100).
set -u
source "$(dirname "$0")/gpu_build_env.sh" build gpu_hostile_out
mkdir -p "$OUTDIR"
part=all; repeat=1; modes=trace,pm,pc
while [[ $# -gt 0 ]]; do
  case $1 in
    --part) part=$2; shift ;;
    --repeat) repeat=$2; shift ;;
    --modes) modes=$2; shift ;;
  esac
  shift
done
CRASH=$LIB/libws_crash_report.so
CHECK=$BIN/ws_trace_check; HOSTILE=$BIN/ws_hostile
PYPROG=$here/tests/gpu/hostile.py
W=$(mktemp -d /tmp/ws_hostile.XXXXXX)
log=$OUTDIR/hostile.log; results=$OUTDIR/hostile.txt
: >"$log"; : >"$results"
runs=0; failures=0

# A 2 MB file system for the full-disk case.
FULL=$W/full
mkdir -p "$FULL"
have_tmpfs=0
if mount -t tmpfs -o size=2m tmpfs "$FULL" 2>/dev/null; then have_tmpfs=1; fi

# run_case ID LAUNCH MODE RC EXPECT OUTDIR_FOR_TRACE STDOUT_NEEDLE STDERR_NEEDLE CHECK_ARGS -- CMD...
#   LAUNCH: pre (LD_PRELOAD) | rec (warpscope record)
#   EXPECT: complete | cut (cut short allowed) | none (no trace) | two (two complete traces) |
#           crash (the program's designed crash: a complete trace that ends on it)
run_case() {
  local id=$1 launch=$2 mode=$3 want_rc=$4 expect=$5 dir=$6 out_needle=$7 err_needle=$8
  shift 8
  local checks=()
  while [[ $1 != -- ]]; do checks+=("$1"); shift; done
  shift
  local pattern=$dir/$id.%p.wst
  local env_mode=() rec_mode=()
  case $mode in
    pm) env_mode=(WARPSCOPE_PM_SAMPLING=1); rec_mode=(--pm-sampling) ;;
    pc) env_mode=(WARPSCOPE_PC_SAMPLING=1) ;;
  esac
  local cmd
  if [[ $launch == pre ]]; then
    cmd=(env LD_PRELOAD="${CRASH_PRELOAD-$CRASH} $SHIM" WARPSCOPE_OUTPUT="$pattern" "${env_mode[@]}" "${EXTRA_ENV[@]}" "$@")
  else
    cmd=(env LD_PRELOAD="${CRASH_PRELOAD-$CRASH}" "${env_mode[@]}" "${EXTRA_ENV[@]}" "$WS" record -o "$pattern" "${rec_mode[@]}" -- "$@")
  fi
  rm -f "$dir/$id".*.wst
  echo "+ [$id] ${cmd[*]}" >>"$log"
  timeout 120 "${cmd[@]}" >"$W/out" 2>"$W/err"
  local rc=$?
  cat "$W/out" "$W/err" | sed 's/^/    /' >>"$log"
  local why=()
  [[ $rc == "$want_rc" ]] || why+=("exit status $rc, expected $want_rc")
  [[ -z $out_needle ]] || grep -q -- "$out_needle" "$W/out" || why+=("no '$out_needle' on stdout")
  if [[ $expect != crash && $err_needle != ws_crash_report* ]] && grep -q -E 'ws_crash_report|Segmentation fault|double free|corrupted|Aborted' "$W/err"; then
    why+=("crash: $(grep -m1 -E 'ws_crash_report|Segmentation|double free|corrupted|Aborted' "$W/err")")
  fi
  [[ -z $err_needle ]] || grep -q -- "$err_needle" "$W/err" || why+=("no '$err_needle' on stderr")
  # Lines from the library that are not warpscope's own form: none allowed.
  if grep -v -E '^(warpscope: |ws_hostile: |    |Traceback|  File)' "$W/err" | grep -q -i 'warpscope'; then
    why+=("a warpscope message without the 'warpscope: ' prefix")
  fi
  local traces=("$dir/$id".*.wst)
  [[ -e ${traces[0]} ]] || traces=()
  case $expect in
    none) [[ ${#traces[@]} == 0 ]] || why+=("expected no trace, found ${#traces[@]}") ;;
    two) [[ ${#traces[@]} == 2 ]] || why+=("expected 2 traces, found ${#traces[@]}") ;;
    *) [[ ${#traces[@]} == 1 ]] || why+=("expected 1 trace, found ${#traces[@]}") ;;
  esac
  local t
  for t in "${traces[@]}"; do
    local args=("${checks[@]}")
    case $expect in
      complete|two) args+=(--complete) ;;
      cut) args+=(--truncated-ok) ;;
      crash) args+=(--complete --end-reason crash) ;;
    esac
    # fork+exec: the exec'd child's trace has its own kernels.
    if [[ $expect == two ]] && "$CHECK" "$t" 2>/dev/null | grep -q "kernels=5 "; then args=(--complete); fi
    local out
    out=$("$CHECK" "$t" "${args[@]}" 2>&1)
    local crc=$?
    echo "$out" | sed 's/^/    check: /' >>"$log"
    [[ $crc == 0 ]] || why+=("trace $(basename "$t"): $(echo "$out" | grep -m2 'CHECK FAILED' | tr '\n' ' ')")
  done
  runs=$((runs + 1))
  local label="$id $launch $mode"
  if [[ ${#why[@]} == 0 ]]; then
    echo "PASS $label" >>"$results"
  else
    failures=$((failures + 1))
    echo "FAIL $label: ${why[*]}" | tee -a "$results"
  fi
  echo "  rc=$rc ${why[*]}" >>"$log"
  rm -f "$dir/$id".*.wst
}

EXTRA_ENV=(WARPSCOPE_FORCE_OVERWRITE=1)
K=ws_hostile_spin
cpp_matrix() {
  local launch=$1 mode=$2 r=$3
  local p="c${r}_${launch}_${mode}"
  local pm_check=()
  # PM sampling covers the program from its first kernel: even a short program has samples.
  [[ $mode == pm ]] && pm_check=(--counter-min pm_sampling.samples=1 --first-kernel-sampled $K)
  run_case ${p}_nvtx_first $launch $mode 0 complete "$W" "ws_hostile: done" "" \
    --kernels $K=20 --nvtx hostile_setup=1 --nvtx hostile_work=1 "${pm_check[@]}" -- "$HOSTILE" --nvtx-first
  run_case ${p}_nvtx_only $launch $mode 0 complete "$W" "ws_hostile: done nvtx-only" "" \
    --nvtx hostile_setup=1 --nvtx hostile_inner=1 -- "$HOSTILE" --nvtx-only
  run_case ${p}_no_cuda $launch $mode 0 none "$W" "ws_hostile: done no-cuda" "" -- "$HOSTILE" --no-cuda
  run_case ${p}_short $launch $mode 0 complete "$W" "ws_hostile: done" "" \
    --kernels $K=20 "${pm_check[@]}" -- "$HOSTILE" --kernels 20
  run_case ${p}_status $launch $mode 7 complete "$W" "ws_hostile: done" "" \
    --kernels $K=5 -- "$HOSTILE" --kernels 5 --status 7
  run_case ${p}_long $launch $mode 0 complete "$W" "ws_hostile: done" "" \
    --kernels-min $K=1000 "${pm_check[@]}" -- "$HOSTILE" --run-ms 1500
  run_case ${p}_threads $launch $mode 0 complete "$W" "ws_hostile: done" "" \
    --kernels $K=800 -- "$HOSTILE" --threads 4 --kernels 200
  run_case ${p}_exit_thread $launch $mode 3 complete "$W" "ws_hostile: done" "" \
    --kernels $K=20 -- "$HOSTILE" --end thread_exit --status 3
  # _exit skips atexit; the shim's _exit has the trace closed first.
  run_case ${p}__exit $launch $mode 5 complete "$W" "ws_hostile: done" "" \
    --kernels $K=20 -- "$HOSTILE" --end _exit --status 5
  run_case ${p}_sigterm $launch $mode 143 complete "$W" "ws_hostile: done" "" \
    --kernels $K=20 --end-reason signal -- "$HOSTILE" --end sigterm
  run_case ${p}_sigkill $launch $mode 137 cut "$W" "ws_hostile: done" "" -- "$HOSTILE" --run-ms 800 --end sigkill
  # Fatal signals: the trace is closed with the signal as its end before the program dies of
  # it (without the crash reporter: the program has no handler of its own).
  CRASH_PRELOAD=""
  run_case ${p}_abort $launch $mode 134 crash "$W" "ws_hostile: done" "" \
    --kernels $K=20 -- "$HOSTILE" --end abort
  run_case ${p}_segv $launch $mode 139 crash "$W" "ws_hostile: done" "" \
    --kernels $K=20 -- "$HOSTILE" --end segv
  run_case ${p}_abort_thread $launch $mode 134 crash "$W" "ws_hostile: done" "" \
    --kernels-min $K=20 -- "$HOSTILE" --end abort_thread
  unset CRASH_PRELOAD
  # A fault the program has a handler of its own for is left to it (it may come back from
  # it): with the crash reporter preloaded the trace is cut short and the reporter runs.
  run_case ${p}_segv_own_handler $launch $mode 139 cut "$W" "ws_hostile: done" \
    "ws_crash_report: signal 11" -- "$HOSTILE" --end segv
  run_case ${p}_fork $launch $mode 0 complete "$W" "ws_hostile: child done" "" \
    --kernels $K=20 -- "$HOSTILE" --fork child
  run_case ${p}_fork_exec $launch $mode 0 two "$W" "ws_hostile: done" "" \
    --kernels $K=20 -- "$HOSTILE" --fork exec
  if [[ $mode == pm ]]; then
    # An interval the decoder cannot follow: sampling stops with one line (overflow or
    # overload), the program ends on time with its trace.
    EXTRA_ENV=(WARPSCOPE_FORCE_OVERWRITE=1 WARPSCOPE_PM_INTERVAL=20us)
    run_case ${p}_pm_too_fast $launch $mode 0 complete "$W" "ws_hostile: done" "PM sampling" \
      --kernels-min $K=1000 -- "$HOSTILE" --run-ms 3000 --kernel-us 50
    EXTRA_ENV=(WARPSCOPE_FORCE_OVERWRITE=1)
  fi
  if [[ $have_tmpfs == 1 ]]; then
    rm -f "$FULL"/*
    run_case ${p}_full_disk $launch $mode 0 complete "$FULL" "ws_hostile: done" "no space left for trace" \
      --counter-min writer.write_errors=1 --counter-min writer.events_dropped.write_error=1 \
      -- "$HOSTILE" --run-ms 1500 --kernel-us 2
  fi
  if [[ $launch == pre ]]; then
    run_case ${p}_unwritable $launch $mode 0 none /proc "ws_hostile: done" "warpscope: cannot create trace" \
      -- "$HOSTILE" --kernels 5
    run_case ${p}_other_client $launch $mode 0 none "$W" "" "another CUPTI client is already attached" \
      -- "$BIN/ws_other_subscriber" 10
    EXTRA_ENV=(WARPSCOPE_FORCE_OVERWRITE=1 WARPSCOPE_TRACE=kernel,bogus)
    run_case ${p}_bad_setting $launch $mode 0 none "$W" "ws_hostile: done" "WARPSCOPE_TRACE" \
      -- "$HOSTILE" --kernels 5
    EXTRA_ENV=(WARPSCOPE_FORCE_OVERWRITE=1)
  else
    # record refuses an output folder that does not exist before starting the program.
    run_case ${p}_missing_dir $launch $mode 2 none "$W/missing" "" "warpscope:" -- "$HOSTILE" --kernels 5
    run_case ${p}_other_client $launch $mode 0 none "$W" "" "another CUPTI client is already attached" \
      -- "$BIN/ws_other_subscriber" 10
  fi
}

torch_matrix() {
  local launch=$1 mode=$2 r=$3
  local p="t${r}_${launch}_${mode}"
  run_case ${p}_nvtx_first $launch $mode 0 complete "$W" "ws_hostile: done" "" \
    --nvtx hostile_setup=1 --nvtx hostile_step=5 -- python3 "$PYPROG" --nvtx-first
  run_case ${p}_status $launch $mode 3 complete "$W" "ws_hostile: done" "" \
    --nvtx hostile_step=3 -- python3 "$PYPROG" --steps 3 --end exit --status 3
  run_case ${p}__exit $launch $mode 4 complete "$W" "ws_hostile: done" "" \
    --nvtx hostile_step=5 -- python3 "$PYPROG" --end _exit --status 4
  run_case ${p}_sigterm $launch $mode 143 complete "$W" "ws_hostile: done" "" \
    --end-reason signal -- python3 "$PYPROG" --end sigterm
  run_case ${p}_sigkill $launch $mode 137 cut "$W" "ws_hostile: done" "" -- python3 "$PYPROG" --end sigkill
  CRASH_PRELOAD=""
  run_case ${p}_abort_thread $launch $mode 134 crash "$W" "ws_hostile: done" "" \
    --nvtx hostile_step=5 -- python3 "$PYPROG" --end abort_thread
  unset CRASH_PRELOAD
  run_case ${p}_fork $launch $mode 0 complete "$W" "ws_hostile: child done" "" \
    --nvtx hostile_step=5 -- python3 "$PYPROG" --fork
  run_case ${p}_loader $launch $mode 0 complete "$W" "ws_hostile: done" "" \
    --nvtx hostile_step=5 -- python3 "$PYPROG" --loader-workers 2
}

{
  echo "== hostile matrix $(date -u +%FT%TZ) build=$WS_BUILD part=$part repeat=$repeat modes=$modes tmpfs=$have_tmpfs"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
} | tee -a "$results"
started=$(date +%s)
IFS=, read -r -a mode_list <<<"$modes"
for ((r = 1; r <= repeat; ++r)); do
  for mode in "${mode_list[@]}"; do
    if [[ $part == cpp || $part == all ]]; then
      cpp_matrix pre "$mode" "$r"
      cpp_matrix rec "$mode" "$r"
    fi
    if [[ $part == torch || $part == all ]]; then
      torch_matrix pre "$mode" "$r"
      [[ $r == 1 ]] && torch_matrix rec "$mode" "$r"
    fi
  done
done
[[ $have_tmpfs == 1 ]] && umount "$FULL"
echo "hostile: $runs runs, $failures failed, $(( $(date +%s) - started )) s" | tee -a "$results"
rm -rf "$W"
exit $((failures > 100 ? 100 : failures))
