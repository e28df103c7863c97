#!/usr/bin/env bash
# The recording cost of one allocation event (issue 39's target: <= 2 us and <= 100 bytes):
# ws_memory_ops loop N BYTES times N cudaMalloc/cudaFree pairs, each an ALLOCATE and a RELEASE
# (MEMORY2) and two callbacks with a native stack. Modes, in shuffled order, REPS times each:
#   plain        no warpscope
#   alloc        warpscope record (defaults: `alloc` on, stacks of allocation calls)
#   alloc_nostk  warpscope record --stacks syncs,copies,launches (no allocation stacks)
#   no_alloc     warpscope record -t kernel,launch,memory,runtime,nvtx,sync (no `alloc`)
# and the trace bytes of the `alloc` runs. Prints one JSON line per run and a summary: ns per
# pair above plain (2 events a pair), bytes per event.
#
#   tests/gpu/gpu_suite.sh --stage build        # here; then, on the GPU machine:
#   bench/memory/alloc_cost.sh [N] [REPS]       (N: 20000, REPS: 5)
# Results in $OUT (or WS_OUT): alloc_cost.jsonl, alloc_cost.txt.
set -u
source "$(dirname "$0")/../../tests/gpu/gpu_build_env.sh" build alloc_cost_out
mkdir -p "$OUTDIR"
N=${1:-20000}; REPS=${2:-5}; BYTES=$((1 << 20))
OPS=$BIN/ws_memory_ops
jsonl=$OUTDIR/alloc_cost.jsonl; : >"$jsonl"
# The traces go beside the results, each removed once measured. A trace of N allocation pairs
# alone held no GPU work (no kernel, copy or memset) and was removed at exit (docs/record.md):
# the loop now ends with one memset, outside its timing.
work=$OUTDIR/traces; mkdir -p "$work"
runs=()
for r in $(seq "$REPS"); do for m in plain alloc alloc_nostk no_alloc; do runs+=("$m"); done; done
for m in $(printf '%s\n' "${runs[@]}" | shuf); do
  trace=$work/$m.wst
  case $m in
    plain) line=$("$OPS" loop "$N" "$BYTES") ;;
    alloc) line=$("$WS" record -f -o "$trace" -- "$OPS" loop "$N" "$BYTES" 2>>"$OUTDIR/record_$m.err") ;;
    alloc_nostk) line=$("$WS" record -f --stacks syncs,copies,launches -o "$trace" -- \
                          "$OPS" loop "$N" "$BYTES" 2>>"$OUTDIR/record_$m.err") ;;
    no_alloc) line=$("$WS" record -f -t kernel,launch,memory,runtime,nvtx,sync -o "$trace" -- \
                       "$OPS" loop "$N" "$BYTES" 2>>"$OUTDIR/record_$m.err") ;;
  esac
  # The trace as named, or as the library named it (a per-process or window suffix,
  # NAME_*.wst): their bytes together; none is said, with the end of record's messages.
  files=("$trace" "$work/${m}_"*.wst); bytes=0
  for f in "${files[@]}"; do [[ -f $f ]] && bytes=$((bytes + $(stat -c %s "$f"))); done
  if [[ $m != plain && $bytes == 0 ]]; then
    echo "alloc_cost: $m: no trace file: looked for $trace and $work/${m}_*.wst;" \
         "$work holds: $(ls -A "$work" | head -3 | tr '\n' ' ')(a trace without GPU work is" \
         "removed at exit); record said: $(grep -m1 'no trace' "$OUTDIR/record_$m.err" ||
         tail -2 "$OUTDIR/record_$m.err" | tr '\n' ' ')" >&2
  fi
  # The program's JSON line alone: anything else record printed on stdout is left out.
  line=$(printf '%s\n' "$line" | grep -m1 '^{"mode"')
  echo "{\"run\": \"$m\", \"trace_bytes\": $bytes, \"result\": ${line:-null}}" | tee -a "$jsonl"
  rm -f "${files[@]}"
done
python3 - "$jsonl" "$N" <<'PY' | tee "$OUTDIR/alloc_cost.txt"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
n = int(sys.argv[2])
by = {}
for r in rows:
    if r["result"]:
        by.setdefault(r["run"], []).append(r)
med = {m: statistics.median(x["result"]["ns_per_pair"] for x in v) for m, v in by.items()}
print(f"{n} cudaMalloc/cudaFree pairs of 1 MiB, median of {min(len(v) for v in by.values())} runs")
for m in ("plain", "alloc", "alloc_nostk", "no_alloc"):
    if m in med:
        extra = (med[m] - med["plain"]) / 2 if "plain" in med else float("nan")
        print(f"  {m:12s} {med[m]:9.1f} ns/pair  {extra:+8.1f} ns per event vs plain")
# Trace sizes of the runs that left a trace (a run without one said so above).
size = {m: statistics.median(x["trace_bytes"] for x in by[m] if x["trace_bytes"] > 0)
        for m in ("alloc", "no_alloc") if any(x["trace_bytes"] > 0 for x in by.get(m, []))}
for m in ("alloc", "no_alloc"):
    print(f"  {m} trace: {size[m]} bytes" if m in size else f"  {m} trace: no trace file found")
if len(size) == 2:
    d = (size["alloc"] - size["no_alloc"]) / (2 * n)
    print(f"  bytes per allocation event (alloc - no_alloc): {d:.1f}")
else:
    print("  bytes per allocation event: not measured (no trace file of both modes)")
PY
rmdir "$work" 2>/dev/null
