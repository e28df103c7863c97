#!/usr/bin/env bash
# Issue 35 on the GPU machine, with `warpscope record` defaults (no -t):
#   attribution  every kernel has its host side: each launch path of a C++ program
#                (ws_launch_paths paths) and of a PyTorch one (launch_paths.py; also with
#                --stacks none) in an NVTX range `path:<name>`
#   windows      capture windows record from their begin edge: a steady PyTorch loop
#                (steady_loop.py) under -c control (two windows), -c signal, -c cudaProfilerApi,
#                -c nvtx -p window, --delay/--duration, and -c control again with
#                WARPSCOPE_ATTACH_EARLY=0 (CUPTI attaches when the first window opens: its edge
#                must still be where recording began); a steady C++ loop (ws_launch_paths
#                steady) under -c control and --delay/--duration
#
#   tests/gpu/gpu_suite.sh --stage build        # here; then, on the GPU machine:
#   tests/gpu/recorder/gpu_recorder.sh attribution|windows|all
# Results in $OUT (or WS_OUT): recorder_<part>.txt (what ran, record's lines, each trace's
# windows and notices from `warpscope info`) and recorder_<part>.tgz (the traces, the programs'
# output, the request times, manifest.jsonl), split into recorder_<part>.tgz.part-NN when over
# 15 MiB. The checkers run on the unpacked folder, where Python's protobuf is:
#   tests/gpu/recorder/check_attribution.py DIR; tests/gpu/recorder/check_windows.py DIR
# WS_DELAY (default 8) is the delay of the --delay runs, counted from the launch; runs that
# would start after WS_BUDGET seconds (default 420, both parts together) are skipped, so that a
# hanging program cannot take the machine's whole call.
# Exit status: runs that failed (the program's status, no trace, no ready line).
set -u
source "$(dirname "$0")/../gpu_build_env.sh" build recorder_out
mkdir -p "$OUTDIR"
parts=${1:-}
[[ $parts == all ]] && parts="attribution windows"
if [[ ! $parts =~ ^(attribution|windows|models|attribution\ windows)$ ]]; then
  echo "usage: $0 attribution|windows|models|all" >&2; exit 2
fi
REC=$here/tests/gpu/recorder
LP=$BIN/ws_launch_paths
DELAY=${WS_DELAY:-8}
BUDGET=${WS_BUDGET:-420}
began=$(date +%s)
fails=0
run_job=""  # the `timeout` of the background run not yet waited for: ended at exit
run_env=()  # variables for the next background run (env VAR=VALUE ...)
trap '[[ -n $run_job ]] && kill -TERM "$run_job" 2>/dev/null' EXIT

say() { echo "$*" | tee -a "$out"; }
# True while there is time for another run; else says which run is skipped and counts it.
in_budget() {  # name
  (( $(date +%s) - began < BUDGET )) && return 0
  fails=$((fails + 1)); say "SKIP $1: past the ${BUDGET} s budget (WS_BUDGET)"; return 1
}
now_ns() { date +%s%N; }
manifest() { echo "$*" >>"$res/manifest.jsonl"; }

# After a run: its status, record's lines, the windows and notices `warpscope info` lists.
report() {  # name, status
  local name=$1 rc=$2
  if [[ $rc != 0 || ! -s $res/$name.wst ]]; then
    fails=$((fails + 1)); say "FAIL $name: rc=$rc, trace $(stat -c %s "$res/$name.wst" 2>/dev/null || echo missing)"
    grep -v '^warpscope:' "$res/$name.err" 2>/dev/null | tail -4 | cut -c1-240 | sed 's/^/  /' | tee -a "$out"
  else
    say "ran $name: rc=0"
  fi
  grep -h '^warpscope:' "$res/$name.err" 2>/dev/null | cut -c1-240 | tee -a "$out"
  if [[ -s $res/$name.wst ]]; then
    timeout 60 "$WS" info "$res/$name.wst" >"$res/$name.info.txt" 2>&1
    awk '/^(capture windows|notices)$/ {p = 1} /^$/ {p = 0} p || /^(WARNING|TRUNCATED)/' \
      "$res/$name.info.txt" | head -24 | sed 's/^/  /' | tee -a "$out"
  fi
}

# Runs a command, notes when it was asked for and when it returned.
ask() {  # name, open|close, how, command...
  local name=$1 request=$2 how=$3; shift 3
  local t0 t1 rc
  t0=$(now_ns); "$@" >>"$res/$name.ctl" 2>&1; rc=$?; t1=$(now_ns)
  printf '{"request": "%s", "how": "%s", "unix_ns": %s, "done_unix_ns": %s, "rc": %s}\n' \
    "$request" "$how" "$t0" "$t1" "$rc" >>"$res/$name.requests"
  echo "  $how: rc=$rc $(tail -1 "$res/$name.ctl" 2>/dev/null | cut -c1-120)" | tee -a "$out"
}

# The pid from the program's {"ready": PID} line, once it is there.
wait_ready() {  # log, seconds
  local i line
  for ((i = 0; i < $2 * 10; i++)); do
    line=$(grep -m1 '"ready"' "$1" 2>/dev/null)
    if [[ -n $line ]]; then sed 's/.*"ready": *\([0-9]*\).*/\1/' <<<"$line"; return 0; fi
    kill -0 "$run_job" 2>/dev/null || return 1  # the run ended first
    sleep 0.1
  done
  return 1
}

# A background run under `record` of a program that steps until --until FILE exists: the
# caller asks for its windows in between, and end_run makes the file.
start_run() {  # name, record flags... -- program...
  local name=$1; shift
  rm -f "$res/$name.stop"
  ${run_env[@]+"${run_env[@]}"} timeout -k 10 90 "$WS" record -f -o "$res/$name.wst" "$@" --until "$res/$name.stop" \
    >"$res/$name.log" 2>"$res/$name.err" &
  run_job=$!
}
end_run() {  # name
  touch "$res/$1.stop"; wait "$run_job"; local rc=$?; run_job=""; report "$1" $rc
}

windows_control() {  # name, program... (its --until is added)
  local name=$1; shift
  in_budget "$name" || return
  say "== $name: -c control, warpscope start after 5 s of steps, 3 s, stop; again ${run_env[*]:-}"
  start_run "$name" -c control --capture-range-end repeat -- "$@"
  local pid; pid=$(wait_ready "$res/$name.log" 60) || { say "FAIL $name: no ready line"; }
  if [[ -n $pid ]]; then
    sleep 5
    for _ in 1 2; do
      ask "$name" open "warpscope start" "$WS" start "$pid"; sleep 3
      ask "$name" close "warpscope stop" "$WS" stop "$pid"; sleep 1
    done
  else
    fails=$((fails + 1))
  fi
  end_run "$name"
  manifest "{\"trace\": \"$name.wst\", \"log\": \"$name.log\", \"requests\": \"$name.requests\", \"windows\": 2, \"begin\": \"control\", \"end\": \"control\", \"steady\": true}"
}

windows_signal() {  # name, program...
  local name=$1; shift
  in_budget "$name" || return
  say "== $name: -c signal, SIGUSR2 to the program after 5 s of steps, again 3 s later"
  start_run "$name" -c signal -- "$@"
  local pid; pid=$(wait_ready "$res/$name.log" 60) || { say "FAIL $name: no ready line"; }
  if [[ -n $pid ]]; then
    sleep 5
    ask "$name" open "kill -USR2" kill -USR2 "$pid"; sleep 3
    ask "$name" close "kill -USR2" kill -USR2 "$pid"; sleep 1
  else
    fails=$((fails + 1))
  fi
  end_run "$name"
  manifest "{\"trace\": \"$name.wst\", \"log\": \"$name.log\", \"requests\": \"$name.requests\", \"windows\": 1, \"begin\": \"signal\", \"end\": \"signal\", \"steady\": true}"
}

windows_delay() {  # name, program...
  local name=$1; shift
  in_budget "$name" || return
  say "== $name: --delay $DELAY --duration 3 (from the launch)"
  local t0; t0=$(now_ns)
  start_run "$name" --delay "$DELAY" --duration 3 -- "$@"
  printf '{"request": "open", "how": "launch + --delay %s", "unix_ns": %s}\n{"request": "close", "how": "--duration 3", "after_begin_ns": 3000000000}\n' \
    "$DELAY" "$((t0 + DELAY * 1000000000))" >"$res/$name.requests"
  sleep $((DELAY + 4)).5
  end_run "$name"
  manifest "{\"trace\": \"$name.wst\", \"log\": \"$name.log\", \"requests\": \"$name.requests\", \"windows\": 1, \"begin\": \"delay\", \"end\": \"duration\", \"steady\": true}"
}

# The program opens and closes its window itself (5 s after its ready line, for 3 s).
windows_by_program() {  # name, capture flags (one word each, before --), --, program...
  local name=$1; shift
  in_budget "$name" || return 1
  local flags=()
  while [[ $1 != -- ]]; do flags+=("$1"); shift; done
  shift
  say "== $name: ${flags[*]}, opened 5 s after the loop's ready line, closed 3 s later"
  timeout -k 10 90 "$WS" record -f -o "$res/$name.wst" "${flags[@]}" -- "$@" \
    >"$res/$name.log" 2>"$res/$name.err" &
  run_job=$!
  wait "$run_job"; local rc=$?; run_job=""; report "$name" $rc
  grep -h '"request"' "$res/$name.log" | cut -c1-160 | sed 's/^/  /' | tee -a "$out"
  return 0
}

windows_part() {
  local loop=(python3 "$REC/steady_loop.py")
  windows_control torch_control "${loop[@]}"
  windows_signal torch_signal "${loop[@]}"
  windows_by_program torch_profiler -c cudaProfilerApi -- "${loop[@]}" --profiler 5:8 --seconds 9 &&
    manifest '{"trace": "torch_profiler.wst", "log": "torch_profiler.log", "windows": 1, "begin": "profiler_api", "end": "profiler_api", "steady": true}'
  windows_by_program torch_nvtx -c nvtx -p window -- "${loop[@]}" --nvtx-window 5:8 --seconds 9 &&
    manifest '{"trace": "torch_nvtx.wst", "log": "torch_nvtx.log", "windows": 1, "begin": "nvtx", "end": "nvtx", "steady": true}'
  windows_delay torch_delay "${loop[@]}" --warmup-steps 5
  run_env=(env WARPSCOPE_ATTACH_EARLY=0)
  windows_control torch_control_attach_late "${loop[@]}"
  run_env=()
  windows_control cpp_control "$LP" steady --seconds 60
  windows_delay cpp_delay "$LP" steady --seconds 60
  models_part
}

# A program that loaded many kernel modules before its first window (cuDNN's autotuner), where
# attaching CUPTI at the first window was seen to take seconds: attached early (the default)
# and late (WARPSCOPE_ATTACH_EARLY=0; each window's notice then says what attaching took).
models_part() {
  local loop=(python3 "$REC/steady_loop.py" --model cnn)
  windows_control cnn_control "${loop[@]}"
  run_env=(env WARPSCOPE_ATTACH_EARLY=0)
  windows_control cnn_control_attach_late "${loop[@]}"
  run_env=()
}

attribution_part() {
  local name
  say "== cpp_paths: ws_launch_paths paths 20"
  name=cpp_paths
  timeout -k 10 60 "$WS" record -f -o "$res/$name.wst" -- "$LP" paths 20 \
    >"$res/$name.log" 2>"$res/$name.err"
  report "$name" $?
  tail -1 "$res/$name.log" | cut -c1-400 | tee -a "$out"
  manifest '{"trace": "cpp_paths.wst", "log": "cpp_paths.log", "stacks": "any"}'
  for name in torch_paths torch_paths_nostacks; do
    in_budget "$name" || continue
    local flags=()
    [[ $name == torch_paths_nostacks ]] && flags=(--stacks none)
    say "== $name: launch_paths.py ${flags[*]}"
    timeout -k 10 150 "$WS" record -f -o "$res/$name.wst" ${flags[@]+"${flags[@]}"} -- \
      python3 "$REC/launch_paths.py" >"$res/$name.log" 2>"$res/$name.err"
    report "$name" $?
    grep -h '"expected_kernels"' "$res/$name.log" | cut -c1-600 | tee -a "$out"
    local stacks=all
    [[ $name == torch_paths_nostacks ]] && stacks=none
    manifest "{\"trace\": \"$name.wst\", \"log\": \"$name.log\", \"stacks\": \"$stacks\"}"
  done
}

for part in $parts; do
  res=$(mktemp -d "/tmp/ws_recorder_$part.XXXXXX")
  out=$res/recorder_$part.txt
  : >"$res/manifest.jsonl"
  started=$(date +%s)
  say "== $part on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), build $WS_BUILD"
  "${part}_part"
  say "== $part: $(( $(date +%s) - started )) s, failed runs so far: $fails"
  ls -la "$res" >>"$out"
  archive=$OUTDIR/recorder_$part.tgz
  tar czf "$archive" -C "$res" .
  size=$(stat -c %s "$archive")
  if ((size > 15 * 1024 * 1024)); then
    split -b 15M -d "$archive" "$archive.part-" && rm -f "$archive"
    say "$archive: $size bytes, split: cat $(basename "$archive").part-* | tar xz"
  else
    say "$archive: $size bytes"
  fi
  cp "$out" "$OUTDIR/"
  rm -rf "$res"
done
echo "check here: tests/gpu/recorder/check_attribution.py DIR and check_windows.py DIR on the unpacked archives"
exit $((fails > 100 ? 100 : fails))
