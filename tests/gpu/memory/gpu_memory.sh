#!/usr/bin/env bash
# Issue 39 (recording and the out-of-memory post-mortem) on the GPU machine, with `warpscope
# record` defaults (trace kind `alloc` on):
#   ops        ws_memory_ops all: cudaMalloc/cudaFree of known sizes, a stream-ordered pool and
#              the default pool, cudaHostAlloc, cudaMallocManaged, VMM cuMemCreate + cuMemMap,
#              and a cudaMalloc of twice the device, which fails
#   ops_oom    ws_memory_ops oom 3 under --flight-recorder 1: blocks kept, 3 s of waiting (the
#              ring lets their records go), then the failing request: the out-of-memory dump
#   leak_plain, leak_expandable
#              torch_leak.py (a list that keeps one 16 MiB tensor a step), with
#              PYTORCH_CUDA_ALLOC_CONF unset and expandable_segments:True
#   torch_oom  torch_oom.py under --flight-recorder 1: 1 GiB blocks until torch.OutOfMemoryError
# and, part `heldout`, programs the leak rule was not written on (torch_memory_heldout.py:
# a leak from step 10 under numbered NVTX ranges, torch.compile without NVTX with and without a
# leak), judged by `warpscope memory` itself (check_memory_heldout.py).
#
#   tests/gpu/gpu_suite.sh --stage build        # here; then, on the GPU machine:
#   tests/gpu/memory/gpu_memory.sh [base,heldout]   (the parts to run; default both)
# Results in $OUT (or WS_OUT): memory.txt (what ran, record's lines, the check), each run's
# trace(s) NAME.wst (dumps NAME_<n>.wst), NAME.json (the program's reference), NAME.err, and
# manifest.jsonl. check_memory.py DIR checks them (run here when Python's protobuf is there).
# Exit status: runs that failed, plus 1 when the check failed.
set -u
source "$(dirname "$0")/../gpu_build_env.sh" build memory_out
res=$OUTDIR; mkdir -p "$res"
out=$res/memory.txt; : >"$out"; : >"$res/manifest.jsonl"
MEM=$here/tests/gpu/memory
fails=0
say() { echo "$*" | tee -a "$out"; }

# name, flags for record, -- program...: the program's stdout goes to NAME.stdout.
record() {
  local name=$1; shift
  local flags=()
  while [[ $1 != -- ]]; do flags+=("$1"); shift; done
  shift
  local t0=$(date +%s%N)
  timeout -k 10 240 "$WS" record -f "${flags[@]}" -- "$@" >"$res/$name.stdout" 2>"$res/$name.err"
  local rc=$?
  say "ran $name: rc=$rc in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  grep -h '^warpscope:' "$res/$name.err" | cut -c1-240 | head -8 | sed 's/^/  /' | tee -a "$out"
  [[ $rc != 0 ]] && { fails=$((fails + 1)); tail -5 "$res/$name.err" | sed 's/^/  /' | tee -a "$out"; }
  return 0
}

parts=,${1:-base,heldout},
say "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
if [[ $parts == *,base,* ]]; then
record ops -o "$res/ops.wst" -- "$BIN/ws_memory_ops" all
cp "$res/ops.stdout" "$res/ops.json"
echo '{"name": "ops", "trace": "ops.wst", "reference": "ops.json"}' >>"$res/manifest.jsonl"

record ops_oom --flight-recorder 1 -o "$res/ops_oom.wst" -- "$BIN/ws_memory_ops" oom 3
cp "$res/ops_oom.stdout" "$res/ops_oom.json"
echo '{"name": "ops_oom", "dumps": "ops_oom_*.wst", "reference": "ops_oom.json"}' >>"$res/manifest.jsonl"

record leak_plain -o "$res/leak_plain.wst" -- python3 "$MEM/torch_leak.py" "$res/leak_plain.json" 20
echo '{"name": "leak_plain", "trace": "leak_plain.wst", "reference": "leak_plain.json"}' >>"$res/manifest.jsonl"
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \
  record leak_expandable -o "$res/leak_expandable.wst" -- python3 "$MEM/torch_leak.py" "$res/leak_expandable.json" 20
echo '{"name": "leak_expandable", "trace": "leak_expandable.wst", "reference": "leak_expandable.json", "expandable": true}' >>"$res/manifest.jsonl"

record torch_oom --flight-recorder 1 -o "$res/torch_oom.wst" -- python3 "$MEM/torch_oom.py" "$res/torch_oom.json" 3
echo '{"name": "torch_oom", "dumps": "torch_oom_*.wst", "reference": "torch_oom.json"}' >>"$res/manifest.jsonl"
fi

if [[ $parts == *,heldout,* ]]; then
  for m in history clean cache; do
    record heldout_$m -o "$res/heldout_$m.wst" -- python3 "$MEM/torch_memory_heldout.py" $m "$res/heldout_$m.json" 40
  done
fi

if [[ $parts == *,heldout,* ]]; then
  say "== held-out leaks (warpscope memory)"
  python3 "$MEM/check_memory_heldout.py" "$res" "$WS" 2>&1 | tee -a "$out"
  [[ ${PIPESTATUS[0]} != 0 ]] && fails=$((fails + 1))
fi
say "== files"; ls -l "$res" | tail -n +2 | sed 's/^/  /' | tee -a "$out"
if python3 -c 'import google.protobuf' 2>/dev/null; then
  say "== check"
  if [[ $parts == *,base,* ]]; then
    python3 "$MEM/check_memory.py" "$res" 2>&1 | tee -a "$out"
    [[ ${PIPESTATUS[0]} != 0 ]] && fails=$((fails + 1))
  fi
else
  say "== check skipped: no Python protobuf here; run tests/gpu/memory/check_memory.py $res"
fi
exit $((fails > 100 ? 100 : fails))
