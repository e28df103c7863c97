#!/usr/bin/env bash
# Is the PyTorch `.item()` loop's fix host-bound or GPU-bound, and by how much does recording
# slow its host? Runs tests/gpu/advise/advise_torch.py with and without --fixed, each plain and
# recorded, interleaved, --rounds times, and keeps the recordings: the fixed program's recorded
# step against its plain step is the recording's cost on the host where the host sets the pace.
#   WS_OUT=DIR bash bench/probes/probe_item_balance.sh [--rounds N] [--steps N]
set -u
source "$(dirname "$0")/../../tests/gpu/gpu_build_env.sh" build probe_item_out
mkdir -p "$OUTDIR"
rounds=3; steps=100
while [[ $# -gt 0 ]]; do
  case $1 in --rounds) rounds=$2; shift ;; --steps) steps=$2; shift ;; esac
  shift
done
W=$(mktemp -d /tmp/ws_probe_item.XXXXXX)
prog=(python3 "$here/tests/gpu/advise/advise_torch.py" --steps "$steps")
for ((r = 0; r < rounds; r++)); do
  for mode in item fixed; do
    flag=(); [[ $mode == fixed ]] && flag=(--fixed)
    echo "plain $mode $r $("${prog[@]}" "${flag[@]}" 2>/dev/null | tail -1)" | tee -a "$W/runs.txt"
    "$BIN/warpscope" record -f -o "$W/$mode.$r.wst" -- "${prog[@]}" "${flag[@]}" >"$W/$mode.$r.log" 2>&1
    echo "recorded $mode $r $(grep '^{' "$W/$mode.$r.log" | tail -1)" | tee -a "$W/runs.txt"
  done
done
cp "$W/runs.txt" "$OUTDIR/item_runs.txt"
tar czf "$OUTDIR/item_traces.tgz" -C "$W" .
rm -rf "$W"
