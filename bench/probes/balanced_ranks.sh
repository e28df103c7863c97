#!/usr/bin/env bash
# Probe on a machine of 2+ GPUs (not part of the suite): is one rank of a balanced DDP job
# (tests/gpu/distributed/ddp_job.py, nobody late) slower on the host than the others, in
# plain runs as well as recorded ones? Runs the balanced job ROUNDS times plain, with
# warpscope's defaults and with `--stacks none`, in alternation, and prints each rank's
# median host time per phase (`phase_host_ms`) and the loop's wall time; `warpscope job` on
# each recording. Results in $OUT/balanced_ranks.txt and $OUT/balanced_ranks.tgz.
#   bench/probes/balanced_ranks.sh [ROUNDS=2] [STEPS=30]
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
source "$here/tests/gpu/gpu_build_env.sh" .gpu balanced_out
W=$(mktemp -d /tmp/balanced.XXXXXX)
JOB=$here/tests/gpu/distributed/ddp_job.py
NP=$(nvidia-smi -L | wc -l)
rounds=${1:-2}; steps=${2:-30}
res=$OUTDIR/balanced_ranks.txt; mkdir -p "$OUTDIR"; : >"$res"
tr() { timeout 200 torchrun --standalone --nproc_per_node "$NP" "$JOB" --steps "$steps" "$@"; }
for r in $(seq 1 "$rounds"); do
  for mode in plain defaults nostacks; do
    d=$W/${mode}_$r; mkdir -p "$d"
    case $mode in
      plain) tr >"$d/log.txt" 2>&1 ;;
      defaults) "$WS" record -f -o "$d/" -- torchrun --standalone --nproc_per_node "$NP" "$JOB" \
                  --steps "$steps" >"$d/log.txt" 2>&1 ;;
      nostacks) "$WS" record -f --stacks none -o "$d/" -- torchrun --standalone --nproc_per_node \
                  "$NP" "$JOB" --steps "$steps" >"$d/log.txt" 2>&1 ;;
    esac
    echo "== $mode round $r rc=$?" | tee -a "$res"
    grep -h '^{' "$d/log.txt" | sort | tee -a "$res"
    if [[ $mode != plain ]]; then
      "$WS" job "$d" >"$d/job.txt" 2>&1; head -2 "$d/job.txt" | cut -c1-300 | tee -a "$res"
    fi
  done
done
tar czf "$OUTDIR/balanced_ranks.tgz" -C "$W" .
