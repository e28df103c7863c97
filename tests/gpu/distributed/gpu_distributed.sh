#!/usr/bin/env bash
# The multi-GPU proof of `warpscope job` and of recording a job (docs/distributed.md), on a
# machine with N >= 2 GPUs: DDP jobs under torchrun, one process per GPU, recorded with
# `warpscope record -o DIR/`, each with one problem planted on one rank
# (tests/gpu/distributed/ddp_job.py), checked by tests/gpu/distributed/check_job.py; rank 1
# and the last rank (N-1; the same with two GPUs) carry the problems:
#   late_in    rank 1 stalls 15 ms a step on the host inside data_load
#   late_out   rank N-1 stalls 15 ms a step between steps, outside any NVTX range
#   slow       rank N-1's GPU runs 40 ms more each step (a sleeping kernel in its forward)
#   balanced   nobody is late
#   fsdp       FullyShardedDataParallel (AllGather, ReduceScatter), rank 1 late
#   gather     all_gather_into_tensor + reduce_scatter_tensor by hand, rank N-1 late
#   example    a small MLP job, rank N-1 late 10 ms a step (examples/traces/,
#              $OUT/example_job.tgz)
# and three faults: rank N-1 killed with SIGKILL in its backward pass at step 25 (its gradient
# all-reduces under way), an NCCL timeout (rank N-1 sleeps 60 s at step 25, the process
# group's timeout 15 s), and SIGTERM to the launcher; every trace must end readable, `job` must
# name the rank that ended first and how (ends_check), and the job must not take longer than
# the same job without warpscope. For the late cases, plain runs (no warpscope) of the job and of the balanced job
# measure what the delay costs a step (--measured-ms to the checker): the lost time is checked
# against that as well as against the designed delay, since a late rank can fall further
# behind than its stall (its queue of GPU work ran dry during it). Needs a staged build in .gpu/ (tests/gpu/gpu_suite.sh --stage BUILD).
#   tests/gpu/distributed/gpu_distributed.sh [--steps N] [--cases "late_in slow ..."] [--no-faults]
# Results: $OUT/distributed.txt (one PASS/FAIL line per check), $OUT/distributed.tgz (the
# traces and logs of every case). Exit status: failed checks.
set -u
source "$(dirname "$0")/../gpu_build_env.sh" .gpu distributed_out
JOB=$here/tests/gpu/distributed/ddp_job.py
CHECK=$here/tests/gpu/distributed/check_job.py
W=$(mktemp -d /tmp/ws_dist.XXXXXX)
NP=$(nvidia-smi -L | wc -l)
LAST=$((NP - 1))
steps=30; faults=1
cases="late_in late_out slow balanced fsdp gather example"
while [[ $# -gt 0 ]]; do
  case $1 in
    --steps) steps=$2; shift ;;
    --cases) cases=$2; shift ;;
    --no-faults) faults=0 ;;
  esac
  shift
done
mkdir -p "$OUTDIR"
results=$OUTDIR/distributed.txt
: >"$results"
failed=0
say() { echo "$*" | tee -a "$results"; }

# record NAME JOB_ARGS...: the job under `warpscope record -o DIR/`, then `warpscope job`.
record() {
  local name=$1; shift
  local dir=$W/$name
  mkdir -p "$dir"
  local t0=$(date +%s%N)
  timeout 300 "$WS" record -f -o "$dir/" -- torchrun --standalone --nproc_per_node "$NP" \
    "$JOB" --steps "$steps" "$@" >"$dir/log.txt" 2>&1
  local rc=$?
  echo "$name rc=$rc ms=$(( ($(date +%s%N) - t0) / 1000000 ))" | tee -a "$results"
  "$WS" job "$dir" --format json >"$dir/job.json" 2>"$dir/job.err"
  "$WS" job "$dir" --svg "$dir/job.svg" >"$dir/job.txt" 2>>"$dir/job.err"
  head -3 "$dir/job.txt"
  "$WS" advise "$dir" --top 3 >"$dir/advise.txt" 2>&1
}
# plain_ms JOB_ARGS...: the job without warpscope, its timed step in ms (median over ranks).
plain_ms() {
  timeout 300 torchrun --standalone --nproc_per_node "$NP" "$JOB" --steps "$steps" "$@" 2>/dev/null |
    python3 -c 'import json,statistics,sys
v=[json.loads(l) for l in sys.stdin if l.startswith("{")]
print("%.3f" % statistics.median(d["loop_ns"]/d["timed_steps"]/1e6 for d in v) if v else "nan")'
}
# measured NAME JOB_ARGS...: what the planted delay costs a step, from plain runs of the job
# and of the balanced job (two of each, interleaved; the medians' difference).
measured() {
  local name=$1; shift
  local a=() b=()
  for _ in 1 2; do a+=("$(plain_ms "$@")"); b+=("$(plain_ms)"); done
  echo "$name plain step: late ${a[*]} ms, balanced ${b[*]} ms" >>"$results"
  python3 -c 'import statistics,sys
n=len(sys.argv)//2; a=[float(x) for x in sys.argv[1:1+n]]; b=[float(x) for x in sys.argv[1+n:]]
print("%.3f" % (statistics.median(a)-statistics.median(b)))' "${a[@]}" "${b[@]}"
}
checkjob() {  # NAME CHECK_ARGS...
  local name=$1; shift
  python3 "$CHECK" "$name" "$W/$name/job.json" "$@" | tee -a "$results"
  failed=$((failed + ${PIPESTATUS[0]}))
}
{ nvidia-smi -L; python3 -c 'import torch; print(torch.__version__, torch.cuda.nccl.version())'; } >>"$results" 2>&1

for c in $cases; do
  echo "== $c"
  case $c in
    late_in)  record $c --late-rank 1 --late-ms 15 &&
              m=$(measured $c --late-rank 1 --late-ms 15) &&
              checkjob $c --late-rank 1 --late-ms 15 --measured-ms "$m" --cause "data_load" ;;
    late_out) record $c --late-rank $LAST --late-ms 15 --late-where outside &&
              m=$(measured $c --late-rank $LAST --late-ms 15 --late-where outside) &&
              checkjob $c --late-rank $LAST --late-ms 15 --measured-ms "$m" \
                --cause "outside any NVTX range" ;;
    slow)     record $c --slow-rank $LAST --slow-ms 40 &&
              checkjob $c --slow-rank $LAST --cause "slower GPU work" ;;
    balanced) record $c && checkjob $c ;;
    fsdp)     record $c --mode fsdp --late-rank 1 --late-ms 15 &&
              checkjob $c --late-rank 1 --late-ms 15 --ops AllGather,ReduceScatter ;;
    gather)   record $c --mode gather --model mlp --late-rank $LAST --late-ms 15 &&
              checkjob $c --late-rank $LAST --late-ms 15 --ops AllGather,ReduceScatter ;;
    # A small job for examples/traces (the quick start and the CPU tests read it).
    example)  steps_saved=$steps; steps=12
              record $c --model mlp --warmup 2 --late-rank $LAST --late-ms 10 &&
              checkjob $c --late-rank $LAST --late-ms 10 --warmup 2 --cause "data_load"
              steps=$steps_saved
              (cd "$W/example" && tar czf "$OUTDIR/example_job.tgz" ./*.wst job.txt job.svg) ;;
  esac
done

# fault_check NAME EXPECT_RANKS: every trace readable; prints each one's end.
fault_check() {
  local name=$1 n=0 ok=0
  for f in "$W/$name"/*.wst; do
    n=$((n + 1))
    if "$WS" info "$f" --format json >"$f.info.json" 2>"$f.info.err"; then
      ok=$((ok + 1))
      python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["scalars"]; print(sys.argv[1].rsplit("/",1)[1], "end:", s["end_reason"] or "none", "truncated:", s["truncated"], s["truncation_message"])' "$f.info.json" | tee -a "$results"
    fi
  done
  local status=FAIL
  [[ $n -eq $2 && $ok -eq $n ]] && status=PASS
  [[ $status == FAIL ]] && failed=$((failed + 1))
  say "$status $name/traces_readable $ok of $n readable, $2 expected"
}
# ends_check NAME RANK HOW: `job` on the fault's traces says rank RANK (not:R: any rank but R)
# ended first, HOW (a phrase of its `ends` table: "cut short", "on a signal", ...), and prints
# its ends lines.
ends_check() {
  local name=$1
  "$WS" job "$W/$name" >"$W/$name/job_ends.txt" 2>&1
  grep -A8 '^ends:' "$W/$name/job_ends.txt" | grep -E '^(ends:|  rank)' | cut -c1-240 | tee -a "$results"
  local first
  first=$("$WS" job "$W/$name" --format json --table ends 2>/dev/null | python3 -c 'import json,sys
rows=json.load(sys.stdin)
r=min(rows, key=lambda r: r["end_after_first_ms"]); print(r["rank"], r["end"])' 2>/dev/null)
  local status=FAIL
  if [[ $2 == not:* ]]; then  # any rank but this one
    [[ -n $first && ${first%% *} != "${2#not:}" && $first == *"$3"* ]] && status=PASS
  else
    [[ $first == "$2 "*"$3"* ]] && status=PASS
  fi
  [[ $status == FAIL ]] && failed=$((failed + 1))
  say "$status $name/ends first ended: ${first:-no ends table}; expected rank $2, $3"
}
if [[ $faults == 1 ]]; then
  echo "== kill: rank $LAST SIGKILLs itself in its backward pass at step 25"
  t0=$(date +%s%N)
  timeout 300 torchrun --standalone --nproc_per_node "$NP" "$JOB" --steps 40 --kill-rank $LAST --kill-step 25 \
    --kill-where backward >"$W/kill_plain.txt" 2>&1
  say "kill_plain rc=$? ms=$(( ($(date +%s%N) - t0) / 1000000 ))"
  steps_saved=$steps; steps=40
  record kill --kill-rank $LAST --kill-step 25 --kill-where backward
  fault_check kill "$NP"
  ends_check kill $LAST "cut short"
  echo "== NCCL timeout: rank $LAST sleeps 60 s at step 25, the group's timeout 15 s"
  t0=$(date +%s%N)
  timeout 300 torchrun --standalone --nproc_per_node "$NP" "$JOB" --steps 40 --stall-rank $LAST --stall-step 25 \
    --stall-s 60 --nccl-timeout-s 15 >"$W/timeout_plain.txt" 2>&1
  say "timeout_plain rc=$? ms=$(( ($(date +%s%N) - t0) / 1000000 ))"
  record nccl_timeout --stall-rank $LAST --stall-step 25 --stall-s 60 --nccl-timeout-s 15
  steps=$steps_saved
  fault_check nccl_timeout "$NP"
  ends_check nccl_timeout not:$LAST ""
  echo "== sigterm to the launcher after 25 s of a long job"
  for mode in plain recorded; do
    mkdir -p "$W/sigterm"
    t0=$(date +%s%N)
    if [[ $mode == plain ]]; then
      torchrun --standalone --nproc_per_node "$NP" "$JOB" --steps 5000 >"$W/sigterm_plain.txt" 2>&1 &
    else
      "$WS" record -f -o "$W/sigterm/" -- torchrun --standalone --nproc_per_node "$NP" "$JOB" \
        --steps 5000 >"$W/sigterm/log.txt" 2>&1 &
    fi
    pid=$!
    sleep 25
    kill -TERM $pid
    for _ in $(seq 120); do kill -0 $pid 2>/dev/null || break; sleep 1; done
    if kill -0 $pid 2>/dev/null; then say "FAIL sigterm_$mode still running 120 s after SIGTERM"; kill -KILL $pid; failed=$((failed + 1)); fi
    wait $pid; rc=$?
    say "sigterm_$mode rc=$rc ms_after_term=$(( ($(date +%s%N) - t0) / 1000000 - 25000 ))"
  done
  fault_check sigterm "$NP"
fi
(cd "$W" && tar czf "$OUTDIR/distributed.tgz" --exclude='*.info.err' --exclude='sigterm/*.wst' .)
say "failed checks: $failed"
exit $((failed > 100 ? 100 : failed))
