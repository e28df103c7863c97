"""Overhead of recording a data-parallel job (run by hand on a multi-GPU machine, with a build
staged by tests/gpu/gpu_suite.sh --stage): the balanced DDP job of tests/gpu/distributed/ddp_job.py
under torchrun, one process per GPU, run plain, under CUPTI's floor (bench/overhead/
cupti_floor.cc: the activity kinds warpscope enables, records only counted) with the kinds
warpscope records by default, with kernel records only, and with kernel and runtime API
records (which kinds cost what), and under warpscope
(LD_PRELOAD, one trace per rank), interleaved in shuffled order, --runs times each.

Each run's figure is the timed steps' wall time per step, the slowest rank's (every rank
waits for it at each step's collectives). Reports the median of each mode, its runs, and its
ratio to plain and to the floor. Writes ddp_overhead.json and prints a table.

    python3 bench/overhead/ddp_overhead.py --build .gpu --out OUT [--runs 5] [--steps 60]
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

from modes import floor_env, recording_env

ap = argparse.ArgumentParser()
ap.add_argument("--build", required=True, help="dir with bin/ and lib/ (staged .gpu or build)")
ap.add_argument("--out", required=True)
ap.add_argument("--runs", type=int, default=5)
ap.add_argument("--steps", type=int, default=60)
ap.add_argument("--warmup", type=int, default=10)
ap.add_argument("--model", default="resnet18")
args = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
job = os.path.join(here, "..", "..", "tests", "gpu", "distributed", "ddp_job.py")
B = os.path.abspath(args.build)
gpus = int(subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.count("GPU "))
tmp = tempfile.mkdtemp(prefix="ws_ddp_bench")

# The floor with kernel records only, with runtime API records added, and with every kind
# warpscope records by default: which kinds cost what.
MODES = ["plain", "floor_kernel", "floor_kernel_runtime", "floor", "warpscope"]


def env_of(mode, run):
    if mode == "plain":
        return {}
    if mode == "floor_kernel":
        return dict(floor_env(B), WS_FLOOR_KINDS="kernel")
    if mode == "floor_kernel_runtime":
        return dict(floor_env(B), WS_FLOOR_KINDS="kernel,runtime")
    if mode == "floor":
        return floor_env(B)
    return recording_env(B, f"{tmp}/run{run}_rank%q{{RANK}}.wst")


def run(mode, i):
    env = dict(os.environ)
    env.update(env_of(mode, i))
    cmd = ["torchrun", "--standalone", "--nproc_per_node", str(gpus), job, "--model", args.model,
           "--steps", str(args.steps), "--warmup", str(args.warmup)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    ranks = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    if p.returncode != 0 or len(ranks) != gpus:
        print(f"{mode} run {i} failed rc={p.returncode}:\n{p.stderr[-2000:]}", file=sys.stderr)
        return None
    return max(r["loop_ns"] for r in ranks) / ranks[0]["timed_steps"] / 1e6


samples = {m: [] for m in MODES}
for i in range(args.runs):
    order = MODES[:]
    random.shuffle(order)
    for mode in order:
        ms = run(mode, i)
        if ms is not None:
            samples[mode].append(ms)
        print(f"run {i} {mode}: {ms}", flush=True)

median = {m: statistics.median(v) for m, v in samples.items() if v}
report = {"gpus": gpus, "model": args.model, "steps": args.steps, "warmup": args.warmup,
          "runs": args.runs, "ms_per_step": samples, "median_ms_per_step": median}
with open(os.path.join(args.out, "ddp_overhead.json"), "w") as f:
    json.dump(report, f, indent=1)
print(f"{'mode':<13} {'median ms/step':>14} {'x plain':>8} {'x floor':>8}  runs")
for m in MODES:
    if m not in median:
        continue
    plain, floor = median.get("plain"), median.get("floor")
    print(f"{m:<13} {median[m]:>14.2f} {median[m] / plain if plain else float('nan'):>8.3f} "
          f"{median[m] / floor if floor else float('nan'):>8.3f}  "
          + " ".join(f"{v:.2f}" for v in sorted(samples[m])))
