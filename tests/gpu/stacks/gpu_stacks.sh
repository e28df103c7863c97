#!/usr/bin/env bash
# Call stacks on the GPU machine, in one call: the CPython frame reader inside the machine's
# own Python (tests/stacks/test_python_frames.py), the cost of one capture, the sync-site
# program under warpscope (its trace comes back for check_stacks.py), the C++ program with
# native stacks, hostile cases (fork, a Python that is finalizing), and the training-loop
# overhead (bench/stacks/stacks_overhead.py).
#
#   tests/gpu/gpu_suite.sh --stage build        # here; then, on the GPU machine:
#   tests/gpu/stacks/gpu_stacks.sh [--no-bench]
# Results: $OUT/stacks_results.txt (PASS/FAIL lines and figures) and the traces, packed. The
# trace checkers (check_stacks.py, check_native_stacks.py) need Python's protobuf: where the
# machine lacks it they are skipped there (said in the results), and run on the returned
# traces. Exit status: the number of failed checks.
set -u
here=$(cd "$(dirname "$0")/../../.." && pwd)
OUTDIR=${OUT:-$PWD/gpu_stacks_out}
mkdir -p "$OUTDIR"
res=$(mktemp -d /tmp/ws_stacks.XXXXXX)
B=$here/.gpu
SHIM=$B/lib/libwarpscope.so
bench=1
[[ ${1:-} == --no-bench ]] && bench=0
out=$res/stacks_results.txt
say() { echo "$*" | tee -a "$out"; }
rec() {  # trace, command...: the command under warpscope
  local trace=$1; shift
  env LD_PRELOAD="$SHIM" WARPSCOPE_OUTPUT="$trace" WARPSCOPE_FORCE_OVERWRITE=1 "$@"
}

say "== machine"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$out"
python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)' | tee -a "$out"

say "== the frame reader in this Python"
WARPSCOPE_STACK_PROBE=$B/lib/libwarpscope_stack_probe.so python3 "$here/tests/stacks/run_without_pytest.py" \
  "$here/tests/stacks/test_python_frames.py" 2>&1 | tee -a "$out"

say "== one capture's cost"
WARPSCOPE_STACK_PROBE=$B/lib/libwarpscope_stack_probe.so python3 "$here/bench/stacks/capture_cost.py" 2>&1 | tee -a "$out"

say "== sync sites (Python)"
rec "$res/sync_sites.wst" timeout 300 python3 "$here/tests/gpu/stacks/sync_sites.py" --rounds 20 >"$res/sync_sites.log" 2>&1
say "sync_sites rc=$? $(tail -2 "$res/sync_sites.log" | tr '\n' ' ')"

say "== sync sites (C++, native stacks)"
rec "$res/stack_sites.wst" timeout 120 "$B/bin/ws_stack_sites" 10 >"$res/stack_sites.log" 2>&1
say "stack_sites rc=$? $(tail -1 "$res/stack_sites.log")"
if python3 -c "import google.protobuf" 2>/dev/null; then
  python3 "$here/tests/gpu/stacks/check_stacks.py" "$res/sync_sites.wst" 2>&1 | tail -4 | tee -a "$out"
  python3 "$here/tests/gpu/stacks/check_native_stacks.py" "$res/stack_sites.wst" 2>&1 | tee -a "$out"
else
  say "checkers skipped here (no protobuf): run check_stacks.py and check_native_stacks.py on the traces"
fi

say "== hostile: fork, finalizing, stacks off, a bad setting (exit status plain / warpscope)"
for mode in fork atexit del daemon; do
  timeout 120 python3 "$here/tests/gpu/stacks/hostile_stacks.py" "$mode" >"$res/plain_$mode.log" 2>&1
  plain=$?
  rec "$res/hostile_$mode.wst" timeout 120 python3 "$here/tests/gpu/stacks/hostile_stacks.py" "$mode" >"$res/hostile_$mode.log" 2>&1
  rc=$?
  [[ $rc == "$plain" ]] && v=PASS || v=FAIL
  # The daemon thread races the interpreter's teardown: PyTorch itself ends such a program
  # either with its own status (7) or in std::terminate (134), plain or recorded. Either is
  # the program's; anything else (a crash of warpscope's) is not.
  if [[ $mode == daemon && $v == FAIL && " 7 134 " == *" $rc "* && " 7 134 " == *" $plain "* ]]; then
    v=PASS
  fi
  say "$v hostile_$mode plain=$plain warpscope=$rc $(tail -2 "$res/hostile_$mode.log" | tr '\n' ' ' | cut -c1-200)"
done
WARPSCOPE_STACKS=none rec "$res/stacks_none.wst" timeout 300 python3 "$here/tests/gpu/stacks/sync_sites.py" --rounds 2 >"$res/stacks_none.log" 2>&1
say "stacks_none rc=$?"
WARPSCOPE_STACKS=everything rec "$res/stacks_bad.wst" timeout 300 python3 "$here/tests/gpu/stacks/sync_sites.py" --rounds 2 >"$res/stacks_bad.log" 2>&1
say "stacks_bad rc=$? $(grep -m1 'warpscope:' "$res/stacks_bad.log")"

if [[ $bench == 1 ]]; then
  say "== training-loop overhead"
  timeout 480 python3 "$here/bench/stacks/stacks_overhead.py" --build "$B" --out "$res" --runs 7 --steps 200 2>&1 | tail -3 | tee -a "$out"
fi
ls -la "$res" >>"$out"
cp "$out" "$OUTDIR/"
failed=$(grep -c '^FAIL' "$out")
tar -C "$res" -czf "$OUTDIR/stacks_traces.tgz" --exclude='*_no_stacks*' .
exit $((failed > 100 ? 100 : failed))
