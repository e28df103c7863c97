#!/usr/bin/env bash
# GPU test suite and overhead benchmark for warpscope's injection, in one go.
#
#   tests/gpu/gpu_suite.sh [--tests-only|--bench-only] [--quick]
#   tests/gpu/gpu_suite.sh --stage BUILD_DIR   # copy (stripped) what a GPU run needs into .gpu/
#
# Typical use from the workstation: build the targets warpscope_inject warpscope_cli ws_repro
# ws_trace_check ws_other_subscriber ws_launch_loop ws_cupti_floor in build-inject, `--stage build-inject`, then
# run `WS_BUILD=.gpu tests/gpu/gpu_suite.sh` on the GPU machine with .gpu carried along.
#
# Needs a build (or a staged copy) with
# bin/{warpscope,ws_repro,ws_trace_check,ws_other_subscriber,ws_launch_loop}
# and lib/{libwarpscope.so,libwarpscope_core.so,libws_cupti_floor.so}: WS_BUILD points at it
# (default: .gpu if present, else build-inject). Results go to $OUT (or WS_OUT, default
# ./gpu_suite_out): suite.log (every command and check), results.txt (one line per test),
# bench.txt/bench.json (overhead figures). Exit status: number of failed tests (max 100).
set -u
source "$(dirname "$0")/gpu_build_env.sh" build-inject gpu_suite_out
mkdir -p "$OUTDIR"
work=$(mktemp -d /tmp/ws_suite.XXXXXX)
mode=all; quick=0
if [[ ${1:-} == --stage ]]; then
  src=$(cd "${2:?--stage needs the build directory}" && pwd); dst=$here/.gpu
  rm -rf "$dst"; mkdir -p "$dst/bin" "$dst/lib"
  for f in warpscope ws_repro ws_trace_check ws_other_subscriber ws_launch_loop ws_pm_repro ws_gpu_pm_check ws_example_pipeline ws_hostile ws_advise_problems ws_advise_heldout ws_launch_paths ws_occupancy_long_tail ws_memory_ops ws_sol_kernels; do strip -o "$dst/bin/$f" "$src/bin/$f"; done
  for f in libwarpscope.so libwarpscope_core.so libws_cupti_floor.so libws_crash_report.so libwarpscope_stack_probe.so; do strip --strip-debug -o "$dst/lib/$f" "$src/lib/$f"; done
  # Its native stacks are checked for the names of its own functions: keep its symbol table.
  strip --strip-debug -o "$dst/bin/ws_stack_sites" "$src/bin/ws_stack_sites"
  du -sh "$dst"; exit 0
fi
for a in "$@"; do
  case $a in
    --tests-only) mode=tests ;;
    --bench-only) mode=bench ;;
    --quick) quick=1 ;;
  esac
done
CHECK=$BIN/ws_trace_check
REPRO=$BIN/ws_repro
OTHER=$BIN/ws_other_subscriber
log=$OUTDIR/suite.log; results=$OUTDIR/results.txt
: >"$results"
pass=0; failed=0
say() { echo "$*" | tee -a "$log"; }

result() {  # name status detail
  if [[ $2 == 0 ]]; then pass=$((pass+1)); echo "PASS $1 $3" >>"$results"; say "PASS $1 $3";
  else failed=$((failed+1)); echo "FAIL $1 $3" >>"$results"; say "FAIL $1 $3"; fi
}
run() {  # logs and runs a command; returns its status
  echo "+ $*" >>"$log"; "$@" >>"$log" 2>&1; local rc=$?; echo "  rc=$rc" >>"$log"; return $rc
}
check() {  # name trace checks...
  local name=$1; shift
  echo "+ ws_trace_check $*" >>"$log"
  local out; out=$("$CHECK" "$@" 2>&1); local rc=$?
  echo "$out" >>"$log"
  result "$name" $rc "$(echo "$out" | head -1 | sed 's/^trace [^:]*: //' | cut -c1-200)"
}
preload() { env LD_PRELOAD="$SHIM" WARPSCOPE_FORCE_OVERWRITE=1 "$@"; }

probe() {
  say "== probe $(date -u +%FT%TZ)"
  run nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  run bash -c 'ls -l /usr/local/cuda/lib64/libcupti* /usr/local/cuda/extras/CUPTI/lib64/libcupti* 2>&1; ldconfig -p | grep -i cupti; python3 -c "import torch,os; print(torch.__version__, torch.version.cuda)"; python3 -c "import nvidia.cuda_cupti,os; d=os.path.dirname(nvidia.cuda_cupti.__file__); print(d); print(os.listdir(d+\"/lib\"))"'
  run ldd "$LIB/libwarpscope_core.so"
  run cat /proc/driver/nvidia/params
}

tests() {
  local T=$work
  say "== tests $(date -u +%FT%TZ)"
  # 1. LD_PRELOAD: N launches -> exactly N kernel events, device described.
  run preload WARPSCOPE_OUTPUT=$T/basic.wst "$REPRO" launches 1000
  check preload_1000_launches $T/basic.wst --complete --kernels ws_tiny=1000 --devices-min 1 --drops 0 --dump
  # 2. CUDA_INJECTION64_PATH alone (no LD_PRELOAD), naming the shim and the core.
  run env CUDA_INJECTION64_PATH=$SHIM WARPSCOPE_OUTPUT=$T/inj.wst WARPSCOPE_FORCE_OVERWRITE=1 "$REPRO" launches 100
  check injection_path_shim $T/inj.wst --complete --kernels ws_tiny=100
  run env CUDA_INJECTION64_PATH=$LIB/libwarpscope_core.so WARPSCOPE_OUTPUT=$T/inj2.wst WARPSCOPE_FORCE_OVERWRITE=1 "$REPRO" nvtx
  check injection_path_core_nvtx $T/inj2.wst --complete --nvtx phase_inner=3 --nvtx worker_inner=1
  # 3. warpscope record, exit code passthrough.
  run "$WS" record -f -o $T/rec.wst -- "$REPRO" launches 500; rc=$?
  result record_exit_code $rc "rc=$rc"
  check record_500 $T/rec.wst --complete --kernels ws_tiny=500 --end-reason exit
  run "$WS" record -f -o $T/bad.wst -- sh -c 'exit 7'; rc=$?
  [[ $rc == 7 ]]; result record_child_exit_7 $? "rc=$rc"
  run "$WS" record --delay abc -- true; rc=$?
  [[ $rc == 2 ]]; result record_bad_flag_exit_2 $? "rc=$rc"
  out=$(env LD_PRELOAD=$SHIM WARPSCOPE_DELAY=abc WARPSCOPE_OUTPUT=$T/x.wst "$REPRO" launches 10 2>&1); rc=$?
  echo "$out" >>"$log"
  [[ $rc == 0 && $out == *"WARPSCOPE_DELAY='abc' is not a number of seconds; running without profiling"* && ! -e $T/x.wst ]]
  result bad_env_runs_unprofiled $? "rc=$rc"
  # 4. Durations against CUDA events.
  env LD_PRELOAD=$SHIM WARPSCOPE_OUTPUT=$T/timed.wst WARPSCOPE_FORCE_OVERWRITE=1 "$REPRO" timed 40 >$T/events.txt 2>>"$log"
  check durations_vs_cuda_events $T/timed.wst --complete --kernels ws_spin=41 --event-times $T/events.txt
  # 5. Memory copies and sets.
  run preload WARPSCOPE_OUTPUT=$T/mem.wst "$REPRO" memory
  check memcpy_kinds_bytes $T/mem.wst --complete --memcpy htod:1048576 --memcpy htod:4194304 --memcpy dtoh:2097152 --memcpy dtod:8388608 --memset 3145728 --dump
  # 6. NVTX names, nesting, threads, domains.
  run preload WARPSCOPE_OUTPUT=$T/nvtx.wst "$REPRO" nvtx
  check nvtx_nesting_threads $T/nvtx.wst --complete --nvtx phase_outer=1 --nvtx phase_inner=3 --nvtx-depth phase_inner=1 --nvtx worker_range=1 --nvtx worker_inner=1 --nvtx-depth worker_inner=1 --nvtx domain_range=1 --nvtx-depth domain_range=1 --nvtx-threads 2 --dump
  run preload WARPSCOPE_OUTPUT=$T/tmpl.wst "$REPRO" templated
  check templated_names $T/tmpl.wst --kernels "void ws_templated<float>(float*, float)=1" --kernels "void ws_templated<int>(int*, int)=1"
  # 7. Windows: delay + duration.
  run "$WS" record -f -o $T/delay.wst -y 1 -d 1 -- "$REPRO" paced 3 10
  check window_delay_duration $T/delay.wst --complete --windows 1 --window-length 1:0.05 --kernels-in-windows --kernels-min ws_tiny=60 --kernels-max ws_tiny=101 --dump
  # cudaProfilerStart/Stop: exactly the kernels between them.
  run "$WS" record -f -o $T/prof.wst -c cudaProfilerApi -- "$REPRO" profiler_api
  check window_profiler_api $T/prof.wst --complete --windows 1 --kernels ws_inside=100 --no-kernel ws_outside --kernels-in-windows
  # NVTX range as the window.
  run "$WS" record -f -o $T/nvcap.wst -c nvtx -p capture_me -- "$REPRO" nvtx_capture
  check window_nvtx $T/nvcap.wst --complete --windows 1 --kernels ws_inside=20 --no-kernel ws_outside --nvtx inner=1 --nvtx capture_me=1 --no-nvtx warmup --no-nvtx after --kernels-in-windows --dump
  # Signal toggles (sent to `record`, which forwards SIGUSR2), two windows.
  "$WS" record -f -o $T/sig.wst -c signal --capture-range-end repeat:2 -- "$REPRO" paced 4 5 >>"$log" 2>&1 &
  rp=$!; sleep 1; for s in 0.5 0.5 0.5 0.5; do kill -USR2 $rp; sleep $s; done; wait $rp; rc=$?
  result signal_record_exit $rc "rc=$rc"
  check window_signal $T/sig.wst --complete --windows 2 --kernels-in-windows --kernels-min ws_tiny=50 --dump
  # 8. fork: a child without CUDA, a child that execs a CUDA program (own file, %p).
  rm -f $T/fork_*.wst
  (cd $T && env LD_PRELOAD=$SHIM WARPSCOPE_OUTPUT=$T/fork_%p.wst "$REPRO" fork >>"$log" 2>&1); rc=$?
  files=$(ls $T/fork_*.wst 2>/dev/null | wc -l)
  [[ $rc == 0 && $files == 2 ]]; result fork_files $? "rc=$rc files=$files"
  for f in $T/fork_*.wst; do
    if "$CHECK" "$f" --kernels ws_tiny=20 >/dev/null 2>&1; then check fork_parent "$f" --complete --kernels ws_tiny=20;
    else check fork_exec_child "$f" --complete --kernels ws_tiny=7; fi
  done
  # 9. SIGTERM: complete trace, exit status 143 through record.
  "$WS" record -f -o $T/term.wst -- "$REPRO" paced 30 5 >>"$log" 2>&1 &
  rp=$!; sleep 2.5; kill -TERM $rp; wait $rp; rc=$?
  [[ $rc == 143 ]]; result sigterm_exit_143 $? "rc=$rc"
  check sigterm_complete $T/term.wst --complete --end-reason signal --kernels-min ws_tiny=100
  # SIGINT to the program directly (its handler chain: default -> dies after the flush).
  env LD_PRELOAD=$SHIM WARPSCOPE_OUTPUT=$T/int.wst WARPSCOPE_FORCE_OVERWRITE=1 "$REPRO" paced 30 5 >>"$log" 2>&1 &
  rp=$!; sleep 2; kill -INT $rp; wait $rp; rc=$?
  [[ $rc == 130 ]]; result sigint_exit_130 $? "rc=$rc"
  check sigint_complete $T/int.wst --complete --end-reason signal --kernels-min ws_tiny=100
  # 10. kill -9: readable up to the last flush (500 ms).
  env LD_PRELOAD=$SHIM WARPSCOPE_OUTPUT=$T/k9.wst WARPSCOPE_FORCE_OVERWRITE=1 "$REPRO" paced 30 5 >$T/k9.out 2>>"$log" &
  rp=$!; sleep 3; kill -9 $rp; wait $rp 2>/dev/null
  launched=$(tail -1 $T/k9.out | awk '{print $2}')
  traced=$("$CHECK" $T/k9.wst | sed -n 's/.* kernels=\([0-9]*\).*/\1/p')
  say "kill -9 after 3 s: $launched kernels launched (and completed), $traced in the trace, $((launched - traced)) lost (one launch per ~5.1 ms; flush interval 250 ms)"
  if [[ $launched =~ ^[0-9]+$ && $launched -gt 200 && $traced =~ ^[0-9]+$ ]]; then
    check kill9_readable $T/k9.wst --truncated-ok --kernels-min ws_tiny=$((launched - 200)) --dump
  else
    result kill9_readable 1 "the repro reported no launch count ('$launched') or the trace none ('$traced')"
  fi
  # 11. Several threads and streams at once; exit() from another thread.
  run preload WARPSCOPE_OUTPUT=$T/thr.wst "$REPRO" threads 8 5000
  check threads_8x5000 $T/thr.wst --complete --kernels ws_tiny=40000 --drops 0
  run preload WARPSCOPE_OUTPUT=$T/exit.wst timeout 60 "$REPRO" exit_thread
  check exit_from_thread $T/exit.wst --complete --end-reason exit --kernels ws_inside=5
  # 12. 200,000 launches: no drops.
  run preload WARPSCOPE_OUTPUT=$T/many.wst "$REPRO" many 200000
  check many_200k_no_drops $T/many.wst --complete --kernels ws_tiny=200000 --drops 0
  ls -l $T/many.wst >>"$log"
  # 13. Several contexts at once: 4 threads, each its own context (cuCtxCreate), 2000
  #     kernels of its own name (ws_ctx_kernel<i>); one context per name, none shared.
  run preload WARPSCOPE_OUTPUT=$T/ctx.wst timeout 120 "$REPRO" contexts 4 2000
  check contexts_4x2000 $T/ctx.wst --complete --drops 0 --kernels ws_ctx_kernel=8000 \
    --kernels "ws_ctx_kernel<0>=2000" --kernels "ws_ctx_kernel<1>=2000" \
    --kernels "ws_ctx_kernel<2>=2000" --kernels "ws_ctx_kernel<3>=2000" \
    --distinct-contexts "ws_ctx_kernel<0>,ws_ctx_kernel<1>,ws_ctx_kernel<2>,ws_ctx_kernel<3>" --dump
  # Two GPUs: thread i on device i % 2 -> distinct contexts and distinct devices.
  ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
  if [[ $ngpu =~ ^[0-9]+$ && $ngpu -ge 2 ]]; then
    run preload WARPSCOPE_OUTPUT=$T/ctx2.wst timeout 120 "$REPRO" contexts 2 2000
    check contexts_2gpu $T/ctx2.wst --complete --drops 0 --devices-min 2 --kernels ws_ctx_kernel=4000 \
      --kernels "ws_ctx_kernel<0>=2000" --kernels "ws_ctx_kernel<1>=2000" \
      --distinct-contexts "ws_ctx_kernel<0>,ws_ctx_kernel<1>" \
      --distinct-devices "ws_ctx_kernel<0>,ws_ctx_kernel<1>" --dump
  else
    echo "SKIP contexts_2gpu (nvidia-smi -L lists '${ngpu:-?}' GPUs; needs 2)" >>"$results"
    say "SKIP contexts_2gpu (nvidia-smi -L lists '${ngpu:-?}' GPUs; needs 2)"
  fi
  # 14. CUDA graphs: 8 kernels captured into a graph, launched 50 times, plus 3 plain kernels.
  #     Default kinds: every node kernel is recorded (400) with a graph id; no graph launches.
  run preload WARPSCOPE_OUTPUT=$T/graph.wst timeout 60 "$REPRO" graph 8 50
  check graph_8x50_node_kernels $T/graph.wst --complete --drops 0 --kernels ws_graph_node=400 \
    --in-graph ws_graph_node --kernels ws_tiny=3 --not-in-graph ws_tiny --graph-launches 0 --dump
  #     -t graph (docs/configuration.md): one GraphLaunchEvent per launch (50, graph id set) and
  #     no per-kernel records inside graphs; kernels outside graphs are still recorded.
  run preload WARPSCOPE_OUTPUT=$T/graphtr.wst WARPSCOPE_TRACE=cuda,graph timeout 60 "$REPRO" graph 8 50
  check graph_trace_launches $T/graphtr.wst --complete --drops 0 --graph-launches 50 --kernels ws_tiny=3 --dump
  check graph_trace_no_node_kernels $T/graphtr.wst --complete --kernels ws_tiny=3 --no-kernel ws_graph_node
  # 15. Another CUPTI subscriber first (the program subscribes before its first CUDA call):
  #     the program runs as without warpscope (exit 0, its kernels ran), warpscope says so in
  #     exactly one stderr line and steps aside before creating the trace file.
  if [[ -x $OTHER ]]; then
    rm -f $T/other.wst
    env LD_PRELOAD=$SHIM WARPSCOPE_OUTPUT=$T/other.wst WARPSCOPE_FORCE_OVERWRITE=1 timeout 60 "$OTHER" 20 \
      >$T/other.out 2>$T/other.err; rc=$?
    { echo "+ LD_PRELOAD=$SHIM ws_other_subscriber 20 (rc=$rc)"; cat $T/other.out $T/other.err; } >>"$log"
    wlines=$(grep -c '^warpscope:' $T/other.err 2>/dev/null)
    aside=$(grep -c '^warpscope: another CUPTI client is already attached (.*); warpscope steps aside and this run is not profiled$' $T/other.err 2>/dev/null)
    ran=$(grep -c '^ws_other_subscriber: launched 20 counter 20 ' $T/other.out 2>/dev/null)
    [[ -e $T/other.wst ]] && file=yes || file=no
    [[ $rc == 0 && $wlines == 1 && $aside == 1 && $ran == 1 && $file == no ]]
    result other_subscriber_steps_aside $? "rc=$rc warpscope_lines=${wlines:-?} step_aside_line=${aside:-?} program_ran=${ran:-?} trace_file=$file: $(grep -m1 '^warpscope:' $T/other.err | cut -c1-160)"
    # Through `warpscope record`: exit status 0 passes through, the step-aside line and
    # record's "no trace at" line are printed, no file.
    rm -f $T/other_rec.wst
    timeout 60 "$WS" record -f -o $T/other_rec.wst -- "$OTHER" 5 >$T/other_rec.out 2>$T/other_rec.err; rc=$?
    { echo "+ warpscope record -- ws_other_subscriber 5 (rc=$rc)"; cat $T/other_rec.out $T/other_rec.err; } >>"$log"
    aside=$(grep -c '^warpscope: another CUPTI client is already attached (.*); warpscope steps aside' $T/other_rec.err 2>/dev/null)
    notrace=$(grep -c '^warpscope: no trace at ' $T/other_rec.err 2>/dev/null)
    [[ -e $T/other_rec.wst ]] && file=yes || file=no
    [[ $rc == 0 && $aside == 1 && $notrace == 1 && $file == no ]]
    result other_subscriber_record $? "rc=$rc step_aside_line=${aside:-?} no_trace_line=${notrace:-?} trace_file=$file"
  else
    result other_subscriber_steps_aside 1 "$OTHER missing (not built or not staged)"
  fi
  # 16. A ~200 ms kernel launched inside a cudaProfilerApi window and still running when the
  #     window closes (cudaProfilerStop 20 ms after its launch): kept whole (docs/record.md,
  #     "Events that straddle an edge"); nothing launched outside the window.
  run timeout 60 "$WS" record -f -o $T/straddle.wst -c cudaProfilerApi -- "$REPRO" profiler_straddle
  check window_straddling_kernel $T/straddle.wst --complete --windows 1 --kernels ws_inside=10 \
    --kernels ws_spin=1 --no-kernel ws_outside --kernels-in-windows --straddles ws_spin=190 --dump
  # 17. PyTorch: torch.cuda.nvtx ranges reach the trace.
  run "$WS" record -f -o $T/torch.wst -- python3 "$here/tests/gpu/torch_nvtx.py" 5
  check torch_nvtx $T/torch.wst --complete --nvtx train_step=5 --nvtx forward=5 --nvtx backward=5 --nvtx optimizer=5 --nvtx-depth forward=1 --kernels-min gemm=1 --dump
  run "$WS" record -f -o $T/torchcap.wst -c nvtx -p train_step --capture-range-end repeat:2 -- python3 "$here/tests/gpu/torch_nvtx.py" 5
  check torch_nvtx_capture $T/torchcap.wst --complete --windows 2 --nvtx train_step=2 --nvtx forward=2 --kernels-in-windows
  # torch.profiler inside a warpscope run (two CUPTI clients): informational.
  run "$WS" record -f -o $T/tp.wst -- python3 "$here/bench/overhead/train_resnet.py" --steps 3 --warmup 1 --mode torch_profiler --trace-out $T/tp.json; rc=$?
  say "torch.profiler under warpscope: rc=$rc torch json bytes=$(stat -c %s $T/tp.json 2>/dev/null) gpu events in torch json=$(grep -c '"cat": "kernel"' $T/tp.json 2>/dev/null); warpscope: $("$CHECK" $T/tp.wst 2>&1 | head -1)"
  cp $T/nvtx.wst $T/nvcap.wst "$OUTDIR"/ 2>/dev/null
}

bench() {
  say "== bench $(date -u +%FT%TZ)"
  local q=""; [[ $quick == 1 ]] && q="--quick"
  python3 "$here/bench/overhead/overhead.py" --build "$WS_BUILD" --out "$OUTDIR" $q 2>&1 | tee -a "$log"
}

probe
[[ $mode != bench ]] && tests
[[ $mode != tests ]] && bench
say "== done: $pass passed, $failed failed"
rm -rf "$work"
exit $(( failed > 100 ? 100 : failed ))
