#!/usr/bin/env bash
# Issue 35's data-parallel figures in one device call each, on a machine of 2+ GPUs with a build
# staged in .gpu/ (tests/gpu/gpu_suite.sh --stage build):
#   pairs     the host-bound balanced DDP job (ResNet-18, batch 32 a rank), each process
#             switching recording off and on (ddp_overhead.py --pairs 8 --phase-steps 8): plain
#             (the drift), warpscope's defaults, --stacks none, -t kernel,launch --stacks none;
#             3 processes a mode (about 260 s)
#   gpubound  the same job GPU-bound (batch 512 a rank), across processes: plain, CUPTI's kernel
#             records, warpscope's defaults; 5 runs a mode, shuffled (about 340 s)
#   bench/overhead/ddp_cost.sh pairs|gpubound
# Results in $OUT (or ./ddp_cost_out): ddp_overhead.json and the printed table.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
OUTDIR=${OUT:-$PWD/ddp_cost_out}
mkdir -p "$OUTDIR"
export PATH=/opt/torch/.venv/bin:$PATH
bench=$here/bench/overhead/ddp_overhead.py
case ${1:-} in
  pairs)
    timeout 540 python3 "$bench" --build "$here/.gpu" --out "$OUTDIR" --runs 3 --warmup 10 \
      --pairs 8 --phase-steps 8 --deadline-s 500 \
      --modes plain,warpscope,warpscope_nostacks,warpscope_kernel_launch 2>&1 | grep -v "^run " ;;
  gpubound)
    timeout 540 python3 "$bench" --build "$here/.gpu" --out "$OUTDIR" --runs 5 --steps 30 \
      --batch 512 --deadline-s 500 --modes plain,floor_kernel,warpscope 2>&1 | grep -v "^run " ;;
  *) echo "usage: $0 pairs|gpubound" >&2; exit 2 ;;
esac
