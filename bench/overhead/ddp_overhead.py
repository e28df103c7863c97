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
        [--modes plain,floor_kernel,floor_kernel_launch,floor,warpscope,warpscope_nostacks,
                 warpscope_kernel_launch,t:KIND+KIND...]
  t:KINDS is warpscope recording those kinds (-t KINDS, "+" for ",") without stacks;
  x:KINDS is warpscope recording those kinds with the default stacks;
  f:KINDS is CUPTI's floor with those kinds (WS_FLOOR_KINDS, bench/overhead/cupti_floor.cc);
  s:CALLS is warpscope's default kinds with the stacks of those calls only (--stacks CALLS).
  --pairs N [--phase-steps K]: each process measures itself instead (ddp_job.py --pairs): N
  pairs of phases of K steps, recording off in one and on in the other (warpscope with
  -c cudaProfilerApi --capture-range-end repeat, the floor with WS_FLOOR_TOGGLE=1); a mode's
  figure is the slowest rank's median paired difference, ms a step. Within a process this
  resolves what differences across processes do not; what a switched-off recorder still
  costs (CUPTI attached, callbacks dispatched) is not in it.
  --deadline-s S: runs not started S seconds after the first are skipped (the table is still
  printed), so that a device call's time limit keeps what ran.

Each rank's median host time per phase of a step (ddp_job.py's phase_host_ms) is kept per run
in the JSON, to tell a cost that falls on one rank from one that falls on all.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

from modes import floor_env, recording_env

ap = argparse.ArgumentParser()
ap.add_argument("--build", required=True, help="dir with bin/ and lib/ (staged .gpu or build)")
ap.add_argument("--out", required=True)
ap.add_argument("--runs", type=int, default=5)
ap.add_argument("--steps", type=int, default=60)
ap.add_argument("--warmup", type=int, default=10)
ap.add_argument("--model", default="resnet18")
ap.add_argument("--batch", type=int, default=32, help="per rank (ddp_job.py's --batch)")
ap.add_argument("--deadline-s", type=float, default=0)
ap.add_argument("--pairs", type=int, default=0)
ap.add_argument("--phase-steps", type=int, default=8)
ap.add_argument("--modes", default="", help="comma list of modes (default: plain, floor_kernel, "
                "floor, warpscope)")
args = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
job = os.path.join(here, "..", "..", "tests", "gpu", "distributed", "ddp_job.py")
B = os.path.abspath(args.build)
gpus = int(subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.count("GPU "))
tmp = tempfile.mkdtemp(prefix="ws_ddp_bench")

# The floors (kernel records alone; with a timestamp-only callback on every launch, the least
# that gives each kernel its host side; with every kind warpscope records by default) and
# warpscope in parts: which kinds cost what.
MODES = {
    "plain": lambda run: {},
    "floor_kernel": lambda run: floor_env(B, kinds="kernel"),
    "floor_kernel_launch": lambda run: floor_env(B, kinds="kernel,launch"),
    "floor": lambda run: floor_env(B),
    "warpscope": lambda run: recording_env(B, f"{tmp}/run{run}_rank%q{{RANK}}.wst"),
    "warpscope_nostacks": lambda run: recording_env(B, f"{tmp}/ns{run}_rank%q{{RANK}}.wst",
                                                    stacks="none"),
    "warpscope_kernel_launch": lambda run: recording_env(
        B, f"{tmp}/kl{run}_rank%q{{RANK}}.wst", trace="kernel,launch", stacks="none"),
}
modes = [m for m in (args.modes.split(",") if args.modes else
                     ["plain", "floor_kernel", "floor", "warpscope"])]
for m in modes:  # "t:kernel+launch+sync": warpscope -t kernel,launch,sync --stacks none
    if m.startswith("t:"):
        MODES[m] = lambda run, m=m: recording_env(
            B, f"{tmp}/{m[2:]}{run}_rank%q{{RANK}}.wst", trace=m[2:].replace("+", ","),
            stacks="none")
    elif m.startswith("x:"):
        MODES[m] = lambda run, m=m: recording_env(
            B, f"{tmp}/x{run}_rank%q{{RANK}}.wst", trace=m[2:].replace("+", ","))
    elif m.startswith("f:"):
        MODES[m] = lambda run, m=m: floor_env(B, kinds=m[2:].replace("+", ","))
    elif m.startswith("s:"):
        MODES[m] = lambda run, m=m: recording_env(
            B, f"{tmp}/s{run}_rank%q{{RANK}}.wst", stacks=m[2:].replace("+", ","))
unknown = [m for m in modes if m not in MODES]
if unknown:
    sys.exit(f"ddp_overhead: no mode {', '.join(unknown)}; modes: {', '.join(MODES)}")
phases = {m: [] for m in modes}  # per run: the ranks' phase_host_ms


def rank_lines(stdout):
    """Each rank's JSON object from the job's output: the ranks share torchrun's stdout, so
    two objects may share a line."""
    found, decoder, at = [], json.JSONDecoder(), 0
    while (at := stdout.find('{"rank"', at)) >= 0:
        try:
            obj, end = decoder.raw_decode(stdout, at)
            found.append(obj)
            at = end
        except ValueError:
            at += 1
    return found


offs = {m: [] for m in modes}  # --pairs: per run, the slowest rank's median step off
pair_runs = {m: [] for m in modes}  # --pairs: per run, every rank's phases


def run(mode, i):
    env = dict(os.environ)
    env.update(MODES[mode](i))
    cmd = ["torchrun", "--standalone", "--nproc_per_node", str(gpus), job, "--model", args.model,
           "--steps", str(args.steps), "--warmup", str(args.warmup), "--batch", str(args.batch)]
    if args.pairs:
        cmd += ["--pairs", str(args.pairs), "--phase-steps", str(args.phase_steps),
                "--pair-seed", str(i)]
        if "LD_PRELOAD" in env:
            env.update({"WARPSCOPE_CAPTURE_RANGE": "cudaProfilerApi",
                        "WARPSCOPE_CAPTURE_RANGE_END": "repeat"})
        elif "CUDA_INJECTION64_PATH" in env:
            env["WS_FLOOR_TOGGLE"] = "1"
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    ranks = rank_lines(p.stdout)
    if p.returncode != 0 or len(ranks) != gpus:
        print(f"{mode} run {i} failed rc={p.returncode}:\n{p.stderr[-2000:]}", file=sys.stderr)
        return None
    if args.pairs:
        slowest = max(ranks, key=lambda r: r["added_median_ms"])
        offs[mode].append(statistics.median(slowest["off_ms"]))
        pair_runs[mode].append(ranks)
        return slowest["added_median_ms"]
    phases[mode].append({r["rank"]: r.get("phase_host_ms", {}) for r in ranks})
    return max(r["loop_ns"] for r in ranks) / ranks[0]["timed_steps"] / 1e6


samples = {m: [] for m in modes}
started = time.monotonic()
for i in range(args.runs):
    order = modes[:]
    random.shuffle(order)
    for mode in order:
        if args.deadline_s and time.monotonic() - started > args.deadline_s:
            print(f"run {i} {mode}: skipped (deadline)", flush=True)
            continue
        ms = run(mode, i)
        if ms is not None:
            samples[mode].append(ms)
        print(f"run {i} {mode}: {ms}", flush=True)

median = {m: statistics.median(v) for m, v in samples.items() if v}
report = {"pairs": args.pairs, "phase_steps": args.phase_steps, "off_ms": offs, "pair_runs": pair_runs, "gpus": gpus, "model": args.model, "batch": args.batch, "steps": args.steps, "warmup": args.warmup,
          "runs": args.runs, "ms_per_step": samples, "median_ms_per_step": median,
          "phase_host_ms": phases}
with open(os.path.join(args.out, "ddp_overhead.json"), "w") as f:
    json.dump(report, f, indent=1)
if args.pairs:
    print(f"{'mode':<24} {'on - off ms/step':>16} {'off ms/step':>12} {'x off':>6}  runs (on - off)")
    for m in modes:
        if m in median:
            off = statistics.median(offs[m])
            print(f"{m:<24} {median[m]:>+16.3f} {off:>12.2f} {(off + median[m]) / off:>6.3f}  "
                  + " ".join(f"{v:+.3f}" for v in sorted(samples[m])))
    sys.exit(0)
print(f"{'mode':<24} {'median ms/step':>14} {'x plain':>8} {'x floor':>8}  runs")
for m in modes:
    if m not in median:
        continue
    plain, floor = median.get("plain"), median.get("floor")
    print(f"{m:<24} {median[m]:>14.2f} {median[m] / plain if plain else float('nan'):>8.3f} "
          f"{median[m] / floor if floor else float('nan'):>8.3f}  "
          + " ".join(f"{v:.2f}" for v in sorted(samples[m])))
print(f"\n{'mode':<24} host ms a step per phase, median over runs (rank 0 / rank 1 / ...)")
for m in modes:
    if not phases[m]:
        continue
    names = sorted({p for run_ in phases[m] for r in run_.values() for p in r})
    cells = []
    for p in names:
        per_rank = sorted({r for run_ in phases[m] for r in run_})
        vals = [statistics.median([run_[r][p] for run_ in phases[m] if p in run_.get(r, {})])
                for r in per_rank]
        cells.append(f"{p} " + "/".join(f"{v:.2f}" for v in vals))
    print(f"{m:<24} " + "  ".join(cells))
