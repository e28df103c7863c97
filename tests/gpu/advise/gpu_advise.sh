#!/usr/bin/env bash
# `warpscope advise` on the GPU: five programs with one performance problem each
# (tests/gpu/advise/advise_problems.cu), and a PyTorch loop calling .item() each step
# (tests/gpu/advise/advise_torch.py, half the steps) where python3 has torch with a GPU. For
# each, the problem must be the top finding of its recorded trace, and the finding's cost must
# be within 10% of the time the fix saves, measured on plain (not recorded) runs of the
# problem and --fixed programs: --runs rounds (at least 5) of one recorded run, one plain run
# of the problem and one of the fix; the cost is the median over the recordings, the saving
# the difference of the plain runs' medians of the timed loop. Costs and savings are compared
# per step (the trace holds the warm-up steps too). Each round also records the fix once:
# against the recorded problem runs that gives the saving as the recording sees it, shown
# beside the cost ("vs rec.") and not checked. Where the finding reports a range (its
# cost_max_ns more than 10% above its cost), the saving must also lie in that range.
# tests/gpu/advise/advise_check.py does the checks.
#
# --heldout runs instead the held-out programs, written after the rules they check
# (tests/gpu/advise/heldout.py and heldout.cu): PyTorch cases h_NAME@RANGES (NAME one of
# pageable, loader, tiny, item, serial, sync, graph, compiled; RANGES numbered, constant or
# none: how the program marks its steps) and C++ cases c_tinyloop, c_readback, c_devsync.
# The whole set takes longer than one device call allows: pass --problems to run a part.
#
#   tests/gpu/advise/gpu_advise.sh [--runs N] [--steps N] [--problems item,pageable,...,torch_item]
#                      [--heldout] [--keep-traces item,...]
#                      (WS_BUILD: a staged build, default .gpu; output in $OUT or WS_OUT)
#
# Output: advise_summary.txt (the table, the PASS/FAIL lines, and per trace the recording's own
# time from bench/overhead/overhead_summary.py), advise_check.json (every
# figure), advise_results.tgz (every recording's advise JSON and log; the first one's report as
# table and HTML; the plain runs' lines), and with --keep-traces advise_traces.tgz (the
# recordings of those problems, to analyse again offline).
# Exit status: the number of failed checks.
set -u
source "$(dirname "$0")/../gpu_build_env.sh" build gpu_advise_out
mkdir -p "$OUTDIR"
APP=$BIN/ws_advise_problems
HELDOUT=$BIN/ws_advise_heldout
runs=5; steps=200; only=""; keep=""; heldout=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) runs=$2; shift ;;
    --steps) steps=$2; shift ;;
    --problems) only=$2; shift ;;
    --keep-traces) keep=,$2,; shift ;;
    --heldout) heldout=1 ;;
  esac
  shift
done
(( runs < 5 )) && runs=5
W=$(mktemp -d /tmp/ws_advise.XXXXXX)
problems=(item pageable loader launch serial)
# The PyTorch loop that calls .item() each step, where the GPU machine's python3 has torch.
python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null && problems+=(torch_item)
if ((heldout)); then
  problems=(h_pageable@numbered h_loader@numbered h_loader@constant h_loader@none
            h_tiny@numbered h_tiny@none h_item@numbered h_item@none h_serial@numbered
            h_sync@constant h_graph@numbered h_compiled@numbered
            c_tinyloop c_readback c_devsync)
  ((steps > 30)) && steps=30
fi
[[ -n $only ]] && IFS=, read -r -a problems <<<"$only"
cases=()
for p in "${problems[@]}"; do
  echo "== $p"
  if [[ $p == torch_item ]]; then
    program=(python3 "$here/tests/gpu/advise/advise_torch.py" --steps $((steps / 2)))
  elif [[ $p == h_* ]]; then
    name=${p#h_}
    program=(python3 "$here/tests/gpu/advise/heldout.py" --problem "${name%@*}"
             --ranges "${name#*@}" --steps "$steps")
  elif [[ $p == c_* ]]; then
    program=("$HELDOUT" --problem "${p#c_}" --steps "$steps")
  else
    program=("$APP" --problem "$p" --steps "$steps")
  fi
  # Rounds of: a recorded run, a plain run of the problem, a plain run of the fix, a recorded
  # run of the fix. The recordings are interleaved with the plain runs like these with each
  # other, so a slow spell of the machine touches both sides; the check takes medians of each.
  : >"$W/$p.runs.jsonl"
  reports=(); logs=()
  for ((r = 0; r < runs; r++)); do
    rec=$W/$p.$r
    timeout 180 "$WS" record -f -o "$rec.wst" -- "${program[@]}" >"$rec.record.log" 2>&1
    echo "record $((r + 1)): exit $?"
    timeout 60 "$WS" advise -f json "$rec.wst" >"$rec.advise.json" 2>"$rec.advise.err"
    reports+=("$rec.advise.json"); logs+=("$rec.record.log")
    if ((r == 0)); then
      # The first recording in full: the report as table and HTML, and the recording's own
      # time (warpscope's flushes and the program calls they overlapped).
      timeout 60 "$WS" advise --top 5 --html "$W/$p.advise.html" "$rec.wst" >"$W/$p.advise.txt" 2>&1
      head -12 "$W/$p.advise.txt"
      timeout 120 python3 "$here/bench/overhead/overhead_summary.py" "$rec.wst" >"$W/$p.overhead.txt" 2>&1
      cat "$W/$p.overhead.txt"
    fi
    [[ $keep == *",$p,"* ]] || rm -f "$rec.wst"
    for mode in "" --fixed; do
      timeout 120 "${program[@]}" $mode >>"$W/$p.runs.jsonl" 2>>"$W/$p.runs.err"
    done
    # The fix recorded too: the saving as the recording sees it (the summary's "vs rec.").
    timeout 180 "$WS" record -f -o "$W/$p.fixed.wst" -- "${program[@]}" --fixed \
        >"$W/$p.fixed.$r.record.log" 2>&1
    grep '^{' "$W/$p.fixed.$r.record.log" >>"$W/$p.recfixed.jsonl"
    rm -f "$W/$p.fixed.wst"
  done
  cases+=(--case "$p:$(IFS=,; echo "${reports[*]}"):$(IFS=,; echo "${logs[*]}"):$W/$p.runs.jsonl:$W/$p.recfixed.jsonl")
done
python3 "$here/tests/gpu/advise/advise_check.py" "${cases[@]}" --json "$OUTDIR/advise_check.json" \
    | tee "$OUTDIR/advise_summary.txt"
failures=${PIPESTATUS[0]}
cat "$W"/*.overhead.txt >>"$OUTDIR/advise_summary.txt"
tar czf "$OUTDIR/advise_results.tgz" -C "$W" --exclude='*.wst' .
if [[ -n $keep ]]; then (cd "$W" && tar czf "$OUTDIR/advise_traces.tgz" ./*.wst); fi
echo "gpu_advise: $failures failed" | tee -a "$OUTDIR/advise_summary.txt"
rm -rf "$W"
exit "$failures"
