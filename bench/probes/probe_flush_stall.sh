#!/usr/bin/env bash
# Where does a periodic flush hold the program? Records the advise loader problem (1.5 ms of
# host spin in an NVTX range, then 1 ms of GPU work per step) under several recorder settings
# and lists, per recording, the GPU idle gaps over 1 ms and warpscope's overhead records.
#   WS_OUT=DIR bash bench/probes/probe_flush_stall.sh
set -u
source "$(dirname "$0")/../../tests/gpu/gpu_build_env.sh" build probe_flush_out
mkdir -p "$OUTDIR"
W=$(mktemp -d /tmp/ws_probe.XXXXXX)
APP=$BIN/ws_advise_problems
run() {  # name, record flags...
  local name=$1; shift
  "$BIN/warpscope" record -f -o "$W/$name.wst" "$@" -- "$APP" --problem loader --steps 400 \
    >"$W/$name.log" 2>&1
  echo "== $name: $*"; tail -1 "$W/$name.log" | cut -c1-150
}
for rep in 1 2; do
  run "default$rep"
  run "no_nvtx$rep" --trace cuda,sync
  run "flush100_$rep" --flush-interval-ms 100
  run "buffer1mb_$rep" --buffer-size-mb 1
  run "buffer32mb_$rep" --buffer-size-mb 32
done
for mode in "" --fixed; do "$APP" --problem loader --steps 400 $mode; done
python3 "$here/bench/probes/probe_flush_gaps.py" "$W"/*.wst
tar czf "$OUTDIR/probe_traces.tgz" -C "$W" .
rm -rf "$W"
