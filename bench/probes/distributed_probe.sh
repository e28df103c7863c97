#!/usr/bin/env bash
# Probe on a multi-GPU machine (not part of the suite): what NCCL's NVTX calls carry and how
# its launches line up with them (bench/probes/nccl_nvtx_probe.cc, built into
# .gpu/probe/libnccl_probe.so), and traces of tests/gpu/distributed/ddp_job.py recorded with
# the staged build (.gpu/), packed into $OUT/probe.tgz.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
source "$here/tests/gpu/gpu_build_env.sh" .gpu probe_out
W=$(mktemp -d /tmp/probe.XXXXXX)
JOB=$here/tests/gpu/distributed/ddp_job.py
NP=$(nvidia-smi -L | wc -l)
CUPTI=$(ldconfig -p | awk '/libcupti.so.13 /{print $NF; exit}')
[[ -n $CUPTI ]] || CUPTI=$(ls /usr/local/cuda/lib64/libcupti.so.13 /usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13 2>/dev/null | head -1)
{
  nvidia-smi -L; echo "cupti=$CUPTI"; env | grep -E '^NCCL|^TORCH' | sort
  python3 -c 'import torch; print(torch.__version__, torch.cuda.nccl.version())'
} >"$W/machine.txt" 2>&1
cat "$W/machine.txt"
tr() { timeout 240 torchrun --standalone --nproc_per_node "$NP" "$@"; }
for mode in ddp gather fsdp; do
  mkdir -p "$W/probe_$mode"
  PROBE_DIR=$W/probe_$mode LD_PRELOAD=$here/.gpu/probe/libnccl_probe.so NVTX_INJECTION64_PATH=$CUPTI \
    tr "$JOB" --mode $mode --steps 3 --warmup 1 --model mlp >"$W/probe_$mode/log.txt" 2>&1
  echo "probe $mode rc=$?"; tail -2 "$W/probe_$mode/log.txt"
done
echo "== plain, late rank 1 (15 ms in data_load)"
tr "$JOB" --steps 30 --late-rank 1 --late-ms 15 >"$W/plain_late.txt" 2>&1; echo "rc=$?"; grep '^{' "$W/plain_late.txt"
echo "== record default kinds, late rank 1"
mkdir -p "$W/late_default"
$WS record -f -o "$W/late_default/run_%q{RANK}.wst" -- torchrun --standalone --nproc_per_node "$NP" \
  "$JOB" --steps 30 --late-rank 1 --late-ms 15 >"$W/late_default/log.txt" 2>&1; echo "rc=$?"
tail -8 "$W/late_default/log.txt"; ls -la "$W/late_default"
echo "== record with driver API, late rank 1"
mkdir -p "$W/late_driver"
$WS record -f -o "$W/late_driver/run_%q{RANK}.wst" -t kernel,memory,runtime,driver,nvtx,sync -- \
  torchrun --standalone --nproc_per_node "$NP" "$JOB" --steps 30 --late-rank 1 --late-ms 15 \
  >"$W/late_driver/log.txt" 2>&1; echo "rc=$?"
tail -8 "$W/late_driver/log.txt"; ls -la "$W/late_driver"
for f in "$W"/late_driver/*.wst; do $WS summary "$f" 2>&1 | head -40 >"$f.summary.txt"; done
(cd "$W" && tar czf "$OUTDIR/probe.tgz" .)
ls -la "$OUTDIR"
