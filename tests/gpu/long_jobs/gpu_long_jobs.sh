#!/usr/bin/env bash
# Long jobs on the GPU machine (issue 29): windows on demand across the 4 processes of one job,
# one file per window, the size and duration caps, the flight recorder's triggers (capture
# signal, `warpscope dump`, a slow step, exit, a crash) and its memory cap, a long job with
# designed slow steps, and the cost of being armed (bench/long_jobs/armed_overhead.py).
#
#   tests/gpu/gpu_suite.sh --stage build                  # here; then, on the GPU machine:
#   tests/gpu/long_jobs/gpu_long_jobs.sh functional|flight|overhead [RUNS]|long [SECONDS]
# Results: $OUT/long_jobs_<part>.txt (PASS/FAIL lines, figures) and the traces in
# $OUT/<part>.tgz (`flight` is the flight recorder's triggers alone);
# tests/gpu/long_jobs/check_long_jobs.py checks the traces (it needs Python's protobuf: run it
# on the unpacked archive). Exit status: failed checks.
set -u
source "$(dirname "$0")/../gpu_build_env.sh" build long_jobs_out
part=${1:?functional, overhead or long}
long_seconds=${2:-480}
runs=${2:-5}
res=$OUTDIR/$part
mkdir -p "$res"
out=$OUTDIR/long_jobs_$part.txt
: >"$out"
LOOP=$here/tests/gpu/long_jobs/step_loop.py
fails=0
say() { echo "$*" | tee -a "$out"; }
check() {  # name, condition (a command)
  local name=$1; shift
  if "$@"; then say "PASS $name"; else say "FAIL $name"; fails=$((fails + 1)); fi
}
rec() { env LD_PRELOAD="$SHIM" WARPSCOPE_FORCE_OVERWRITE=1 "$@"; }
say "== machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"

if [[ $part == functional ]]; then
  say "== windows on demand: 4 processes of one torchrun job, -c control, one file per window"
  rm -f "$res/stop"
  "$WS" record -q -c control --capture-range-end repeat -o "$res/ctl_r%r_w%w.wst" -- \
    torchrun --standalone --nproc_per_node 4 "$LOOP" --until "$res/stop" >"$res/ctl.log" 2>&1 &
  job=$!
  for _ in $(seq 60); do
    n=$("$WS" status --format csv 2>/dev/null | grep -c ',open\|,closed')
    [[ $n -ge 4 ]] && break
    sleep 1
  done
  "$WS" status | tee -a "$out"
  check "status lists 4 armed processes" test "$n" -ge 4
  "$WS" start --all | tee -a "$out"; s1=${PIPESTATUS[0]}
  sleep 3
  "$WS" stop --all | tee -a "$out"; s2=${PIPESTATUS[0]}
  "$WS" start --rank 1,3 | tee -a "$out"; s3=${PIPESTATUS[0]}
  sleep 2
  "$WS" stop --rank 1,3 | tee -a "$out"; s4=${PIPESTATUS[0]}
  "$WS" stop --rank 0 | tee -a "$out"; s5=${PIPESTATUS[0]}
  check "start/stop all and by rank exit 0" test "$s1$s2$s3$s4" = 0000
  check "stop with no window open exits 1" test "$s5" = 1
  pid0=$("$WS" status --rank 0 --format csv | awk -F, 'NR==2{print $1}')
  python3 - "$pid0" >"$res/refused.txt" 2>&1 <<'PY'
import os, socket, sys
pid = int(sys.argv[1])
child = os.fork()
if child == 0:
    os.setgid(65534); os.setuid(65534)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("\0warpscope-ctl.%d" % pid)
    s.sendall(b"warpscope-ctl/1 start\n")
    print(s.recv(4096).decode().strip(), flush=True)
    os._exit(0)
os.waitpid(child, 0)
PY
  say "as uid 65534: $(cat "$res/refused.txt")"
  check "another user is refused" grep -q "warpscope-ctl/1 refused" "$res/refused.txt"
  touch "$res/stop"; wait $job; say "job exit $?"
  ls -la "$res"/ctl_* | tee -a "$out"

  say "== --max-size 1M and --max-duration 2 on a 12 s loop"
  rec WARPSCOPE_OUTPUT="$res/maxsize.wst" WARPSCOPE_MAX_SIZE=1M python3 "$LOOP" --seconds 12 >"$res/maxsize.log" 2>&1
  say "maxsize rc=$? size=$(stat -c %s "$res/maxsize.wst")"
  rec WARPSCOPE_OUTPUT="$res/maxdur.wst" WARPSCOPE_MAX_DURATION=2 python3 "$LOOP" --seconds 12 >"$res/maxdur.log" 2>&1
  say "maxdur rc=$?"

  say "== flight recorder: a crash (SIGSEGV) at 6 s; exit status as without warpscope"
  timeout 120 python3 "$LOOP" --seconds 30 --crash-after 6 >"$res/crash_plain.log" 2>&1
  plain=$?
  rec WARPSCOPE_OUTPUT="$res/crash.wst" WARPSCOPE_FLIGHT_RECORDER=5 timeout 120 python3 "$LOOP" \
    --seconds 30 --crash-after 6 >"$res/crash.log" 2>"$res/crash.err"
  rc=$?
  say "crash: plain rc=$plain warpscope rc=$rc; $(tr '\n' ' ' <"$res/crash.err")"
  check "crash: exit status as plain" test "$rc" = "$plain"
  check "crash: a dump was written" test -s "$res/crash_1.wst"

  say "== flight recorder: an 8 MiB cap on a 60 s ring over 15 s"
  rec WARPSCOPE_OUTPUT="$res/cap.wst" WARPSCOPE_FLIGHT_RECORDER=60 WARPSCOPE_FLIGHT_RECORDER_MB=8 \
    WARPSCOPE_TRACE=cuda,nvtx,sync,driver python3 "$LOOP" --seconds 15 --batch 8 >"$res/cap.log" 2>&1
  say "cap rc=$? $(ls -la "$res"/cap_* | tr '\n' ' ')"
fi

if [[ $part == functional || $part == flight ]]; then
  say "== flight recorder: capture signal at 2 s, warpscope dump at 6 s, a slow step at 10 s, exit"
  # exec: $! is then the program's pid (a background function would be a subshell's).
  (exec env LD_PRELOAD="$SHIM" WARPSCOPE_FORCE_OVERWRITE=1 WARPSCOPE_OUTPUT="$res/fr.wst" \
    WARPSCOPE_FLIGHT_RECORDER=5 WARPSCOPE_CAPTURE_RANGE=signal WARPSCOPE_SLOW_STEP=train_step \
    WARPSCOPE_SLOW_STEP_THRESHOLD=0.4 WARPSCOPE_LOG_LEVEL=info \
    python3 "$LOOP" --seconds 16 --slow 10:sleep >"$res/fr.log" 2>"$res/fr.err") &
  fr=$!
  for _ in $(seq 120); do grep -q ready "$res/fr.log" 2>/dev/null && break; sleep 0.5; done
  sleep 2; kill -USR2 $fr
  sleep 4; "$WS" dump $fr | tee -a "$out"
  wait $fr; say "flight rc=$?"; cat "$res/fr.err" | tee -a "$out"
  ls -la "$res"/fr_* | tee -a "$out"
fi

if [[ $part == overhead ]]; then
  say "== armed at no cost, and recording into the ring (ResNet-18, inputs on the GPU)"
  python3 "$here/bench/long_jobs/armed_overhead.py" --build "$WS_BUILD" --out "$res" \
    --runs "$runs" 2>&1 | tail -3 | tee -a "$out"
fi

if [[ $part == long ]]; then
  say "== a $long_seconds s job, slow steps designed at 1/5, 1/2 and 4/5 of it; flight recorder 20 s"
  t1=$((long_seconds / 5)); t2=$((long_seconds / 2)); t3=$((long_seconds * 4 / 5))
  /usr/bin/time -v env LD_PRELOAD="$SHIM" WARPSCOPE_OUTPUT="$res/long.wst" WARPSCOPE_FORCE_OVERWRITE=1 \
    WARPSCOPE_FLIGHT_RECORDER=20 WARPSCOPE_SLOW_STEP=train_step WARPSCOPE_SLOW_STEP_THRESHOLD=0.4 \
    python3 "$LOOP" --seconds "$long_seconds" --slow "$t1:sleep,$t2:copy,$t3:sleep" \
    >"$res/long.log" 2>"$res/long.err"
  say "long rc=$? $(grep -h 'Maximum resident' "$res/long.err")"
  grep -v '^\s' "$res/long.err" | tee -a "$out"
  ls -la --time-style=+%s.%N "$res"/long_* | tee -a "$out"
  # Dump latency: from the end of each designed slow step to its dump file's last write (the
  # dump waits 0.5 s for the step's GPU records, then flushes CUPTI and writes).
  python3 - "$res" <<'PY' | tee -a "$out"
import json, os, sys
d = sys.argv[1]
slow = [json.loads(l)["slow"] for l in open(os.path.join(d, "long.log")) if l.startswith('{"slow"')]
for i, s in enumerate(slow, 1):
    p = os.path.join(d, f"long_{i}.wst")
    if os.path.exists(p):
        print(f"dump {i} ({s['kind']}, step {s['step']} took {s['end_unix'] - s['begin_unix']:.3f} s): "
              f"written {os.stat(p).st_mtime - s['end_unix']:.3f} s after the step ended, "
              f"{os.path.getsize(p)} bytes")
PY
  for f in "$res"/long_*.wst; do
    "$WS" advise "$f" >"${f%.wst}.advise.txt" 2>&1
    say "advise $(basename "$f"): $(head -12 "${f%.wst}.advise.txt" | tr '\n' '|')"
  done
  say "flight: $(tail -1 "$res/long.log")"
fi
say "failed checks: $fails"
# Few files come back from the machine: the traces go in one archive.
tar czf "$OUTDIR/$part.tgz" -C "$OUTDIR" "$part" && rm -rf "$res"
exit "$fails"
